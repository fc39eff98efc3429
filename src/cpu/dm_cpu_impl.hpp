// The density-matrix executor, compiled once per instruction set like
// sv_cpu_impl.hpp (the including file defines QFLEET_KERN_ISA and the lane
// widths). It reads kern::DmPlan and the state-vector call record.
//
// Per tile of L samples: every op's block (per lane) -> forward sweep -> outputs ->
// (adjoint) lam = O as a vectorised matrix (O = sum_k cot_k O_k, plus 2 cot rho for a
// purity) and the reverse sweep over checkpointed segments: the segment is rerun from
// its stored start keeping the states its parameterised ops need, then
//   gate:    g += 2 Re <<lam| dU (x) 1 |rho U^dag>>, lam <- U^dag lam U
//   channel: g += Re <<lam| dS |rho>>,             lam <- S^dag(lam)
// (the adjoint method for mixed states: the observable propagates backwards through
// the adjoint channels; channels are not invertible, so states are stored or
// recomputed instead of uncomputed as in Jones & Gacon, arXiv:2009.02823).
#pragma once

#include <omp.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/dm_cpu.hpp"
#include "cpu/exec_shape.hpp"
#include "cpu/lane_blocks.hpp"
#include "cpu/scatter_gradients.hpp"
#include "cpu/site_groups.hpp"
#include "kernels/channel_matrix.hpp"
#include "kernels/dm_ops.hpp"
#include "kernels/gate_matrix.hpp"
#include "kernels/sv_params.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA::dm {

using kern::DmOp;
using kern::DmPlan;
using kern::DmSite;

constexpr int kMaxEntries = 256;  // a two-wire channel's 16 x 16 superoperator

inline std::size_t thread_reals_impl(const DmPlan& kp, int L, bool adjoint, const kern::DmSegments& seg) {
  const std::size_t st = kp.dim2 * 2 * L;
  std::size_t r = st;  // rho
  if (adjoint) {
    r += st;                                        // lam
    r += st * std::size_t(seg.per_segment);         // stored states of one segment
    if (seg.count > 1) r += st * std::size_t(seg.count);  // checkpoints
  }
  r += kp.mat_entries * 2 * L;                       // blocks
  r += std::size_t{kMaxEntries} * 2 * L;             // one derivative block
  r += std::size_t(kp.n_params) * L;                 // slot gradients
  r += 2 * std::size_t(L);                           // accumulators
  r += (std::size_t(kp.amp_len) + 1) * L;            // embedded amplitudes + norms
  r += (std::size_t{2} << kp.max_probs_k) * L;       // probabilities and their readout transform
  return r + 64;
}

template <class R, int L, int D, int Mode>
inline void apply_d(R* s, const DmSite& site, std::uint64_t dim2, const R* m, int par) {
  site_groups(site, dim2, par, [&](std::uint64_t base) {
#pragma omp simd
    for (int l = 0; l < L; ++l) kern::dm_apply_lane<R, L, D, Mode>(s, site, base, m, l);
  });
}

template <class R, int L, int Mode>
inline void apply_site(R* s, const DmSite& site, int dim, std::uint64_t dim2, const R* m, int par) {
  switch (dim) {
    case 2:
      return apply_d<R, L, 2, Mode>(s, site, dim2, m, par);
    case 4:
      return apply_d<R, L, 4, Mode>(s, site, dim2, m, par);
    default:  // 16: a two-wire channel (the planner makes nothing else)
      return apply_d<R, L, 16, Mode>(s, site, dim2, m, par);
  }
}

template <class R, int L>
inline void apply_swap(R* s, const DmSite& site, std::uint64_t dim2, int par) {
  site_groups(site, dim2, par, [&](std::uint64_t base) {
#pragma omp simd
    for (int l = 0; l < L; ++l) kern::dm_swap_lane<R, L>(s, site, base, l);
  });
}

// A gate's row or column side in mode Mode (X blocks by swaps).
template <class R, int L, int Mode>
inline void apply_gate_side(R* s, const DmOp& op, const DmSite& site, std::uint64_t dim2, const R* m, int par) {
  if (op.x_block) return apply_swap<R, L>(s, site, dim2, par);
  apply_site<R, L, Mode>(s, site, op.dim, dim2, m, par);
}

