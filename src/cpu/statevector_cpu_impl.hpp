// The cpu executor, compiled once per instruction set. Each including file defines
// QFLEET_KERN_ISA (the namespace its code and the kernel templates live in) and
// QFLEET_ISA_LANES_F32/F64 (tile widths: samples per tile, a multiple of the
// vector width), then includes this file. Only raw pointers cross this boundary.
//
// Per tile of L samples: parameter values -> per-sample gate blocks -> forward
// sweep -> measurements -> (adjoint) fold the cotangents into one observable,
// lam = O psi, and sweep back: psi <- U^dag psi; g += 2 Re <lam|dU|psi>;
// lam <- U^dag lam (Jones & Gacon, arXiv:2009.02823, Algorithm 1).
#pragma once

#include <omp.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/statevector_cpu.hpp"
#include "kernels/gate_matrix.hpp"
#include "kernels/statevector.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

using detail::OpPlan;
using kern::GateSite;

// 4x4: blocks have at most kern::kMaxGroupTargets = 2 target wires (plan_op refuses more).
constexpr int kMaxBlockEntries = (1 << kern::kMaxGroupTargets) * (1 << kern::kMaxGroupTargets);

inline std::size_t thread_reals_impl(const KernelPlan& kp, int L, bool adjoint) {
  const std::size_t st = kp.dim * 2 * L;
  std::size_t r = st;                                  // psi
  if (adjoint) r += st;                                // lam
  r += kp.mat_entries * 2 * L;                         // per-sample blocks
  r += std::size_t{kMaxBlockEntries} * 2 * L;          // one derivative block
  r += 2 * std::size_t(kp.n_params) * L;               // parameter values, slot gradients
  r += 2 * std::size_t(L);                             // accumulators, coefficients
  r += (std::size_t(kp.amp_len) + 1) * L;              // embedded amplitudes + norms
  return r + 64;                                       // alignment slack
}

inline std::size_t shared_reals_impl(const KernelPlan& kp, int L, bool adjoint) {
  return (kp.mat_entries + (adjoint ? kp.dmat_entries : 0)) * 2 * L;
}

// Loops over the 2^(n-k) groups of a gate; par > 0 splits them across that many
// threads (used when one large state is the unit of work).
template <class F>
inline void groups_for(std::uint64_t ng, int par, F&& f) {
  if (par > 0) {
#pragma omp parallel for schedule(static) num_threads(par)
    for (long long g = 0; g < static_cast<long long>(ng); ++g) f(static_cast<std::uint64_t>(g));
  } else {
    for (std::uint64_t g = 0; g < ng; ++g) f(g);
  }
}

// acc[l] += sum_g f(g, l). Sums go to a local array first: accumulating straight
// into acc (which may alias the states) keeps GCC from vectorising over lanes.
template <class R, int L, class F>
inline void groups_sum(std::uint64_t ng, int par, R* acc, F&& f) {
  if constexpr (L == 1) {
    if (par > 0) {
      R s = 0;
#pragma omp parallel for schedule(static) num_threads(par) reduction(+ : s)
      for (long long g = 0; g < static_cast<long long>(ng); ++g) s += f(static_cast<std::uint64_t>(g), 0);
      acc[0] += s;
      return;
    }
  }
  R loc[L];
  for (int l = 0; l < L; ++l) loc[l] = 0;
  for (std::uint64_t g = 0; g < ng; ++g) {
#pragma omp simd
    for (int l = 0; l < L; ++l) loc[l] += f(g, l);
  }
  for (int l = 0; l < L; ++l) acc[l] += loc[l];
}

// One sample per tile (L == 1, large n): lanes no longer hold samples, so vectorise
// over runs of groups instead. Groups g .. g+kRun-1 sit at consecutive amplitudes
// whenever the gate's lowest wire bit is >= log2(kRun); the inner loop then has a
// fixed trip count over contiguous memory, which GCC vectorises.
constexpr std::uint64_t kRun = 8;

