// The cpu executor, compiled once per instruction set. Each including file defines
// QFLEET_KERN_ISA (the namespace its code and the kernel templates live in) and
// QFLEET_ISA_LANES_F32/F64 (tile widths: samples per tile, a multiple of the
// vector width), then includes this file. Only raw pointers cross this boundary.
//
// It reads the packed plan (kern::SvPlan) and call record (kern::SvCall) the cuda
// bodies read, and takes parameter values and gate blocks from kernels/sv_params.hpp.
//
// Per tile of L samples: per-sample gate blocks -> forward sweep -> measurements ->
// (adjoint) fold the cotangents into one observable, lam = O psi, and sweep back:
// psi <- U^dag psi; g += 2 Re <lam|dU|psi>; lam <- U^dag lam (Jones & Gacon,
// arXiv:2009.02823, Algorithm 1) -> gradients scattered to inputs and weights.
#pragma once

#include <omp.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/exec_shape.hpp"
#include "cpu/lane_blocks.hpp"
#include "cpu/scatter_gradients.hpp"
#include "cpu/site_groups.hpp"
#include "cpu/sv_cpu.hpp"
#include "kernels/statevector.hpp"
#include "kernels/sv_params.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

using kern::GateSite;
using kern::OpDesc;
using kern::SvPlan;

// 4x4: blocks have at most kern::kMaxBlockTargets = 2 target wires (plan_op refuses more).
constexpr int kMaxBlockEntries = (1 << kern::kMaxBlockTargets) * (1 << kern::kMaxBlockTargets);

inline std::size_t thread_reals_impl(const SvPlan& kp, int L, bool adjoint) {
  const std::size_t st = kp.dim * 2 * L;
  std::size_t r = st;                                  // psi
  if (adjoint) r += st;                                // lam
  r += kp.mat_entries * 2 * L;                         // per-sample blocks
  r += std::size_t{kMaxBlockEntries} * 2 * L;          // one derivative block
  r += std::size_t(kp.n_params) * L;                   // slot gradients
  r += 2 * std::size_t(L);                             // accumulators, coefficients
  r += (std::size_t(kp.amp_len) + 1) * L;              // embedded amplitudes + norms
  return r + 64;                                       // alignment slack
}

inline std::size_t shared_reals_impl(const SvPlan& kp, int L, bool adjoint) {
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
    site_groups(site, ng << site.k_all, par, [&](std::uint64_t base) {
#pragma omp simd
      for (int l = 0; l < L; ++l) kern::apply_block_lane<R, L, KT, Dag>(s, site, base, m, l);
    });
  }
}

// Whether op is a fixed gate whose target block is X (PauliX, CNOT, Toffoli, ...):
// applying it (or its adjoint) only swaps amplitude pairs. A fixed gate's block is
// the same in every lane, so lane 0 decides.
template <class R, int L>
inline bool is_x_block(const OpDesc& op, const R* m) {
  return op.fixed >= 0 && op.site.kt == 1 && m[0] == 0 && m[L] == 0 && m[2 * L] == 1 && m[3 * L] == 0 &&
         m[4 * L] == 1 && m[5 * L] == 0 && m[6 * L] == 0 && m[7 * L] == 0;
}

// Swaps each group's two amplitudes in every lane: the X block without its
// arithmetic (the hybrid classifier's CNOTs).
template <class R, int L>
inline void swap_pairs(R* s, const GateSite& site, std::uint64_t ng) {
  site_groups(site, ng << site.k_all, 0, [&](std::uint64_t base) {
    R* a = s + (base + site.off[0]) * 2 * L;
    R* b = s + (base + site.off[1]) * 2 * L;
#pragma omp simd
    for (int i = 0; i < 2 * L; ++i) {
      const R t = a[i];
      a[i] = b[i];
      b[i] = t;
    }
  });
}

template <class R, int L, bool Dag>
inline void apply_op(R* s, const SvPlan& kp, const OpDesc& op, const R* m, int par) {
  const std::uint64_t ng = kp.dim >> op.site.k_all;
  if constexpr (L > 1) {
    if (is_x_block<R, L>(op, m)) return swap_pairs<R, L>(s, op.site, ng);
  }
  switch (op.site.kt) {
    case 1:
      return apply_kt<R, L, 1, Dag>(s, op.site, ng, m, par);
    default:  // 2 (kern::kMaxBlockTargets: plan_op refuses anything else)
      return apply_kt<R, L, 2, Dag>(s, op.site, ng, m, par);
  }
}

