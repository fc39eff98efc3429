// One small circuit (n <= 5 qubits) held in registers across 2^n lanes of a warp:
// lane i keeps amplitude i of the state (psi) and, in the backward pass, of the
// adjoint state (lam); gates exchange amplitudes by shuffles. Forward sweep,
// measurements and the whole adjoint backward run in one pass, written once for
// host and device.
//
// The cuda backend's `registers` shape runs it with the lanes of a warp (32 / 2^n
// circuits per warp, src/cuda/sv_cuda.cu); the cpu tests run the very same body
// with std::threads standing in for the lanes (tests/unit/group_emu.hpp). The lane
// group type L provides
//   int lane(), int width()           this lane's basis index i, and W = 2^n
//   R shfl_xor(R v, unsigned m)        v as held by lane i ^ m of the same circuit (m < W)
//   R shfl(R v, int j)                 v as held by lane j of the same circuit (j < W)
//   void sync()                        memory ordering across the warp's lanes
//   void reduce_add(R* p, R v, bool contribute)
//                                      *p += the sum of v over the warp's circuits that
//                                      contribute (v is equal across a circuit's lanes):
//                                      one atomic add per warp, not one per circuit
// and every lane of the warp calls the body with the same plan, so every shuffle is
// reached by all of them (control flow depends on the plan and the call only; the
// sample's data and the lane index only select values).
//
// A k-target gate on lane i: with r the gate-local index of i (its target bits) and
// off[] the offsets of GateSite, y_i = sum_d M[r][r ^ d] psi[i ^ off[d]], each
// psi[i ^ off[d]] one shuffle with a mask uniform across the warp; lanes whose
// control bits are not all set keep their amplitude. The adjoint step shuffles lam
// once and uses the same values twice: for lam <- U^dag lam and for the gradient,
// Re <lam| dU |psi> = Re <dU^dag lam | psi> summed over the lanes.
//
// A run of constant phased permutations fused by the planner (PermRun: a CNOT ring,
// say) is one indexed shuffle per state, where its gates take one or two each.
//
// With a block table (kernels/sv_table.hpp, one per circuit, no partials: the
// parameter sums here are shuffles), a circuit's lanes first compute its gate and
// derivative blocks side by side, and every step reads its row from the table
// instead of computing the whole block from the angles on every lane.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/complex.hpp"
#include "kernels/sv_group.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

constexpr int kMaxLaneQubits = 5;  // 2^5 = one warp

template <class R, class L>
QFLEET_HD inline Cx<R> lane_shfl(const L& g, Cx<R> v, std::uint64_t m) {
  return {g.shfl_xor(v.re, unsigned(m)), g.shfl_xor(v.im, unsigned(m))};
}

// Sum of v over the lanes that differ from this one only in the bits of `bits`
// (a butterfly, lowest bit first: every lane of a class gets the same bits).
template <class R, class L>
QFLEET_HD inline R lane_sum(const L& g, R v, unsigned bits) {
  for (unsigned m = 1; m < unsigned(g.width()); m <<= 1) {
    if (bits & m) v += g.shfl_xor(v, m);
  }
  return v;
}

// Row r of the block (Dag: of its adjoint), as row[d] = M[r][r ^ d]. The loop over
// every r keeps the indices constant (registers, not local memory, on a GPU).
template <class R, int D, bool Dag>
QFLEET_HD inline void lane_row(const R* m, int r, Cx<R>* row) {
  for (int d = 0; d < D; ++d) row[d] = {R(0), R(0)};
  for (int q = 0; q < D; ++q) {
    if (q != r) continue;
    for (int d = 0; d < D; ++d) {
      const int e = Dag ? (q ^ d) * D + q : q * D + (q ^ d);
      row[d] = {m[2 * e], Dag ? -m[2 * e + 1] : m[2 * e + 1]};
    }
  }
}

