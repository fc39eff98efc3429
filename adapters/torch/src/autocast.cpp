// Autocast kernels of qfleet's forward operators: under torch.autocast the engine
// still runs in its program's precision (complex64 / complex128). Inputs of a
// reduced floating type (bfloat16, float16, as an autocast network layer returns)
// are cast up to the program's real type; float32 and float64 inputs pass unchanged,
// so autocast never downcasts what reaches the engine (the rule in qfleet/train.hpp,
// tests/torch/test_train_state.cpp and tests/python/test_train.py check it). Without
// these kernels the dispatcher would fall through and a bfloat16 input would fail the
// operators' dtype check.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "autocast_rule.hpp"
#include "qfleet/torch.hpp"

namespace {

using qfleet::nn::CircuitProgram;
using qfleet::nn::OpenSystemProgram;

bool reduced(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf);
}
at::Tensor up(const at::Tensor& t, at::ScalarType dtype) { return reduced(t) ? t.to(dtype) : t; }
std::optional<at::Tensor> up(const std::optional<at::Tensor>& t, at::ScalarType dtype) {
  return t.has_value() ? std::optional<at::Tensor>(up(*t, dtype)) : std::nullopt;
}

template <c10::DispatchKey Key>
at::Tensor circuit_forward(const c10::intrusive_ptr<CircuitProgram>& program, const at::Tensor& inputs,
                           const at::Tensor& weights) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(Key);
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("qfleet::circuit_forward", "")
                             .typed<at::Tensor(const c10::intrusive_ptr<CircuitProgram>&, const at::Tensor&,
                                               const at::Tensor&)>();
  const auto dtype = program->dtype();
  return op.call(program, up(inputs, dtype), up(weights, dtype));
}

using OpenSig = at::Tensor(const c10::intrusive_ptr<OpenSystemProgram>&, const at::Tensor&,
                           const std::optional<at::Tensor>&, const std::optional<at::Tensor>&);

template <c10::DispatchKey Key>
at::Tensor open_call(const char* name, const c10::intrusive_ptr<OpenSystemProgram>& program, const at::Tensor& amplitudes,
                     const std::optional<at::Tensor>& drift, const std::optional<at::Tensor>& rates) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(Key);
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<OpenSig>();
  const auto dtype = program->dtype();
  return op.call(program, up(amplitudes, dtype), up(drift, dtype), up(rates, dtype));
}

template <c10::DispatchKey Key>
at::Tensor open_forward(const c10::intrusive_ptr<OpenSystemProgram>& program, const at::Tensor& amplitudes,
                        const std::optional<at::Tensor>& drift, const std::optional<at::Tensor>& rates) {
  return open_call<Key>("qfleet::open_forward", program, amplitudes, drift, rates);
}
template <c10::DispatchKey Key>
at::Tensor open_final_state(const c10::intrusive_ptr<OpenSystemProgram>& program, const at::Tensor& amplitudes,
                            const std::optional<at::Tensor>& drift, const std::optional<at::Tensor>& rates) {
  return open_call<Key>("qfleet::open_final_state", program, amplitudes, drift, rates);
}

}  // namespace

at::Tensor qfleet::nn::autocast_up(const at::Tensor& t, at::ScalarType dtype) {
  if (!reduced(t)) return t;
  const auto device = t.device().type();  // autocast knows cpu and cuda (it throws for meta)
  const bool on = (device == at::kCPU || device == at::kCUDA) && at::autocast::is_autocast_enabled(device);
  return on ? t.to(dtype) : t;
}

TORCH_LIBRARY_IMPL(qfleet, AutocastCPU, m) {
  m.impl("circuit_forward", &circuit_forward<c10::DispatchKey::AutocastCPU>);
  m.impl("open_forward", &open_forward<c10::DispatchKey::AutocastCPU>);
  m.impl("open_final_state", &open_final_state<c10::DispatchKey::AutocastCPU>);
}

TORCH_LIBRARY_IMPL(qfleet, AutocastCUDA, m) {
  m.impl("circuit_forward", &circuit_forward<c10::DispatchKey::AutocastCUDA>);
  m.impl("open_forward", &open_forward<c10::DispatchKey::AutocastCUDA>);
  m.impl("open_final_state", &open_final_state<c10::DispatchKey::AutocastCUDA>);
}
