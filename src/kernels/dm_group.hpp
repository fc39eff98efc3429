// One density-matrix circuit run by a cooperating group of threads: forward sweep,
// outputs and the adjoint sweep (with stored or checkpointed states), written once
// for host and device like kernels/sv_group.hpp - the body a CUDA launch of a thread
// block per sample would run. The cpu tests run it with groups of std::threads
// (tests/unit/test_dm_group.cpp) against the cpu executor. The group G provides
// rank(), size(), sync(), sum(R) and atomic_add(R*, R) (kernels/sv_group.hpp's
// contract); every member calls the body with the same arguments.
//
// One sample per group (L = 1 layout). Scratch (per group, in the caller's memory;
// on a GPU the table, rho and lam in shared memory where they fit):
//   rho, lam         4^n complex each
//   stored           seg.per_segment states; ckpt: seg.count states when seg.count > 1
//   gslot            n_params reals (the parameter slots' gradients)
//   probs            2 << max(max_probs_k, call.extra_k) reals (readout transforms)
//   table            dm_table_reals: the sample's blocks, computed once before the sweeps
//
// The table holds every op's block and, for the adjoint, its derivative blocks by the
// parameters the call wants, in the call's precision, laid out like DmPlan's block
// buffer for one lane (op's block at entry op.mat_entry; its derivative by parameter j
// at mat_entries + op.dmat_entry + j dim^2; an entry as re, im). The members compute
// the blocks of different ops side by side, once per sample; each step reads its block
// from there. Without it every member computed each op's block in double into a
// per-thread array before each step (8-12 KB of stack per thread on a GPU, and a chain
// of parameter loads and transcendentals before every step of both sweeps).
#pragma once

#include <cstdint>

#include "kernels/channel_matrix.hpp"
#include "kernels/dm_ops.hpp"
#include "kernels/dm_plan.hpp"
#include "kernels/gate_matrix.hpp"
#include "kernels/sv_params.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

struct DmGroupScratch {
  void* rho;
  void* lam;
  void* stored;
  void* ckpt;
  void* gslot;
  void* probs;
  void* table;
};

QFLEET_HD inline std::size_t dm_table_reals(const DmPlan& p, bool adjoint) {
  return 2 * (p.mat_entries + (adjoint ? p.dmat_entries : 0));
}
template <class R>
QFLEET_HD inline R* dm_table_block(R* tab, const DmOp& op) {
  return tab + 2 * op.mat_entry;
}
template <class R>
QFLEET_HD inline R* dm_table_dblock(const DmPlan& p, R* tab, const DmOp& op, int j) {
  return tab + 2 * (p.mat_entries + op.dmat_entry + std::size_t(j) * std::size_t(op.dim * op.dim));
}

// The table for sample b, the group's members taking ops in turn; the barrier after
// it publishes the blocks.
template <class R, class G>
QFLEET_HD inline void dm_table_fill(const DmPlan& p, const SvCall<R>& c, std::size_t b, bool adjoint, R* tab, G& g) {
  for (int k = g.rank(); k < p.n_ops; k += g.size()) {
    const DmOp& op = p.ops[k];
    // (an entry of the table is re, im: the layout of Cx<R>)
    dm_op_block<R>(p, c, op, b, -1, reinterpret_cast<Cx<R>*>(dm_table_block(tab, op)));
    if (!adjoint || op.slot < 0) continue;
    for (int j = 0; j < op.n_params; ++j) {
      if (!param_wanted(p, c, op.first_param + j)) continue;
      dm_op_block<R>(p, c, op, b, j, reinterpret_cast<Cx<R>*>(dm_table_dblock(p, tab, op, j)));
    }
  }
  g.sync();
}

// s <- the op's side (row or column of a gate, or a channel) in mode Mode, split over the group.
template <class R, int Mode, class G>
QFLEET_HD inline void dm_group_apply(const DmOp& op, const DmSite& site, std::uint64_t dim2, const R* m, R* s, G& g) {
  const std::uint64_t ng = dim2 >> site.k_all;
  for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
    const std::uint64_t base = insert_zero_bits(q, site.pos, site.k_all) | site.ctrl;
    if (op.kind == kDmGate && op.x_block) {
      dm_swap_lane<R, 1>(s, site, base, 0);
    } else if (op.population_coherence) {
      dm_channel1_lane<R, 1, Mode == kDmDag || Mode == kDmTrans, 1>(s, site, base, m, 0);
    } else if (op.dim == 2) {
      dm_apply_lane<R, 1, 2, Mode, 1>(s, site, base, m, 0);
    } else if (op.dim == 4) {
      dm_apply_lane<R, 1, 4, Mode, 1>(s, site, base, m, 0);
    } else {
      dm_apply_lane<R, 1, 16, Mode, 1>(s, site, base, m, 0);
    }
  }
  g.sync();
}