// This lane's row of op's block (Dag: of its adjoint; deriv >= 0: of the derivative
// by that parameter), with `on` = its control bits are all set.
template <class R, int D, bool Dag, class L>
QFLEET_HD inline void lane_block_row(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, int deriv,
                                     const L& g, bool& on, Cx<R>* row, const R* tab) {
  const int r = local_index<D>(op.site, std::uint64_t(g.lane()), on);
  if (tab != nullptr) {
    lane_row<R, D, Dag>(deriv < 0 ? sv_table_block<1>(tab, op) : sv_table_dblock<1>(p, tab, op, deriv, D), r, row);
    return;
  }
  R m[2 * D * D];
  op_block<R, D>(p, c, op, b, deriv, m);
  lane_row<R, D, Dag>(m, r, row);
}

// x[d] = v as held by lane i ^ off[d] (x[0] = v): the amplitudes a row combines.
template <class R, int D, class L>
QFLEET_HD inline void lane_gather(const GateSite& s, Cx<R> v, const L& g, Cx<R>* x) {
  x[0] = v;
  for (int d = 1; d < D; ++d) x[d] = lane_shfl(g, v, s.off[d]);
}

template <class R, int D>
QFLEET_HD inline Cx<R> lane_dot(const Cx<R>* row, const Cx<R>* x) {
  Cx<R> y = row[0] * x[0];
  for (int d = 1; d < D; ++d) y = y + row[d] * x[d];
  return y;
}

// This lane's amplitude v after a fused run of phased permutations (PermRun; Dag:
// its inverse): v as held by lane src[i] (dst[i]) times its phase.
template <class R, bool Dag, class L>
QFLEET_HD inline Cx<R> lanes_permute(const SvPlan& p, const PermRun& run, Cx<R> v, const L& g) {
  const std::uint64_t i = std::uint64_t(g.lane());
  const std::uint32_t from = p.perm_index[run.index + (Dag ? p.dim : 0) + i];
  const Cx<R> x{g.shfl(v.re, int(from)), g.shfl(v.im, int(from))};
  if (run.phase < 0) return x;
  const double* w = p.perm_phase + 2 * (std::uint64_t(run.phase) + (Dag ? i : from));
  return Cx<R>{R(w[0]), Dag ? -R(w[1]) : R(w[1])} * x;
}

template <class R, int KT, class L>
QFLEET_HD inline void lanes_apply(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b, Cx<R>& psi,
                                  const L& g, const R* tab) {
  constexpr int D = 1 << KT;
  bool on;
  Cx<R> row[D], x[D];
  lane_block_row<R, D, false>(p, c, op, b, -1, g, on, row, tab);
  lane_gather<R, D>(op.site, psi, g, x);
  if (on) psi = lane_dot<R, D>(row, x);
}

template <class R, int KT, class L>
QFLEET_HD inline void lanes_adjoint_op(const SvPlan& p, const SvCall<R>& c, const OpDesc& op, std::size_t b,
                                       bool active, Cx<R>& psi, Cx<R>& lam, const L& g, const R* tab) {
  constexpr int D = 1 << KT;
  constexpr int NP = KT == 1 ? kMaxGateParams : 1;  // 2-qubit blocks have at most one parameter
  bool on;
  Cx<R> row[D], x[D];
  lane_block_row<R, D, true>(p, c, op, b, -1, g, on, row, tab);
  lane_gather<R, D>(op.site, psi, g, x);
  if (on) psi = lane_dot<R, D>(row, x);  // psi <- U^dag psi
  // lam's amplitudes this lane combines, shuffled once for both uses below.
  Cx<R> lx[D];
  lane_gather<R, D>(op.site, lam, g, lx);
  const int np = op.n_params < NP ? op.n_params : NP;
  for (int j = 0; j < np; ++j) {
    if (op.fixed >= 0) break;
    const ParamDesc& pd = p.params[op.first_param + j];
    if (!param_wanted(p, c, op.first_param + j)) continue;
    Cx<R> drow[D];
    lane_block_row<R, D, true>(p, c, op, b, j, g, on, drow, tab);
    const Cx<R> v = lane_dot<R, D>(drow, lx);
    const R part = on ? v.re * psi.re + v.im * psi.im : R(0);  // Re(conj(dU^dag lam)_i psi_i)
    const R gv = static_cast<R>(pd.scale) * (2 * lane_sum(g, part, unsigned(g.width() - 1)));
    if (pd.kind == kParamInput) {
      if (active && g.lane() == 0) c.grad_inputs[b * p.n_inputs + pd.index] += gv;
    } else if (c.reduce_weights) {
      g.reduce_add(&c.grad_weights[pd.index], gv, active);
    } else if (active && g.lane() == 0) {
      c.grad_weights[b * p.n_weights + pd.index] += gv;
    }
  }
  if (on) lam = lane_dot<R, D>(row, lx);  // lam <- U^dag lam
}