template <class F>
inline void runs_for(const GateSite& site, std::uint64_t ng, int par, F&& body) {
  const bool contiguous = (std::uint64_t{1} << site.pos[0]) >= kRun;
  auto block = [&](std::uint64_t g0) {
    if (contiguous && g0 + kRun <= ng) {
      const std::uint64_t b0 = kern::insert_zero_bits(g0, site.pos, site.k_all) | site.ctrl;
#pragma omp simd
      for (std::uint64_t j = 0; j < kRun; ++j) body(b0 + j);
    } else {
      for (std::uint64_t g = g0; g < g0 + kRun && g < ng; ++g) {
        body(kern::insert_zero_bits(g, site.pos, site.k_all) | site.ctrl);
      }
    }
  };
  const std::uint64_t nb = (ng + kRun - 1) / kRun;
  groups_for(nb, par, [&](std::uint64_t b) { block(b * kRun); });
}

template <class R, int L, int KT, bool Dag>
inline void apply_kt(R* s, const GateSite& site, std::uint64_t ng, const R* m, int par) {
  if constexpr (L == 1) {
    runs_for(site, ng, par, [&](std::uint64_t base) { kern::apply_block_lane<R, 1, KT, Dag>(s, site, base, m, 0); });
  } else {
    groups_for(ng, par, [&](std::uint64_t g) {
      const std::uint64_t base = kern::insert_zero_bits(g, site.pos, site.k_all) | site.ctrl;
#pragma omp simd
      for (int l = 0; l < L; ++l) kern::apply_block_lane<R, L, KT, Dag>(s, site, base, m, l);
    });
  }
}

template <class R, int L, bool Dag>
inline void apply_op(R* s, const KernelPlan& kp, const OpPlan& op, const R* m, int par) {
  const std::uint64_t ng = kp.dim >> op.site.k_all;
  switch (op.site.kt) {
    case 1:
      return apply_kt<R, L, 1, Dag>(s, op.site, ng, m, par);
    default:  // 2 (kern::kMaxGroupTargets: plan_op refuses more)
      return apply_kt<R, L, 2, Dag>(s, op.site, ng, m, par);
  }
}

template <class R, int L, int KT>
inline void sandwich_kt(const R* lam, const R* phi, const GateSite& site, std::uint64_t ng,
                        const R* m, R* acc, int par) {
  if constexpr (L == 1) {
    // Per-run partial sums, then a reduction over runs (threads when par > 0).
    const std::uint64_t nb = (ng + kRun - 1) / kRun;
    const bool contiguous = (std::uint64_t{1} << site.pos[0]) >= kRun;
    auto run_sum = [&](std::uint64_t b, int) {
      const std::uint64_t g0 = b * kRun;
      R sum = 0;
      if (contiguous && g0 + kRun <= ng) {
        const std::uint64_t b0 = kern::insert_zero_bits(g0, site.pos, site.k_all) | site.ctrl;
#pragma omp simd reduction(+ : sum)
        for (std::uint64_t j = 0; j < kRun; ++j) sum += kern::sandwich_lane<R, 1, KT>(lam, phi, site, b0 + j, m, 0);
      } else {
        for (std::uint64_t g = g0; g < g0 + kRun && g < ng; ++g) {
          const std::uint64_t base = kern::insert_zero_bits(g, site.pos, site.k_all) | site.ctrl;
          sum += kern::sandwich_lane<R, 1, KT>(lam, phi, site, base, m, 0);
        }
      }
      return sum;
    };
    groups_sum<R, 1>(nb, par, acc, run_sum);
  } else {
    R loc[L];
    for (int l = 0; l < L; ++l) loc[l] = 0;
    for (std::uint64_t g = 0; g < ng; ++g) {
      const std::uint64_t base = kern::insert_zero_bits(g, site.pos, site.k_all) | site.ctrl;
#pragma omp simd
      for (int l = 0; l < L; ++l) loc[l] += kern::sandwich_lane<R, L, KT>(lam, phi, site, base, m, l);
    }
    for (int l = 0; l < L; ++l) acc[l] += loc[l];
  }
}

// acc[l] += Re <lam| M |phi> for a (derivative) block M.
template <class R, int L>
inline void sandwich_op(const R* lam, const R* phi, const KernelPlan& kp, const OpPlan& op,
                        const R* m, R* acc, int par) {
  const std::uint64_t ng = kp.dim >> op.site.k_all;
  switch (op.site.kt) {
    case 1:
      return sandwich_kt<R, L, 1>(lam, phi, op.site, ng, m, acc, par);
    default:  // 2 (kern::kMaxGroupTargets: plan_op refuses more)
      return sandwich_kt<R, L, 2>(lam, phi, op.site, ng, m, acc, par);
  }
}