template <class R, class G>
QFLEET_HD inline R dm_group_sandwich(const DmOp& op, const DmSite& site, std::uint64_t dim2, const R* m, const R* lam,
                                     const R* x, G& g) {
  const std::uint64_t ng = dim2 >> site.k_all;
  R part = 0;
  for (std::uint64_t q = std::uint64_t(g.rank()); q < ng; q += std::uint64_t(g.size())) {
    const std::uint64_t base = insert_zero_bits(q, site.pos, site.k_all) | site.ctrl;
    if (op.population_coherence) {
      part += dm_channel1_sandwich_lane<R, 1, 1>(lam, x, site, base, m, 0);
    } else if (op.dim == 2) {
      part += dm_sandwich_lane<R, 1, 2, 1>(lam, x, site, base, m, 0);
    } else if (op.dim == 4) {
      part += dm_sandwich_lane<R, 1, 4, 1>(lam, x, site, base, m, 0);
    } else {
      part += dm_sandwich_lane<R, 1, 16, 1>(lam, x, site, base, m, 0);
    }
  }
  return g.sum(part);
}

template <class R, class G>
QFLEET_HD inline void dm_group_copy(R* dst, const R* src, std::uint64_t n, G& g) {
  for (std::uint64_t i = std::uint64_t(g.rank()); i < n; i += std::uint64_t(g.size())) dst[i] = src[i];
  g.sync();
}

// s <- U s U^dag for the run's U (Dag: U^dag s U), U|i> = phase_i |pi(i)>, entry (i, j)
// at (i << n) | j:
//   forward  s'(a, c) = phase[src a] conj(phase[src c]) s(src a, src c)
//   adjoint  s'(i, j) = conj(phase[i]) phase[j] s(dst i, dst j)
// A gate by gate takes two barriers (rows, columns); the whole run takes two.
template <class R, bool Dag, class G>
QFLEET_HD_NOINLINE void dm_group_permute(const DmPlan& p, const PermRun& run, R* s, G& g) {
  const std::uint32_t* from = p.perm_index + run.index + (Dag ? p.dim : 0);
  const double* phase = run.phase >= 0 ? p.perm_phase + 2 * run.phase : nullptr;
  const std::uint64_t rank = std::uint64_t(g.rank()), size = std::uint64_t(g.size()), low = p.dim - 1;
  R v[kDmPermPerMember][2] = {};
  for (int t = 0; t < kDmPermPerMember; ++t) {
    const std::uint64_t e = rank + std::uint64_t(t) * size;
    if (e >= p.dim2) continue;
    const std::uint64_t r = e >> p.n, c = e & low, fr = from[r], fc = from[c];
    const std::uint64_t f = (fr << p.n) | fc;
    R a = s[2 * f], b = s[2 * f + 1];
    if (phase != nullptr) {  // w = phase_row conj(phase_col) at (fr, fc); adjoint: conj of it at (r, c)
      const double* pr = phase + 2 * (Dag ? r : fr);
      const double* pc = phase + 2 * (Dag ? c : fc);
      const R wr = static_cast<R>(pr[0] * pc[0] + pr[1] * pc[1]);
      const R wi = static_cast<R>(Dag ? pr[0] * pc[1] - pr[1] * pc[0] : pr[1] * pc[0] - pr[0] * pc[1]);
      const R x = wr * a - wi * b, y = wr * b + wi * a;
      a = x;
      b = y;
    }
    v[t][0] = a;
    v[t][1] = b;
  }
  g.sync();
  for (int t = 0; t < kDmPermPerMember; ++t) {
    const std::uint64_t e = rank + std::uint64_t(t) * size;
    if (e >= p.dim2) continue;
    s[2 * e] = v[t][0];
    s[2 * e + 1] = v[t][1];
  }
  g.sync();
}

