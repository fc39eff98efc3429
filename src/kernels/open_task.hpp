// One open-system task, forward and reverse mode, written once for the cpu
// executor (src/cpu/open_cpu_impl.hpp, compiled per ISA) and the cuda backend
// (src/cuda/open_cuda_kernels.cuh). Per segment k:
//   exact:  P_k = exp(dt_k A_k) (Higham 2005), X_k = P_k X_{k-1};
//           backward: W = lam_k X_{k-1}^dag, (P_k^dag, L) = expm_frechet(dt_k A_k^dag, W)
//           gives dF/dA_k = dt_k L (the adjoint Frechet derivative, Al-Mohy & Higham
//           2009) and lam_{k-1} = P_k^dag lam_k; or (OpenView::action) X_k = exp(dt_k A_k)
//           X_{k-1} by Taylor steps and their reverse mode (kernels/expm_action.hpp);
//   rk4/euler/dopri5/tsit5: explicit Runge-Kutta steps and their discrete adjoint (the
//           exact gradient of the discretised map); the generator applied densely or in
//           Lindblad form (kernels/lindblad_action.hpp). The adaptive solvers' (dopri5,
//           tsit5) step controller is re-run from
//           the stored segment start in the backward pass; it is deterministic, so it
//           accepts the same steps, which are then held fixed.
// Then dF/dtheta = Re <dF/dA_k, dA/dtheta> for every control (per segment), drift
// coefficient and rate: one inner product each.
//
// Saved-state adjoint (autograd's two calls): a forward call can keep X_0 .. X_N and
// the adaptive solvers' first trial steps in the caller's buffer (OpenTaskCall::save),
// and a backward call then starts its reverse sweep from them (resume) without the
// forward sweep; the gradients are those of the fused call, bit for bit.
//
// No allocation, no exceptions, no std:: containers: the caller hands each task a
// workspace of open_task_work() entries and gets a kern::OpenTaskStatus back.
// C++17, host and device (QFLEET_HD).
//
// A task is run by one thread (G = SoloGroup: the cpu executor, the GPU's thread
// per task) or by a group of threads sharing its workspace (a warp or a block on
// the GPU; kernels/group.hpp): products, the generator, the stage combinations,
// expm / expm_frechet and the gradient inner products are split over the members;
// the small d x d work (fidelities, expectation values, output rows) is done by
// rank 0. Every member keeps its own copy of the scalar state (step sizes, step
// counts), which stays identical because the reductions return the same value to
// every member.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/dense.hpp"
#include "kernels/expm.hpp"
#include "kernels/expm_action.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/lindblad_action.hpp"
#include "kernels/open_merit.hpp"
#include "kernels/open_products.hpp"
#include "kernels/open_view.hpp"
#include "kernels/open_workspace.hpp"
#include "kernels/rk_tableaux.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// N is int, or FixedDim<n> for the hot generator sizes (closed qubit n = 2, open
// qubit n = 4, open two-qubit n = 16): every loop bound becomes a constant.
template <class R, class N, class G = SoloGroup>
class OpenTask {
 public:
  QFLEET_HD OpenTask(const OpenView& v, const OpenTaskCall<R>& c, Cx<R>* work, int cap, const G& grp = G{})
      : v_(v), c_(c), grp_(grp), n_(open_detail::make_dim<N>(v.n)), cap_(open_detail::adaptive(v.solver) || v.action ? cap : v.fixed_steps) {
    nn_ = std::size_t(v.n) * v.n;
    nc_ = std::size_t(v.n) * v.c;
    ng_ = std::size_t(v.ng);
    h_start_ = reinterpret_cast<double*>(work);
    hs_ = h_start_ + v.nseg;
    jump_grad_ = hs_ + (open_detail::adaptive(v.solver) ? cap : 0);
    hs_seg_ = hs_;
    if (v.traj_records > 0) {
      traj_hs_ = jump_grad_ + (v.lindblad ? v.nrate : 0);
      seg_slot_ = traj_hs_ + v.traj_records;
    }
    Cx<R>* p = work + (open_task_doubles(v, cap) * sizeof(double) + sizeof(Cx<R>) - 1) / sizeof(Cx<R>);
    a_static_ = p;
    a_ = a_static_ + ng_;
    g_ = a_ + ng_;
    g_sum_ = g_ + ng_;
    lam_ = g_sum_ + ng_;
    tmp_ = lam_ + nc_;
    hist_work_ = tmp_ + nc_;  // X_0 .. X_N
    hist_ = hist_work_;
    Cx<R>* q = hist_work_ + nc_ * (std::size_t(v.nseg) + 1);
    if (v.solver == Solver::exact && !v.action) {
      prop_ = q;
      w_ = prop_ + nn_;
      tmp_adj_ = w_ + nn_;
      ework_ = tmp_adj_ + nn_;
      q = ework_ + expm_frechet_work(v.n);
    } else {
      rk_ = q;  // Runge-Kutta stages, or the Taylor terms (kernels/expm_action.hpp)
      xs_ = rk_ + (v.action ? taylor_work_states() : 30) * nc_;
      q = xs_ + nc_ * (std::size_t(cap_) + 1);
      if (v.action) {
        terms_ = q;
        q += nc_ * std::size_t(v.taylor_terms);
      }
      xs_seg_ = xs_;
      xs_stride_ = nc_;
      if (open_stage_store(v, cap) > 0) {
        stages_ = stages_seg_ = q;
        stage_stride_ = nc_ * std::size_t(open_detail::tableau(v.solver).s - 1);
        q += open_stage_store(v, cap);
        if (v.traj_records > 0) {
          traj_ = q;
          traj_records_ = v.traj_records;
          q += open_trajectory_store(v);
        }
      }
    }
    if (v.lindblad) {
      lscratch_ = q;
      diag_w_ = lscratch_ + std::size_t(v.d) * v.d;
      jv_ = diag_w_ + std::size_t(v.d) * v.d;
      q = jv_ + v.jump_nnz;
    }
    fid_ = q;
  }