// A one-wire catalogue channel (DmOp::population_coherence): 8 real entries.
template <class R, int L, bool Transpose>
inline void apply_channel1(R* s, const DmSite& site, std::uint64_t dim2, const R* m, int par) {
  site_groups(site, dim2, par, [&](std::uint64_t base) {
#pragma omp simd
    for (int l = 0; l < L; ++l) kern::dm_channel1_lane<R, L, Transpose>(s, site, base, m, l);
  });
}

template <class R, int L>
inline void sandwich_channel1(const R* lam, const R* x, const DmSite& site, std::uint64_t dim2, const R* m, R* acc) {
  R loc[L];
  for (int l = 0; l < L; ++l) loc[l] = 0;
  site_groups(site, dim2, 0, [&](std::uint64_t base) {
#pragma omp simd
    for (int l = 0; l < L; ++l) loc[l] += kern::dm_channel1_sandwich_lane<R, L>(lam, x, site, base, m, l);
  });
  for (int l = 0; l < L; ++l) acc[l] += loc[l];
}

template <class R, int L, int D>
inline void sandwich_d(const R* lam, const R* x, const DmSite& site, std::uint64_t dim2, const R* m, R* acc) {
  R loc[L];
  for (int l = 0; l < L; ++l) loc[l] = 0;
  site_groups(site, dim2, 0, [&](std::uint64_t base) {
#pragma omp simd
    for (int l = 0; l < L; ++l) loc[l] += kern::dm_sandwich_lane<R, L, D>(lam, x, site, base, m, l);
  });
  for (int l = 0; l < L; ++l) acc[l] += loc[l];
}

template <class R, int L>
inline void sandwich_site(const R* lam, const R* x, const DmSite& site, int dim, std::uint64_t dim2, const R* m,
                          R* acc) {
  switch (dim) {
    case 2:
      return sandwich_d<R, L, 2>(lam, x, site, dim2, m, acc);
    case 4:
      return sandwich_d<R, L, 4>(lam, x, site, dim2, m, acc);
    default:
      return sandwich_d<R, L, 16>(lam, x, site, dim2, m, acc);
  }
}

// p'[.. i ..] = sum_j A[i][j] p[.. j ..] over each measured bit (Transpose: A^T, the
// adjoint of the readout on cotangents). pos[t] is wire t's n-bit position; outcome
// bit k-1-t is wire t's.
inline void readout_transform(const double* readout, const int* pos, int k, int n, double* v, bool transpose) {
  if (readout == nullptr) return;
  const std::size_t no = std::size_t{1} << k;
  for (int t = 0; t < k; ++t) {
    const double* a = readout + 4 * (n - 1 - pos[t]);
    const double a00 = a[0], a01 = transpose ? a[2] : a[1], a10 = transpose ? a[1] : a[2], a11 = a[3];
    const std::size_t bit = std::size_t{1} << (k - 1 - t);
    for (std::size_t o = 0; o < no; ++o) {
      if (o & bit) continue;
      const double p0 = v[o], p1 = v[o | bit];
      v[o] = a00 * p0 + a01 * p1;
      v[o | bit] = a10 * p0 + a11 * p1;
    }
  }
}

// Whether op's block differs between samples: it reads inputs, or per-sample weights.
template <class R>
inline bool per_sample(const DmOp& op, const Call<R>& c) {
  return (op.reads & kern::kReadsInputs) != 0 || (c.weights_per_sample && (op.reads & kern::kReadsWeights) != 0);
}

inline std::size_t shared_reals_impl(const DmPlan& kp, int L, bool adjoint) {
  return (kp.mat_entries + (adjoint ? kp.dmat_entries : 0)) * 2 * L;
}

// Blocks (and derivative blocks) the same for every sample of the call, computed
// once per call and broadcast into the L lanes the kernels read.
template <class R, int L>
void prepare_uniform(const DmPlan& kp, const Call<R>& c, R* mats, R* dmats) {
  kern::Cx<double> blk[kMaxEntries];
  for (int k = 0; k < kp.n_ops; ++k) {
    const DmOp& op = kp.ops[k];
    if (per_sample(op, c)) continue;
    const int entries = op.dim * op.dim;
    kern::dm_op_block<double>(kp, c, op, 0, -1, blk);
    for (int l = 0; l < L; ++l) scatter_block<R, L>(mats + op.mat_entry * 2 * L, blk, entries, l);
    if (dmats == nullptr || op.fixed >= 0) continue;
    for (int j = 0; j < op.n_params; ++j) {
      if (kp.params[op.first_param + j].kind == kern::kParamConstant) continue;
      kern::dm_op_block<double>(kp, c, op, 0, j, blk);
      R* d = dmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
      for (int l = 0; l < L; ++l) scatter_block<R, L>(d, blk, entries, l);
    }
  }
}

