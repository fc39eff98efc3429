// Density-matrix kernel bodies, written once for host and device. The layout is
// the state-vector one (kernels/statevector.hpp): a tile of L samples, amplitude i
// of lane l at s[i*2L + l] (re) and s[i*2L + L + l] (im), blocks m[e*2L + l] likewise
// (or ML = 1: one block for every lane). The vectorised density matrix and the
// sites are described in kernels/dm_plan.hpp.
#pragma once

#include <cstdint>

#include "kernels/channel_matrix.hpp"
#include "kernels/dm_plan.hpp"
#include "kernels/gate_matrix.hpp"
#include "kernels/hd.hpp"
#include "kernels/statevector.hpp"
#include "kernels/sv_params.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// op's block (deriv < 0) or its derivative by parameter deriv for sample b, computed in
// T: the cpu executor's in double (cpu/dm_cpu_impl.hpp), the group body's table in the
// call's precision (kernels/dm_group.hpp). Constant blocks come from the plan.
template <class T, class R>
QFLEET_HD inline void dm_op_block(const DmPlan& p, const SvCall<R>& c, const DmOp& op, std::size_t b, int deriv,
                                  Cx<T>* blk) {
  if (op.fixed >= 0) {
    for (int e = 0; e < op.dim * op.dim; ++e) {
      const double* f = p.fixed_blocks + 2 * (op.fixed + e);
      blk[e] = {static_cast<T>(f[0]), static_cast<T>(f[1])};
    }
    return;
  }
  T q[4] = {0, 0, 0, 0};
  for (int j = 0; j < op.n_params; ++j) q[j] = param_value<T>(p, c, op.first_param + j, b);
  if (op.kind == kDmChannel) {
    if (deriv < 0) {
      channel_superop<T>(op.channel, q, blk);
    } else {
      channel_superop_derivative<T>(op.channel, q, deriv, blk);
    }
  } else if (deriv < 0) {
    gate_block<T>(op.gate, q, blk);
  } else {
    gate_block_derivative<T>(op.gate, q, deriv, blk);
  }
}

// How a block is applied: M, conj(M) (a gate's column side), M^dag (the adjoint
// sweep's row side and channels), M^T (the adjoint sweep's column side).
enum DmMode : int { kDmN = 0, kDmConj = 1, kDmDag = 2, kDmTrans = 3 };

// y = M' x on one group, one lane, M' = M in mode Mode.
template <class R, int L, int D, int Mode, int ML = L>
QFLEET_HD inline void dm_apply_lane(R* s, const DmSite& site, std::uint64_t base, const R* m, int l) {
  constexpr bool transpose = Mode == kDmDag || Mode == kDmTrans;
  constexpr bool conjugate = Mode == kDmConj || Mode == kDmDag;
  apply_dense_lane<R, L, D, transpose, conjugate, ML>(s, site, base, m, l);
}

// Re <lam| M |x> restricted to one group, one lane.
template <class R, int L, int D, int ML = L>
QFLEET_HD inline R dm_sandwich_lane(const R* lam, const R* x, const DmSite& site, std::uint64_t base, const R* m,
                                    int l) {
  return sandwich_dense_lane<R, L, D, ML>(lam, x, site, base, m, l);
}

// dm_apply_lane (mode Mode) on lam, fused with the outer product of the group's x and
// lam before the update, outer[c][r] += x[c] conj(lam[r]) (per-lane block of D x D
// entries): the adjoint sweep's row-side un-apply of a gate and all its parameters'
// sandwiches in one pass, Re <lam| dU |x> = Re tr(dU outer) (outer_trace_lane).
template <class R, int L, int D, int Mode, int ML = L>
QFLEET_HD inline void dm_apply_outer_lane(R* lam, const R* x, const DmSite& site, std::uint64_t base, const R* m,
                                          R* outer, int l) {
  R lr[D], li[D];
  for (int c = 0; c < D; ++c) {
    const R* a = lam + (base + site.off[c]) * 2 * L;
    lr[c] = a[l];
    li[c] = a[L + l];
  }
  for (int c = 0; c < D; ++c) {
    const R* a = x + (base + site.off[c]) * 2 * L;
    const R xr = a[l], xi = a[L + l];
    for (int r = 0; r < D; ++r) {
      const int e = c * D + r;
      outer[e * 2 * L + l] += xr * lr[r] + xi * li[r];
      outer[e * 2 * L + L + l] += xi * lr[r] - xr * li[r];
    }
  }
  dm_apply_lane<R, L, D, Mode, ML>(lam, site, base, m, l);  // reads the group again, from L1
}

