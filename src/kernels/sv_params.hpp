// A gate's parameters and block for one sample, written once for every circuit
// executor: the cpu tiles (cpu/sv_cpu_impl.hpp) compute blocks in double
// and scatter them into their lanes; the group and lanes bodies (sv_group.hpp,
// sv_lanes.hpp) compute them in the call's precision. All read the packed plan.
#pragma once

#include <cstddef>

#include "kernels/gate_matrix.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Whether op's block differs between the samples of a call: it reads inputs, or
// weights given per sample. Shared blocks are computed once per call.
QFLEET_HD inline bool op_per_sample(const OpDesc& op, bool weights_per_sample) {
  return (op.reads & kReadsInputs) != 0 || (weights_per_sample && (op.reads & kReadsWeights) != 0);
}

// The amplitude embedding in reverse, for one feature (psi0 = v / |v|, real): from
// g = d f / d psi0_j, v_j, |v| and dot = psi0 . (d f / d psi0), the input gradient
// (g - psi0_j dot) / |v|; without normalisation, g itself. Every circuit executor's
// embedding gradient ends here (their g and dot come from their own state layout).
template <class T>
QFLEET_HD inline T embedding_feature_gradient(bool normalize, T g, T v, T norm, T dot) {
  return normalize ? (g - v / norm * dot) / norm : g;
}

// Value of parameter slot s for sample b, computed in T; Plan is either circuit plan
// (SvPlan, DmPlan: the same parameter fields), so every executor reads parameters here.
template <class T, class Plan, class R>
QFLEET_HD inline T param_value(const Plan& p, const SvCall<R>& c, int s, std::size_t b) {
  const ParamDesc& d = p.params[s];
  if (d.kind == kParamConstant) return static_cast<T>(d.value);
  if (d.kind == kParamInput) return static_cast<T>(d.scale) * static_cast<T>(c.inputs[b * p.n_inputs + d.index]);
  const R w = c.weights_per_sample ? c.weights[b * p.n_weights + d.index] : c.weights[d.index];
  return static_cast<T>(d.scale) * static_cast<T>(w);
}

// Whether the call asks for the gradient of slot s's source: only those slots cost
// a derivative block and a sandwich in the adjoint sweep.
template <class Plan, class R>
QFLEET_HD inline bool param_wanted(const Plan& p, const SvCall<R>& c, int s) {
  const int kind = p.params[s].kind;
  return (kind == kParamInput && c.grad_inputs != nullptr) || (kind == kParamWeight && c.grad_weights != nullptr);
}

// Zeroes sample b's gradient rows (its inputs' and, unreduced, its weights') before the
// adjoint adds to them, this member (first of stride) taking every stride-th entry; the
// caller's next barrier orders the clears before the adds.
template <class Plan, class R>
QFLEET_HD inline void clear_gradient_rows(const Plan& p, const SvCall<R>& c, std::size_t b, int first, int stride) {
  if (c.grad_inputs != nullptr) {
    for (int e = first; e < p.n_inputs; e += stride) c.grad_inputs[b * p.n_inputs + e] = 0;
  }
  if (c.grad_weights != nullptr && !c.reduce_weights) {
    for (int e = first; e < p.n_weights; e += stride) c.grad_weights[b * p.n_weights + e] = 0;
  }
}

// op's D x D block for sample b (deriv < 0), or its derivative by parameter deriv,
// in T. Constant blocks (constant gates, QubitUnitary) come from the plan; no
// derivative of them is ever asked.
template <class T, int D, class R>
QFLEET_HD inline void op_block_cx(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, int deriv,
                                  Cx<T>* blk) {
  if (op.fixed >= 0) {
    for (int e = 0; e < D * D; ++e) {
      blk[e] = {static_cast<T>(p.fixed_blocks[2 * (op.fixed + e)]),
                static_cast<T>(p.fixed_blocks[2 * (op.fixed + e) + 1])};
    }
    return;
  }
  T q[kMaxGateParams] = {0, 0, 0};
  for (int j = 0; j < op.n_params; ++j) q[j] = param_value<T>(p, c, op.first_param + j, b);
  if (deriv < 0) {
    gate_block<T>(op.gate, q, blk);
  } else {
    gate_block_derivative<T>(op.gate, q, deriv, blk);
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