template <class R, int L>
struct DmTile {
  const DmPlan& kp;
  const Call<R>& c;
  const kern::DmSegments& seg;
  R* partials;       // [n_tiles, n_weights] when reducing weight gradients
  const R* umats;    // uniform blocks
  const R* udmats;   // uniform derivative blocks (adjoint only)

  struct Scratch {
    R* rho;
    R* lam;
    R* stored;  // seg.per_segment states
    R* ckpt;    // seg.count states (seg.count > 1)
    R* mats;
    R* dblk;
    R* gslot;
    R* acc;
    R* ampv;
    R* ampn;
    double* probs;  // 2 << max_probs_k doubles (carved from reals: R is at most double)
    std::size_t bl[L];
  };

  std::size_t st() const { return kp.dim2 * 2 * L; }

  Scratch carve(R* w, std::size_t b0, int nvalid) const {
    Scratch t;
    const bool adjoint = c.cotangents != nullptr;
    // Probabilities in double whatever R is, first so they are 8-byte aligned:
    // (2 << k) * L reals of R hold 2^k doubles.
    t.probs = reinterpret_cast<double*>(w);
    w += (std::size_t{2} << kp.max_probs_k) * L;
    t.rho = w;
    w += st();
    t.lam = t.stored = t.ckpt = nullptr;
    if (adjoint) {
      t.lam = w;
      w += st();
      t.stored = w;
      w += st() * std::size_t(seg.per_segment);
      if (seg.count > 1) {
        t.ckpt = w;
        w += st() * std::size_t(seg.count);
      }
    }
    t.mats = w;
    w += kp.mat_entries * 2 * L;
    t.dblk = w;
    w += std::size_t{kMaxEntries} * 2 * L;
    t.gslot = w;
    w += std::size_t(kp.n_params) * L;
    t.acc = w;
    w += 2 * L;
    t.ampv = w;
    t.ampn = w + std::size_t(kp.amp_len) * L;
    for (int l = 0; l < L; ++l) t.bl[l] = b0 + (l < nvalid ? l : 0);
    return t;
  }

  void blocks(Scratch& t) const {
    kern::Cx<double> blk[kMaxEntries];
    for (int k = 0; k < kp.n_ops; ++k) {
      const DmOp& op = kp.ops[k];
      if (!per_sample(op, c)) continue;
      for (int l = 0; l < L; ++l) {
        kern::dm_op_block<double>(kp, c, op, t.bl[l], -1, blk);
        scatter_block<R, L>(t.mats + op.mat_entry * 2 * L, blk, op.dim * op.dim, l);
      }
    }
  }

  void initial_state(Scratch& t) const {
    std::memset(t.rho, 0, st() * sizeof(R));
    if (!kp.amp) {
      for (int l = 0; l < L; ++l) t.rho[l] = 1;
      return;
    }
    for (int l = 0; l < L; ++l) {
      double nrm = 0;
      for (int j = 0; j < kp.amp_len; ++j) {
        const double v = j < kp.amp_n_features
                             ? double(c.inputs[t.bl[l] * kp.n_inputs + kp.amp_first_input + j])
                             : kp.amp_pad;
        t.ampv[std::size_t(j) * L + l] = static_cast<R>(v);
        nrm += v * v;
      }
      t.ampn[l] = static_cast<R>(kp.amp_normalize ? std::sqrt(nrm) : 1.0);
      for (int a = 0; a < kp.amp_len; ++a) {
        for (int b = 0; b < kp.amp_len; ++b) {
          const std::uint64_t i = (kp.amp_index[a] << kp.n) | kp.amp_index[b];
          t.rho[i * 2 * L + l] = t.ampv[std::size_t(a) * L + l] * t.ampv[std::size_t(b) * L + l] / (t.ampn[l] * t.ampn[l]);
        }
      }
    }
  }