// The run op k starts (forward) or ends (adjoint) when the group applies it fused (it
// holds the 4^n entries in kDmPermPerMember rounds, sv_plan.hpp: n = 4 on 32 threads and
// more, n = 5 on 128) and it lies within [k0, k1) (segments are cut at parameterised
// ops, so it always does); null otherwise.
template <class G>
QFLEET_HD inline const PermRun* dm_fused_run(const DmPlan& p, int k, int k0, int k1, const G& g) {
  const int id = p.ops[k].run;
  if (id < 0 || !perm_runs_fused(p.n_perm_runs, p.dim2, kDmPermPerMember, g.size())) return nullptr;
  const PermRun* run = p.perm_runs + id;
  return run->first >= k0 && run->last < k1 ? run : nullptr;
}

// Ops [k0, k1); with store, the states parameterised ops need go to stored[].
template <class R, class G>
QFLEET_HD inline void dm_group_forward(const DmPlan& p, int k0, int k1, bool store, R* tab, R* rho, R* stored, G& g) {
  const std::uint64_t st = 2 * p.dim2;
  int slot = 0;
  for (int k = k0; k < k1; ++k) {
    if (const PermRun* run = dm_fused_run(p, k, k0, k1, g)) {  // constant gates: nothing stored
      dm_group_permute<R, false>(p, *run, rho, g);
      k = run->last;
      continue;
    }
    const DmOp& op = p.ops[k];
    const R* m = dm_table_block(tab, op);
    const bool keep = store && op.slot >= 0;
    if (op.kind == kDmGate) {
      dm_group_apply<R, kDmConj>(op, op.col, p.dim2, m, rho, g);
      if (keep) dm_group_copy(stored + st * std::uint64_t(slot++), rho, st, g);
      dm_group_apply<R, kDmN>(op, op.row, p.dim2, m, rho, g);
    } else {
      if (keep) dm_group_copy(stored + st * std::uint64_t(slot++), rho, st, g);
      dm_group_apply<R, kDmN>(op, op.sup, p.dim2, m, rho, g);
    }
  }
}

// Probabilities of rho on the bits pos (pos[0] most significant) with the wires'
// readout errors, into v (rank 0 computes, the group waits).
template <class R, class G>
QFLEET_HD inline void dm_group_probs(const DmPlan& p, const R* rho, const int* pos, int k, R* v, G& g) {
  if (g.rank() == 0) {
    const std::uint64_t no = std::uint64_t{1} << k;
    for (std::uint64_t o = 0; o < no; ++o) v[o] = 0;
    for (std::uint64_t i = 0; i < p.dim; ++i) v[outcome_index(i, pos, k)] += rho[2 * ((i << p.n) | i)];
    if (p.readout != nullptr) {
      for (int t = 0; t < k; ++t) {
        const double* a = p.readout + 4 * (p.n - 1 - pos[t]);
        const std::uint64_t bit = std::uint64_t{1} << (k - 1 - t);
        for (std::uint64_t o = 0; o < no; ++o) {
          if (o & bit) continue;
          const R p0 = v[o], p1 = v[o | bit];
          v[o] = static_cast<R>(a[0]) * p0 + static_cast<R>(a[1]) * p1;
          v[o | bit] = static_cast<R>(a[2]) * p0 + static_cast<R>(a[3]) * p1;
        }
      }
    }
  }
  g.sync();
}