  // Runs task b (reading its parameters from sample `src`); cot_f/cot_l are its
  // cotangents (those of its expectation values and final state are row b of the
  // call's). grad_amp receives [nseg, nctrl], grad_drift/grad_rates their vectors and
  // grad_dur [nseg] (overwritten; any may be null). computed/reused count propagators.
  QFLEET_HD int run(std::size_t b, std::size_t src, R cot_f, R cot_l, R* grad_amp, R* grad_drift, R* grad_rates,
                    R* grad_dur, std::uint64_t& computed, std::uint64_t& reused) {
    using open_detail::at;
    using open_detail::cx;
    const bool lead = grp_.rank() == 0;
    h_guess_ = 0;  // each task's dopri5 steps depend on that task alone
    traj_used_ = 0;
    traj_full_ = false;
    if (c_.resume) traj_ = nullptr;  // no forward sweep to keep anything
    grp_.sync();   // the group's previous task is done with the shared workspace

    // A_static = A0 + sum c_m A_m + sum gamma_j D_j (each member its own entries).
    for (std::size_t i = r0(); i < ng_; i += gs()) a_static_[i] = cx<R>(at(v_.a0, i));
    for (int m = 0; m < v_.ndrift; ++m) {
      axpy_plan(a_static_, coef(c_.drift, c_.drift_per_task, src, m, v_.ndrift), v_.a_drift + 2 * ng_ * m);
    }
    for (int j = 0; j < v_.nrate; ++j) {
      axpy_plan(a_static_, coef(c_.rates, c_.rates_per_task, src, j, v_.nrate), v_.a_rate + 2 * ng_ * j);
    }
    if (v_.lindblad) bind_lindblad(src);

    // X_0 .. X_N: kept in the workspace, in the caller's saved buffer (forward with
    // saved), or read from it (vjp_saved: the forward sweep is not run again).
    // The adaptive solvers' first trial steps travel as bytes (also in a complex64
    // buffer), bit for bit, so the backward controller accepts the forward's steps.
    const std::size_t saved_at = b * open_saved_per_run<R>(v_), steps_at = saved_at + open_saved_states(v_);
    const std::size_t step_bytes = open_detail::adaptive(v_.solver) ? sizeof(double) * std::size_t(v_.nseg) : 0;
    hist_ = c_.save ? reinterpret_cast<Cx<R>*>(c_.save + saved_at) : hist_work_;
    Cx<R>* x = nullptr;
    if (c_.resume) {
      // The backward sweep only reads the history, so it is used in place.
      hist_ = const_cast<Cx<R>*>(reinterpret_cast<const Cx<R>*>(c_.resume + saved_at));
      if (lead) open_detail::copy_bytes(c_.resume + steps_at, h_start_, step_bytes);
      grp_.sync();
      x = hist_ + nc_ * std::size_t(v_.nseg);
    } else {
      const int st = forward_sweep(b, src, computed, reused, x);
      if (st != kOpenOk) return st;
      if (c_.save && lead) open_detail::copy_bytes(h_start_, c_.save + steps_at, step_bytes);
    }

    // Outputs at X_N (small d x d work: rank 0).
    if (lead) {
      if (c_.fidelity) c_.fidelity[b] = merit().fidelity(x, nullptr, 0, false);
      if (c_.leakage) c_.leakage[b] = merit().leakage(x, nullptr, 0, false);
      if (c_.final_state) merit().write_final(c_.final_state, b, x);
    }
    if (!c_.adjoint) return kOpenOk;

    seed_adjoint(b, x, cot_f, cot_l);

    // Runs of identical segments (exact propagator) share one adjoint Frechet derivative
    // when no per-segment gradient is asked (exact_segment_backward).
    const bool fold = (grad_amp == nullptr || v_.nctrl == 0) && grad_dur == nullptr;
    run_open_ = false;
    for (int k = v_.nseg - 1; k >= 0; --k) {
      const Cx<R>* xprev = hist_ + nc_ * k;
      const double dur = duration(src, k);
      generator(amps(src, k), a_);
      const double jump_before = grad_dur && v_.lindblad ? weighted_jump_gradient() : 0.0;
      if (v_.action) {
        for (std::size_t i = r0(); i < ng_; i += gs()) g_[i] = {0, 0};
        grp_.sync();
        const int st = taylor_segment_backward(dur, xprev);
        if (st != kOpenOk) return st;
      } else if (v_.solver == Solver::exact) {
        exact_segment_backward(dur, xprev, fold && same_as_previous(src, k));
      } else {
        for (std::size_t i = r0(); i < ng_; i += gs()) g_[i] = {0, 0};
        grp_.sync();
        h_guess_ = h_start_[k];
        const int st = segment_backward(k, dur, xprev);
        if (st != kOpenOk) return st;
      }
      if (grad_amp) {
        for (int i = 0; i < v_.nctrl; ++i) {
          const R gi = R(re_inner(g_, v_.a_ctrl + 2 * ng_ * i));
          if (lead) grad_amp[std::size_t(k) * v_.nctrl + i] = gi;
        }
      }
      if (grad_dur) {
        // The segment's map depends on (dur, A) through dur A alone (its step counts held
        // fixed), so dL/d dur = Re <dL/dA, A> / dur; in Lindblad form A's jump parts are
        // the rates' L rho L^dag terms, whose share of this segment is the change of
        // sum_j gamma_j jump_grad_j.
        grp_.sync();
        double s = re_inner_state(g_, a_);
        if (v_.lindblad) s += weighted_jump_gradient() - jump_before;
        if (lead) grad_dur[k] = R(s / dur);
      }
      for (std::size_t i = r0(); i < ng_; i += gs()) {
        g_sum_[i].re += g_[i].re;
        g_sum_[i].im += g_[i].im;
      }
      grp_.sync();
      if (c_.cot_expvals) {  // boundary k's expectation values (X_k = xprev)
        if (lead) merit().add_expval_cotangent(c_.cot_expvals, b, k, xprev, lam_);
        grp_.sync();
      }
    }
    static_gradients(grad_drift, grad_rates);
    if (c_.grad_initial && lead) merit().write_initial_gradient(c_.grad_initial, b, lam_);
    return kOpenOk;
  }