  const R* block(const DmOp& op, const Scratch& t) const {
    return (per_sample(op, c) ? t.mats : umats) + op.mat_entry * 2 * L;
  }

  // Ops [k0, k1) on rho; with store, the states parameterised ops need go to stored[].
  void forward_range(Scratch& t, int k0, int k1, bool store, int par) const {
    int slot = 0;
    for (int k = k0; k < k1; ++k) {
      const DmOp& op = kp.ops[k];
      const R* m = block(op, t);
      const bool keep = store && op.slot >= 0;
      if (op.kind == kern::kDmGate) {
        apply_gate_side<R, L, kern::kDmConj>(t.rho, op, op.col, kp.dim2, m, par);
        if (keep) std::memcpy(t.stored + st() * std::size_t(slot++), t.rho, st() * sizeof(R));
        apply_gate_side<R, L, kern::kDmN>(t.rho, op, op.row, kp.dim2, m, par);
      } else {
        if (keep) std::memcpy(t.stored + st() * std::size_t(slot++), t.rho, st() * sizeof(R));
        if (op.population_coherence) {
          apply_channel1<R, L, false>(t.rho, op.sup, kp.dim2, m, par);
        } else {
          apply_site<R, L, kern::kDmN>(t.rho, op.sup, op.dim, kp.dim2, m, par);
        }
      }
    }
  }

  void backward_range(Scratch& t, int k0, int k1, int par) const {
    kern::Cx<double> blk[kMaxEntries];
    int slot = 0;
    for (int k = k0; k < k1; ++k) slot += kp.ops[k].slot >= 0 ? 1 : 0;
    for (int k = k1 - 1; k >= k0; --k) {
      const DmOp& op = kp.ops[k];
      const R* m = block(op, t);
      const bool gate = op.kind == kern::kDmGate;
      bool wanted = false;
      for (int j = 0; j < op.n_params; ++j) wanted = wanted || kern::param_wanted(kp, c, op.first_param + j);
      if (gate && op.slot >= 0 && wanted && par <= 0) {
        fused_gate_step(t, op, m, t.stored + st() * std::size_t(--slot), par);
        continue;
      }
      if (op.slot >= 0) {
        const R* x = t.stored + st() * std::size_t(--slot);
        for (int j = 0; j < op.n_params; ++j) {
          const int s = op.first_param + j;
          if (!kern::param_wanted(kp, c, s)) continue;
          const R* d = udmats + (op.dmat_entry + std::size_t(j) * op.dim * op.dim) * 2 * L;
          if (per_sample(op, c)) {
            for (int l = 0; l < L; ++l) {
              kern::dm_op_block<double>(kp, c, op, t.bl[l], j, blk);
              scatter_block<R, L>(t.dblk, blk, op.dim * op.dim, l);
            }
            d = t.dblk;
          }
          for (int l = 0; l < L; ++l) t.acc[l] = 0;
          if (op.population_coherence) {
            sandwich_channel1<R, L>(t.lam, x, op.sup, kp.dim2, d, t.acc);
          } else {
            sandwich_site<R, L>(t.lam, x, gate ? op.row : op.sup, op.dim, kp.dim2, d, t.acc);
          }
          for (int l = 0; l < L; ++l) t.gslot[s * L + l] += (gate ? 2 : 1) * t.acc[l];
        }
      }
      if (gate) {
        apply_gate_side<R, L, kern::kDmDag>(t.lam, op, op.row, kp.dim2, m, par);
        apply_gate_side<R, L, kern::kDmTrans>(t.lam, op, op.col, kp.dim2, m, par);
      } else if (op.population_coherence) {
        apply_channel1<R, L, true>(t.lam, op.sup, kp.dim2, m, par);
      } else {
        apply_site<R, L, kern::kDmDag>(t.lam, op.sup, op.dim, kp.dim2, m, par);
      }
    }
  }