// op's block (deriv < 0) or its derivative by parameter deriv for sample b, in
// double whatever the call's precision (scattered into lanes of R afterwards);
// returns its number of entries.
template <class R>
inline int op_block_double(const SvPlan& kp, const Call<R>& c, const OpDesc& op, std::size_t b, int deriv,
                           kern::Cx<double>* blk) {
  if (op.site.kt == 1) {
    kern::op_block_cx<double, 2>(kp, c, op, b, deriv, blk);
    return 4;
  }
  kern::op_block_cx<double, 4>(kp, c, op, b, deriv, blk);  // 2 (kMaxBlockTargets)
  return 16;
}

// Blocks (and derivative blocks) that are the same for every sample of this call.
template <class R, int L>
void prepare_uniform(const SvPlan& kp, const Call<R>& c, R* mats, R* dmats) {
  kern::Cx<double> blk[kMaxBlockEntries];
  for (int k = 0; k < kp.n_ops; ++k) {
    const OpDesc& op = kp.ops[k];
    if (kern::op_per_sample(op, c.weights_per_sample)) continue;
    const int entries = op_block_double(kp, c, op, 0, -1, blk);
    for (int l = 0; l < L; ++l) scatter_block<R, L>(mats + op.mat_entry * 2 * L, blk, entries, l);
    if (dmats == nullptr || op.fixed >= 0) continue;
    for (int j = 0; j < op.n_params; ++j) {
      if (kp.params[op.first_param + j].kind == kern::kParamConstant) continue;
      op_block_double(kp, c, op, 0, j, blk);
      R* d = dmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
      for (int l = 0; l < L; ++l) scatter_block<R, L>(d, blk, entries, l);
    }
  }
}

// One tile of L samples through forward, measurements and the adjoint sweep.
// Lanes past the batch's end (nvalid <= l < L) repeat sample b0 and write nothing.
template <class R, int L>
struct TileRunner {
  const SvPlan& kp;
  const Call<R>& c;
  const R* umats;   // uniform blocks
  const R* udmats;  // uniform derivative blocks (adjoint only)
  R* partials;      // [n_tiles, n_weights] when reducing weight gradients

  // A tile's scratch, carved from its thread's workspace (thread_reals_impl's layout).
  struct Scratch {
    R* psi;
    R* lam;    // adjoint only
    R* mats;   // per-sample blocks
    R* dblk;   // one per-sample derivative block
    R* gslot;  // [n_params][L] gradient of each parameter slot
    R* acc;    // [L]
    R* coef;   // [L]
    R* ampv;   // [amp_len][L] raw embedded amplitudes
    R* ampn;   // [L] their norms
    std::size_t bl[L];  // sample of each lane
  };

  Scratch carve(R* w, std::size_t b0, int nvalid) const {
    const std::size_t st = kp.dim * 2 * L;
    Scratch t;
    t.psi = w;
    w += st;
    t.lam = nullptr;
    if (c.cotangents != nullptr) {
      t.lam = w;
      w += st;
    }
    t.mats = w;
    w += kp.mat_entries * 2 * L;
    t.dblk = w;
    w += std::size_t{kMaxBlockEntries} * 2 * L;
    t.gslot = w;
    w += std::size_t(kp.n_params) * L;
    t.acc = w;
    t.coef = w + L;
    w += 2 * L;
    t.ampv = w;
    t.ampn = w + std::size_t(kp.amp_len) * L;
    for (int l = 0; l < L; ++l) t.bl[l] = b0 + (l < nvalid ? l : 0);
    return t;
  }

  const R* block(const OpDesc& op, const Scratch& t) const {
    return (kern::op_per_sample(op, c.weights_per_sample) ? t.mats : umats) + op.mat_entry * 2 * L;
  }

  void run(std::size_t tile, std::size_t b0, int nvalid, R* w, int par) const {
    Scratch t = carve(w, b0, nvalid);
    per_sample_blocks(t);
    initial_state(t);  // also the embedded amplitudes' norms, for embedding_gradient
    if (c.resume != nullptr) {
      resume_state(t);
    } else {
      for (int k = 0; k < kp.n_ops; ++k) apply_op<R, L, false>(t.psi, kp, kp.ops[k], block(kp.ops[k], t), par);
      write_results(t, b0, nvalid, par);
    }
    if (c.cotangents == nullptr) return;
    seed_adjoint(t, nvalid, par);
    backward(t, par);
    scatter_slot_gradients<R, L>(kp, c, t.gslot, partials, tile, b0, nvalid);
    embedding_gradient(t, b0, nvalid);
  }