// Writes a block given in double (re, im pairs) into lane l of a per-lane block.
template <class R, int L>
inline void scatter_block(R* dst, const kern::Cx<double>* src, int entries, int l) {
  for (int e = 0; e < entries; ++e) {
    dst[e * 2 * L + l] = static_cast<R>(src[e].re);
    dst[e * 2 * L + L + l] = static_cast<R>(src[e].im);
  }
}

template <class R>
struct Sources {
  const KernelPlan& kp;
  const Call<R>& c;
  // Value of parameter slot s for sample b.
  double value(int s, std::size_t b) const {
    const Param& p = kp.params[s];
    switch (p.kind) {
      case Param::Kind::Constant:
        return p.value;
      case Param::Kind::Input:
        return p.scale * static_cast<double>(c.inputs[b * kp.n_inputs + p.index]);
      case Param::Kind::Weight:
      default:
        return p.scale * static_cast<double>(c.weights_per_sample ? c.weights[b * kp.n_weights + p.index]
                                                                 : c.weights[p.index]);
    }
  }
};

// Blocks (and derivative blocks) that are the same for every sample of this call.
template <class R, int L>
void prepare_uniform(const KernelPlan& kp, const Call<R>& c, R* mats, R* dmats) {
  const int wm = c.weights_per_sample ? 1 : 0;
  const Sources<R> src{kp, c};
  kern::Cx<double> blk[kMaxBlockEntries];
  for (int k = 0; k < kp.n_ops; ++k) {
    const OpPlan& op = kp.ops[k];
    if (op.per_sample[wm]) continue;
    const int entries = op.dim * op.dim;
    double q[kMaxGateParams] = {0, 0, 0};
    for (int j = 0; j < op.n_params; ++j) q[j] = src.value(op.first_param + j, 0);
    if (op.fixed >= 0) {
      for (int e = 0; e < entries; ++e) {
        blk[e] = {kp.fixed_blocks[2 * (op.fixed + e)], kp.fixed_blocks[2 * (op.fixed + e) + 1]};
      }
    } else {
      kern::gate_block<double>(op.gate, q, blk);
    }
    for (int l = 0; l < L; ++l) scatter_block<R, L>(mats + op.mat_entry * 2 * L, blk, entries, l);
    if (dmats == nullptr) continue;
    for (int j = 0; j < op.n_params; ++j) {
      if (kp.params[op.first_param + j].kind == Param::Kind::Constant) continue;
      kern::gate_block_derivative<double>(op.gate, q, j, blk);
      R* d = dmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
      for (int l = 0; l < L; ++l) scatter_block<R, L>(d, blk, entries, l);
    }
  }
}

template <class R, int L>
struct TileRunner {
  const KernelPlan& kp;
  const Call<R>& c;
  const R* umats;   // uniform blocks
  const R* udmats;  // uniform derivative blocks (adjoint only)
  R* partials;      // [n_tiles, n_weights] when reducing weight gradients
  int wm;

