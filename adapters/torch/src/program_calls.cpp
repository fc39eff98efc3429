// The programs' methods that are not operators (final states, samples, Jacobians),
// called from C++ (qfleet/torch.hpp) and from Python through the custom classes.
#include <torch/torch.h>

#include <complex>
#include <cstdint>
#include <span>
#include <tuple>
#include <vector>

#include "op_support.hpp"
#include "qfleet/torch.hpp"

namespace qfleet::nn {

using namespace op_support;

namespace {
// Final states [B, dim...] (complex, CPU) of a program: density matrices or state vectors.
Tensor final_states(const c10::intrusive_ptr<CircuitProgram>& p, const char* op, const Tensor& inputs,
                    const Tensor& weights, bool density) {
  const auto s = check_circuit(*p, op, inputs, weights);
  TORCH_CHECK_VALUE(inputs.device().is_cpu(), "qfleet.", op, ": takes CPU tensors (the result is ",
                    density ? "4^n" : "2^n", " values per sample; move inputs and weights to the cpu), got tensors on ",
                    inputs.device());
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  const int64_t d = int64_t{1} << p->n_qubits();
  const auto dtype = x.scalar_type() == ::torch::kFloat64 ? ::torch::kComplexDouble : ::torch::kComplexFloat;
  Tensor out = density ? ::torch::empty({s.batch, d, d}, x.options().dtype(dtype))
                       : ::torch::empty({s.batch, d}, x.options().dtype(dtype));
  if (s.batch == 0) return out;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_final_states", [&] {
      const BatchArgs<scalar_t> args{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)};
      const std::span<std::complex<scalar_t>> z(reinterpret_cast<std::complex<scalar_t>*>(out.mutable_data_ptr()),
                                                static_cast<std::size_t>(out.numel()));
      if (density) {
        p->program.density_matrices<scalar_t>(args, z);
      } else {
        p->program.states<scalar_t>(args, z);
      }
    });
  });
  return out;
}
}  // namespace

Tensor circuit_density_matrices(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                const Tensor& weights) {
  return final_states(p, "density_matrices", inputs, weights, true);
}

Tensor circuit_states(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs, const Tensor& weights) {
  TORCH_CHECK_VALUE(p->program.simulator() == qfleet::Simulator::statevector,
                    "qfleet.states: a density-matrix program has no state vectors; use density_matrices");
  return final_states(p, "states", inputs, weights, false);
}

Tensor circuit_sample(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs, const Tensor& weights,
                      const std::vector<int64_t>& wires, int64_t shots, int64_t seed) {
  const auto s = check_circuit(*p, "sample", inputs, weights);
  TORCH_CHECK_VALUE(inputs.device().is_cpu(), "qfleet.sample: takes CPU tensors, got tensors on ", inputs.device());
  TORCH_CHECK_VALUE(shots > 0, "qfleet.sample: shots must be positive, got ", shots);
  TORCH_CHECK_VALUE(seed >= 0, "qfleet.sample: seed must be non-negative, got ", seed);
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  std::vector<int> wire_list;
  for (const auto q : wires) {
    TORCH_CHECK_VALUE(q >= 0 && q < p->n_qubits(), "qfleet.sample: wire ", q, " is not in [0, ", p->n_qubits(), ")");
    wire_list.push_back(static_cast<int>(q));
  }
  // Outcome indices fit int64 (at most 30 wires); the engine writes uint64 of the same width.
  Tensor out = ::torch::empty({s.batch, shots}, x.options().dtype(::torch::kInt64));
  if (s.batch == 0) return out;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_sample", [&] {
      auto* o = reinterpret_cast<std::uint64_t*>(out.mutable_data_ptr<int64_t>());
      p->program.sample<scalar_t>(BatchArgs<scalar_t>{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                                  wire_list, static_cast<std::size_t>(shots), static_cast<std::uint64_t>(seed),
                                  std::span<std::uint64_t>(o, static_cast<std::size_t>(out.numel())));
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> circuit_jacobian(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                            const Tensor& weights) {
  const auto s = check_circuit(*p, "jacobian", inputs, weights);
  TORCH_CHECK_VALUE(inputs.device().is_cpu(), "qfleet.jacobian: takes CPU tensors, got tensors on ", inputs.device());
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  Tensor jx = ::torch::zeros({s.batch, p->n_outputs(), p->n_inputs()}, x.options());
  Tensor jw = ::torch::zeros({s.batch, p->n_outputs(), p->n_weights()}, x.options());
  if (s.batch == 0) return {jx, jw};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_jacobian", [&] {
      p->program.jacobian<scalar_t>(BatchArgs<scalar_t>{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                                    mspan<scalar_t>(jx), mspan<scalar_t>(jw));
    });
  });
  return {jx, jw};
}

}  // namespace qfleet::nn
