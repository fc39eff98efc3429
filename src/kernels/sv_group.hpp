// One circuit run by a cooperating group of threads: forward sweep, measurements
// and the full adjoint backward in one pass, written once for host and device.
//
// The cuda backend runs it with a group = a warp slice or a thread block and the
// two states in shared (or global) memory; the cpu tests run the very same body
// with a group of std::threads and a std::barrier (tests/unit/test_sv_group.cpp).
// The group type G provides
//   int rank(), int size()            this thread's place in the group
//   void sync()                       barrier over the group
//   R sum(R v)                        sum over the group, returned to every member
//                                     (in a fixed order: deterministic)
//   void atomic_add(R* p, R v)        for weight gradients summed over the batch
//   int n_parts(), int part()         the parts the group sums without a barrier (a
//   R part_sum(R v), bool part_leader()  warp; a lone thread) and this thread's:
//                                     with a block table (kernels/sv_table.hpp), the
//                                     part's sum, valid at its leader
// and every member calls the body with the same arguments, so every sync and sum
// is reached by the whole group (control flow that leads to them depends only on
// the plan and the call, never on the rank).
//
// States use the cpu backend's lane layout: a tile of L samples side by side,
// amplitude i of lane l at s[2Li + l] (real) and s[2Li + L + l] (imaginary), so
// kern::apply_block_lane / sandwich_lane / pauli_* are called exactly as the cpu
// executor calls them. One sample per group (L = 1, l = 0) is the warp and block
// shapes; the interleaved shape runs L = 32 groups side by side on one tile, the
// group of lane l being the threads that share l, so a warp (32 lanes, one group
// member each) touches the same amplitude of 32 samples: one coalesced access.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/statevector.hpp"
#include "kernels/sv_params.hpp"
#include "kernels/sv_table.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Block (deriv < 0) or its derivative by parameter deriv, as 2*D*D interleaved reals.
template <class R, int D>
QFLEET_HD inline void op_block(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, int deriv,
                               R* m) {
  Cx<R> blk[D * D];
  op_block_cx<R, D>(p, c, op, b, deriv, blk);
  for (int e = 0; e < D * D; ++e) {
    m[2 * e] = blk[e].re;
    m[2 * e + 1] = blk[e].im;
  }
}

// op applied to the group's amplitudes: its block from the table when there is one,
// else computed here by every member.
template <class R, int L, int KT, bool Dag, class G>
QFLEET_HD inline void group_apply(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, R* s,
                                  G& g, int l, const R* tab) {
  constexpr int D = 1 << KT;
  const std::uint64_t ng = p.dim >> op.site.k_all;
  if (tab != nullptr) {
    const R* m = sv_table_block<L>(tab, op);
    for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
      const std::uint64_t base = insert_zero_bits(q, op.site.pos, op.site.k_all) | op.site.ctrl;
      apply_block_lane<R, L, KT, Dag, L>(s, op.site, base, m, l);
    }
    return;
  }
  R m[2 * D * D];
  op_block<R, D>(p, c, op, b, -1, m);
  for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
    const std::uint64_t base = insert_zero_bits(q, op.site.pos, op.site.k_all) | op.site.ctrl;
    apply_block_lane<R, L, KT, Dag, 1>(s, op.site, base, m, l);
  }
}

template <class R, int L, bool Dag, class G>
QFLEET_HD inline void group_apply_op(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, R* s,
                                     G& g, int l, const R* tab) {
  switch (op.site.kt) {
    case 1:
      return group_apply<R, L, 1, Dag>(p, c, op, b, s, g, l, tab);
    default:  // 2 (kMaxBlockTargets)
      return group_apply<R, L, 2, Dag>(p, c, op, b, s, g, l, tab);
  }
}

// Amplitude i of lane l in a tile of L samples: real part, imaginary part.
template <int L>
QFLEET_HD inline std::uint64_t re_at(std::uint64_t i, int l) {
  return i * 2 * L + std::uint64_t(l);
}
template <int L>
QFLEET_HD inline std::uint64_t im_at(std::uint64_t i, int l) {
  return i * 2 * L + L + std::uint64_t(l);
}