  void run(std::size_t tile, std::size_t b0, int nvalid, R* w, int par) const {
    const bool adjoint = c.cotangents != nullptr;
    const std::size_t st = kp.dim * 2 * L;
    R* psi = w;
    w += st;
    R* lam = adjoint ? w : nullptr;
    if (adjoint) w += st;
    R* mats = w;
    w += kp.mat_entries * 2 * L;
    R* dblk = w;
    w += std::size_t{kMaxBlockEntries} * 2 * L;
    R* pv = w;
    w += std::size_t(kp.n_params) * L;
    R* gslot = w;
    w += std::size_t(kp.n_params) * L;
    R* acc = w;
    R* coef = w + L;
    w += 2 * L;
    R* ampv = w;  // [amp_len][L] raw amplitudes, then [L] norms
    R* ampn = w + std::size_t(kp.amp_len) * L;

    std::size_t bl[L];
    for (int l = 0; l < L; ++l) bl[l] = b0 + (l < nvalid ? l : 0);  // padding lanes repeat sample b0
    const Sources<R> src{kp, c};
    for (int s = 0; s < kp.n_params; ++s) {
      for (int l = 0; l < L; ++l) pv[s * L + l] = static_cast<R>(src.value(s, bl[l]));
    }

    // Per-sample blocks for this tile.
    kern::Cx<double> blk[kMaxBlockEntries];
    for (int k = 0; k < kp.n_ops; ++k) {
      const OpPlan& op = kp.ops[k];
      if (!op.per_sample[wm]) continue;
      for (int l = 0; l < L; ++l) {
        double q[kMaxGateParams] = {0, 0, 0};
        for (int j = 0; j < op.n_params; ++j) q[j] = src.value(op.first_param + j, bl[l]);
        kern::gate_block<double>(op.gate, q, blk);
        scatter_block<R, L>(mats + op.mat_entry * 2 * L, blk, op.dim * op.dim, l);
      }
    }
    auto block_of = [&](const OpPlan& op) -> const R* {
      return (op.per_sample[wm] ? mats : umats) + op.mat_entry * 2 * L;
    };

    // Initial state.
    std::memset(psi, 0, st * sizeof(R));
    if (kp.amp) {
      for (int l = 0; l < L; ++l) {
        double nrm = 0;
        for (int j = 0; j < kp.amp_len; ++j) {
          const double v = j < kp.amp_n_features
                               ? static_cast<double>(c.inputs[bl[l] * kp.n_inputs + kp.amp_first_input + j])
                               : kp.amp_pad;
          ampv[std::size_t(j) * L + l] = static_cast<R>(v);
          nrm += v * v;
        }
        ampn[l] = static_cast<R>(kp.amp_normalize ? std::sqrt(nrm) : 1.0);
        for (int j = 0; j < kp.amp_len; ++j) {
          psi[kp.amp_index[j] * 2 * L + l] = ampv[std::size_t(j) * L + l] / ampn[l];
        }
      }
    } else {
      for (int l = 0; l < L; ++l) psi[l] = 1;
    }

    for (int k = 0; k < kp.n_ops; ++k) apply_op<R, L, false>(psi, kp, kp.ops[k], block_of(kp.ops[k]), par);

    if (c.outputs) measure(psi, b0, nvalid, acc, par);
    if (c.extra_probs) probs_into(psi, c.extra_probs_pos, c.extra_probs_k, c.extra_probs,
                                  std::size_t{1} << c.extra_probs_k, 0, b0, nvalid);
    if (c.states) {
      for (int l = 0; l < nvalid; ++l) {
        R* out = c.states + (b0 + l) * kp.dim * 2;
        for (std::uint64_t i = 0; i < kp.dim; ++i) {
          out[2 * i] = psi[i * 2 * L + l];
          out[2 * i + 1] = psi[i * 2 * L + L + l];
        }
      }
    }
    if (!adjoint) return;

    // lam = O psi with O = sum_k cot[b, k] O_k.
    std::memset(lam, 0, st * sizeof(R));
    for (int k = 0; k < kp.n_expvals; ++k) {
      for (int l = 0; l < L; ++l) coef[l] = l < nvalid ? c.cotangents[bl[l] * kp.n_outputs + k] : R(0);
      for (int t = kp.term_begin[k]; t < kp.term_begin[k + 1]; ++t) {
        const auto& term = kp.terms[t];
        const R tc = static_cast<R>(term.coef);
        groups_for(kp.dim, L == 1 ? par : 0, [&](std::uint64_t i) {
#pragma omp simd
          for (int l = 0; l < L; ++l) kern::pauli_accumulate_lane<R, L>(lam, psi, term.masks, i, tc * coef[l], l);
        });
      }
    }
    for (int p = 0; p < kp.n_probs; ++p) {
      const int* pos = kp.probs_pos + kp.probs_begin[p];
      const int k = kp.probs_begin[p + 1] - kp.probs_begin[p];
      for (std::uint64_t i = 0; i < kp.dim; ++i) {
        const std::uint64_t j = kern::outcome_index(i, pos, k);
        for (int l = 0; l < nvalid; ++l) {
          const R cj = c.cotangents[bl[l] * kp.n_outputs + kp.probs_out[p] + j];
          lam[i * 2 * L + l] += cj * psi[i * 2 * L + l];
          lam[i * 2 * L + L + l] += cj * psi[i * 2 * L + L + l];
        }
      }
    }

    std::memset(gslot, 0, std::size_t(kp.n_params) * L * sizeof(R));
    for (int k = kp.n_ops - 1; k >= 0; --k) {
      const OpPlan& op = kp.ops[k];
      const R* m = block_of(op);
      apply_op<R, L, true>(psi, kp, op, m, par);
      const int entries = op.dim * op.dim;
      for (int j = 0; j < op.n_params; ++j) {
        const int slot = op.first_param + j;
        const Param::Kind kind = kp.params[slot].kind;
        // Only parameters whose gradient was asked for cost a derivative block and a sandwich.
        if (kind == Param::Kind::Constant || (kind == Param::Kind::Input && !c.grad_inputs) ||
            (kind == Param::Kind::Weight && !c.grad_weights)) {
          continue;
        }
        const R* d;
        if (op.per_sample[wm]) {
          for (int l = 0; l < L; ++l) {
            double q[kMaxGateParams] = {0, 0, 0};
            for (int i = 0; i < op.n_params; ++i) q[i] = src.value(op.first_param + i, bl[l]);
            kern::gate_block_derivative<double>(op.gate, q, j, blk);
            scatter_block<R, L>(dblk, blk, entries, l);
          }
          d = dblk;
        } else {
          d = udmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
        }
        for (int l = 0; l < L; ++l) acc[l] = 0;
        sandwich_op<R, L>(lam, psi, kp, op, d, acc, par);
        for (int l = 0; l < L; ++l) gslot[slot * L + l] += 2 * acc[l];
      }
      apply_op<R, L, true>(lam, kp, op, m, par);
    }

    // Scatter slot gradients to inputs and weights.
    if (c.grad_inputs) {
      for (int l = 0; l < nvalid; ++l) {
        R* gx = c.grad_inputs + (b0 + l) * kp.n_inputs;
        for (int i = 0; i < kp.n_inputs; ++i) gx[i] = 0;
      }
    }
    R* part = partials ? partials + tile * kp.n_weights : nullptr;
    if (part) {
      for (int i = 0; i < kp.n_weights; ++i) part[i] = 0;
    }
    if (c.grad_weights && !c.reduce_weights) {
      for (int l = 0; l < nvalid; ++l) {
        R* gw = c.grad_weights + (b0 + l) * kp.n_weights;
        for (int i = 0; i < kp.n_weights; ++i) gw[i] = 0;
      }
    }
    for (int s = 0; s < kp.n_params; ++s) {
      const Param& p = kp.params[s];
      if (p.kind == Param::Kind::Constant) continue;
      const R sc = static_cast<R>(p.scale);
      for (int l = 0; l < nvalid; ++l) {
        const R g = sc * gslot[s * L + l];
        if (p.kind == Param::Kind::Input) {
          if (c.grad_inputs) c.grad_inputs[(b0 + l) * kp.n_inputs + p.index] += g;
        } else if (c.grad_weights) {
          if (part) {
            part[p.index] += g;
          } else {
            c.grad_weights[(b0 + l) * kp.n_weights + p.index] += g;
          }
        }
      }
    }
    // Through the amplitude embedding: d f / d psi0_j = 2 Re lam0_j (psi0 real), then
    // through the normalisation psi0 = v / |v|: g_v = (g - psi0 (psi0 . g)) / |v|.
    if (kp.amp && c.grad_inputs) {
      for (int l = 0; l < nvalid; ++l) {
        double dot = 0;
        if (kp.amp_normalize) {
          for (int j = 0; j < kp.amp_len; ++j) {
            dot += 2.0 * lam[kp.amp_index[j] * 2 * L + l] * ampv[std::size_t(j) * L + l] / ampn[l];
          }
        }
        R* gx = c.grad_inputs + (b0 + l) * kp.n_inputs + kp.amp_first_input;
        for (int j = 0; j < kp.amp_n_features; ++j) {
          const double g = 2.0 * lam[kp.amp_index[j] * 2 * L + l];
          gx[j] += static_cast<R>(
              kp.amp_normalize ? (g - ampv[std::size_t(j) * L + l] / ampn[l] * dot) / ampn[l] : g);
        }
      }
    }
  }