 private:
  // lam = dL/dX_N (Re <lam, dX> convention) of task b's cotangents at X_N: fidelity,
  // leakage, final state and the last boundary's expectation values; the sums of the
  // segments' generator gradients zeroed.
  QFLEET_HD void seed_adjoint(std::size_t b, const Cx<R>* x, R cot_f, R cot_l) {
    const bool lead = grp_.rank() == 0;
    for (std::size_t i = r0(); i < nc_; i += gs()) lam_[i] = {0, 0};
    grp_.sync();
    if (lead) {
      if (v_.target != kTargetNone && cot_f != 0) merit().fidelity(x, lam_, cot_f, true);
      if (v_.nsub > 0 && cot_l != 0) merit().leakage(x, lam_, cot_l, true);
      if (c_.cot_final) merit().add_final_cotangent(c_.cot_final, b, lam_);
      if (c_.cot_expvals) merit().add_expval_cotangent(c_.cot_expvals, b, v_.nseg, x, lam_);
    }
    // Only lam's Hermitian part pairs with the Hermitian states (Re <i A, X> = 0 for
    // Hermitian A and X), and the Lindblad form's adjoint products assume it. A final
    // state's cotangent may have any part; its Hermitian part is taken in every form, so
    // the initial state's gradient is the same whichever form runs.
    if ((v_.lindblad && ops_.hermitian) || (c_.cot_final && !v_.closed && !v_.gate)) make_hermitian(lam_);
    for (std::size_t i = r0(); i < ng_; i += gs()) g_sum_[i] = {0, 0};
    if (v_.lindblad && lead)
      for (int j = 0; j < v_.nrate; ++j) jump_grad_[j] = 0;
    grp_.sync();
  }

  // The exact solver's segment in reverse: W = lam X_{k-1}^dag;
  // (P^dag, L) = expm_frechet(dt A^dag, W); dF/dA = dt L into g_, lam <- P^dag lam.
  // more: segment k-1 has the same generator and duration, and no per-segment gradient
  // is asked. The adjoint Frechet derivative is linear in W, so a run of identical
  // segments sums its W's and takes one expm_frechet at its earliest segment (g_ is zero
  // at the others); lam steps through the run with P^dag, computed once at its latest.
  QFLEET_HD void exact_segment_backward(double dur, const Cx<R>* xprev, bool more) {
    if (!run_open_) {
      for (std::size_t i = r0(); i < nn_; i += gs()) w_[i] = {0, 0};
      const int n = static_cast<int>(n_);
      for (int i = grp_.rank(); i < n; i += grp_.size())
        for (int j = 0; j < n; ++j) {
          const Cx<R> z = a_[std::size_t(j) * n + i];
          tmp_adj_[std::size_t(i) * n + j] = {R(dur) * z.re, -R(dur) * z.im};
        }
      grp_.sync();
      if (more) expm(n_, tmp_adj_, prop_, ework_, grp_);
    }
    outer_c(lam_, xprev, w_);
    run_open_ = more;
    if (more) {
      for (std::size_t i = r0(); i < nn_; i += gs()) g_[i] = {0, 0};
    } else {
      expm_frechet(n_, tmp_adj_, w_, prop_, g_, ework_, grp_);
      for (std::size_t i = r0(); i < nn_; i += gs()) g_[i] = {R(dur) * g_[i].re, R(dur) * g_[i].im};
    }
    gemm_c(prop_, lam_, tmp_);
    open_detail::copy(tmp_, nc_, lam_, grp_);
  }

  // The drift and rate gradients from the summed generator gradient (either
  // destination may be null).
  QFLEET_HD void static_gradients(R* grad_drift, R* grad_rates) {
    const bool lead = grp_.rank() == 0;
    if (grad_drift) {
      for (int m = 0; m < v_.ndrift; ++m) {
        const R gm = R(re_inner(g_sum_, v_.a_drift + 2 * ng_ * m));
        if (lead) grad_drift[m] = gm;
      }
    }
    if (grad_rates) {
      for (int j = 0; j < v_.nrate; ++j) {
        // Lindblad form: the rate's L rho L^dag part, gathered during the steps.
        const R gj = R(re_inner(g_sum_, v_.a_rate + 2 * ng_ * j) + (v_.lindblad ? jump_grad_[j] : 0.0));
        if (lead) grad_rates[j] = gj;
      }
    }
  }