  void per_sample_blocks(Scratch& t) const {
    kern::Cx<double> blk[kMaxBlockEntries];
    for (int k = 0; k < kp.n_ops; ++k) {
      const OpDesc& op = kp.ops[k];
      if (!kern::op_per_sample(op, c.weights_per_sample)) continue;
      for (int l = 0; l < L; ++l) {
        const int entries = op_block_double(kp, c, op, t.bl[l], -1, blk);
        scatter_block<R, L>(t.mats + op.mat_entry * 2 * L, blk, entries, l);
      }
    }
  }

  // |0...0>, or the embedded (normalised) features.
  void initial_state(Scratch& t) const {
    std::memset(t.psi, 0, kp.dim * 2 * L * sizeof(R));
    if (!kp.amp) {
      for (int l = 0; l < L; ++l) t.psi[l] = 1;
      return;
    }
    for (int l = 0; l < L; ++l) {
      double nrm = 0;
      for (int j = 0; j < kp.amp_len; ++j) {
        const double v = j < kp.amp_n_features
                             ? static_cast<double>(c.inputs[t.bl[l] * kp.n_inputs + kp.amp_first_input + j])
                             : kp.amp_pad;
        t.ampv[std::size_t(j) * L + l] = static_cast<R>(v);
        nrm += v * v;
      }
      t.ampn[l] = static_cast<R>(kp.amp_normalize ? std::sqrt(nrm) : 1.0);
      for (int j = 0; j < kp.amp_len; ++j) {
        t.psi[kp.amp_index[j] * 2 * L + l] = t.ampv[std::size_t(j) * L + l] / t.ampn[l];
      }
    }
  }

  // The final states a forward call saved (Program::vjp_saved): psi as the forward
  // sweep would leave it, so the reverse sweep below runs unchanged.
  void resume_state(Scratch& t) const {
    for (int l = 0; l < L; ++l) {
      const R* in = c.resume + t.bl[l] * kp.dim * 2;
      for (std::uint64_t i = 0; i < kp.dim; ++i) {
        t.psi[i * 2 * L + l] = in[2 * i];
        t.psi[i * 2 * L + L + l] = in[2 * i + 1];
      }
    }
  }