  void measure(const R* psi, std::size_t b0, int nvalid, R* acc, int par) const {
    for (int k = 0; k < kp.n_expvals; ++k) {
      for (int l = 0; l < L; ++l) acc[l] = 0;
      for (int t = kp.term_begin[k]; t < kp.term_begin[k + 1]; ++t) {
        const auto& term = kp.terms[t];
        R part[L];
        for (int l = 0; l < L; ++l) part[l] = 0;
        groups_sum<R, L>(kp.dim, par, part, [&](std::uint64_t i, int l) {
          return kern::pauli_term_lane<R, L>(psi, term.masks, i, l);
        });
        for (int l = 0; l < L; ++l) acc[l] += static_cast<R>(term.coef) * part[l];
      }
      for (int l = 0; l < nvalid; ++l) c.outputs[(b0 + l) * kp.n_outputs + k] = acc[l];
    }
    for (int p = 0; p < kp.n_probs; ++p) {
      probs_into(psi, kp.probs_pos + kp.probs_begin[p], kp.probs_begin[p + 1] - kp.probs_begin[p],
                 c.outputs, kp.n_outputs, kp.probs_out[p], b0, nvalid);
    }
  }

  // out[b, col + j] = sum over basis states whose measured bits read j of |psi|^2.
  void probs_into(const R* psi, const int* pos, int k, R* out, std::size_t stride, int col,
                  std::size_t b0, int nvalid) const {
    const std::size_t no = std::size_t{1} << k;
    for (int l = 0; l < nvalid; ++l) {
      R* row = out + (b0 + l) * stride + col;
      for (std::size_t j = 0; j < no; ++j) row[j] = 0;
    }
    for (std::uint64_t i = 0; i < kp.dim; ++i) {
      const std::uint64_t j = kern::outcome_index(i, pos, k);
      for (int l = 0; l < nvalid; ++l) {
        const R re = psi[i * 2 * L + l], im = psi[i * 2 * L + L + l];
        out[(b0 + l) * stride + col + j] += re * re + im * im;
      }
    }
  }
};

