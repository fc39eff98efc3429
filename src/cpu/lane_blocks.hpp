// Per-lane gate blocks for the cpu executors (state vector and density matrix),
// compiled once per instruction set like the files that include it. A per-lane
// block stores entry e of lane l at m[e*2L + l] (re) and m[e*2L + L + l] (im).
#pragma once

#include "kernels/complex.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

// Writes a block given in double (re, im pairs) into lane l of a per-lane block.
template <class R, int L>
inline void scatter_block(R* dst, const kern::Cx<double>* src, int entries, int l) {
  for (int e = 0; e < entries; ++e) {
    dst[e * 2 * L + l] = static_cast<R>(src[e].re);
    dst[e * 2 * L + L + l] = static_cast<R>(src[e].im);
  }
}

// out = K m in every lane, for d x d blocks: K one block given in double, m and out
// per-lane blocks. A one-parameter gate U(t) = exp(t K) has dU/dt = K U
// (kern::one_parameter_group), so its per-sample derivatives need no trigonometry.
template <class R, int L>
inline void generator_times_block(const kern::Cx<double>* k, const R* m, R* out, int d) {
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

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