  // Measurements, sampling probabilities and final states, as the call asks.
  void write_results(Scratch& t, std::size_t b0, int nvalid, int par) const {
    if (c.outputs) measure(t.psi, b0, nvalid, t.acc, par);
    if (c.extra_probs) {
      probs_into(t.psi, c.extra_pos, c.extra_k, c.extra_probs, std::size_t{1} << c.extra_k, 0, b0, nvalid);
    }
    if (c.states) {
      for (int l = 0; l < nvalid; ++l) {
        R* out = c.states + (b0 + l) * kp.dim * 2;
        for (std::uint64_t i = 0; i < kp.dim; ++i) {
          out[2 * i] = t.psi[i * 2 * L + l];
          out[2 * i + 1] = t.psi[i * 2 * L + L + l];
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

  // lam = O psi with O = sum_k cot[b, k] O_k (probabilities: projectors).
  void seed_adjoint(Scratch& t, int nvalid, int par) const {
    R* lam = t.lam;
    const R* psi = t.psi;
    std::memset(lam, 0, kp.dim * 2 * L * sizeof(R));
    for (int k = 0; k < kp.n_expvals; ++k) {
      for (int l = 0; l < L; ++l) t.coef[l] = l < nvalid ? c.cotangents[t.bl[l] * kp.n_outputs + k] : R(0);
      for (int q = kp.term_begin[k]; q < kp.term_begin[k + 1]; ++q) {
        const auto& term = kp.terms[q];
        const R tc = static_cast<R>(term.coef);
        const R* coef = t.coef;
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
          const R cj = c.cotangents[t.bl[l] * kp.n_outputs + kp.probs_out[p] + j];
          lam[i * 2 * L + l] += cj * psi[i * 2 * L + l];
          lam[i * 2 * L + L + l] += cj * psi[i * 2 * L + L + l];
        }
      }
    }
  }

  // The reverse sweep (Jones & Gacon, Algorithm 1): psi <- U^dag psi,
  // gslot += 2 Re <lam| dU |psi>, lam <- U^dag lam, in one pass over the state per
  // gate (kern::adjoint_step_lane): both un-applies and the block's outer product,
  // from which each parameter's derivative is a D x D trace. Against an un-apply, one
  // sandwich pass per parameter and a second un-apply, a Rot gate reads the state
  // once instead of five times (forward + backward 1.3-1.9x, same-run A/B: `git show a22bac2:docs/benchmarks.md`).
  void backward(Scratch& t, int par) const {
    kern::Cx<double> blk[kMaxBlockEntries];
    alignas(64) R outer[kMaxBlockEntries * 2 * L];
    std::memset(t.gslot, 0, std::size_t(kp.n_params) * L * sizeof(R));
    for (int k = kp.n_ops - 1; k >= 0; --k) {
      const OpDesc& op = kp.ops[k];
      const R* m = block(op, t);
      bool wanted = false;
      for (int j = 0; j < op.n_params; ++j) wanted = wanted || kern::param_wanted(kp, c, op.first_param + j);
      const int entries = 1 << 2 * op.site.kt;
      if (wanted) std::memset(outer, 0, std::size_t(entries) * 2 * L * sizeof(R));
      adjoint_pass(t, op, m, wanted ? outer : nullptr, par);
      if (!wanted) continue;
      const bool per_sample = kern::op_per_sample(op, c.weights_per_sample);
      for (int j = 0; j < op.n_params; ++j) {
        const int slot = op.first_param + j;
        if (!kern::param_wanted(kp, c, slot)) continue;
        const R* d;
        if (per_sample && op.n_params == 1 && kern::one_parameter_group(op.gate)) {
          one_parameter_derivative<R, L>(op.gate, m, t.dblk, 1 << op.site.kt);
          d = t.dblk;
        } else if (per_sample) {
          for (int l = 0; l < L; ++l) {
            op_block_double(kp, c, op, t.bl[l], j, blk);
            scatter_block<R, L>(t.dblk, blk, entries, l);
          }
          d = t.dblk;
        } else {
          d = udmats + (op.dmat_entry + std::size_t(j) * entries) * 2 * L;
        }
        add_outer_trace<R, L>(t.gslot + slot * L, d, outer, op.site.kt);
      }
    }
  }

  // One gate's step of the reverse sweep over the whole state; outer (when not null,
  // zeroed by the caller) receives the block's outer product.
  void adjoint_pass(Scratch& t, const OpDesc& op, const R* m, R* outer, int par) const {
    const std::uint64_t ng = kp.dim >> op.site.k_all;
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;  // kern::kMaxBlockTargets
    if constexpr (L > 1) {
      if (outer == nullptr && is_x_block<R, L>(op, m)) {
        swap_pairs<R, L>(t.psi, op.site, ng);
        swap_pairs<R, L>(t.lam, op.site, ng);
        return;
      }
      auto groups = [&](auto kt, auto with_outer) {
        constexpr int KT = decltype(kt)::value;
        constexpr bool O = decltype(with_outer)::value;
        site_groups(op.site, kp.dim, 0, [&](std::uint64_t base) {
#pragma omp simd
          for (int l = 0; l < L; ++l) {
            kern::adjoint_step_lane<R, L, KT, O>(t.psi, t.lam, op.site, base, m, outer, l, l);
          }
        });
      };
      if (op.site.kt == 1) {
        outer ? groups(One{}, std::true_type{}) : groups(One{}, std::false_type{});
      } else {
        outer ? groups(Two{}, std::true_type{}) : groups(Two{}, std::false_type{});
      }
    } else {
      if (op.site.kt == 1) {
        outer ? single_sample_outer_pass<1>(t, op.site, ng, m, outer, par)
              : runs_for(op.site, ng, par, [&](std::uint64_t base) {
                  kern::adjoint_step_lane<R, 1, 1, false>(t.psi, t.lam, op.site, base, m, nullptr, 0, 0);
                });
      } else {
        outer ? single_sample_outer_pass<2>(t, op.site, ng, m, outer, par)
              : runs_for(op.site, ng, par, [&](std::uint64_t base) {
                  kern::adjoint_step_lane<R, 1, 2, false>(t.psi, t.lam, op.site, base, m, nullptr, 0, 0);
                });
      }
    }
  }

  // One sample (L == 1, large states): runs of kRun consecutive groups take the
  // vector lanes, each with its own column of outer-product partials, summed per
  // run; with par > 0 the runs are split across threads, whose partials are added
  // in thread order (the same sum for the same thread count, run after run).
  template <int KT>
  void single_sample_outer_pass(Scratch& t, const GateSite& site, std::uint64_t ng, const R* m, R* outer,
                                int par) const {
    constexpr int NE = 2 << (2 * KT);  // re, im of the D x D entries
    constexpr int RUN = static_cast<int>(kRun);
    const bool contiguous = (std::uint64_t{1} << site.pos[0]) >= kRun;
    const std::uint64_t nb = (ng + kRun - 1) / kRun;
    auto block = [&](std::uint64_t b, R* acc) {
      const std::uint64_t g0 = b * kRun;
      if (contiguous && g0 + kRun <= ng) {
        alignas(64) R part[NE * RUN] = {};
        const std::uint64_t b0 = kern::insert_zero_bits(g0, site.pos, site.k_all) | site.ctrl;
#pragma omp simd
        for (int j = 0; j < RUN; ++j) {
          kern::adjoint_step_lane<R, 1, KT, true, 1, RUN>(t.psi, t.lam, site, b0 + j, m, part, 0, j);
        }
        for (int q = 0; q < NE; ++q) {
          R s = 0;
          for (int j = 0; j < RUN; ++j) s += part[q * RUN + j];
          acc[q] += s;
        }
      } else {
        for (std::uint64_t g = g0; g < g0 + kRun && g < ng; ++g) {
          const std::uint64_t base = kern::insert_zero_bits(g, site.pos, site.k_all) | site.ctrl;
          kern::adjoint_step_lane<R, 1, KT, true>(t.psi, t.lam, site, base, m, acc, 0, 0);
        }
      }
    };
    if (par <= 0) {
      for (std::uint64_t b = 0; b < nb; ++b) block(b, outer);
      return;
    }
    // Each thread's partials on its own stack (a warm call allocates nothing:
    // tests/alloc/test_no_alloc.cpp), added in thread order by an ordered loop
    // whose iteration th runs on thread th.
#pragma omp parallel num_threads(par)
    {
      R acc[NE] = {};
#pragma omp for schedule(static)
      for (long long b = 0; b < static_cast<long long>(nb); ++b) block(std::uint64_t(b), acc);
      const int nt = omp_get_num_threads();
#pragma omp for ordered schedule(static, 1)
      for (int th = 0; th < nt; ++th) {
#pragma omp ordered
        for (int q = 0; q < NE; ++q) outer[q] += acc[q];
      }
    }
  }

  // Through the amplitude embedding: d f / d psi0_j = 2 Re lam0_j (psi0 real), then
  // through the normalisation psi0 = v / |v|: g_v = (g - psi0 (psi0 . g)) / |v|.
  void embedding_gradient(const Scratch& t, std::size_t b0, int nvalid) const {
    if (!kp.amp || !c.grad_inputs) return;
    for (int l = 0; l < nvalid; ++l) {
      double dot = 0;
      if (kp.amp_normalize) {
        for (int j = 0; j < kp.amp_len; ++j) {
          dot += 2.0 * t.lam[kp.amp_index[j] * 2 * L + l] * t.ampv[std::size_t(j) * L + l] / t.ampn[l];
        }
      }
      R* gx = c.grad_inputs + (b0 + l) * kp.n_inputs + kp.amp_first_input;
      for (int j = 0; j < kp.amp_n_features; ++j) {
        const double g = 2.0 * t.lam[kp.amp_index[j] * 2 * L + l];
        gx[j] += static_cast<R>(kern::embedding_feature_gradient(kp.amp_normalize, g, double(t.ampv[std::size_t(j) * L + l]),
                                                                 double(t.ampn[l]), dot));
      }
    }
  }
};

template <class R, int L>
void run_lanes(const SvPlan& kp, const Call<R>& c, const Exec<R>& ex) {
  const bool adjoint = c.cotangents != nullptr;
  R* shared = ex.work;
  R* umats = shared;
  R* udmats = adjoint ? shared + kp.mat_entries * 2 * L : nullptr;
  prepare_uniform<R, L>(kp, c, umats, udmats);
  R* threads_base = shared + shared_reals_impl(kp, L, adjoint);
  const std::size_t n_tiles = (c.batch + L - 1) / L;
  R* partials = (adjoint && c.grad_weights && c.reduce_weights) ? threads_base : nullptr;
  if (partials) threads_base += n_tiles * kp.n_weights;
  const TileRunner<R, L> runner{kp, c, umats, udmats, partials};
  run_tiles<L>(runner, c.batch, threads_base, ex);
  if (partials) sum_tile_partials(partials, n_tiles, kp.n_weights, c.grad_weights);
}

template <class R, int LW>
void run(const SvPlan& kp, const Call<R>& c, const Exec<R>& ex) {
  if (ex.lanes == LW) {
    run_lanes<R, LW>(kp, c, ex);
  } else {
    run_lanes<R, 1>(kp, c, ex);
  }
}

inline std::size_t shared_reals(const SvPlan& kp, int L, bool adjoint) { return shared_reals_impl(kp, L, adjoint); }
inline std::size_t thread_reals(const SvPlan& kp, int L, bool adjoint) { return thread_reals_impl(kp, L, adjoint); }

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