template <class R, int L>
void run_lanes(const KernelPlan& kp, const Call<R>& c) {
  const bool adjoint = c.cotangents != nullptr;
  R* shared = c.work;
  R* umats = shared;
  R* udmats = adjoint ? shared + kp.mat_entries * 2 * L : nullptr;
  prepare_uniform<R, L>(kp, c, umats, udmats);
  R* threads_base = shared + shared_reals_impl(kp, L, adjoint);
  const std::size_t n_tiles = (c.batch + L - 1) / L;
  R* partials = (adjoint && c.grad_weights && c.reduce_weights) ? threads_base : nullptr;
  if (partials) threads_base += n_tiles * kp.n_weights;
  const TileRunner<R, L> runner{kp, c, umats, udmats, partials, c.weights_per_sample ? 1 : 0};

  if (c.amplitude_parallel) {
    for (std::size_t t = 0; t < n_tiles; ++t) runner.run(t, t * L, 1, threads_base, c.threads);
  } else if (c.threads <= 1) {  // no OpenMP region at all for small calls
    for (std::size_t t = 0; t < n_tiles; ++t) {
      const std::size_t b0 = t * L;
      runner.run(t, b0, static_cast<int>(c.batch - b0 < std::size_t(L) ? c.batch - b0 : L), threads_base, 0);
    }
  } else {
#pragma omp parallel for schedule(static) num_threads(c.threads)
    for (long long t = 0; t < static_cast<long long>(n_tiles); ++t) {
      const std::size_t b0 = std::size_t(t) * L;
      const int nvalid = static_cast<int>(c.batch - b0 < std::size_t(L) ? c.batch - b0 : L);
      runner.run(std::size_t(t), b0, nvalid, threads_base + omp_get_thread_num() * c.work_per_thread,
                 0);
    }
  }
  if (partials) {  // reduce in tile order: the sum does not depend on the thread count
    for (int i = 0; i < kp.n_weights; ++i) c.grad_weights[i] = 0;
    for (std::size_t t = 0; t < n_tiles; ++t) {
      for (int i = 0; i < kp.n_weights; ++i) c.grad_weights[i] += partials[t * kp.n_weights + i];
    }
  }
}

template <class R, int LW>
void run(const KernelPlan& kp, const Call<R>& c) {
  if (c.lanes == LW) {
    run_lanes<R, LW>(kp, c);
  } else {
    run_lanes<R, 1>(kp, c);
  }
}

inline std::size_t shared_reals(const KernelPlan& kp, int L, bool adjoint) {
  return shared_reals_impl(kp, L, adjoint);
}
inline std::size_t thread_reals(const KernelPlan& kp, int L, bool adjoint, int) {
  return thread_reals_impl(kp, L, adjoint);
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
