// State-vector kernel bodies, written once for host and device.
//
// Layout ("batch in the lanes"): a tile holds L samples of the same circuit;
// amplitude i of lane l has its real part at s[i*2L + l] and its imaginary part at
// s[i*2L + L + l]. A per-lane matrix block stores entry e the same way
// (m[e*2L + l], m[e*2L + L + l]). The cpu backend loops over lanes innermost so the
// compiler puts the L samples in the SIMD lanes with no shuffles; a cuda backend
// maps lanes (and groups) to threads and calls the same bodies.
//
// A gate acting on wires w_0..w_{k-1} (the leading c of them controls) touches
// groups of 2^(k-c) amplitudes: group g's base index is g with zero bits inserted
// at the wires' bit positions, plus the control mask; its members are
// base + off[r] for the block's local index r.
#pragma once

#include <cstdint>

#include "kernels/hd.hpp"
#include "kernels/types.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Inserts a zero bit at each of the ascending bit positions pos[0..k).
QFLEET_HD inline std::uint64_t insert_zero_bits(std::uint64_t g, const int* pos, int k) {
  for (int i = 0; i < k; ++i) {
    const std::uint64_t low = g & ((std::uint64_t{1} << pos[i]) - 1);
    g = ((g >> pos[i]) << (pos[i] + 1)) | low;
  }
  return g;
}


// y = M' x on the D amplitudes of one group (at base + site.off[0..D)), one lane, M' = M or
// its transpose and/or conjugate (M^dagger: both). The block has ML lanes: L (each
// sample's own block, the cpu tiles) or 1 (one thread's block for its own sample, the
// cuda groups, whose states may still be tiles of L samples). The state-vector gates
// (Site = GateSite) and the density-matrix blocks (DmSite, kernels/dm_ops.hpp) run it.
template <class R, int L, int D, bool Transpose, bool Conjugate, int ML, class Site>
QFLEET_HD inline void apply_dense_lane(R* s, const Site& site, std::uint64_t base, const R* m, int l) {
  const int ml = ML == 1 ? 0 : l;
  R xr[D], xi[D];
  for (int c = 0; c < D; ++c) {
    const R* a = s + (base + site.off[c]) * 2 * L;
    xr[c] = a[l];
    xi[c] = a[L + l];
  }
  for (int r = 0; r < D; ++r) {
    R yr = 0, yi = 0;
    for (int c = 0; c < D; ++c) {
      const int e = Transpose ? c * D + r : r * D + c;
      const R mr = m[e * 2 * ML + ml];
      const R mi = Conjugate ? -m[e * 2 * ML + ML + ml] : m[e * 2 * ML + ML + ml];
      yr += mr * xr[c] - mi * xi[c];
      yi += mr * xi[c] + mi * xr[c];
    }
    R* a = s + (base + site.off[r]) * 2 * L;
    a[l] = yr;
    a[L + l] = yi;
  }
}

// y = M x (or M^dagger x) on one gate's group, one lane.
template <class R, int L, int KT, bool Dag, int ML = L>
QFLEET_HD inline void apply_block_lane(R* s, const GateSite& site, std::uint64_t base,
                                       const R* m, int l) {
  apply_dense_lane<R, L, 1 << KT, Dag, Dag, ML>(s, site, base, m, l);
}

// Re <lam| M |x> restricted to the D amplitudes of one group, one lane (M a
// derivative block with ML lanes, as above).
template <class R, int L, int D, int ML, class Site>
QFLEET_HD inline R sandwich_dense_lane(const R* lam, const R* x, const Site& site, std::uint64_t base,
                                       const R* m, int l) {
  const int ml = ML == 1 ? 0 : l;
  R xr[D], xi[D];
  for (int c = 0; c < D; ++c) {
    const R* a = x + (base + site.off[c]) * 2 * L;
    xr[c] = a[l];
    xi[c] = a[L + l];
  }
  R acc = 0;
  for (int r = 0; r < D; ++r) {
    R yr = 0, yi = 0;
    for (int c = 0; c < D; ++c) {
      const R mr = m[(r * D + c) * 2 * ML + ml];
      const R mi = m[(r * D + c) * 2 * ML + ML + ml];
      yr += mr * xr[c] - mi * xi[c];
      yi += mr * xi[c] + mi * xr[c];
    }
    const R* b = lam + (base + site.off[r]) * 2 * L;
    acc += b[l] * yr + b[L + l] * yi;  // Re(conj(lam) * y)
  }
  return acc;
}

// Re <lam| M |phi> on one gate's group, one lane.
template <class R, int L, int KT, int ML = L>
QFLEET_HD inline R sandwich_lane(const R* lam, const R* phi, const GateSite& site,
                                 std::uint64_t base, const R* m, int l) {
  return sandwich_dense_lane<R, L, 1 << KT, ML>(lam, phi, site, base, m, l);
}

