// A sample's gate blocks computed once, before its sweeps, into memory its group
// shares (on a GPU: shared memory), for kernels/sv_group.hpp. Without it every member
// computes each gate's block from the sample's angles at that gate: a chain of plan
// and parameter loads and a sincos before every step of both sweeps (the 2026-11-28
// H200 profile of the Target row: 35% of the cycles between a warp's instructions
// waiting on L1TEX loads, 12.5% of the warp slots occupied). With it the members compute the blocks of different
// ops side by side, once, and each step reads its block from the table.
//
// The table also holds the adjoint's parameter partials: one per (parameter slot,
// part of the group), a part being what the group sums without a barrier (a warp on
// a GPU). The adjoint step stores its parts' sums there instead of a group-wide sum
// (two barriers) per parameter; one pass after the sweep adds them in part order,
// the order of the group's own sum, so the gradients have the same bits.
//
// Layout for tiles of L samples (lane l), entries as the cpu tiles scatter them
// (apply_block_lane's ML = L form): [mats: mat_entries][dmats: dmat_entries] complex
// entries, entry e of lane l at 2eL + l (real) and 2eL + L + l (imaginary); then the
// partials, slot s of part w of lane l at (s * parts + w) L + l.
#pragma once

#include <cstddef>

#include "kernels/sv_params.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Reals of a table for tiles of L samples and a group of `parts` parts (0: a body
// that sums its parameters without the table, kernels/sv_lanes.hpp).
template <int L>
QFLEET_HD inline std::size_t sv_table_reals(const SvPlan& p, bool adjoint, int parts) {
  std::size_t r = p.mat_entries * 2 * L;
  if (adjoint) r += p.dmat_entries * 2 * L + std::size_t(p.n_params) * std::size_t(parts) * L;
  return r;
}

template <int L, class R>
QFLEET_HD inline R* sv_table_block(R* tab, const OpDesc& op) {
  return tab + op.mat_entry * 2 * L;
}
// The derivative of op's block (D x D) by its parameter j.
template <int L, class R>
QFLEET_HD inline R* sv_table_dblock(const SvPlan& p, R* tab, const OpDesc& op, int j, int D) {
  return tab + (p.mat_entries + op.dmat_entry + std::size_t(j) * std::size_t(D * D)) * 2 * L;
}
template <int L, class R>
QFLEET_HD inline R* sv_table_partial(const SvPlan& p, R* tab, int slot, int part, int parts, int l) {
  return tab + (p.mat_entries + p.dmat_entries) * 2 * L + (std::size_t(slot) * std::size_t(parts) + std::size_t(part)) * L +
         std::size_t(l);
}

// How many of op's parameters have derivative blocks in the table: none for a
// constant block, at most one for a two-qubit block (the adjoint's NP).
QFLEET_HD inline int sv_table_dparams(const OpDesc& op) {
  if (op.fixed >= 0) return 0;
  const int cap = op.site.kt == 1 ? kMaxGateParams : 1;
  return op.n_params < cap ? op.n_params : cap;
}

template <class R, int L, int D>
QFLEET_HD inline void sv_table_store(R* dst, const Cx<R>* blk, int l) {
  for (int e = 0; e < D * D; ++e) {
    dst[2 * e * L + l] = blk[e].re;
    dst[2 * e * L + L + l] = blk[e].im;
  }
}

// op's block for sample b and, for the adjoint, its derivatives by the parameters
// the call wants gradients of (in the call's precision, like the per-gate path).
template <class R, int L, int D>
QFLEET_HD inline void sv_table_fill_op(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b,
                                       bool adjoint, R* tab, int l) {
  Cx<R> blk[D * D];
  op_block_cx<R, D>(p, c, op, b, -1, blk);
  sv_table_store<R, L, D>(sv_table_block<L>(tab, op), blk, l);
  if (!adjoint) return;
  for (int j = 0; j < sv_table_dparams(op); ++j) {
    if (!param_wanted(p, c, op.first_param + j)) continue;
    op_block_cx<R, D>(p, c, op, b, j, blk);
    sv_table_store<R, L, D>(sv_table_dblock<L>(p, tab, op, j, D), blk, l);
  }
}

// Every op's blocks for sample b (lane l), the group's `size` members taking ops in
// turn (this one is `rank`); the caller's next group barrier publishes them.
template <int L, class R>
QFLEET_HD inline void sv_table_fill(const SvPlan& p, const SvCall<R>& c, std::size_t b, bool adjoint, R* tab,
                                    int rank, int size, int l) {
  for (int k = rank; k < p.n_ops; k += size) {
    const OpDesc& op = p.ops[k];
    if (op.site.kt == 1) {
      sv_table_fill_op<R, L, 2>(p, c, op, b, adjoint, tab, l);
    } else {  // 2 (kMaxBlockTargets)
      sv_table_fill_op<R, L, 4>(p, c, op, b, adjoint, tab, l);
    }
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