  // The forward sweep X_0 -> X_N into hist_ (x: X_N), recording expectation values
  // and the adaptive solvers' first trial step per segment (h_start_).
  QFLEET_HD int forward_sweep(std::size_t b, std::size_t src, std::uint64_t& computed, std::uint64_t& reused,
                              Cx<R>*& x) {
    using open_detail::at;
    using open_detail::cx;
    const std::size_t d = std::size_t(v_.d);
    const bool lead = grp_.rank() == 0;
    x = hist_;  // X_0
    if (c_.initial) {
      const R* init = c_.initial;  // (re, im) pairs
      if (v_.closed) {
        for (std::size_t i = r0(); i < d; i += gs()) x[i] = {init[2 * (b * d + i)], init[2 * (b * d + i) + 1]};
      } else {
        const R* rho = init + 2 * b * d * d;
        for (std::size_t e = r0(); e < d * d; e += gs()) {  // rho_ij = X[i + d j]
          const std::size_t i = e / d, j = e % d;
          x[i + d * j] = {rho[2 * e], rho[2 * e + 1]};
        }
      }
    } else {
      for (std::size_t i = r0(); i < nc_; i += gs()) x[i] = cx<R>(at(v_.x0, i));
    }
    grp_.sync();
    // A density matrix given by the user is Hermitian to the checks' tolerance; the
    // Lindblad form's products assume it exactly (they would otherwise apply L to its
    // Hermitian part only).
    if (v_.lindblad && ops_.hermitian) make_hermitian(x);
    if (c_.expvals && lead) merit().record_expvals(c_.expvals, b, 0, x);

    for (int k = 0; k < v_.nseg; ++k) {
      Cx<R>* xk = hist_ + nc_ * (k + 1);
      const R* u = amps(src, k);
      const double dur = duration(src, k);
      generator(u, a_);
      if (v_.action) {
        ++computed;
        const TaylorPlan tp = taylor(dur);
        if (tp.s == 0) return kOpenUnderflow;
        taylor_forward<R>(Gen{this}, nc_, tp, dur, x, xk, nullptr, rk_, grp_);
      } else if (v_.solver == Solver::exact) {
        if (same_as_previous(src, k)) {
          ++reused;
        } else {
          for (std::size_t i = r0(); i < nn_; i += gs()) w_[i] = {R(dur) * a_[i].re, R(dur) * a_[i].im};
          grp_.sync();
          expm(n_, w_, prop_, ework_, grp_);
          ++computed;
        }
        gemm_c(prop_, x, xk);
      } else {
        ++computed;
        if (lead) h_start_[k] = h_guess_;
        const int st = traj_ ? segment_steps_kept(k, dur, x, xk) : segment_steps(dur, x, xk, false);
        if (st != kOpenOk) return st;
      }
      x = xk;
      if (c_.expvals && lead) merit().record_expvals(c_.expvals, b, k + 1, x);
    }
    return kOpenOk;
  }

