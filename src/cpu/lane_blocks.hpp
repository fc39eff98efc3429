// Per-lane gate blocks for the cpu executors (state vector and density matrix),
// compiled once per instruction set like the files that include it. A per-lane
// block stores entry e of lane l at m[e*2L + l] (re) and m[e*2L + L + l] (im).
#pragma once

#include "kernels/gate_matrix.hpp"
#include "kernels/statevector.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

// Writes a block given in double (re, im pairs) into lane l of a per-lane block.
template <class R, int L>
inline void scatter_block(R* dst, const kern::Cx<double>* src, int entries, int l) {
  for (int e = 0; e < entries; ++e) {
    dst[e * 2 * L + l] = static_cast<R>(src[e].re);
    dst[e * 2 * L + L + l] = static_cast<R>(src[e].im);
  }
}

// out = dU/dt in every lane for a one-parameter gate g (kern::one_parameter_group:
// U(t) = exp(t K), so dU/dt = K U), from its per-lane d x d blocks m: the generator K
// once, then K m per lane, with no trigonometry per lane.
template <class R, int L>
inline void one_parameter_derivative(Gate g, const R* m, R* out, int d) {
  kern::Cx<double> k[16];  // one-parameter gates have at most two targets
  const double at_zero[kMaxGateParams] = {};
  kern::gate_block_derivative<double>(g, at_zero, 0, k);
  for (int r = 0; r < d; ++r) {
    for (int c = 0; c < d; ++c) {
      R* o = out + (r * d + c) * 2 * L;
#pragma omp simd
      for (int l = 0; l < L; ++l) {
        R re = 0, im = 0;
        for (int q = 0; q < d; ++q) {
          const R kr = static_cast<R>(k[r * d + q].re), ki = static_cast<R>(k[r * d + q].im);
          const R* b = m + (q * d + c) * 2 * L;
          re += kr * b[l] - ki * b[L + l];
          im += kr * b[L + l] + ki * b[l];
        }
        o[l] = re;
        o[L + l] = im;
      }
    }
  }
}

// g[l] += 2 Re tr(dU outer) in every lane: one parameter's gradient from the outer
// product the fused reverse-sweep step accumulated (dU: per-lane KT-target block).
template <class R, int L>
inline void add_outer_trace(R* g, const R* du, const R* outer, int kt) {
  if (kt == 1) {
#pragma omp simd
    for (int l = 0; l < L; ++l) g[l] += 2 * kern::outer_trace_lane<R, L, 1>(du, outer, l);
  } else {  // 2 (kern::kMaxBlockTargets)
#pragma omp simd
    for (int l = 0; l < L; ++l) g[l] += 2 * kern::outer_trace_lane<R, L, 2>(du, outer, l);
  }
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