// s (and s2 when given) <- the run's permutation (Dag: its inverse), lane l:
//   forward  s'[j] = phase[src[j]] s[src[j]]
//   inverse  s'[i] = conj(phase[i]) s[dst[i]]
// Every member gathers amplitudes rank + t size into registers; the group syncs;
// every member writes them; the group syncs.
template <class R, int L, bool Dag, class G>
QFLEET_HD_NOINLINE void group_permute(const SvPlan& p, const PermRun& run, R* s, R* s2, G& g, int l) {
  const std::uint32_t* from = p.perm_index + run.index + (Dag ? p.dim : 0);
  const double* phase = run.phase >= 0 ? p.perm_phase + 2 * run.phase : nullptr;
  const std::uint64_t rank = std::uint64_t(g.rank()), size = std::uint64_t(g.size());
  R v[2][kPermPerMember][2] = {};
  for (int t = 0; t < kPermPerMember; ++t) {
    const std::uint64_t j = rank + std::uint64_t(t) * size;
    if (j >= p.dim) continue;
    const std::uint64_t f = from[j];
    R wr = 1, wi = 0;
    if (phase != nullptr) {
      const std::uint64_t at = 2 * (Dag ? j : f);
      wr = static_cast<R>(phase[at]);
      wi = Dag ? -static_cast<R>(phase[at + 1]) : static_cast<R>(phase[at + 1]);
    }
    for (int q = 0; q < 2; ++q) {
      const R* x = q == 0 ? s : s2;
      if (x == nullptr) continue;
      const R a = x[re_at<L>(f, l)], b = x[im_at<L>(f, l)];
      v[q][t][0] = wr * a - wi * b;
      v[q][t][1] = wr * b + wi * a;
    }
  }
  g.sync();
  for (int t = 0; t < kPermPerMember; ++t) {
    const std::uint64_t j = rank + std::uint64_t(t) * size;
    if (j >= p.dim) continue;
    for (int q = 0; q < 2; ++q) {
      R* x = q == 0 ? s : s2;
      if (x == nullptr) continue;
      x[re_at<L>(j, l)] = v[q][t][0];
      x[im_at<L>(j, l)] = v[q][t][1];
    }
  }
  g.sync();
}

// row[j] = probability that the bits at pos (pos[0] most significant) read j;
// row == nullptr computes without writing (a padding member of the batch).
template <class R, int L, class G>
QFLEET_HD inline void group_probs(const R* psi, int n, const int* pos, const int* sorted, int k, R* row, G& g,
                                  int l) {
  const std::uint64_t no = std::uint64_t{1} << k;
  const std::uint64_t rest = std::uint64_t{1} << (n - k);
  auto fixed_bits = [&](std::uint64_t j) {
    std::uint64_t f = 0;
    for (int t = 0; t < k; ++t) {
      if ((j >> (k - 1 - t)) & 1u) f |= std::uint64_t{1} << pos[t];
    }
    return f;
  };
  auto prob_at = [&](std::uint64_t i) {
    const R a = psi[re_at<L>(i, l)], b = psi[im_at<L>(i, l)];
    return a * a + b * b;
  };
  if (no * 8 <= std::uint64_t(g.size())) {  // few outcomes: the whole group sums each one
    for (std::uint64_t j = 0; j < no; ++j) {
      const std::uint64_t f = fixed_bits(j);
      R part = 0;
      for (std::uint64_t r = std::uint64_t(g.rank()); r < rest; r += std::uint64_t(g.size())) {
        part += prob_at(insert_zero_bits(r, sorted, k) | f);
      }
      const R tot = g.sum(part);
      if (row != nullptr && g.rank() == 0) row[j] = tot;
    }
  } else {  // one member per outcome
    for (std::uint64_t j = std::uint64_t(g.rank()); j < no; j += std::uint64_t(g.size())) {
      const std::uint64_t f = fixed_bits(j);
      R tot = 0;
      for (std::uint64_t r = 0; r < rest; ++r) tot += prob_at(insert_zero_bits(r, sorted, k) | f);
      if (row != nullptr) row[j] = tot;
    }
  }
}