  // Segment k has segment k-1's duration and amplitudes (so its generator and propagator):
  // the forward sweep reuses the propagator, the reverse sweep folds the run.
  QFLEET_HD bool same_as_previous(std::size_t src, int k) const {
    if (k == 0 || duration(src, k) != duration(src, k - 1)) return false;
    const R* a = amps(src, k);
    const R* b = amps(src, k - 1);
    for (int i = 0; i < v_.nctrl; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  QFLEET_HD static R coef(const R* v, bool per_task, std::size_t b, int i, int len) {
    return per_task ? v[b * len + i] : v[i];
  }
  // Segment k's duration for task b: the call's, or the compiled grid's.
  QFLEET_HD double duration(std::size_t b, int k) const {
    if (!c_.durations) return v_.durations[k];
    return double(c_.durations[(c_.durations_per_task ? b * std::size_t(v_.nseg) : 0) + std::size_t(k)]);
  }
  QFLEET_HD const R* amps(std::size_t b, int k) const {
    if (v_.nctrl == 0) return nullptr;
    const std::size_t per = std::size_t(v_.nseg) * v_.nctrl;
    return c_.amplitudes + (c_.amplitudes_per_task ? b * per : 0) + std::size_t(k) * v_.nctrl;
  }
  // This member's first entry and the stride of split loops (constants 0 and 1 for
  // SoloGroup, so the cpu executor's loops stay plain unit-stride loops).
  QFLEET_HD std::size_t r0() const { return std::size_t(grp_.rank()); }
  QFLEET_HD std::size_t gs() const { return std::size_t(grp_.size()); }

  // y += s m over this member's entries of a plan matrix m (no sync: callers
  // touch only their own entries until they sync).
  QFLEET_HD void axpy_plan(Cx<R>* y, R s, const double* m) const {
    for (std::size_t i = r0(); i < ng_; i += gs()) {
      y[i].re += s * R(m[2 * i]);
      y[i].im += s * R(m[2 * i + 1]);
    }
  }
  // A = A_static + sum u_i A_ctrl_i.
  QFLEET_HD void generator(const R* u, Cx<R>* a) const {
    for (std::size_t i = r0(); i < ng_; i += gs()) a[i] = a_static_[i];
    for (int i = 0; i < v_.nctrl; ++i) axpy_plan(a, u[i], v_.a_ctrl + 2 * ng_ * i);
    grp_.sync();
  }
  // Re <a, m> over the generator's entries, summed over the group (every member gets it).
  QFLEET_HD double re_inner(const Cx<R>* a, const double* m) const {
    double s = 0;
    for (std::size_t i = r0(); i < ng_; i += gs()) s += double(a[i].re) * m[2 * i] + double(a[i].im) * m[2 * i + 1];
    return grp_.sum(s);
  }

  // Re <a, b> over the generator's entries of two working matrices, summed over the group.
  QFLEET_HD double re_inner_state(const Cx<R>* a, const Cx<R>* b) const {
    double s = 0;
    for (std::size_t i = r0(); i < ng_; i += gs()) s += double(a[i].re) * b[i].re + double(a[i].im) * b[i].im;
    return grp_.sum(s);
  }
  // Lindblad form: sum_j gamma_j jump_grad_j (jump_grad_ written by rank 0 before a sync).
  QFLEET_HD double weighted_jump_gradient() const {
    double s = 0;
    for (int j = 0; j < v_.nrate; ++j) s += double(ops_.gamma[j]) * jump_grad_[j];
    return s;
  }

  // Products with the state's c columns (c = n for gate problems, else 1).
  QFLEET_HD void gemm_c(const Cx<R>* a, const Cx<R>* b, Cx<R>* out, bool adj = false) const {
    if (v_.gate) {
      open_detail::gemm<R>(n_, n_, n_, a, b, out, adj, grp_);
    } else {
      open_detail::gemm<R>(n_, n_, FixedDim<1>{}, a, b, out, adj, grp_);
    }
  }
  QFLEET_HD void outer_c(const Cx<R>* a, const Cx<R>* b, Cx<R>* out) const {
    if (v_.gate) {
      open_detail::add_outer<R>(n_, n_, a, b, out, grp_);
    } else {
      open_detail::add_outer<R>(n_, FixedDim<1>{}, a, b, out, grp_);
    }
  }
  QFLEET_HD void copy(const Cx<R>* a, Cx<R>* b) const { open_detail::copy(a, nc_, b, grp_); }

  // The Lindblad form's operators for task src: its rates and the jump values in R.
  QFLEET_HD void bind_lindblad(std::size_t src) {
    for (std::size_t i = r0(); i < std::size_t(v_.jump_nnz); i += gs())
      jv_[i] = open_detail::cx<R>(open_detail::at(v_.jump_vals, i));
    grp_.sync();
    ops_.g = sparse_pattern_at(v_.g_pattern, v_.d);
    ops_.g_val = a_;
    ops_.njump = v_.nrate;
    ops_.jump_pat = v_.jump_pattern;
    ops_.jump_index = v_.jump_index;
    ops_.jump_val = jv_;
    ops_.jump_vstart = v_.jump_vstart;
    ops_.gamma = c_.rates + (c_.rates_per_task ? src * std::size_t(v_.nrate) : 0);
    ops_.hermitian = !v_.gate;  // a density matrix (run() makes X_0 and lam exactly Hermitian)
    ops_.diag_w = nullptr;
    if (lindblad_diag_weights(ops_, diag_w_, grp_)) ops_.diag_w = diag_w_;
  }
  // M = (M + M^dag) / 2 for the d x d state (Lindblad form's Hermitian products).
  QFLEET_HD void make_hermitian(Cx<R>* m) const {
    const int d = v_.d;
    grp_.sync();
    for (int j = grp_.rank(); j < d; j += grp_.size()) {
      for (int i = 0; i < j; ++i) {
        Cx<R>& a = m[i + std::size_t(d) * j];
        Cx<R>& b = m[j + std::size_t(d) * i];
        const Cx<R> h{R(0.5) * (a.re + b.re), R(0.5) * (a.im - b.im)};
        a = h;
        b = {h.re, -h.im};
      }
      m[j + std::size_t(d) * j].im = R(0);
    }
    grp_.sync();
  }
  // K = A Y: the generator on the state's columns (dense, or in Lindblad form).
  QFLEET_HD void apply_gen(const Cx<R>* y, Cx<R>* k) const {
    if (v_.lindblad) return lindblad_apply<false>(ops_, v_.gate ? v_.c : 1, y, k, lscratch_, grp_);
    gemm_c(a_, y, k);
  }
  // Ybar = A^dag Kbar and g += dF/dA for one stage (K = A Y): what each stage or Taylor
  // term of a reverse sweep asks, in one call (Lindblad form: lindblad_adjoint_gradient,
  // the rates' jump parts into jump_grad_).
  QFLEET_HD void adjoint_gradient(const Cx<R>* kbar, const Cx<R>* y, Cx<R>* ybar) const {
    if (v_.lindblad) {
      return lindblad_adjoint_gradient(ops_, v_.gate ? v_.c : 1, kbar, y, ybar, g_, jump_grad_, lscratch_, grp_);
    }
    gemm_c(a_, kbar, ybar, true);
    outer_c(kbar, y, g_);
  }

  // The generator as kernels/expm_action.hpp applies it.
  struct Gen {
    const OpenTask* t;
    QFLEET_HD void apply(const Cx<R>* y, Cx<R>* k) const { t->apply_gen(y, k); }
    QFLEET_HD void adjoint_gradient(const Cx<R>* kb, const Cx<R>* y, Cx<R>* yb) const { t->adjoint_gradient(kb, y, yb); }
  };
  // This segment's Taylor degree and steps, from a bound on ||dt A||_1 (the Lindblad
  // form's never forms A: kernels/expm_action.hpp).
  QFLEET_HD TaylorPlan taylor(double duration) const {
    const double norm = v_.lindblad ? lindblad_norm1_bound(ops_) : dense_norm1(v_.n, a_, grp_);
    return taylor_plan(duration * norm, sizeof(R) == 4);
  }
  // lam <- (d X_k / d X_{k-1})^dag lam and g += dF/dA through the segment's Taylor steps,
  // whose starts are recomputed from x0 (the first is x0 itself).
  QFLEET_HD int taylor_segment_backward(double duration, const Cx<R>* x0) {
    const TaylorPlan tp = taylor(duration);
    if (tp.s == 0) return kOpenUnderflow;
    if (tp.m > 0 && taylor_kept_states(tp) <= long(v_.taylor_terms)) {
      taylor_kept_forward<R>(Gen{this}, nc_, tp, duration, x0, terms_, rk_, grp_);
      taylor_kept_backward<R>(Gen{this}, nc_, tp, duration, terms_, lam_, rk_, grp_);
      return kOpenOk;
    }
    if (tp.s > 1) {
      if (tp.s > cap_) return kOpenStepCapacity;
      taylor_forward<R>(Gen{this}, nc_, tp, duration, x0, tmp_, xs_, rk_, grp_);
    }
    taylor_backward<R>(Gen{this}, nc_, tp, duration, tp.s > 1 ? xs_ : x0, lam_, rk_, grp_);
    return kOpenOk;
  }

  // One explicit RK step of dX/dt = A X: X' = X + h sum b_i k_i, k_i = A Y_i.
  // Stage states Y_i are kept in ys (s x nc) for the adjoint.
  // k1_ready: ks[0] already holds f(x) (first same as last: the previous accepted
  // step's stage 7, or the rejected try's own stage 1), so stage 1 is not recomputed.
  QFLEET_HD void rk_step(R h, const Cx<R>* x, Cx<R>* xout, Cx<R>* ks, Cx<R>* ys, bool k1_ready = false) const {
    const open_detail::Tableau& t = open_detail::tableau(v_.solver);
    // Elementwise steps touch only this member's entries: one sync before the product.
    for (int i = k1_ready ? 1 : 0; i < t.s; ++i) {
      Cx<R>* y = ys + nc_ * i;
      for (std::size_t e = r0(); e < nc_; e += gs()) y[e] = x[e];
      for (int j = 0; j < i; ++j) {
        const R aij = R(t.a[i][j]) * h;
        if (aij == 0) continue;
        const Cx<R>* kj = ks + nc_ * j;
        for (std::size_t e = r0(); e < nc_; e += gs()) {
          y[e].re += aij * kj[e].re;
          y[e].im += aij * kj[e].im;
        }
      }
      grp_.sync();
      apply_gen(y, ks + nc_ * i);
    }
    for (std::size_t e = r0(); e < nc_; e += gs()) xout[e] = x[e];
    for (int i = 0; i < t.s; ++i) {
      const R bi = R(t.b[i]) * h;
      const Cx<R>* ki = ks + nc_ * i;
      for (std::size_t e = r0(); e < nc_; e += gs()) {
        xout[e].re += bi * ki[e].re;
        xout[e].im += bi * ki[e].im;
      }
    }
    grp_.sync();
  }

  // Steps one segment from x to xout. With keep, stores the step states in xs_
  // (xs_[0] = x) and the step sizes in hs_ and sets m_ (the backward pass).
  // Fixed steps (rk4/euler), or the steps dopri5's controller accepts:
  // error e = h sum (b_i - b*_i) k_i (stage 7 = f(X')), mixed abs/rel max norm.
  QFLEET_HD int segment_steps(double duration, const Cx<R>* x, Cx<R>* xout, bool keep) {
    using open_detail::dmax;
    using open_detail::dmin;
    using std::pow;
    using std::sqrt;
    Cx<R>* ks = rk_;
    Cx<R>* ys = ks + nc_ * 7;
    Cx<R>* xa = rk_ + nc_ * 28;  // past the backward pass's kbar and ybar
    Cx<R>* xb = xa + nc_;
    const bool lead = grp_.rank() == 0;
    copy(x, xa);
    if (keep) copy(x, step_state(0));
    m_ = 0;
    if (!open_detail::adaptive(v_.solver)) {
      const long m = open_fixed_steps(duration, v_.dt);
      if (keep && m > cap_) return kOpenStepCapacity;  // only the trajectory store holds fewer
      h_fixed_ = duration / double(m);
      for (long i = 0; i < m; ++i) {
        Cx<R>* out = keep ? step_state(int(i) + 1) : xb;
        rk_step(R(h_fixed_), xa, out, ks, ys);
        if (keep) {
          keep_stages(int(i), ys);
          xa = out;
        } else {
          xb = xa;
          xa = out;
        }
      }
      m_ = int(m);
      copy(xa, xout);
      return kOpenOk;
    }
    double t = 0, h = h_guess_ > 0 ? dmin(h_guess_, duration) : duration;
    long guard = 0;
    bool k1_ready = false;  // the generator changes at segment boundaries: f(x) is computed afresh
    while (t < duration * (1 - 1e-12)) {
      if (++guard > 1000000) return kOpenUnderflow;
      h = dmin(h, duration - t);
      rk_step(R(h), xa, xb, ks, ys, k1_ready);
      apply_gen(xb, ks + nc_ * 6);  // stage 7
      // The error norm: max over the entries of h |sum_i b_err_i k_i| / (atol + rtol max(|x|,
      // |x_new|)). Vector lanes on the host (QFLEET_OMP_SIMD; the kernels build with
      // -fno-math-errno, so sqrt is an instruction): in one lane it was a twelfth of a
      // d = 16 Lindblad run (perf). A NaN entry rejects the step (a max reduction in lanes
      // may drop a NaN, so it is counted apart).
      double be[7];
      for (int i = 0; i < 7; ++i) be[i] = open_detail::tableau(v_.solver).b_err[i];
      const double atol = v_.atol, rtol = v_.rtol;
      double err = 0;
      int nan_seen = 0;
      QFLEET_OMP_SIMD(reduction(max : err) reduction(| : nan_seen))
      for (std::size_t e = r0(); e < nc_; e += gs()) {
        double er = 0, ei = 0;
        for (int i = 0; i < 7; ++i) {
          er += be[i] * double(ks[nc_ * i + e].re);
          ei += be[i] * double(ks[nc_ * i + e].im);
        }
        // |z| as sqrt(re^2 + im^2), not hypot: no overflow is possible at these magnitudes,
        // and glibc's hypot took a tenth of a d = 16 Lindblad run (perf).
        const double a2 = double(xa[e].re) * xa[e].re + double(xa[e].im) * xa[e].im;
        const double b2 = double(xb[e].re) * xb[e].re + double(xb[e].im) * xb[e].im;
        const double r = h * sqrt(er * er + ei * ei) / (atol + rtol * sqrt(a2 > b2 ? a2 : b2));
        nan_seen |= r != r;
        err = err > r ? err : r;
      }
      if (nan_seen) err = 1e300;
      if constexpr (!G::kSolo) err = grp_.max(err);
      const double factor = dmin(5.0, dmax(0.2, 0.9 * pow(dmax(err, 1e-10), -0.2)));
      if (err <= 1.0) {
        if (keep) {
          if (m_ >= cap_) return kOpenStepCapacity;
          if (lead) hs_[m_] = h;
          copy(xb, step_state(m_ + 1));
          keep_stages(m_, ys);
        }
        ++m_;
        t += h;
        Cx<R>* tmp = xa;
        xa = xb;
        xb = tmp;
        copy(ks + nc_ * 6, ks);  // stage 7 = f(the new x): the next step's stage 1
      }
      k1_ready = true;  // rejected: stage 1 is f(x) still
      h *= factor;
    }
    h_guess_ = h;
    copy(xa, xout);
    return kOpenOk;
  }

  // Step j's start state (j = m_: the segment's end), kept by segment_steps(keep).
  QFLEET_HD Cx<R>* step_state(int j) const { return xs_ + xs_stride_ * std::size_t(j); }
  // Where step `step`'s stage i >= 1 is kept (stage 0 is the step's start, step_state).
  QFLEET_HD Cx<R>* kept_stage(int step, int i) const {
    return stages_ + stage_stride_ * std::size_t(step) + nc_ * std::size_t(i - 1);
  }

  // The segment's step records: the per-segment store the backward pass re-runs into,
  // or records `first`.. of the trajectory store, each a step's state followed by its
  // stage states 2..s.
  QFLEET_HD void use_segment_store() {
    xs_ = xs_seg_;
    xs_stride_ = nc_;
    stages_ = stages_seg_;
    stage_stride_ = nc_ * std::size_t(open_detail::tableau(v_.solver).s - 1);
    hs_ = hs_seg_;
  }
  QFLEET_HD void use_trajectory_records(int first) {
    const std::size_t rec = nc_ * std::size_t(open_detail::tableau(v_.solver).s);
    xs_ = traj_ + rec * std::size_t(first);
    xs_stride_ = rec;
    stages_ = xs_ + nc_;
    stage_stride_ = rec;
    hs_ = traj_hs_ + first;
  }

  // The forward sweep's segment k with the trajectory store: its steps kept in the
  // records left (seg_slot_[2k] = first record, [2k + 1] = steps; -1 when not kept).
  // Once the store is full, this and the later segments run as before and the backward
  // pass re-runs them. The steps are the same either way (keep only stores them).
  QFLEET_HD int segment_steps_kept(int k, double duration, const Cx<R>* x, Cx<R>* xout) {
    const bool lead = grp_.rank() == 0;
    const int left = traj_records_ - traj_used_ - 1;  // steps the records left can hold
    if (!traj_full_ && left >= 1) {
      const int cap = cap_;
      cap_ = left < cap ? left : cap;
      use_trajectory_records(traj_used_);
      const int st = segment_steps(duration, x, xout, true);
      const int held = cap_;
      cap_ = cap;
      use_segment_store();
      if (st == kOpenOk) {
        if (lead) {
          seg_slot_[2 * k] = traj_used_;
          seg_slot_[2 * k + 1] = m_;
        }
        traj_used_ += m_ + 1;
        return kOpenOk;
      }
      if (st != kOpenStepCapacity || held == cap) return st;  // a failure, or more steps than the backward holds
      h_guess_ = h_start_[k];  // the store is full: this segment again, unkept, from its first trial step
    }
    traj_full_ = true;
    if (lead) seg_slot_[2 * k + 1] = -1;
    return segment_steps(duration, x, xout, false);
  }
  // keep_stages: step `step`'s stage states 1..s-1.
  QFLEET_HD void keep_stages(int step, const Cx<R>* ys) const {
    if (!stages_) return;
    for (int i = 1; i < open_detail::tableau(v_.solver).s; ++i) copy(ys + nc_ * i, kept_stage(step, i));
  }
  // Stage i's state of step `step` in the reverse sweep: kept (keep_stages), or just
  // recomputed into ys.
  QFLEET_HD const Cx<R>* stage_state(int step, int i, const Cx<R>* ys) const {
    if (!stages_) return ys + nc_ * i;
    return i == 0 ? step_state(step) : kept_stage(step, i);
  }

  // Discrete adjoint of segment k's steps: lam <- (d X_out / d X)^dag lam and
  // g += dF/dA. The step states are those the forward sweep kept (the trajectory
  // store), or recomputed from the segment's start (checkpointing: only segment
  // boundaries are stored between the passes), and the stage states of each step with
  // them (keep_stages), or again per step.
  QFLEET_HD int segment_backward(int k, double duration, const Cx<R>* x0) {
    if (traj_) grp_.sync();  // seg_slot_ was written by the lead
    if (traj_ && seg_slot_[2 * k + 1] >= 0) {  // kept by the forward sweep (segment_steps_kept)
      use_trajectory_records(int(seg_slot_[2 * k]));
      m_ = int(seg_slot_[2 * k + 1]);
      if (!open_detail::adaptive(v_.solver)) h_fixed_ = duration / double(open_fixed_steps(duration, v_.dt));
    } else {
      use_segment_store();
      const int st = segment_steps(duration, x0, tmp_, true);
      if (st != kOpenOk) return st;
    }
    Cx<R>* ks = rk_;
    Cx<R>* ys = ks + nc_ * 7;
    Cx<R>* kbar = ys + nc_ * 7;
    Cx<R>* ybar = kbar + nc_ * 7;  // rk_: ks, ys, kbar, ybar (7 nc each), xa, xb
    const open_detail::Tableau& t = open_detail::tableau(v_.solver);
    for (int step = m_; step-- > 0;) {
      const R h = R(open_detail::adaptive(v_.solver) ? hs_[step] : h_fixed_);
      if (!stages_) rk_step(h, step_state(step), ybar, ks, ys);  // recompute this step's stage states
      for (int i = 0; i < t.s; ++i) {
        for (std::size_t e = r0(); e < nc_; e += gs()) kbar[nc_ * i + e] = {R(t.b[i]) * h * lam_[e].re, R(t.b[i]) * h * lam_[e].im};
      }
      grp_.sync();
      for (int i = t.s - 1; i >= 0; --i) {
        Cx<R>* kb = kbar + nc_ * i;
        Cx<R>* yb = ybar + nc_ * i;
        adjoint_gradient(kb, stage_state(step, i, ys), yb);  // Ybar_i = A^dag kbar_i, dF/dA += kbar_i Y_i^dag
        for (int j = 0; j < i; ++j) {
          const R aij = R(t.a[i][j]) * h;
          if (aij == 0) continue;
          for (std::size_t e = r0(); e < nc_; e += gs()) {
            kbar[nc_ * j + e].re += aij * yb[e].re;
            kbar[nc_ * j + e].im += aij * yb[e].im;
          }
        }
        grp_.sync();
      }
      for (int i = 0; i < t.s; ++i) {
        for (std::size_t e = r0(); e < nc_; e += gs()) {
          lam_[e].re += ybar[nc_ * i + e].re;
          lam_[e].im += ybar[nc_ * i + e].im;
        }
      }
      grp_.sync();
    }
    return kOpenOk;
  }

  QFLEET_HD OpenMerit<R> merit() const { return {v_, nc_, fid_}; }


  const OpenView& v_;
  const OpenTaskCall<R>& c_;
  G grp_;
  N n_;
  int cap_ = 0, m_ = 0;
  std::size_t nc_ = 0, nn_ = 0, ng_ = 0;
  double h_guess_ = 0, h_fixed_ = 0;
  double* h_start_ = nullptr;  // [nseg]: dopri5's first trial step per segment
  double* hs_ = nullptr;       // [cap]: accepted step sizes of the segment in the backward pass
  double* jump_grad_ = nullptr;  // [nrate]: Lindblad form, the rates' L rho L^dag gradients
  Cx<R>*a_static_, *a_, *g_, *g_sum_, *lam_, *tmp_;
  Cx<R>* hist_work_;  // X_0 .. X_N in the workspace
  Cx<R>* hist_;       // where this run keeps them: hist_work_, or the caller's saved buffer
  Cx<R>* prop_ = nullptr;  // exact solver: propagator, scaled generator, its adjoint, expm work
  Cx<R>* w_ = nullptr;
  Cx<R>* tmp_adj_ = nullptr;
  Cx<R>* ework_ = nullptr;
  Cx<R>* lscratch_ = nullptr;  // Lindblad form: a d x d scratch matrix and the jump values
  Cx<R>* jv_ = nullptr;
  LindbladOps<R> ops_{};
  Cx<R>* diag_w_ = nullptr;  // Lindblad form: the diagonal jumps' weights (lindblad_diag_weights)
  Cx<R>* rk_ = nullptr;   // 30 nc: stage vectors and their adjoints
  Cx<R>* xs_ = nullptr;   // step states of the segment (step_state), xs_stride_ apart
  Cx<R>* terms_ = nullptr;  // exact action: OpenView::taylor_terms states (taylor_kept_forward)
  Cx<R>* stages_ = nullptr;  // keep_stages: their stage states (kept_stage), stage_stride_ apart
  std::size_t xs_stride_ = 0, stage_stride_ = 0;
  Cx<R>* xs_seg_ = nullptr;      // (steps + 1) nc: the backward pass's re-run of one segment
  Cx<R>* stages_seg_ = nullptr;  // open_stage_store() entries
  double* hs_seg_ = nullptr;
  Cx<R>* traj_ = nullptr;        // OpenView::traj_records: open_trajectory_store() entries
  double* traj_hs_ = nullptr;    // [traj_records]: the kept steps' sizes
  double* seg_slot_ = nullptr;   // [2 nseg]: each segment's first record and steps (-1: not kept)
  int traj_records_ = 0, traj_used_ = 0;
  bool traj_full_ = false;
  bool run_open_ = false;  // exact_segment_backward: a run's W and P^dag are being gathered
  Cx<R>* fid_ = nullptr;  // fidelity scratch
};

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