// One step of the reverse sweep on one group, one lane, in a single pass over it:
// psi <- U^dag psi and lam <- U^dag lam (U the block m, ML lanes as above) and, when
// Outer, the group's share of the outer product outer[c][r] += psi'[c] conj(lam[r])
// (psi' after un-applying, lam before; outer holds [D*D] complex entries laid out as
// a block of OL lanes, this group's in lane ol: the cpu tiles' own lanes, or a run
// of consecutive groups of one sample). Every parameter's derivative then follows
// from outer alone: Re <lam| dU |psi'> = Re sum_{r,c} dU[r][c] outer[c][r]
// (outer_trace_lane), instead of one sandwich pass over the state per parameter.
template <class R, int L, int KT, bool Outer, int ML = L, int OL = L>
QFLEET_HD inline void adjoint_step_lane(R* psi, R* lam, const GateSite& site, std::uint64_t base,
                                        const R* m, R* outer, int l, int ol) {
  constexpr int D = 1 << KT;
  const int ml = ML == 1 ? 0 : l;
  R pr[D], pi[D], lr[D], li[D];
  for (int c = 0; c < D; ++c) {
    const std::uint64_t i = (base + site.off[c]) * 2 * L;
    pr[c] = psi[i + l];
    pi[c] = psi[i + L + l];
    lr[c] = lam[i + l];
    li[c] = lam[i + L + l];
  }
  for (int r = 0; r < D; ++r) {
    R ypr = 0, ypi = 0, ylr = 0, yli = 0;
    for (int c = 0; c < D; ++c) {
      const int e = c * D + r;  // (U^dag)[r][c] = conj(U[c][r])
      const R mr = m[e * 2 * ML + ml];
      const R mi = -m[e * 2 * ML + ML + ml];
      ypr += mr * pr[c] - mi * pi[c];
      ypi += mr * pi[c] + mi * pr[c];
      ylr += mr * lr[c] - mi * li[c];
      yli += mr * li[c] + mi * lr[c];
    }
    const std::uint64_t i = (base + site.off[r]) * 2 * L;
    psi[i + l] = ypr;
    psi[i + L + l] = ypi;
    lam[i + l] = ylr;
    lam[i + L + l] = yli;
    if constexpr (Outer) {
      for (int q = 0; q < D; ++q) {  // outer[r][q] += psi'[r] conj(lam[q])
        const int e = r * D + q;
        outer[e * 2 * OL + ol] += ypr * lr[q] + ypi * li[q];
        outer[e * 2 * OL + OL + ol] += ypi * lr[q] - ypr * li[q];
      }
    }
  }
}

// Re sum_{r,c} dU[r][c] outer[c][r] for one lane: Re <lam| dU |psi'> from the
// outer product adjoint_step_lane accumulated (dU a derivative block with ML lanes).
template <class R, int L, int KT, int ML = L>
QFLEET_HD inline R outer_trace_lane(const R* dm, const R* outer, int l) {
  constexpr int D = 1 << KT;
  const int ml = ML == 1 ? 0 : l;
  R acc = 0;
  for (int r = 0; r < D; ++r) {
    for (int c = 0; c < D; ++c) {
      const int e = r * D + c, t = c * D + r;
      acc += dm[e * 2 * ML + ml] * outer[t * 2 * L + l] - dm[e * 2 * ML + ML + ml] * outer[t * 2 * L + L + l];
    }
  }
  return acc;
}


QFLEET_HD inline int parity64(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __popcll(v) & 1;
#else
  return __builtin_popcountll(v) & 1;
#endif
}

// The phase i^ny (-1)^popcount(i & z) as (re, im) in {+-1, +-i}.
QFLEET_HD inline void pauli_phase(const PauliMasks& p, std::uint64_t i, int& pr, int& pi) {
  int k = (p.ny + 2 * parity64(i & p.z)) & 3;  // power of i
  pr = (k == 0) ? 1 : (k == 2 ? -1 : 0);
  pi = (k == 1) ? 1 : (k == 3 ? -1 : 0);
}

// Contribution of basis index i to Re <psi|P|psi>: Re(conj(psi[i^x]) * phase(i) * psi[i]).
template <class R, int L>
QFLEET_HD inline R pauli_term_lane(const R* psi, const PauliMasks& p, std::uint64_t i, int l) {
  int pr, pi;
  pauli_phase(p, i, pr, pi);
  const R* a = psi + i * 2 * L;
  const R* b = psi + (i ^ p.x) * 2 * L;
  const R yr = pr * a[l] - pi * a[L + l];
  const R yi = pr * a[L + l] + pi * a[l];
  return b[l] * yr + b[L + l] * yi;
}

// lam[i ^ x] += coef * phase(i) * psi[i]   (accumulates P|psi> into lam).
template <class R, int L>
QFLEET_HD inline void pauli_accumulate_lane(R* lam, const R* psi, const PauliMasks& p,
                                            std::uint64_t i, R coef, int l) {
  int pr, pi;
  pauli_phase(p, i, pr, pi);
  const R* a = psi + i * 2 * L;
  R* b = lam + (i ^ p.x) * 2 * L;
  b[l] += coef * (pr * a[l] - pi * a[L + l]);
  b[L + l] += coef * (pr * a[L + l] + pi * a[l]);
}

// Index of the outcome of basis index i over the measured bit positions
// (pos[0] is the most significant outcome bit).
QFLEET_HD inline std::uint64_t outcome_index(std::uint64_t i, const int* pos, int k) {
  std::uint64_t o = 0;
  for (int j = 0; j < k; ++j) o = (o << 1) | ((i >> pos[j]) & 1u);
  return o;
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
