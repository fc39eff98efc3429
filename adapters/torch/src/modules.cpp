// qfleet::nn::QuantumLayer and OpenSystemLayer (torch::nn::Module). The Python
// modules of the same names (python/qfleet/layers.py) mirror them: same
// arguments, same parameter name, same initialisation from the same seed.
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "qfleet/torch.hpp"

namespace qfleet::nn {

namespace {
// Uniform in [0, 2 pi) from torch's CPU generator seeded with `seed`: the same
// numbers as torch.rand(n, generator=torch.Generator().manual_seed(seed)) * 2 pi.
::torch::Tensor initial_weights(int64_t n, ::torch::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return ::torch::rand({n}, gen, ::torch::TensorOptions().dtype(dtype)) * (2 * M_PI);
}
}  // namespace

QuantumLayerImpl::QuantumLayerImpl(const Circuit& circuit, const QuantumLayerOptions& options)
    : QuantumLayerImpl(c10::make_intrusive<CircuitProgram>(
                           circuit, CompileOptions{options.precision, options.device, options.num_threads, "automatic"}),
                       options.seed) {}

QuantumLayerImpl::QuantumLayerImpl(c10::intrusive_ptr<CircuitProgram> program, uint64_t seed)
    : program_(std::move(program)) {
  weight = register_parameter("weight", initial_weights(program_->n_weights(), program_->dtype(), seed));
}

::torch::Tensor QuantumLayerImpl::forward(const ::torch::Tensor& inputs) {
  return circuit_forward(program_, inputs, weight);
}

namespace {
// The layer returns fidelities (every other output: open_outputs).
const c10::intrusive_ptr<OpenSystemProgram>& with_target(const c10::intrusive_ptr<OpenSystemProgram>& p) {
  TORCH_CHECK_VALUE(p->program.system().target_kind() != OpenSystem::Target::None,
                    "qfleet.OpenSystemLayer: the system needs a target (target_state, target_density or "
                    "target_unitary): the layer returns fidelities; qfleet::nn::open_outputs returns the others");
  return p;
}
}  // namespace

OpenSystemLayerImpl::OpenSystemLayerImpl(const OpenSystem& system, const OpenCompileOptions& options)
    : program_(with_target(c10::make_intrusive<OpenSystemProgram>(system, options))) {}

OpenSystemLayerImpl::OpenSystemLayerImpl(c10::intrusive_ptr<OpenSystemProgram> program)
    : program_(with_target(program)) {}

::torch::Tensor OpenSystemLayerImpl::forward(const ::torch::Tensor& amplitudes, const ::torch::Tensor& rates,
                                             const ::torch::Tensor& drift_coeffs) {
  return open_fidelity(program_, amplitudes, drift_coeffs, rates);
}

}  // namespace qfleet::nn