  // A parameterised gate's step of the reverse sweep (one sample per thread, or a
  // tile): the row-side un-apply of lam fused with the outer product of x and lam
  // (kern::dm_apply_outer_lane), each parameter's derivative its D x D trace, then the
  // column side. One pass for the row side and every parameter, against a sandwich
  // pass per parameter before it (the state-vector executor's way, docs/architecture.md).
  void fused_gate_step(Scratch& t, const DmOp& op, const R* m, const R* x, int par) const {
    kern::Cx<double> blk[kMaxEntries];
    alignas(64) R outer[16 * 2 * L];  // gate blocks are 2 x 2 or 4 x 4
    const int entries = op.dim * op.dim;
    std::memset(outer, 0, std::size_t(entries) * 2 * L * sizeof(R));
    auto pass = [&](auto dim) {
      constexpr int D = decltype(dim)::value;
      site_groups(op.row, kp.dim2, 0, [&](std::uint64_t base) {
#pragma omp simd
        for (int l = 0; l < L; ++l) kern::dm_apply_outer_lane<R, L, D, kern::kDmDag>(t.lam, x, op.row, base, m, outer, l);
      });
    };
    if (op.dim == 2) {
      pass(std::integral_constant<int, 2>{});
    } else {
      pass(std::integral_constant<int, 4>{});
    }
    for (int j = 0; j < op.n_params; ++j) {
      const int s = op.first_param + j;
      if (!kern::param_wanted(kp, c, s)) continue;
      const R* d = udmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
      if (per_sample(op, c) && op.n_params == 1 && kern::one_parameter_group(op.gate)) {
        one_parameter_derivative<R, L>(op.gate, m, t.dblk, op.dim);
        d = t.dblk;
      } else if (per_sample(op, c)) {
        for (int l = 0; l < L; ++l) {
          kern::dm_op_block<double>(kp, c, op, t.bl[l], j, blk);
          scatter_block<R, L>(t.dblk, blk, entries, l);
        }
        d = t.dblk;
      }
      add_outer_trace<R, L>(t.gslot + s * L, d, outer, op.dim == 2 ? 1 : 2);
    }
    apply_gate_side<R, L, kern::kDmTrans>(t.lam, op, op.col, kp.dim2, m, par);
  }

  // Probabilities of lane l over bit positions pos[0..k) (first most significant),
  // with the readout errors of those wires, into t.probs.
  void probs_of(const Scratch& t, const int* pos, int k, int l) const {
    const std::size_t no = std::size_t{1} << k;
    double* p = t.probs;
    for (std::size_t o = 0; o < no; ++o) p[o] = 0;
    for (std::uint64_t i = 0; i < kp.dim; ++i) {
      p[kern::outcome_index(i, pos, k)] += double(t.rho[((i << kp.n) | i) * 2 * L + l]);
    }
    readout_transform(kp.readout, pos, k, kp.n, p, false);
  }

  void write_results(Scratch& t, std::size_t b0, int nvalid) const {
    if (c.outputs) {
      for (int e = 0; e < kp.n_expvals; ++e) {
        R acc[L];
        for (int l = 0; l < L; ++l) acc[l] = 0;
        for (int q = kp.term_begin[e]; q < kp.term_begin[e + 1]; ++q) {
          const auto& term = kp.terms[q];
          R part[L];
          for (int l = 0; l < L; ++l) part[l] = 0;
          for (std::uint64_t j = 0; j < kp.dim; ++j) {
#pragma omp simd
            for (int l = 0; l < L; ++l) part[l] += kern::dm_pauli_term_lane<R, L>(t.rho, term.masks, j, kp.n, l);
          }
          for (int l = 0; l < L; ++l) acc[l] += static_cast<R>(term.coef) * part[l];
        }
        for (int l = 0; l < nvalid; ++l) c.outputs[(b0 + l) * kp.n_outputs + e] = acc[l];
      }
      for (int p = 0; p < kp.n_probs; ++p) {
        const int* pos = kp.probs_pos + kp.probs_begin[p];
        const int k = kp.probs_begin[p + 1] - kp.probs_begin[p];
        for (int l = 0; l < nvalid; ++l) {
          probs_of(t, pos, k, l);
          R* row = c.outputs + (b0 + l) * kp.n_outputs + kp.probs_out[p];
          for (std::size_t o = 0; o < (std::size_t{1} << k); ++o) row[o] = static_cast<R>(t.probs[o]);
        }
      }
      if (kp.n_purity > 0) {
        R acc[L];
        for (int l = 0; l < L; ++l) acc[l] = 0;
        for (std::uint64_t i = 0; i < kp.dim2; ++i) {
#pragma omp simd
          for (int l = 0; l < L; ++l) acc[l] += kern::dm_norm2_lane<R, L>(t.rho, i, l);
        }
        for (int l = 0; l < nvalid; ++l) {
          for (int q = 0; q < kp.n_purity; ++q) c.outputs[(b0 + l) * kp.n_outputs + kp.purity_out + q] = acc[l];
        }
      }
    }
    if (c.extra_probs) {
      const std::size_t no = std::size_t{1} << c.extra_k;
      for (int l = 0; l < nvalid; ++l) {
        probs_of(t, c.extra_pos, c.extra_k, l);
        for (std::size_t o = 0; o < no; ++o) c.extra_probs[(b0 + l) * no + o] = static_cast<R>(t.probs[o]);
      }
    }
    if (c.states) {
      for (int l = 0; l < nvalid; ++l) {
        R* out = c.states + (b0 + l) * kp.dim2 * 2;
        for (std::uint64_t i = 0; i < kp.dim2; ++i) {
          out[2 * i] = t.rho[i * 2 * L + l];
          out[2 * i + 1] = t.rho[i * 2 * L + L + l];
        }
      }
    }
  }