// Parameter slot s's gradient for sample b from its group total Re <lam| dU/dp |psi>
// (one member calls it).
template <class R, class G>
QFLEET_HD inline void add_param_gradient(const SvPlan& p, const SvCall<R>& c, std::size_t b, int s, R tot, G& g) {
  const ParamDesc& d = p.params[s];
  const R gv = static_cast<R>(d.scale) * (2 * tot);
  if (d.kind == kParamInput) {
    c.grad_inputs[b * p.n_inputs + d.index] += gv;
  } else if (c.reduce_weights) {
    g.atomic_add(&c.grad_weights[d.index], gv);
  } else {
    c.grad_weights[b * p.n_weights + d.index] += gv;
  }
}

// Whether group type G syncs with a warp's barrier (an optional `static constexpr bool
// kWarpSync = true` member: the warp shape). A run of diagonal gates saves such a group
// little, and fusing runs there cost the complex64 warp kernel 30 registers (168 -> 198,
// 12 -> 10 warps an SM; `scripts/ptxas_report.py`, 2026-11-30), so those groups apply
// the gates one by one.
template <class G, class = void>
struct warp_synchronous {
  static constexpr bool value = false;
};
template <class G>
struct warp_synchronous<G, std::void_t<decltype(G::kWarpSync)>> {
  static constexpr bool value = G::kWarpSync;
};

// A run of diagonal gates (OpDesc::diag_first .. diag_last) scales each amplitude by
// each gate in turn, so a member applies the whole run to the amplitudes it owns
// (rank + t size) without waiting for the others, and the run ends at one barrier
// where its gates take one each. The entries come from the group's block table (the
// body fuses runs only with one, and not in warp-synchronous groups: sv_group_run),
// so no block is formed from the angles.

// The gate-local index of basis index i (its target bits, first target most
// significant) in a gate of D = 2^kt entries on site, and whether its control bits
// are all set (the register body's lanes, the diagonal runs' amplitudes). The loops
// run over constants, so what they index stays in registers rather than a stack array
// indexed at run time.
template <int D>
QFLEET_HD inline int local_index(const GateSite& site, std::uint64_t i, bool& on) {
  on = (i & site.ctrl) == site.ctrl;
  const std::uint64_t t = i & site.off[D - 1];
  int r = 0;
  for (int q = 1; q < D; ++q) r = (t == site.off[q]) ? q : r;
  return r;
}
template <class R, int D>
QFLEET_HD inline Cx<R> pick(const Cx<R> (&d)[D], int r) {
  Cx<R> z = d[0];
  for (int j = 1; j < D; ++j) z = r == j ? d[j] : z;
  return z;
}

// The diagonal of op's block (deriv < 0) or of its derivative by its parameter
// (deriv = 0), from the table.
template <class R, int L, int D>
QFLEET_HD inline void diagonal_of(const SvPlan& p, const OpDesc& op, int deriv, const R* tab, int l, Cx<R> (&d)[D]) {
  const R* m = deriv < 0 ? sv_table_block<L>(tab, op) : sv_table_dblock<L>(p, tab, op, deriv, D);
  for (int r = 0; r < D; ++r) d[r] = {m[2 * (r * D + r) * L + l], m[2 * (r * D + r) * L + L + l]};
}

// Amplitude i of lane l times z (Dag: conj(z)).
template <class R, int L, bool Dag>
QFLEET_HD inline void scale_amplitude(R* s, std::uint64_t i, int l, Cx<R> z) {
  const R zi = Dag ? -z.im : z.im;
  const R a = s[re_at<L>(i, l)], b = s[im_at<L>(i, l)];
  s[re_at<L>(i, l)] = z.re * a - zi * b;
  s[im_at<L>(i, l)] = z.re * b + zi * a;
}

// One diagonal gate on this member's amplitudes (no barrier).
template <class R, int L, int D, class G>
QFLEET_HD inline void diagonal_apply(const SvPlan& p, const OpDesc& op, R* psi, G& g, int l, const R* tab) {
  Cx<R> d[D] = {};
  diagonal_of<R, L, D>(p, op, -1, tab, l, d);
  for (std::uint64_t i = std::uint64_t(g.rank()); i < p.dim; i += std::uint64_t(g.size())) {
    bool on = false;
    const int r = local_index<D>(op.site, i, on);
    if (on) scale_amplitude<R, L, false>(psi, i, l, pick(d, r));
  }
}