// A gate block that is exactly X on one group: the amplitudes at local indices 0 and
// 1 swap (in every mode: X is real and symmetric).
template <class R, int L>
QFLEET_HD inline void dm_swap_lane(R* s, const DmSite& site, std::uint64_t base, int l) {
  R* a = s + (base + site.off[0]) * 2 * L;
  R* b = s + (base + site.off[1]) * 2 * L;
  const R ar = a[l], ai = a[L + l];
  a[l] = b[l];
  a[L + l] = b[L + l];
  b[l] = ar;
  b[L + l] = ai;
}

// A one-wire catalogue channel on one group (DmOp::population_coherence): the real
// entries S[0][0], S[0][3], S[3][0], S[3][3] mix the populations (local indices 0 = rho00,
// 3 = rho11) and S[1][1], S[1][2], S[2][1], S[2][2] the coherences (1 = rho01, 2 = rho10);
// Transpose applies S^T (= S^dag: the entries are real), the adjoint sweep's form.
template <class R, int L, bool Transpose, int ML = L>
QFLEET_HD inline void dm_channel1_lane(R* s, const DmSite& site, std::uint64_t base, const R* m, int l) {
  const int ml = ML == 1 ? 0 : l;
  auto e = [&](int r, int c) { return Transpose ? m[(c * 4 + r) * 2 * ML + ml] : m[(r * 4 + c) * 2 * ML + ml]; };
  R* a0 = s + (base + site.off[0]) * 2 * L;
  R* a1 = s + (base + site.off[1]) * 2 * L;
  R* a2 = s + (base + site.off[2]) * 2 * L;
  R* a3 = s + (base + site.off[3]) * 2 * L;
  const R p0r = a0[l], p0i = a0[L + l], p3r = a3[l], p3i = a3[L + l];
  const R c1r = a1[l], c1i = a1[L + l], c2r = a2[l], c2i = a2[L + l];
  const R s00 = e(0, 0), s03 = e(0, 3), s30 = e(3, 0), s33 = e(3, 3);
  const R s11 = e(1, 1), s12 = e(1, 2), s21 = e(2, 1), s22 = e(2, 2);
  a0[l] = s00 * p0r + s03 * p3r;
  a0[L + l] = s00 * p0i + s03 * p3i;
  a3[l] = s30 * p0r + s33 * p3r;
  a3[L + l] = s30 * p0i + s33 * p3i;
  a1[l] = s11 * c1r + s12 * c2r;
  a1[L + l] = s11 * c1i + s12 * c2i;
  a2[l] = s21 * c1r + s22 * c2r;
  a2[L + l] = s21 * c1i + s22 * c2i;
}

// Re <lam| S |x> on one group for such a channel's (derivative) superoperator S.
template <class R, int L, int ML = L>
QFLEET_HD inline R dm_channel1_sandwich_lane(const R* lam, const R* x, const DmSite& site, std::uint64_t base,
                                             const R* m, int l) {
  const int ml = ML == 1 ? 0 : l;
  auto e = [&](int r, int c) { return m[(r * 4 + c) * 2 * ML + ml]; };
  auto re = [&](const R* v, int r) { return v[(base + site.off[r]) * 2 * L + l]; };
  auto im = [&](const R* v, int r) { return v[(base + site.off[r]) * 2 * L + L + l]; };
  const R y0r = e(0, 0) * re(x, 0) + e(0, 3) * re(x, 3), y0i = e(0, 0) * im(x, 0) + e(0, 3) * im(x, 3);
  const R y3r = e(3, 0) * re(x, 0) + e(3, 3) * re(x, 3), y3i = e(3, 0) * im(x, 0) + e(3, 3) * im(x, 3);
  const R y1r = e(1, 1) * re(x, 1) + e(1, 2) * re(x, 2), y1i = e(1, 1) * im(x, 1) + e(1, 2) * im(x, 2);
  const R y2r = e(2, 1) * re(x, 1) + e(2, 2) * re(x, 2), y2i = e(2, 1) * im(x, 1) + e(2, 2) * im(x, 2);
  return re(lam, 0) * y0r + im(lam, 0) * y0i + re(lam, 3) * y3r + im(lam, 3) * y3i + re(lam, 1) * y1r +
         im(lam, 1) * y1i + re(lam, 2) * y2r + im(lam, 2) * y2i;
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