  // lam = sum_k cot_k O_k as a vectorised matrix (probabilities through the readout's
  // transpose; a purity Tr(rho^2) contributes 2 cot rho).
  void seed_adjoint(Scratch& t, int nvalid) const {
    std::memset(t.lam, 0, st() * sizeof(R));
    R coef[L];
    for (int e = 0; e < kp.n_expvals; ++e) {
      for (int l = 0; l < L; ++l) coef[l] = l < nvalid ? c.cotangents[t.bl[l] * kp.n_outputs + e] : R(0);
      for (int q = kp.term_begin[e]; q < kp.term_begin[e + 1]; ++q) {
        const auto& term = kp.terms[q];
        const R tc = static_cast<R>(term.coef);
        for (std::uint64_t j = 0; j < kp.dim; ++j) {
#pragma omp simd
          for (int l = 0; l < L; ++l) kern::dm_pauli_seed_lane<R, L>(t.lam, term.masks, j, kp.n, tc * coef[l], l);
        }
      }
    }
    for (int p = 0; p < kp.n_probs; ++p) {
      const int* pos = kp.probs_pos + kp.probs_begin[p];
      const int k = kp.probs_begin[p + 1] - kp.probs_begin[p];
      const std::size_t no = std::size_t{1} << k;
      for (int l = 0; l < nvalid; ++l) {
        const R* cot = c.cotangents + t.bl[l] * kp.n_outputs + kp.probs_out[p];
        for (std::size_t o = 0; o < no; ++o) t.probs[o] = double(cot[o]);
        readout_transform(kp.readout, pos, k, kp.n, t.probs, true);
        for (std::uint64_t i = 0; i < kp.dim; ++i) {
          t.lam[((i << kp.n) | i) * 2 * L + l] += static_cast<R>(t.probs[kern::outcome_index(i, pos, k)]);
        }
      }
    }
    if (kp.n_purity > 0) {
      for (int l = 0; l < L; ++l) {
        R s = 0;
        for (int q = 0; q < kp.n_purity; ++q) s += l < nvalid ? c.cotangents[t.bl[l] * kp.n_outputs + kp.purity_out + q] : R(0);
        coef[l] = 2 * s;
      }
      for (std::uint64_t i = 0; i < kp.dim2; ++i) {
#pragma omp simd
        for (int l = 0; l < L; ++l) {
          t.lam[i * 2 * L + l] += coef[l] * t.rho[i * 2 * L + l];
          t.lam[i * 2 * L + L + l] += coef[l] * t.rho[i * 2 * L + L + l];
        }
      }
    }
  }

