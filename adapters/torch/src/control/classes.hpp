// Registers torch.classes.qfleet.ControlOptimizer (classes.cpp) in TORCH_LIBRARY(qfleet).
#pragma once

#include <torch/library.h>

namespace qfleet::control {
void register_classes(torch::Library& m);
}
