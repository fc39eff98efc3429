// qfleet for PyTorch (LibTorch): compiled programs as TorchScript custom classes,
// operators registered once with TORCH_LIBRARY (namespace "qfleet"), autograd from
// C++ and Python alike, and nn modules.
//
//   qfleet::Circuit c(4);
//   c.angle_embedding({0, 1, 2, 3}).strongly_entangling_layers({0, 1, 2, 3}, 3);
//   for (int q = 0; q < 4; ++q) c.expval("Z" + std::to_string(q));
//   qfleet::nn::QuantumLayer layer(c);                  // weight: [36] float64 parameter
//   torch::Tensor y = layer->forward(torch::rand({64, 4}, torch::kFloat64));  // [64, 4]
//   y.sum().backward();                                 // adjoint gradients
//
// The operators (also reachable as torch.ops.qfleet.* from Python):
//   circuit_forward(CircuitProgram, Tensor inputs[B, n_inputs], Tensor weights[n_weights] or [B, n_weights])
//       -> Tensor[B, n_outputs]                       (expvals, then probabilities)
//   circuit_backward(CircuitProgram, inputs, weights, grad_outputs) -> (grad_inputs, grad_weights)
//   open_forward(OpenSystemProgram, amplitudes, drift_coeffs, rates) -> Tensor fidelity[B]
//   open_backward(OpenSystemProgram, amplitudes, drift_coeffs, rates, grad_fidelity)
//       -> (grad_amplitudes, grad_drift_coeffs, grad_rates)
//   open_final_state(OpenSystemProgram, amplitudes, drift_coeffs, rates) -> complex Tensor
//       [B, d, d] densities / [B, d] pure states / [B, d^2, d^2] superoperators / [B, d, d] unitaries
//       (forward only: asking for its gradient raises)
//   evaluate_json(str problem, str base_dir="") -> str  (the `qfleet eval` contract, docs/cli.md;
//       relative .npy names resolved against base_dir)
// Real tensors are float64 for complex128 programs and float32 for complex64 ones;
// they stay where they are (contiguous tensors are read in place, no copies). CUDA
// tensors need a program compiled with Device::cuda (or automatic where a GPU is
// visible) on their device; the call is enqueued on PyTorch's current stream of that
// device, without host synchronisation (capturable in a CUDA graph).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qfleet/circuit.hpp"
#include "qfleet/open_system.hpp"
#include "qfleet/program.hpp"

namespace qfleet::nn {

// A compiled circuit, as a TorchScript custom class (torch.classes.qfleet.CircuitProgram).
// Built from a qfleet::Circuit (C++) or from the JSON circuit description of
// docs/cli.md (what the Python builder produces); `json()` gives that description back.
struct CircuitProgram : ::torch::CustomClassHolder {
  CircuitProgram(const Circuit& circuit, const CompileOptions& options = {});
  explicit CircuitProgram(const std::string& json_text);

  Program program;
  std::string json_text;  // empty when built from a C++ Circuit

  int64_t n_qubits() const { return program.n_qubits(); }
  int64_t n_inputs() const { return program.n_inputs(); }
  int64_t n_weights() const { return program.n_weights(); }
  int64_t n_outputs() const { return program.n_outputs(); }
  ::torch::ScalarType dtype() const;  // float64 (complex128) or float32 (complex64)
};

// A compiled open system (torch.classes.qfleet.OpenSystemProgram). Fidelities need a target.
struct OpenSystemProgram : ::torch::CustomClassHolder {
  OpenSystemProgram(const OpenSystem& system, const OpenCompileOptions& options = {});
  explicit OpenSystemProgram(const std::string& json_text);

  OpenProgram program;
  std::string json_text;