  void run(std::size_t tile, std::size_t b0, int nvalid, R* w, int par) const {
    Scratch t = carve(w, b0, nvalid);
    blocks(t);
    initial_state(t);
    if (c.cotangents == nullptr) {
      forward_range(t, 0, kp.n_ops, false, par);
      write_results(t, b0, nvalid);
      return;
    }
    if (seg.count == 1) {
      forward_range(t, 0, kp.n_ops, true, par);
    } else {
      for (int s = 0; s < seg.count; ++s) {
        std::memcpy(t.ckpt + st() * std::size_t(s), t.rho, st() * sizeof(R));
        forward_range(t, seg.begin[s], seg.begin[s + 1], false, par);
      }
    }
    write_results(t, b0, nvalid);
    seed_adjoint(t, nvalid);
    std::memset(t.gslot, 0, std::size_t(kp.n_params) * L * sizeof(R));
    for (int s = seg.count - 1; s >= 0; --s) {
      if (seg.count > 1) {
        std::memcpy(t.rho, t.ckpt + st() * std::size_t(s), st() * sizeof(R));
        forward_range(t, seg.begin[s], seg.begin[s + 1], true, par);
      }
      backward_range(t, seg.begin[s], seg.begin[s + 1], par);
    }
    scatter_slot_gradients<R, L>(kp, c, t.gslot, partials, tile, b0, nvalid);
    embedding_gradient(t, b0, nvalid);
  }

  // rho0 = psi0 psi0^T (psi0 = v / |v| real): d f / d psi0_a = 2 sum_b Re lam0[a, b] psi0_b,
  // then through the normalisation as in the state-vector executor.
  void embedding_gradient(const Scratch& t, std::size_t b0, int nvalid) const {
    if (!kp.amp || !c.grad_inputs) return;
    for (int l = 0; l < nvalid; ++l) {
      const double nrm = double(t.ampn[l]);
      double dot = 0;
      auto grad_psi = [&](int a) {
        double s = 0;
        for (int b = 0; b < kp.amp_len; ++b) {
          const std::uint64_t i = (kp.amp_index[a] << kp.n) | kp.amp_index[b];
          s += 2.0 * double(t.lam[i * 2 * L + l]) * double(t.ampv[std::size_t(b) * L + l]) / nrm;
        }
        return s;
      };
      if (kp.amp_normalize) {
        for (int a = 0; a < kp.amp_len; ++a) dot += grad_psi(a) * double(t.ampv[std::size_t(a) * L + l]) / nrm;
      }
      R* gx = c.grad_inputs + (b0 + l) * kp.n_inputs + kp.amp_first_input;
      for (int a = 0; a < kp.amp_n_features; ++a) {
        const double ga = grad_psi(a);
        gx[a] += static_cast<R>(
            kern::embedding_feature_gradient(kp.amp_normalize, ga, double(t.ampv[std::size_t(a) * L + l]), nrm, dot));
      }
    }
  }
};

template <class R, int L>
void run_lanes(const DmPlan& kp, const Call<R>& c, const DmExec<R>& ex) {
  const bool adjoint = c.cotangents != nullptr;
  const std::size_t n_tiles = (c.batch + L - 1) / L;
  R* base = ex.work;
  R* umats = base;
  R* udmats = adjoint ? base + kp.mat_entries * 2 * L : nullptr;
  prepare_uniform<R, L>(kp, c, umats, udmats);
  base += (shared_reals_impl(kp, L, adjoint) + 15) / 16 * 16;
  R* partials = (adjoint && c.grad_weights && c.reduce_weights) ? base : nullptr;
  if (partials) base += (n_tiles * kp.n_weights + 15) / 16 * 16;  // keeps the slices 8-byte aligned
  const DmTile<R, L> runner{kp, c, ex.segments, partials, umats, udmats};
  run_tiles<L>(runner, c.batch, base, ex);
  if (partials) sum_tile_partials(partials, n_tiles, kp.n_weights, c.grad_weights);
}

template <class R, int LW>
void run(const DmPlan& kp, const Call<R>& c, const DmExec<R>& ex) {
  if (ex.lanes == LW) {
    run_lanes<R, LW>(kp, c, ex);
  } else {
    run_lanes<R, 1>(kp, c, ex);
  }
}

inline std::size_t thread_reals(const DmPlan& kp, int L, bool adjoint, const kern::DmSegments& seg) {
  return thread_reals_impl(kp, L, adjoint, seg);
}
inline std::size_t shared_reals(const DmPlan& kp, int L, bool adjoint) { return shared_reals_impl(kp, L, adjoint); }

}  // namespace qfleet::cpu::QFLEET_KERN_ISA::dm
