// autocast's rule for qfleet (autocast.cpp), for calls that reach the autograd
// functions past the dispatcher (the programs' `layer` methods, ops.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace qfleet::nn {

// Under torch.autocast on t's device, a bfloat16 / float16 tensor cast up to
// `dtype` (the program's real type); anything else unchanged.
at::Tensor autocast_up(const at::Tensor& t, at::ScalarType dtype);

}  // namespace qfleet::nn