template <class R, class G>
QFLEET_HD inline void dm_group_outputs(const DmPlan& p, const SvCall<R>& c, std::size_t b, const R* rho, R* probs,
                                       G& g) {
  if (c.outputs != nullptr) {
    R* row = c.outputs + b * p.n_outputs;
    for (int e = 0; e < p.n_expvals; ++e) {
      R acc = 0;
      for (int q = p.term_begin[e]; q < p.term_begin[e + 1]; ++q) {
        R part = 0;
        for (std::uint64_t j = std::uint64_t(g.rank()); j < p.dim; j += std::uint64_t(g.size())) {
          part += dm_pauli_term_lane<R, 1>(rho, p.terms[q].masks, j, p.n, 0);
        }
        acc += static_cast<R>(p.terms[q].coef) * g.sum(part);
      }
      if (g.rank() == 0) row[e] = acc;
    }
    for (int m = 0; m < p.n_probs; ++m) {
      const int k = p.probs_begin[m + 1] - p.probs_begin[m];
      dm_group_probs(p, rho, p.probs_pos + p.probs_begin[m], k, probs, g);
      if (g.rank() == 0) {
        for (std::uint64_t o = 0; o < (std::uint64_t{1} << k); ++o) row[p.probs_out[m] + o] = probs[o];
      }
    }
    if (p.n_purity > 0) {
      R part = 0;
      for (std::uint64_t i = std::uint64_t(g.rank()); i < p.dim2; i += std::uint64_t(g.size())) {
        part += dm_norm2_lane<R, 1>(rho, i, 0);
      }
      const R pur = g.sum(part);
      if (g.rank() == 0) {
        for (int q = 0; q < p.n_purity; ++q) row[p.purity_out + q] = pur;
      }
    }
  }
  if (c.extra_probs != nullptr) {
    dm_group_probs(p, rho, c.extra_pos, c.extra_k, probs, g);
    if (g.rank() == 0) {
      const std::uint64_t no = std::uint64_t{1} << c.extra_k;
      for (std::uint64_t o = 0; o < no; ++o) c.extra_probs[b * no + o] = probs[o];
    }
  }
  if (c.states != nullptr) {
    for (std::uint64_t i = std::uint64_t(g.rank()); i < 2 * p.dim2; i += std::uint64_t(g.size())) {
      c.states[b * 2 * p.dim2 + i] = rho[i];
    }
  }
  g.sync();
}

// lam = sum_k cot_k O_k as a vectorised matrix (kernels/../cpu/dm_cpu_impl.hpp's seed).
template <class R, class G>
QFLEET_HD inline void dm_group_seed(const DmPlan& p, const SvCall<R>& c, std::size_t b, const R* rho, R* lam,
                                    R* probs, G& g) {
  for (std::uint64_t i = std::uint64_t(g.rank()); i < 2 * p.dim2; i += std::uint64_t(g.size())) lam[i] = 0;
  g.sync();
  const R* cot = c.cotangents + b * p.n_outputs;
  for (int e = 0; e < p.n_expvals; ++e) {
    for (int q = p.term_begin[e]; q < p.term_begin[e + 1]; ++q) {  // within a term, j -> entry is one to one
      const R coef = static_cast<R>(p.terms[q].coef) * cot[e];
      for (std::uint64_t j = std::uint64_t(g.rank()); j < p.dim; j += std::uint64_t(g.size())) {
        dm_pauli_seed_lane<R, 1>(lam, p.terms[q].masks, j, p.n, coef, 0);
      }
      g.sync();
    }
  }
  for (int m = 0; m < p.n_probs; ++m) {
    const int* pos = p.probs_pos + p.probs_begin[m];
    const int k = p.probs_begin[m + 1] - p.probs_begin[m];
    if (g.rank() == 0) {
      const std::uint64_t no = std::uint64_t{1} << k;
      for (std::uint64_t o = 0; o < no; ++o) probs[o] = cot[p.probs_out[m] + o];
      if (p.readout != nullptr) {  // the readout's transpose
        for (int t = 0; t < k; ++t) {
          const double* a = p.readout + 4 * (p.n - 1 - pos[t]);
          const std::uint64_t bit = std::uint64_t{1} << (k - 1 - t);
          for (std::uint64_t o = 0; o < no; ++o) {
            if (o & bit) continue;
            const R c0 = probs[o], c1 = probs[o | bit];
            probs[o] = static_cast<R>(a[0]) * c0 + static_cast<R>(a[2]) * c1;
            probs[o | bit] = static_cast<R>(a[1]) * c0 + static_cast<R>(a[3]) * c1;
          }
        }
      }
      for (std::uint64_t i = 0; i < p.dim; ++i) lam[2 * ((i << p.n) | i)] += probs[outcome_index(i, pos, k)];
    }
    g.sync();
  }
  if (p.n_purity > 0) {
    R s = 0;
    for (int q = 0; q < p.n_purity; ++q) s += cot[p.purity_out + q];
    for (std::uint64_t i = std::uint64_t(g.rank()); i < 2 * p.dim2; i += std::uint64_t(g.size())) {
      lam[i] += 2 * s * rho[i];
    }
    g.sync();
  }
}