// The run starting at op `first` applied to psi; it syncs.
template <class R, int L, class G>
QFLEET_HD_NOINLINE void group_diagonal_run(const SvPlan& p, int first, R* psi, G& g, int l, const R* tab) {
  for (int k = first; k <= p.ops[first].diag_last; ++k) {
    if (p.ops[k].site.kt == 1) {
      diagonal_apply<R, L, 2>(p, p.ops[k], psi, g, l, tab);
    } else {  // 2 (kMaxBlockTargets)
      diagonal_apply<R, L, 4>(p, p.ops[k], psi, g, l, tab);
    }
  }
  g.sync();
}

// One diagonal gate in reverse on this member's amplitudes, as group_adjoint_op_table
// takes a gate (psi <- U^dag psi, 2 Re <lam| dU/dp |psi> summed by part into the table,
// lam <- U^dag lam), amplitude by amplitude. A diagonal gate has at most one parameter
// (core/diag_runs.cpp).
template <class R, int L, int D, class G>
QFLEET_HD inline void diagonal_adjoint(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, R* psi, R* lam, G& g,
                                       int l, R* tab) {
  Cx<R> d[D] = {}, dd[D] = {};
  diagonal_of<R, L, D>(p, op, -1, tab, l, d);
  const bool want = sv_table_dparams(op) == 1 && param_wanted(p, c, op.first_param);
  if (want) diagonal_of<R, L, D>(p, op, 0, tab, l, dd);
  R acc = 0;
  for (std::uint64_t i = std::uint64_t(g.rank()); i < p.dim; i += std::uint64_t(g.size())) {
    bool on = false;
    const int r = local_index<D>(op.site, i, on);
    if (!on) continue;
    const Cx<R> z = pick(d, r);
    scale_amplitude<R, L, true>(psi, i, l, z);
    if (want) {  // Re(conj(lam_i) dd_r psi_i)
      const Cx<R> y = pick(dd, r) * Cx<R>{psi[re_at<L>(i, l)], psi[im_at<L>(i, l)]};
      acc += lam[re_at<L>(i, l)] * y.re + lam[im_at<L>(i, l)] * y.im;
    }
    scale_amplitude<R, L, true>(lam, i, l, z);
  }
  if (!want) return;
  const R v = g.part_sum(acc);
  if (g.part_leader()) *sv_table_partial<L>(p, tab, op.first_param, g.part(), g.n_parts(), l) = v;
}

// The run ending at op `last`, in reverse; it syncs.
template <class R, int L, class G>
QFLEET_HD_NOINLINE void group_diagonal_adjoint(const SvPlan& p, const SvCall<R>& c, int last, R* psi, R* lam, G& g,
                                               int l, R* tab) {
  for (int k = last; k >= p.ops[last].diag_first; --k) {
    if (p.ops[k].site.kt == 1) {
      diagonal_adjoint<R, L, 2>(p, c, p.ops[k], psi, lam, g, l, tab);
    } else {  // 2 (kMaxBlockTargets)
      diagonal_adjoint<R, L, 4>(p, c, p.ops[k], psi, lam, g, l, tab);
    }
  }
  g.sync();
}

