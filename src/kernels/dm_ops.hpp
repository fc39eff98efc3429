// Density-matrix kernel bodies, written once for host and device. The layout is
// the state-vector one (kernels/statevector.hpp): a tile of L samples, amplitude i
// of lane l at s[i*2L + l] (re) and s[i*2L + L + l] (im), blocks m[e*2L + l] likewise
// (or ML = 1: one block for every lane). The vectorised density matrix and the
// sites are described in kernels/dm_plan.hpp.
#pragma once

#include <cstdint>

#include "kernels/dm_plan.hpp"
#include "kernels/hd.hpp"
#include "kernels/statevector.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// How a block is applied: M, conj(M) (a gate's column side), M^dag (the adjoint
// sweep's row side and channels), M^T (the adjoint sweep's column side).
enum DmMode : int { kDmN = 0, kDmConj = 1, kDmDag = 2, kDmTrans = 3 };

// y = M' x on one group, one lane, M' = M in mode Mode.
template <class R, int L, int D, int Mode, int ML = L>
QFLEET_HD inline void dm_apply_lane(R* s, const DmSite& site, std::uint64_t base, const R* m, int l) {
  const int ml = ML == 1 ? 0 : l;
  R xr[D], xi[D];
  for (int c = 0; c < D; ++c) {
    const R* a = s + (base + site.off[c]) * 2 * L;
    xr[c] = a[l];
    xi[c] = a[L + l];
  }
  constexpr bool transpose = Mode == kDmDag || Mode == kDmTrans;
  constexpr bool conjugate = Mode == kDmConj || Mode == kDmDag;
  for (int r = 0; r < D; ++r) {
    R yr = 0, yi = 0;
    for (int c = 0; c < D; ++c) {
      const int e = transpose ? c * D + r : r * D + c;
      const R mr = m[e * 2 * ML + ml];
      const R mi = conjugate ? -m[e * 2 * ML + ML + ml] : m[e * 2 * ML + ML + ml];
      yr += mr * xr[c] - mi * xi[c];
      yi += mr * xi[c] + mi * xr[c];
    }
    R* a = s + (base + site.off[r]) * 2 * L;
    a[l] = yr;
    a[L + l] = yi;
  }
}

// Re <lam| M |x> restricted to one group, one lane.
template <class R, int L, int D, int ML = L>
QFLEET_HD inline R dm_sandwich_lane(const R* lam, const R* x, const DmSite& site, std::uint64_t base, const R* m,
                                    int l) {
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
    acc += b[l] * yr + b[L + l] * yi;
  }
  return acc;
}

// Base index of group g of a site.
QFLEET_HD inline std::uint64_t dm_group_base(const DmSite& site, std::uint64_t g) {
  return insert_zero_bits(g, site.pos, site.k_all) | site.ctrl;
}

// Term j of Tr(P rho) = sum_j phase(j) rho[j, j^x] (P|j> = phase(j) |j^x>), real part,
// for an n-qubit register: rho[a, b] sits at (a << n) | b.
template <class R, int L>
QFLEET_HD inline R dm_pauli_term_lane(const R* rho, const PauliMasks& p, std::uint64_t j, int n, int l) {
  int pr, pi;
  pauli_phase(p, j, pr, pi);
  const R* a = rho + ((j << n) | (j ^ p.x)) * 2 * L;
  return pr * a[l] - pi * a[L + l];
}

// lam += coef P as a vectorised matrix: P[j^x, j] = phase(j).
template <class R, int L>
QFLEET_HD inline void dm_pauli_seed_lane(R* lam, const PauliMasks& p, std::uint64_t j, int n, R coef, int l) {
  int pr, pi;
  pauli_phase(p, j, pr, pi);
  R* a = lam + (((j ^ p.x) << n) | j) * 2 * L;
  a[l] += coef * pr;
  a[L + l] += coef * pi;
}

// |rho_i|^2 for one entry (purity Tr(rho^2) = sum over entries, rho Hermitian).
template <class R, int L>
QFLEET_HD inline R dm_norm2_lane(const R* rho, std::uint64_t i, int l) {
  const R* a = rho + i * 2 * L;
  return a[l] * a[l] + a[L + l] * a[L + l];
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