// Probabilities over the bit positions pos (pos[0] the most significant outcome
// bit): a butterfly over the unmeasured bits, then the lane whose unmeasured bits
// are zero writes its outcome's entry (row == nullptr: a padding circuit, no write).
template <class R, class L>
QFLEET_HD inline void lanes_probs(Cx<R> psi, const int* pos, int k, R* row, const L& g) {
  unsigned measured = 0;
  for (int t = 0; t < k; ++t) measured |= 1u << pos[t];
  const unsigned rest = unsigned(g.width() - 1) & ~measured;
  const R tot = lane_sum(g, psi.re * psi.re + psi.im * psi.im, rest);
  const std::uint64_t i = std::uint64_t(g.lane());
  if (row != nullptr && (i & rest) == 0) row[outcome_index(i, pos, k)] = tot;
}

// Runs sample b (clamped into the batch by the caller; active = false for a padding
// circuit, which computes but writes nothing and adds nothing). Needs n <= 5. tab,
// when given, is the circuit's block table (sv_table_reals<1>(p, adjoint, 0) reals),
// free for this sample: the caller syncs between samples.
template <class R, class L>
QFLEET_HD inline void sv_lanes_run(const SvPlan& p, const SvCall<R>& c, std::size_t b, bool active, const L& g,
                                   R* tab = nullptr) {
  if (tab != nullptr) {
    sv_table_fill<1>(p, c, b, c.cotangents != nullptr, tab, g.lane(), g.width(), 0);
    g.sync();
  }
  const std::uint64_t i = std::uint64_t(g.lane());
  const unsigned all = unsigned(g.width() - 1);
  Cx<R> psi = {R(i == 0 ? 1 : 0), R(0)};
  R amp_v = 0, amp_norm = 1;
  int amp_j = -1;  // the embedded feature this lane holds
  if (p.amp) {
    for (int j = 0; j < p.amp_len; ++j) {
      if (p.amp_index[j] == i) amp_j = j;
    }
    amp_v = amp_j >= 0 ? amp_value(p, c, b, amp_j) : R(0);
    using std::sqrt;
    amp_norm = p.amp_normalize ? sqrt(lane_sum(g, amp_v * amp_v, all)) : R(1);
    psi = {amp_v / amp_norm, R(0)};
  }

  for (int k = 0; k < p.n_ops; ++k) {
    const OpDesc& op = p.ops[k];
    if (op.run >= 0) {
      const PermRun& run = p.perm_runs[op.run];
      psi = lanes_permute<R, false>(p, run, psi, g);
      k = run.last;
      continue;
    }
    switch (op.site.kt) {
      case 1:
        lanes_apply<R, 1>(p, c, op, b, psi, g, static_cast<const R*>(tab));
        break;
      default:  // 2 (kMaxBlockTargets)
        lanes_apply<R, 2>(p, c, op, b, psi, g, static_cast<const R*>(tab));
        break;
    }
  }

  if (c.outputs != nullptr) {
    for (int k = 0; k < p.n_expvals; ++k) {
      R acc = 0;
      for (int t = p.term_begin[k]; t < p.term_begin[k + 1]; ++t) {
        const PauliMasks& pm = p.terms[t].masks;
        int ipr, ipi;
        pauli_phase(pm, i, ipr, ipi);
        const R pr = R(ipr), pi = R(ipi);
        const Cx<R> src = lane_shfl(g, psi, pm.x);  // psi[i ^ x]
        const R yr = pr * psi.re - pi * psi.im, yi = pr * psi.im + pi * psi.re;
        acc += static_cast<R>(p.terms[t].coef) * (src.re * yr + src.im * yi);
      }
      const R tot = lane_sum(g, acc, all);
      if (active && i == 0) c.outputs[b * p.n_outputs + k] = tot;
    }
    for (int q = 0; q < p.n_probs; ++q) {
      const int k = p.probs_begin[q + 1] - p.probs_begin[q];
      R* row = active ? c.outputs + b * p.n_outputs + p.probs_out[q] : nullptr;
      lanes_probs(psi, p.probs_pos + p.probs_begin[q], k, row, g);
    }
  }
  if (c.extra_probs != nullptr) {
    R* row = active ? c.extra_probs + b * (std::size_t{1} << c.extra_k) : nullptr;
    lanes_probs(psi, c.extra_pos, c.extra_k, row, g);
  }
  if (c.states != nullptr && active) {
    R* out = c.states + (b * p.dim + i) * 2;
    out[0] = psi.re;
    out[1] = psi.im;
  }
  if (c.cotangents == nullptr) return;

  // lam = O psi with O = sum_k cot[b, k] O_k: (P psi)_i = phase(i ^ x) psi[i ^ x].
  const R* cot = c.cotangents + b * p.n_outputs;
  Cx<R> lam = {R(0), R(0)};
  for (int k = 0; k < p.n_expvals; ++k) {
    for (int t = p.term_begin[k]; t < p.term_begin[k + 1]; ++t) {
      const PauliMasks& pm = p.terms[t].masks;
      const R tc = static_cast<R>(p.terms[t].coef) * cot[k];
      int ipr, ipi;
      pauli_phase(pm, i ^ pm.x, ipr, ipi);
      const R pr = R(ipr), pi = R(ipi);
      const Cx<R> src = lane_shfl(g, psi, pm.x);
      lam.re += tc * (pr * src.re - pi * src.im);
      lam.im += tc * (pr * src.im + pi * src.re);
    }
  }
  for (int q = 0; q < p.n_probs; ++q) {
    const int k = p.probs_begin[q + 1] - p.probs_begin[q];
    const R cj = cot[p.probs_out[q] + outcome_index(i, p.probs_pos + p.probs_begin[q], k)];
    lam.re += cj * psi.re;
    lam.im += cj * psi.im;
  }
  // Gradient rows start at zero; each lane clears a share, sync() orders the clears
  // before any lane's adds below.
  if (active) clear_gradient_rows(p, c, b, g.lane(), g.width());
  g.sync();

  for (int k = p.n_ops - 1; k >= 0; --k) {
    const OpDesc& op = p.ops[k];
    if (op.run >= 0) {  // constant gates: no gradient, psi and lam undone at once
      const PermRun& run = p.perm_runs[op.run];
      psi = lanes_permute<R, true>(p, run, psi, g);
      lam = lanes_permute<R, true>(p, run, lam, g);
      k = run.first;
      continue;
    }
    switch (op.site.kt) {
      case 1:
        lanes_adjoint_op<R, 1>(p, c, op, b, active, psi, lam, g, static_cast<const R*>(tab));
        break;
      default:  // 2 (kMaxBlockTargets)
        lanes_adjoint_op<R, 2>(p, c, op, b, active, psi, lam, g, static_cast<const R*>(tab));
        break;
    }
  }
  g.sync();  // lane 0's adds above before other lanes' adds to the same rows below

  // Through the amplitude embedding (psi0 real): d f / d psi0_j = 2 Re lam0_j, then
  // through psi0 = v / |v|: g_v = (g - psi0 (psi0 . g)) / |v|.
  if (p.amp && c.grad_inputs != nullptr) {
    const R gj = 2 * lam.re;
    const R dot = p.amp_normalize ? lane_sum(g, gj * amp_v / amp_norm, all) : R(0);
    if (active && amp_j >= 0 && amp_j < p.amp_n_features) {
      c.grad_inputs[b * p.n_inputs + p.amp_first_input + amp_j] +=
          embedding_feature_gradient(p.amp_normalize, gj, amp_v, amp_norm, dot);
    }
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