// One reverse step of the adjoint method on op: psi <- U^dag psi,
// g_j += 2 Re <lam| dU/dp_j |psi>, lam <- U^dag lam, fused per amplitude group
// (all three touch the same 2^k amplitudes), then a sum over the group per parameter.
template <class R, int L, int KT, class G>
QFLEET_HD inline void group_adjoint_op(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b,
                                       bool active, R* psi, R* lam, G& g, int l) {
  constexpr int D = 1 << KT;
  constexpr int NP = KT == 1 ? kMaxGateParams : 1;  // 2-qubit blocks have at most one parameter
  R m[2 * D * D];
  op_block<R, D>(p, c, op, b, -1, m);
  R dm[NP][2 * D * D];
  bool want[NP];
  const int np = op.n_params < NP ? op.n_params : NP;
  for (int j = 0; j < NP; ++j) {
    want[j] = false;
    if (j >= np || op.fixed >= 0) continue;
    want[j] = param_wanted(p, c, op.first_param + j);
    if (want[j]) op_block<R, D>(p, c, op, b, j, dm[j]);
  }
  R acc[NP];
  for (int j = 0; j < NP; ++j) acc[j] = 0;
  const std::uint64_t ng = p.dim >> op.site.k_all;
  for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
    const std::uint64_t base = insert_zero_bits(q, op.site.pos, op.site.k_all) | op.site.ctrl;
    apply_block_lane<R, L, KT, true, 1>(psi, op.site, base, m, l);
    for (int j = 0; j < NP; ++j) {
      if (want[j]) acc[j] += sandwich_lane<R, L, KT, 1>(lam, psi, op.site, base, dm[j], l);
    }
    apply_block_lane<R, L, KT, true, 1>(lam, op.site, base, m, l);
  }
  for (int j = 0; j < NP; ++j) {
    if (!want[j]) continue;
    const R tot = g.sum(acc[j]);
    if (active && g.rank() == 0) add_param_gradient(p, c, b, op.first_param + j, tot, g);
  }
  g.sync();
}

// group_adjoint_op with the blocks from the table, each parameter's part sums
// stored in it for sv_table_gradients (no group-wide sum here).
template <class R, int L, int KT, class G>
QFLEET_HD inline void group_adjoint_op_table(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, R* psi, R* lam,
                                             G& g, int l, R* tab) {
  constexpr int D = 1 << KT;
  constexpr int NP = KT == 1 ? kMaxGateParams : 1;
  const R* m = sv_table_block<L>(static_cast<const R*>(tab), op);
  const R* dm[NP];
  const int np = sv_table_dparams(op);
  for (int j = 0; j < NP; ++j) {
    const bool want = j < np && param_wanted(p, c, op.first_param + j);
    dm[j] = want ? sv_table_dblock<L>(p, static_cast<const R*>(tab), op, j, D) : nullptr;
  }
  R acc[NP];
  for (int j = 0; j < NP; ++j) acc[j] = 0;
  const std::uint64_t ng = p.dim >> op.site.k_all;
  for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
    const std::uint64_t base = insert_zero_bits(q, op.site.pos, op.site.k_all) | op.site.ctrl;
    apply_block_lane<R, L, KT, true, L>(psi, op.site, base, m, l);
    for (int j = 0; j < NP; ++j) {
      if (dm[j] != nullptr) acc[j] += sandwich_lane<R, L, KT, L>(lam, psi, op.site, base, dm[j], l);
    }
    apply_block_lane<R, L, KT, true, L>(lam, op.site, base, m, l);
  }
  for (int j = 0; j < NP; ++j) {
    if (dm[j] == nullptr) continue;
    const R v = g.part_sum(acc[j]);
    if (g.part_leader()) *sv_table_partial<L>(p, tab, op.first_param + j, g.part(), g.n_parts(), l) = v;
  }
  g.sync();
}

// After the reverse sweep: each wanted parameter's part sums added in part order
// (the group sum's order) and written as group_adjoint_op writes them, ops last to
// first.
template <int L, class R, class G>
QFLEET_HD inline void sv_table_gradients(const SvPlan& p, const SvCall<R>& c, std::size_t b, bool active, R* tab,
                                         G& g, int l) {
  if (!active || g.rank() != 0) return;
  for (int k = p.n_ops - 1; k >= 0; --k) {
    const OpDesc& op = p.ops[k];
    for (int j = 0; j < sv_table_dparams(op); ++j) {
      if (!param_wanted(p, c, op.first_param + j)) continue;
      R tot = 0;
      for (int w = 0; w < g.n_parts(); ++w) tot += *sv_table_partial<L>(p, tab, op.first_param + j, w, g.n_parts(), l);
      add_param_gradient(p, c, b, op.first_param + j, tot, g);
    }
  }
}

template <class R>
QFLEET_HD inline R amp_value(const SvPlan& p, const SvCall<R>& c, std::size_t b, int j) {
  return j < p.amp_n_features ? c.inputs[b * p.n_inputs + p.amp_first_input + j] : static_cast<R>(p.amp_pad);
}