  int64_t dim() const { return program.dim(); }
  int64_t n_segments() const { return program.n_segments(); }
  int64_t n_controls() const { return program.system().n_controls(); }
  int64_t n_drift_terms() const { return program.system().n_drift_terms(); }
  int64_t n_jumps() const { return program.system().n_jumps(); }
  int64_t n_observables() const { return program.system().n_observables(); }
  bool has_target() const { return program.system().target_kind() != OpenSystem::Target::None; }
  bool has_leakage() const { return !program.system().subspace().empty(); }
  ::torch::ScalarType dtype() const;
};

// Differentiable calls (they go through the dispatcher, so autograd, Meta and
// the CPU kernels are the same ones Python uses).
::torch::Tensor circuit_forward(const c10::intrusive_ptr<CircuitProgram>& program, const ::torch::Tensor& inputs,
                                const ::torch::Tensor& weights);
// Fidelity per task; any of drift_coeffs / rates may be an undefined tensor when
// the system has none. Shapes: amplitudes [B, n_seg, n_ctrl] or [n_seg, n_ctrl],
// drift_coeffs [B, m] or [m], rates [B, n_jumps] or [n_jumps].
::torch::Tensor open_fidelity(const c10::intrusive_ptr<OpenSystemProgram>& program,
                              const ::torch::Tensor& amplitudes, const ::torch::Tensor& drift_coeffs,
                              const ::torch::Tensor& rates);

// Final density matrices [B, 2^n, 2^n] of a density-matrix program (complex, not
// differentiable; inputs and weights as circuit_forward's).
::torch::Tensor circuit_density_matrices(const c10::intrusive_ptr<CircuitProgram>& program,
                                         const ::torch::Tensor& inputs, const ::torch::Tensor& weights);

// Final state vectors [B, 2^n] of a state-vector program (complex, not differentiable).
::torch::Tensor circuit_states(const c10::intrusive_ptr<CircuitProgram>& program, const ::torch::Tensor& inputs,
                               const ::torch::Tensor& weights);
// Samples [B, shots] (int64 outcome indices on `wires`, [] = all; readout errors applied), seeded.
::torch::Tensor circuit_sample(const c10::intrusive_ptr<CircuitProgram>& program, const ::torch::Tensor& inputs,
                               const ::torch::Tensor& weights, const std::vector<int64_t>& wires, int64_t shots,
                               int64_t seed);
// Per-sample Jacobians w.r.t. inputs [B, n_outputs, n_inputs] and weights [B, n_outputs, n_weights].
std::tuple<::torch::Tensor, ::torch::Tensor> circuit_jacobian(const c10::intrusive_ptr<CircuitProgram>& program,
                                                              const ::torch::Tensor& inputs,
                                                              const ::torch::Tensor& weights);

// Every output of an open system, differentiable (autograd, complex states through
// torch's complex autograd) w.r.t. every defined input: one engine pass forward, one
// reverse sweep with all the outputs' cotangents backward. Inputs in the program's real
// dtype (initial states in its complex dtype), each per task (leading batch dimension)
// or shared; undefined where absent:
//   amplitudes [B, n_seg, n_ctrl] | [n_seg, n_ctrl]; drift_coeffs [B, m] | [m];
//   rates [B, n_jumps] | [n_jumps]; durations [B, n_seg] | [n_seg] (> 0; default: the
//   compiled grid); initial [B, d] pure states (closed) | [B, d, d] densities (open).
struct OpenInputs {
  ::torch::Tensor amplitudes, drift_coeffs, rates, durations, initial;
};
// Undefined where the system has none: fidelity [B] (a target), leakage [B] (a
// computational subspace), expvals [B, n_seg + 1, n_observables] (observables, at every
// segment boundary); final_state complex, as open_final_state's.
struct OpenOutputs {
  ::torch::Tensor fidelity, leakage, expvals, final_state;
};
OpenOutputs open_outputs(const c10::intrusive_ptr<OpenSystemProgram>& program, const OpenInputs& inputs);
// The same as a list (the TorchScript method OpenSystemProgram.outputs).
std::vector<::torch::Tensor> open_outputs_list(const c10::intrusive_ptr<OpenSystemProgram>& program,
                                               const ::torch::Tensor& amplitudes,
                                               const std::optional<::torch::Tensor>& drift_coeffs,
                                               const std::optional<::torch::Tensor>& rates,
                                               const std::optional<::torch::Tensor>& durations,
                                               const std::optional<::torch::Tensor>& initial);

// Final states per task (not differentiable; see the op list above; open_outputs
// differentiates them).
::torch::Tensor open_final_state(const c10::intrusive_ptr<OpenSystemProgram>& program,
                                 const ::torch::Tensor& amplitudes, const ::torch::Tensor& drift_coeffs,
                                 const ::torch::Tensor& rates);

// ---- modules -----------------------------------------------------------------

struct QuantumLayerOptions {
  Precision precision = Precision::complex128;
  int num_threads = 0;
  uint64_t seed = 0;  // weights start uniform in [0, 2 pi) from this seed (PennyLane's TorchLayer range)
  Device device = Device::cpu;  // cuda / automatic: a GPU copy, for CUDA tensors (move the layer with .to())
};

// A circuit as a layer: inputs [B, n_inputs] -> outputs [B, n_outputs]; the
// circuit's weights are one trainable parameter "weight" of shape [n_weights].
class QuantumLayerImpl : public ::torch::nn::Module {
 public:
  explicit QuantumLayerImpl(const Circuit& circuit, const QuantumLayerOptions& options = {});
  explicit QuantumLayerImpl(c10::intrusive_ptr<CircuitProgram> program, uint64_t seed = 0);
  ::torch::Tensor forward(const ::torch::Tensor& inputs);
  const c10::intrusive_ptr<CircuitProgram>& program() const { return program_; }
  ::torch::Tensor weight;

 private:
  c10::intrusive_ptr<CircuitProgram> program_;
};
TORCH_MODULE(QuantumLayer);

// Pulses and task parameters -> fidelities: forward(amplitudes, rates, drift_coeffs).
class OpenSystemLayerImpl : public ::torch::nn::Module {
 public:
  explicit OpenSystemLayerImpl(const OpenSystem& system, const OpenCompileOptions& options = {});
  explicit OpenSystemLayerImpl(c10::intrusive_ptr<OpenSystemProgram> program);
  ::torch::Tensor forward(const ::torch::Tensor& amplitudes, const ::torch::Tensor& rates = {},
                          const ::torch::Tensor& drift_coeffs = {});
  const c10::intrusive_ptr<OpenSystemProgram>& program() const { return program_; }

 private:
  c10::intrusive_ptr<OpenSystemProgram> program_;
};
TORCH_MODULE(OpenSystemLayer);

}  // namespace qfleet::nn