template <class R, class G>
QFLEET_HD inline void dm_group_backward(const DmPlan& p, const SvCall<R>& c, int k0, int k1, R* tab, const R* stored,
                                        R* lam, R* gslot, G& g) {
  const std::uint64_t st = 2 * p.dim2;
  int slot = 0;
  for (int k = k0; k < k1; ++k) slot += p.ops[k].slot >= 0 ? 1 : 0;
  for (int k = k1 - 1; k >= k0; --k) {
    if (const PermRun* run = dm_fused_run(p, k, k0, k1, g)) {  // constant gates: no gradient
      dm_group_permute<R, true>(p, *run, lam, g);
      k = run->first;
      continue;
    }
    const DmOp& op = p.ops[k];
    const bool gate = op.kind == kDmGate;
    const R* m = dm_table_block(tab, op);
    if (op.slot >= 0) {
      const R* x = stored + st * std::uint64_t(--slot);
      for (int j = 0; j < op.n_params; ++j) {
        const int s = op.first_param + j;
        if (!param_wanted(p, c, s)) continue;
        const R v = dm_group_sandwich(op, gate ? op.row : op.sup, p.dim2, dm_table_dblock(p, tab, op, j), lam, x, g);
        if (g.rank() == 0) gslot[s] += (gate ? 2 : 1) * v;
      }
    }
    if (gate) {
      dm_group_apply<R, kDmDag>(op, op.row, p.dim2, m, lam, g);
      dm_group_apply<R, kDmTrans>(op, op.col, p.dim2, m, lam, g);
    } else {
      dm_group_apply<R, kDmDag>(op, op.sup, p.dim2, m, lam, g);
    }
  }
}

// The whole sample b: initial state (|0...0><0...0|; amplitude embedding is the cpu
// executor's only), forward, outputs, and with cotangents the adjoint sweep and the
// gradients (reduced weight gradients by atomic_add into a zeroed buffer).
template <class R, class G>
QFLEET_HD inline void dm_group_run(const DmPlan& p, const SvCall<R>& c, const DmSegments& seg, std::size_t b,
                                   const DmGroupScratch& w, G& g) {
  R* rho = static_cast<R*>(w.rho);
  R* lam = static_cast<R*>(w.lam);
  R* stored = static_cast<R*>(w.stored);
  R* ckpt = static_cast<R*>(w.ckpt);
  R* gslot = static_cast<R*>(w.gslot);
  R* probs = static_cast<R*>(w.probs);
  R* tab = static_cast<R*>(w.table);
  const std::uint64_t st = 2 * p.dim2;
  const bool adjoint = c.cotangents != nullptr;
  for (std::uint64_t i = std::uint64_t(g.rank()); i < st; i += std::uint64_t(g.size())) rho[i] = i == 0 ? R(1) : R(0);
  dm_table_fill(p, c, b, adjoint, tab, g);  // (its barrier publishes rho's too)
  if (!adjoint || seg.count == 1) {
    dm_group_forward(p, 0, p.n_ops, adjoint, tab, rho, stored, g);
  } else {
    for (int s = 0; s < seg.count; ++s) {
      dm_group_copy(ckpt + st * std::uint64_t(s), rho, st, g);
      dm_group_forward(p, seg.begin[s], seg.begin[s + 1], false, tab, rho, stored, g);
    }
  }
  dm_group_outputs(p, c, b, rho, probs, g);
  if (!adjoint) return;
  dm_group_seed(p, c, b, rho, lam, probs, g);
  if (g.rank() == 0) {
    for (int s = 0; s < p.n_params; ++s) gslot[s] = 0;
  }
  g.sync();
  for (int s = seg.count - 1; s >= 0; --s) {
    if (seg.count > 1) {
      dm_group_copy(rho, ckpt + st * std::uint64_t(s), st, g);
      dm_group_forward(p, seg.begin[s], seg.begin[s + 1], true, tab, rho, stored, g);
    }
    dm_group_backward(p, c, seg.begin[s], seg.begin[s + 1], tab, stored, lam, gslot, g);
  }
  if (g.rank() == 0) {
    clear_gradient_rows(p, c, b, 0, 1);
    for (int s = 0; s < p.n_params; ++s) {
      const ParamDesc& d = p.params[s];
      if (d.kind == kParamConstant) continue;
      const R v = static_cast<R>(d.scale) * gslot[s];
      if (d.kind == kParamInput) {
        if (c.grad_inputs != nullptr) c.grad_inputs[b * p.n_inputs + d.index] += v;
      } else if (c.grad_weights != nullptr) {
        if (c.reduce_weights) {
          g.atomic_add(c.grad_weights + d.index, v);
        } else {
          c.grad_weights[b * p.n_weights + d.index] += v;
        }
      }
    }
  }
  g.sync();
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