// Runs sample b (clamped into the batch by the caller; active = false for padding
// members, which compute but write nothing) as lane l of a tile of L samples; psi
// and lam hold the tile's 2^n complex amplitudes each (L = 1: one sample's); tab,
// when given, is the group's block table (sv_table_reals<L>(p, adjoint, g.n_parts())).
template <int L = 1, class R, class G>
QFLEET_HD inline void sv_group_run(const SvPlan& p, const SvCall<R>& c, std::size_t b, bool active, R* psi,
                                   R* lam, G& g, int l = 0, R* tab = nullptr) {
  const std::uint64_t rank = std::uint64_t(g.rank()), G_ = std::uint64_t(g.size());
  const std::uint64_t dim = p.dim;
  for (std::uint64_t i = rank; i < dim; i += G_) psi[re_at<L>(i, l)] = psi[im_at<L>(i, l)] = 0;
  if (tab != nullptr) sv_table_fill<L>(p, c, b, c.cotangents != nullptr, tab, g.rank(), g.size(), l);
  g.sync();
  R amp_norm = 1;
  if (p.amp) {
    R part = 0;
    for (std::uint64_t j = rank; j < std::uint64_t(p.amp_len); j += G_) {
      const R v = amp_value(p, c, b, int(j));
      part += v * v;
    }
    const R nrm2 = g.sum(part);
    using std::sqrt;
    amp_norm = p.amp_normalize ? sqrt(nrm2) : R(1);
    for (std::uint64_t j = rank; j < std::uint64_t(p.amp_len); j += G_) {
      psi[re_at<L>(p.amp_index[j], l)] = amp_value(p, c, b, int(j)) / amp_norm;
    }
  } else if (rank == 0) {
    psi[re_at<L>(0, l)] = 1;
  }
  g.sync();

  // Fused runs where the group holds the state in kPermPerMember rounds (sv_plan.hpp: the
  // warp shape's 2^(n-1) threads always, a 256-thread block up to 10 qubits).
  const bool fuse = perm_runs_fused(p.n_perm_runs, p.dim, kPermPerMember, g.size());
  const bool fuse_diagonal = diag_runs_fused(p.n_diag_runs, tab != nullptr, !warp_synchronous<G>::value);
  for (int k = 0; k < p.n_ops; ++k) {
    if (fuse && p.ops[k].run >= 0) {  // the run's gates at once; it syncs
      const PermRun& run = p.perm_runs[p.ops[k].run];
      group_permute<R, L, false>(p, run, psi, static_cast<R*>(nullptr), g, l);
      k = run.last;
      continue;
    }
    if (fuse_diagonal && p.ops[k].diag_first == k) {  // a run of diagonal gates; it syncs
      group_diagonal_run<R, L>(p, k, psi, g, l, static_cast<const R*>(tab));
      k = p.ops[k].diag_last;
      continue;
    }
    group_apply_op<R, L, false>(p, c, p.ops[k], b, psi, g, l, static_cast<const R*>(tab));
    g.sync();
  }

  if (c.outputs != nullptr) {
    for (int k = 0; k < p.n_expvals; ++k) {
      R acc = 0;
      for (int t = p.term_begin[k]; t < p.term_begin[k + 1]; ++t) {
        R part = 0;
        for (std::uint64_t i = rank; i < dim; i += G_) part += pauli_term_lane<R, L>(psi, p.terms[t].masks, i, l);
        acc += static_cast<R>(p.terms[t].coef) * part;
      }
      const R tot = g.sum(acc);
      if (active && rank == 0) c.outputs[b * p.n_outputs + k] = tot;
    }
    for (int q = 0; q < p.n_probs; ++q) {
      const int k = p.probs_begin[q + 1] - p.probs_begin[q];
      R* row = active ? c.outputs + b * p.n_outputs + p.probs_out[q] : nullptr;
      group_probs<R, L>(psi, p.n, p.probs_pos + p.probs_begin[q], p.probs_sorted + p.probs_begin[q], k, row, g, l);
    }
  }
  if (c.extra_probs != nullptr) {
    R* row = active ? c.extra_probs + b * (std::size_t{1} << c.extra_k) : nullptr;
    group_probs<R, L>(psi, p.n, c.extra_pos, c.extra_sorted, c.extra_k, row, g, l);
  }
  if (c.states != nullptr && active) {
    R* out = c.states + b * dim * 2;
    for (std::uint64_t i = rank; i < dim; i += G_) {
      out[2 * i] = psi[re_at<L>(i, l)];
      out[2 * i + 1] = psi[im_at<L>(i, l)];
    }
  }
  if (c.cotangents == nullptr) return;

  // lam = O psi with O = sum_k cot[b, k] O_k (probabilities: projectors).
  for (std::uint64_t i = rank; i < dim; i += G_) lam[re_at<L>(i, l)] = lam[im_at<L>(i, l)] = 0;
  g.sync();
  const R* cot = c.cotangents + b * p.n_outputs;
  for (int k = 0; k < p.n_expvals; ++k) {
    for (int t = p.term_begin[k]; t < p.term_begin[k + 1]; ++t) {
      const R tc = static_cast<R>(p.terms[t].coef) * cot[k];
      for (std::uint64_t i = rank; i < dim; i += G_) pauli_accumulate_lane<R, L>(lam, psi, p.terms[t].masks, i, tc, l);
      g.sync();  // the next term writes other members' amplitudes
    }
  }
  for (int q = 0; q < p.n_probs; ++q) {
    const int* pos = p.probs_pos + p.probs_begin[q];
    const int k = p.probs_begin[q + 1] - p.probs_begin[q];
    for (std::uint64_t i = rank; i < dim; i += G_) {
      const R cj = cot[p.probs_out[q] + outcome_index(i, pos, k)];
      lam[re_at<L>(i, l)] += cj * psi[re_at<L>(i, l)];
      lam[im_at<L>(i, l)] += cj * psi[im_at<L>(i, l)];
    }
  }
  if (active) clear_gradient_rows(p, c, b, g.rank(), g.size());
  g.sync();

  for (int k = p.n_ops - 1; k >= 0; --k) {
    const OpDesc& op = p.ops[k];
    if (fuse && op.run >= 0) {  // constant gates: no gradient, psi and lam undone at once
      const PermRun& run = p.perm_runs[op.run];
      group_permute<R, L, true>(p, run, psi, lam, g, l);
      k = run.first;
      continue;
    }
    if (fuse_diagonal && op.diag_last == k) {  // a run of diagonal gates; it syncs
      group_diagonal_adjoint<R, L>(p, c, k, psi, lam, g, l, tab);
      k = op.diag_first;
      continue;
    }
    if (tab != nullptr && op.site.kt == 1) {
      group_adjoint_op_table<R, L, 1>(p, c, op, psi, lam, g, l, tab);
    } else if (tab != nullptr) {  // 2 (kMaxBlockTargets)
      group_adjoint_op_table<R, L, 2>(p, c, op, psi, lam, g, l, tab);
    } else if (op.site.kt == 1) {
      group_adjoint_op<R, L, 1>(p, c, op, b, active, psi, lam, g, l);
    } else {
      group_adjoint_op<R, L, 2>(p, c, op, b, active, psi, lam, g, l);
    }
  }
  if (tab != nullptr) sv_table_gradients<L>(p, c, b, active, tab, g, l);

  // Through the amplitude embedding: d f / d psi0_j = 2 Re lam0_j (psi0 real), then
  // through the normalisation psi0 = v / |v|: g_v = (g - psi0 (psi0 . g)) / |v|.
  if (p.amp && c.grad_inputs != nullptr) {
    R dot = 0;
    if (p.amp_normalize) {
      R part = 0;
      for (std::uint64_t j = rank; j < std::uint64_t(p.amp_len); j += G_) {
        part += 2 * lam[re_at<L>(p.amp_index[j], l)] * amp_value(p, c, b, int(j)) / amp_norm;
      }
      dot = g.sum(part);
    }
    if (active) {
      R* gx = c.grad_inputs + b * p.n_inputs + p.amp_first_input;
      for (std::uint64_t j = rank; j < std::uint64_t(p.amp_n_features); j += G_) {
        const R gj = 2 * lam[re_at<L>(p.amp_index[j], l)];
        gx[j] += embedding_feature_gradient(p.amp_normalize, gj, amp_value(p, c, b, int(j)), amp_norm, dot);
      }
    }
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
