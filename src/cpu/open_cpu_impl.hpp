// The open-system executor, compiled once per instruction set like the circuit
// executor (open_cpu_{baseline,avx2,avx512}.cpp define QFLEET_KERN_ISA and include
// this file). Per task and segment k:
//   exact:  P_k = exp(dt_k A_k) (Higham 2005), X_k = P_k X_{k-1};
//           backward: W = lam_k X_{k-1}^dag, (P_k^dag, L) = expm_frechet(dt_k A_k^dag, W)
//           gives dF/dA_k = dt_k L (the adjoint Frechet derivative, Al-Mohy & Higham
//           2009) and lam_{k-1} = P_k^dag lam_k;
//   rk4/euler/dopri5: explicit Runge-Kutta steps and their discrete adjoint (the exact
//           gradient of the discretised map; dopri5's accepted step sizes are held fixed).
// Then dF/dtheta = Re <dF/dA_k, dA/dtheta> for every control (per segment), drift
// coefficient and rate: one inner product each.
//
// Hygiene for per-ISA compilation: every template instantiated here is on a type of
// this ISA's namespace (kern::Cx<R>), and no std:: function doing floating-point work
// is instantiated on plain types (std::complex, std::min...), so no weak symbol
// compiled with wide instructions can be picked by the linker for another ISA.
#pragma once

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/open_cpu.hpp"
#include "kernels/dense.hpp"
#include "kernels/expm.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

using kern::Cx;


using kern::Cx;

inline double dmin(double a, double b) { return a < b ? a : b; }
inline double dmax(double a, double b) { return a > b ? a : b; }

// Plan matrices (std::complex<double>) are read as (re, im) pairs, a layout the
// standard guarantees: std::complex's inline members compiled under this ISA's
// flags must not become weak symbols a baseline caller could be linked to.
inline Cx<double> at(const std::complex<double>* v, std::size_t i) {
  const double* p = reinterpret_cast<const double*>(v);
  return {p[2 * i], p[2 * i + 1]};
}
inline Cx<double> at(const std::vector<std::complex<double>>& v, std::size_t i) { return at(v.data(), i); }

template <class R>
inline Cx<R> cx(Cx<double> z) {
  return {static_cast<R>(z.re), static_cast<R>(z.im)};
}

// C[m x p] = A[m x k] B[k x p] (or A^dag B when adj_a, A is then k x m).
// M, K, P are int or kern::FixedDim<k>: fixed sizes unroll for the hot d = 2 (n = 4) case.
template <class R, class M, class K, class P>
void gemm(M m_, K k_, P p_, const Cx<R>* a, const Cx<R>* b, Cx<R>* c, bool adj_a = false) {
  const int m = static_cast<int>(m_), k = static_cast<int>(k_), p = static_cast<int>(p_);
#ifdef QFLEET_SIMD_GEMM
  if (kern::simd::gemm_applies<R>(p)) {
    if (adj_a) return kern::simd::gemm<false, true>(m_, k_, p_, a, m, b, p, c, p);
    return kern::simd::gemm<false, false>(m_, k_, p_, a, k, b, p, c, p);
  }
#endif
  for (int i = 0; i < m * p; ++i) c[i] = {0, 0};
  for (int i = 0; i < m; ++i) {
    for (int l = 0; l < k; ++l) {
      const Cx<R> x = adj_a ? kern::conj(a[std::size_t(l) * m + i]) : a[std::size_t(i) * k + l];
      const Cx<R>* brow = b + std::size_t(l) * p;
      Cx<R>* crow = c + std::size_t(i) * p;
      for (int j = 0; j < p; ++j) {
        crow[j].re += x.re * brow[j].re - x.im * brow[j].im;
        crow[j].im += x.re * brow[j].im + x.im * brow[j].re;
      }
    }
  }
}

// C[m x m] += A[m x p] B[m x p]^dag  (outer products for dF/dA).
template <class R, class M, class P>
void add_outer(M m_, P p_, const Cx<R>* a, const Cx<R>* b, Cx<R>* c, R scale = 1) {
  const int m = static_cast<int>(m_), p = static_cast<int>(p_);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < m; ++j) {
      R re = 0, im = 0;
      for (int l = 0; l < p; ++l) {
        const Cx<R> x = a[std::size_t(i) * p + l], y = b[std::size_t(j) * p + l];
        re += x.re * y.re + x.im * y.im;  // x * conj(y)
        im += x.im * y.re - x.re * y.im;
      }
      c[std::size_t(i) * m + j].re += scale * re;
      c[std::size_t(i) * m + j].im += scale * im;
    }
  }
}

// Re <a, b> = Re sum conj(a_i) b_i over n entries; b given in double (plan matrices).
template <class R>
double re_inner(std::size_t n, const Cx<R>* a, const std::complex<double>* b) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Cx<double> z = at(b, i);
    s += double(a[i].re) * z.re + double(a[i].im) * z.im;
  }
  return s;
}

template <class R>
double re_inner(std::size_t n, const Cx<R>* a, const Cx<R>* b) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(a[i].re) * b[i].re + double(a[i].im) * b[i].im;
  return s;
}

// Butcher tableaux of the fixed-step and adaptive solvers.
struct Tableau {
  int s;
  double a[7][7];
  double b[7];
  double b_err[7];  // b - b* (embedded error estimate), dopri5 only
};

constexpr Tableau kEuler = {1, {{0}}, {1}, {0}};
constexpr Tableau kRk4 = {4,
                          {{0}, {0.5}, {0, 0.5}, {0, 0, 1}},
                          {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6},
                          {0}};
// Dormand & Prince (1980) RK5(4)7M; the 7th stage (FSAL) only feeds the error estimate.
constexpr Tableau kDopri5 = {
    7,
    {{0},
     {1.0 / 5},
     {3.0 / 40, 9.0 / 40},
     {44.0 / 45, -56.0 / 15, 32.0 / 9},
     {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
     {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
     {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0},
    {35.0 / 384 - 5179.0 / 57600, 0, 500.0 / 1113 - 7571.0 / 16695, 125.0 / 192 - 393.0 / 640,
     -2187.0 / 6784 + 92097.0 / 339200, 11.0 / 84 - 187.0 / 2100, -1.0 / 40}};

// Per-thread buffers, kept between calls so a warm program does not allocate.
template <class R>
struct OpenWorkspace {
  std::vector<Cx<R>> ws, tmp_adj, scratch, step_states, u;
  std::vector<std::vector<Cx<double>>> steps;  // step sizes in .re (ISA-local element type)
};

template <class R>
OpenWorkspace<R>& thread_workspace() {
  thread_local OpenWorkspace<R> w;
  return w;
}

template <class N>
N make_dim(int n) {
  if constexpr (std::is_same_v<N, int>) {
    return n;
  } else {
    return N{};
  }
}

// N is int, or kern::FixedDim<n> for the hot generator sizes (closed qubit n = 2,
// open qubit n = 4, open two-qubit n = 16): every loop bound becomes a constant.
template <class R, class N>
class TaskRunner {
 public:
  TaskRunner(const detail::OpenPlan& p, const OpenCall<R>& c)
      : p_(p), c_(c), ws_(thread_workspace<R>().ws), tmp_adj_(thread_workspace<R>().tmp_adj),
        scratch_(thread_workspace<R>().scratch), step_states_(thread_workspace<R>().step_states),
        u_(thread_workspace<R>().u), steps_(thread_workspace<R>().steps) {
    nc_ = std::size_t(p.n) * p.c;
    nn_ = std::size_t(p.n) * p.n;
    nseg_ = p.sys.n_segments();
    nctrl_ = p.sys.n_controls();
    tab_ = p.options.solver == Solver::rk4 ? &kRk4 : p.options.solver == Solver::euler ? &kEuler : &kDopri5;
  }

  // Runs task b (reading its parameters from sample `src`); cot_f/cot_l are its cotangents.
  // grad_amp receives [n_seg, n_ctrl] and grad_drift/grad_rates their vectors (overwritten).
  void run(std::size_t b, std::size_t src, R cot_f, R cot_l, R* grad_amp, R* grad_drift, R* grad_rates,
           std::uint64_t& computed, std::uint64_t& reused) {
    const int d = p_.d;
    h_guess_ = 0;  // each task's dopri5 steps depend on that task alone
    ensure_workspace();
    Cx<R>* a_static = ws_.data();
    Cx<R>* a = a_static + nn_;
    Cx<R>* prop = a + nn_;
    Cx<R>* w = prop + nn_;
    Cx<R>* g = w + nn_;
    Cx<R>* g_sum = g + nn_;
    Cx<R>* lam = g_sum + nn_;
    Cx<R>* tmp = lam + nc_;
    Cx<R>* hist = tmp + nc_;  // X_0 .. X_N
    Cx<R>* ework = hist + nc_ * (nseg_ + 1);

    // A_static = A0 + sum c_m A_m + sum gamma_j D_j.
    for (std::size_t i = 0; i < nn_; ++i) a_static[i] = cx<R>(at(p_.a0, i));
    for (std::size_t m = 0; m < p_.a_drift.size(); ++m) axpy_plan(a_static, coef(c_.drift, c_.drift_per_task, src, m, p_.a_drift.size()), p_.a_drift[m]);
    for (std::size_t j = 0; j < p_.a_rate.size(); ++j) axpy_plan(a_static, coef(c_.rates, c_.rates_per_task, src, j, p_.a_rate.size()), p_.a_rate[j]);

    // X_0.
    Cx<R>* x = hist;
    if (c_.initial) {
      const R* init = reinterpret_cast<const R*>(c_.initial);  // (re, im) pairs
      if (p_.closed) {
        for (int i = 0; i < d; ++i) x[i] = {init[2 * (b * d + i)], init[2 * (b * d + i) + 1]};
      } else {
        const R* rho = init + 2 * b * std::size_t(d) * d;
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < d; ++j) {
            x[i + std::size_t(d) * j] = {rho[2 * (std::size_t(i) * d + j)], rho[2 * (std::size_t(i) * d + j) + 1]};
          }
      }
    } else {
      for (std::size_t i = 0; i < nc_; ++i) x[i] = cx<R>(at(p_.x0, i));
    }
    if (c_.expvals) record_expvals(b, 0, x);

    const auto& dts = p_.sys.segment_durations();
    for (int k = 0; k < nseg_; ++k) {
      Cx<R>* xk = hist + nc_ * (k + 1);
      const R* u = amps(src, k);
      const bool same = k > 0 && dts[k] == dts[k - 1] && same_values(u, amps(src, k - 1));
      generator(a_static, u, a);
      if (p_.options.solver == Solver::exact) {
        if (same) {
          ++reused;
        } else {
          for (std::size_t i = 0; i < nn_; ++i) w[i] = {R(dts[k]) * a[i].re, R(dts[k]) * a[i].im};
          kern::expm(n_, w, prop, ework);
          ++computed;
        }
        gemm_c(n_, n_, p_.c, prop, x, xk);
      } else {
        ++computed;
        rk_segment_forward(a, dts[k], x, xk, k);
      }
      x = xk;
      if (c_.expvals) record_expvals(b, k + 1, x);
    }

    // Outputs at X_N.
    R f = 0, l = 0;
    if (p_.sys.target_kind() != OpenSystem::Target::None) f = fidelity(x, c_.adjoint ? lam : nullptr, cot_f, false);
    if (!p_.subspace.empty()) l = leakage(x, nullptr, 0, false);
    if (c_.fidelity) c_.fidelity[b] = f;
    if (c_.leakage) c_.leakage[b] = l;
    if (c_.final_state) write_final(b, x);
    if (!c_.adjoint) return;

    // lam = dF/dX_N (Re <lam, dX> convention), scaled by the cotangents.
    for (std::size_t i = 0; i < nc_; ++i) lam[i] = {0, 0};
    if (p_.sys.target_kind() != OpenSystem::Target::None && cot_f != 0) fidelity(x, lam, cot_f, true);
    if (!p_.subspace.empty() && cot_l != 0) leakage(x, lam, cot_l, true);

    for (std::size_t i = 0; i < nn_; ++i) g_sum[i] = {0, 0};
    for (int k = nseg_ - 1; k >= 0; --k) {
      const Cx<R>* xprev = hist + nc_ * k;
      generator(a_static, amps(src, k), a);
      if (p_.options.solver == Solver::exact) {
        // W = lam X_{k-1}^dag; (P^dag, L) = expm_frechet(dt A^dag, W); dF/dA = dt L.
        for (std::size_t i = 0; i < nn_; ++i) w[i] = {0, 0};
        outer_c(n_, p_.c, lam, xprev, w);
        for (int i = 0; i < n_; ++i)
          for (int j = 0; j < n_; ++j) {
            const Cx<R> z = a[std::size_t(j) * n_ + i];
            tmp_adj_[std::size_t(i) * n_ + j] = {R(dts[k]) * z.re, -R(dts[k]) * z.im};
          }
        kern::expm_frechet(n_, tmp_adj_.data(), w, prop, g, ework);
        for (std::size_t i = 0; i < nn_; ++i) g[i] = {R(dts[k]) * g[i].re, R(dts[k]) * g[i].im};
        gemm_c(n_, n_, p_.c, prop, lam, tmp);
        std::copy(tmp, tmp + nc_, lam);
      } else {
        for (std::size_t i = 0; i < nn_; ++i) g[i] = {0, 0};
        rk_segment_backward(a, dts[k], xprev, lam, g, k);
      }
      if (grad_amp) {
        for (int i = 0; i < nctrl_; ++i) grad_amp[std::size_t(k) * nctrl_ + i] = R(re_inner<R>(nn_, g, p_.a_ctrl[i].data()));
      }
      for (std::size_t i = 0; i < nn_; ++i) {
        g_sum[i].re += g[i].re;
        g_sum[i].im += g[i].im;
      }
    }
    if (grad_drift) {
      for (std::size_t m = 0; m < p_.a_drift.size(); ++m) grad_drift[m] = R(re_inner<R>(nn_, g_sum, p_.a_drift[m].data()));
    }
    if (grad_rates) {
      for (std::size_t j = 0; j < p_.a_rate.size(); ++j) grad_rates[j] = R(re_inner<R>(nn_, g_sum, p_.a_rate[j].data()));
    }
  }

 private:
  bool same_values(const R* a, const R* b) const {
    for (int i = 0; i < nctrl_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

  R coef(const R* v, bool per_task, std::size_t b, std::size_t i, std::size_t len) const {
    return per_task ? v[b * len + i] : v[i];
  }
  const R* amps(std::size_t b, int k) const {
    static const R kNone[1] = {0};
    if (nctrl_ == 0) return kNone;
    const std::size_t per = std::size_t(nseg_) * nctrl_;
    return c_.amplitudes + (c_.amplitudes_per_task ? b * per : 0) + std::size_t(k) * nctrl_;
  }
  void axpy_plan(Cx<R>* y, R s, const std::vector<std::complex<double>>& m) const {
    for (std::size_t i = 0; i < nn_; ++i) {
      const Cx<double> z = at(m, i);
      y[i].re += s * R(z.re);
      y[i].im += s * R(z.im);
    }
  }
  void generator(const Cx<R>* a_static, const R* u, Cx<R>* a) const {
    std::copy(a_static, a_static + nn_, a);
    for (int i = 0; i < nctrl_; ++i) axpy_plan(a, u[i], p_.a_ctrl[i]);
  }

  void ensure_workspace() {
    const std::size_t need = 6 * nn_ + 2 * nc_ + nc_ * (nseg_ + 1) + kern::expm_frechet_work(n_);
    if (ws_.size() < need) ws_.resize(need);
    if (tmp_adj_.size() < nn_) tmp_adj_.resize(nn_);
  }

  // One explicit RK step of dX/dt = A X: X' = X + h sum b_i k_i, k_i = A Y_i.
  // Stage states Y_i are kept in ys (s x nc) when given (for the adjoint).
  void rk_step(const Cx<R>* a, R h, const Cx<R>* x, Cx<R>* xout, Cx<R>* ks, Cx<R>* ys) {
    const Tableau& t = *tab_;
    const int s = p_.options.solver == Solver::dopri5 ? 6 : t.s;  // the solution ignores stage 7
    for (int i = 0; i < s; ++i) {
      Cx<R>* y = ys + nc_ * i;
      std::copy(x, x + nc_, y);
      for (int j = 0; j < i; ++j) {
        const R aij = R(t.a[i][j]) * h;
        if (aij == 0) continue;
        const Cx<R>* kj = ks + nc_ * j;
        for (std::size_t e = 0; e < nc_; ++e) {
          y[e].re += aij * kj[e].re;
          y[e].im += aij * kj[e].im;
        }
      }
      gemm_c(n_, n_, p_.c, a, y, ks + nc_ * i);
    }
    std::copy(x, x + nc_, xout);
    for (int i = 0; i < s; ++i) {
      const R bi = R(t.b[i]) * h;
      const Cx<R>* ki = ks + nc_ * i;
      for (std::size_t e = 0; e < nc_; ++e) {
        xout[e].re += bi * ki[e].re;
        xout[e].im += bi * ki[e].im;
      }
    }
  }

  // The step sizes a segment takes: fixed (rk4/euler) or accepted by dopri5's controller.
  void plan_steps(const Cx<R>* a, double duration, const Cx<R>* x, int seg) {
    auto& hs = steps_[seg];
    hs.clear();
    if (p_.options.solver != Solver::dopri5) {
      const long m = static_cast<long>(dmax(1.0, std::ceil(duration / p_.options.dt - 1e-9)));
      hs.assign(static_cast<std::size_t>(m), Cx<double>{duration / double(m), 0.0});
      return;
    }
    // Adaptive: error e = h sum (b_i - b*_i) k_i (stage 7 = f(X')), mixed abs/rel max norm.
    scratch_.resize(nc_ * 16);
    Cx<R>* ks = scratch_.data();
    Cx<R>* ys = ks + nc_ * 7;
    Cx<R>* xa = ys + nc_ * 7;
    Cx<R>* xb = xa + nc_;
    std::copy(x, x + nc_, xa);
    double t = 0, h = h_guess_ > 0 ? dmin(h_guess_, duration) : duration;
    int guard = 0;
    while (t < duration * (1 - 1e-12)) {
      if (++guard > 1000000) {  // step size underflow: reported by the caller
        failed_ = true;
        return;
      }
      h = dmin(h, duration - t);
      rk_step(a, R(h), xa, xb, ks, ys);
      gemm_c(n_, n_, p_.c, a, xb, ks + nc_ * 6);  // stage 7
      double err = 0;
      for (std::size_t e = 0; e < nc_; ++e) {
        double er = 0, ei = 0;
        for (int i = 0; i < 7; ++i) {
          er += kDopri5.b_err[i] * double(ks[nc_ * i + e].re);
          ei += kDopri5.b_err[i] * double(ks[nc_ * i + e].im);
        }
        const double mag = dmax(std::hypot(double(xa[e].re), double(xa[e].im)), std::hypot(double(xb[e].re), double(xb[e].im)));
        err = dmax(err, h * std::hypot(er, ei) / (p_.options.atol + p_.options.rtol * mag));
      }
      const double factor = dmin(5.0, dmax(0.2, 0.9 * std::pow(dmax(err, 1e-10), -0.2)));
      if (err <= 1.0) {
        hs.push_back(Cx<double>{h, 0.0});
        t += h;
        std::swap(xa, xb);
      }
      h *= factor;
    }
    h_guess_ = h;
  }

  void rk_segment_forward(const Cx<R>* a, double duration, const Cx<R>* x, Cx<R>* xout, int seg) {
    if (steps_.size() < std::size_t(nseg_)) steps_.resize(nseg_);
    plan_steps(a, duration, x, seg);
    scratch_.resize(nc_ * 16);
    Cx<R>* ks = scratch_.data();
    Cx<R>* ys = ks + nc_ * 7;
    Cx<R>* xa = ys + nc_ * 7;
    Cx<R>* xb = xa + nc_;
    std::copy(x, x + nc_, xa);
    for (const Cx<double>& hstep : steps_[seg]) {
      rk_step(a, R(hstep.re), xa, xb, ks, ys);
      std::swap(xa, xb);
    }
    std::copy(xa, xa + nc_, xout);
  }

  // Discrete adjoint of the segment's steps: lam <- (d X_out / d X)^dag lam and
  // g += dF/dA, recomputing the step states from the segment's start (checkpointing:
  // only segment boundaries are stored between the passes).
  void rk_segment_backward(const Cx<R>* a, double, const Cx<R>* x0, Cx<R>* lam, Cx<R>* g, int seg) {
    const auto& hs = steps_[seg];
    const std::size_t m = hs.size();
    step_states_.resize(nc_ * (m + 1));
    scratch_.resize(nc_ * 24);
    Cx<R>* ks = scratch_.data();
    Cx<R>* ys = ks + nc_ * 7;
    Cx<R>* kbar = ys + nc_ * 7;
    Cx<R>* ybar = kbar + nc_ * 7;
    Cx<R>* xs = step_states_.data();
    std::copy(x0, x0 + nc_, xs);
    for (std::size_t i = 0; i < m; ++i) rk_step(a, R(hs[i].re), xs + nc_ * i, xs + nc_ * (i + 1), ks, ys);
    const Tableau& t = *tab_;
    const int s = p_.options.solver == Solver::dopri5 ? 6 : t.s;
    for (std::size_t step = m; step-- > 0;) {
      const R h = R(hs[step].re);
      rk_step(a, h, xs + nc_ * step, ybar, ks, ys);  // recompute this step's stage states
      for (int i = 0; i < s; ++i) {
        for (std::size_t e = 0; e < nc_; ++e) kbar[nc_ * i + e] = {R(t.b[i]) * h * lam[e].re, R(t.b[i]) * h * lam[e].im};
      }
      for (int i = s - 1; i >= 0; --i) {
        Cx<R>* kb = kbar + nc_ * i;
        Cx<R>* yb = ybar + nc_ * i;
        gemm_c(n_, n_, p_.c, a, kb, yb, true);  // Ybar_i = A^dag kbar_i
        outer_c(n_, p_.c, kb, ys + nc_ * i, g);  // dF/dA += kbar_i Y_i^dag
        for (int j = 0; j < i; ++j) {
          const R aij = R(t.a[i][j]) * h;
          if (aij == 0) continue;
          for (std::size_t e = 0; e < nc_; ++e) {
            kbar[nc_ * j + e].re += aij * yb[e].re;
            kbar[nc_ * j + e].im += aij * yb[e].im;
          }
        }
      }
      for (int i = 0; i < s; ++i) {
        for (std::size_t e = 0; e < nc_; ++e) {
          lam[e].re += ybar[nc_ * i + e].re;
          lam[e].im += ybar[nc_ * i + e].im;
        }
      }
    }
  }

  // A figure of merit linear in X: offset + Re <m, X>; its gradient is m.
  R linear_merit(const std::vector<std::complex<double>>& m, double offset, const Cx<R>* x, Cx<R>* lam, R scale,
                 bool add_lam) const {
    if (!add_lam) return R(offset + re_inner<R>(nc_, x, m.data()));
    for (std::size_t i = 0; i < nc_; ++i) {
      const Cx<double> z = at(m, i);
      lam[i].re += scale * R(z.re);
      lam[i].im += scale * R(z.im);
    }
    return 0;
  }

  // Fidelity of X_N; with add_lam, accumulates scale * dF/dX into lam instead.
  R fidelity(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) {
    const int d = p_.d;
    if (!p_.fid_lam.empty()) {  // linear (open systems: pure and unitary targets)
      return linear_merit(p_.fid_lam, p_.fid_offset, x, lam, scale, add_lam);
    }
    if (p_.closed && p_.gate) {  // F = (|tr V^dag U|^2 + d) / (d (d + 1))
      Cx<double> t{0, 0};
      for (std::size_t i = 0; i < nc_; ++i) t = t + kern::conj(at(p_.target_mat, i)) * Cx<double>{x[i].re, x[i].im};
      const double den = double(d) * (d + 1);
      if (add_lam) {
        for (std::size_t i = 0; i < nc_; ++i) {
          const Cx<double> z = (2.0 / den) * (t * at(p_.target_mat, i));
          lam[i].re += scale * R(z.re);
          lam[i].im += scale * R(z.im);
        }
        return 0;
      }
      return R((t.re * t.re + t.im * t.im + d) / den);
    }
    if (p_.closed && p_.sys.target_kind() == OpenSystem::Target::Pure) {  // |<phi|psi>|^2
      Cx<double> t{0, 0};
      for (int i = 0; i < d; ++i) t = t + kern::conj(at(p_.target_psi, i)) * Cx<double>{x[i].re, x[i].im};
      if (add_lam) {
        for (int i = 0; i < d; ++i) {
          const Cx<double> z = 2.0 * (at(p_.target_psi, i) * t);
          lam[i].re += scale * R(z.re);
          lam[i].im += scale * R(z.im);
        }
        return 0;
      }
      return R(t.re * t.re + t.im * t.im);
    }
    if (p_.closed) {  // mixed target sigma: <psi|sigma|psi>
      u_.resize(std::size_t(d));
      Cx<R>* s = u_.data();  // sigma psi
      for (int i = 0; i < d; ++i) {
        Cx<double> acc{0, 0};
        for (int j = 0; j < d; ++j) acc = acc + at(p_.target_mat, std::size_t(i) * d + j) * Cx<double>{x[j].re, x[j].im};
        s[i] = cx<R>(acc);
      }
      if (add_lam) {
        for (int i = 0; i < d; ++i) {
          lam[i].re += scale * 2 * s[i].re;
          lam[i].im += scale * 2 * s[i].im;
        }
        return 0;
      }
      double f = 0;
      for (int i = 0; i < d; ++i) f += double(x[i].re) * s[i].re + double(x[i].im) * s[i].im;
      return R(f);
    }
    return uhlmann(x, lam, scale, add_lam);
  }

  // Uhlmann fidelity F = (tr sqrt(M))^2, M = sqrt(sigma) rho sqrt(sigma), and its
  // gradient dF/drho = tr sqrt(M) sqrt(sigma) M^{-1/2} sqrt(sigma) (pseudo-inverse on M's support).
  R uhlmann(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) {
    const int d = p_.d;
    const std::size_t dd = std::size_t(d) * d;
    u_.resize(6 * dd + kern::hermitian_eig_work(d) + d);
    Cx<R>* rho = u_.data();
    Cx<R>* ss = rho + dd;
    Cx<R>* t1 = ss + dd;
    Cx<R>* mm = t1 + dd;
    Cx<R>* v = mm + dd;
    Cx<R>* t2 = v + dd;
    Cx<R>* work = t2 + dd;
    R* mu = reinterpret_cast<R*>(work + kern::hermitian_eig_work(d));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) rho[std::size_t(i) * d + j] = x[i + std::size_t(d) * j];
    for (std::size_t i = 0; i < dd; ++i) ss[i] = cx<R>(at(p_.sqrt_sigma, i));
    gemm<R>(d, d, d, ss, rho, t1);
    gemm<R>(d, d, d, t1, ss, mm);
    for (int i = 0; i < d; ++i)  // symmetrise against rounding before the eigensolver
      for (int j = 0; j < i; ++j) {
        const Cx<R> a = mm[std::size_t(i) * d + j], b = mm[std::size_t(j) * d + i];
        mm[std::size_t(i) * d + j] = {(a.re + b.re) / 2, (a.im - b.im) / 2};
        mm[std::size_t(j) * d + i] = {(a.re + b.re) / 2, (b.im - a.im) / 2};
      }
    kern::hermitian_eig(d, mm, mu, v, work);
    double tr = 0, top = 0;
    for (int i = 0; i < d; ++i) top = dmax(top, double(mu[i]));
    for (int i = 0; i < d; ++i) tr += std::sqrt(dmax(0.0, double(mu[i])));
    if (!add_lam) return R(tr * tr);
    // M^{-1/2} on the support (eigenvalues above a relative cutoff).
    const double cut = dmax(top, 1e-300) * (sizeof(R) == 8 ? 1e-12 : 1e-6);
    for (std::size_t i = 0; i < dd; ++i) t1[i] = {0, 0};
    for (int e = 0; e < d; ++e) {
      if (mu[e] <= cut) continue;
      const R wgt = R(1 / std::sqrt(double(mu[e])));
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          const Cx<R> vi = v[std::size_t(i) * d + e], vj = v[std::size_t(j) * d + e];
          t1[std::size_t(i) * d + j].re += wgt * (vi.re * vj.re + vi.im * vj.im);
          t1[std::size_t(i) * d + j].im += wgt * (vi.im * vj.re - vi.re * vj.im);
        }
    }
    gemm<R>(d, d, d, ss, t1, t2);
    gemm<R>(d, d, d, t2, ss, t1);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        const Cx<R> z = t1[std::size_t(i) * d + j];
        lam[i + std::size_t(d) * j].re += scale * R(tr) * z.re;
        lam[i + std::size_t(d) * j].im += scale * R(tr) * z.im;
      }
    return 0;
  }

  R leakage(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) {
    if (!p_.leak_lam.empty()) {  // open systems: linear in X
      return linear_merit(p_.leak_lam, p_.leak_offset, x, lam, scale, add_lam);
    }
    // Closed: 1 - sum_{i in sub} |psi_i|^2, or 1 - sum_{i,j in sub} |U_ij|^2 / d_c.
    const int d = p_.d;
    double kept = 0;
    const double dc = p_.gate ? double(p_.subspace.size()) : 1.0;
    for (int i : p_.subspace) {
      if (p_.gate) {
        for (int j : p_.subspace) {
          const Cx<R> z = x[std::size_t(i) * d + j];
          kept += double(z.re) * z.re + double(z.im) * z.im;
          if (add_lam) {
            lam[std::size_t(i) * d + j].re -= scale * R(2 / dc) * z.re;
            lam[std::size_t(i) * d + j].im -= scale * R(2 / dc) * z.im;
          }
        }
      } else {
        kept += double(x[i].re) * x[i].re + double(x[i].im) * x[i].im;
        if (add_lam) {
          lam[i].re -= scale * 2 * x[i].re;
          lam[i].im -= scale * 2 * x[i].im;
        }
      }
    }
    return R(1 - kept / dc);
  }

  void record_expvals(std::size_t b, int boundary, const Cx<R>* x) const {
    const int d = p_.d;
    const std::size_t no = p_.observables.size();
    for (std::size_t o = 0; o < no; ++o) {
      const auto& om = p_.observables[o];
      double v = 0;
      if (p_.closed) {  // <psi|O|psi>
        for (int i = 0; i < d; ++i) {
          Cx<double> s{0, 0};
          for (int j = 0; j < d; ++j) s = s + at(om, std::size_t(i) * d + j) * Cx<double>{x[j].re, x[j].im};
          v += x[i].re * s.re + x[i].im * s.im;
        }
      } else {  // tr(O rho) = sum_ij O_ji rho_ij, rho_ij = X[i + d j]
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < d; ++j) {
            const Cx<double> r{x[i + std::size_t(d) * j].re, x[i + std::size_t(d) * j].im};
            v += (at(om, std::size_t(j) * d + i) * r).re;
          }
      }
      c_.expvals[(b * (nseg_ + 1) + boundary) * no + o] = R(v);
    }
  }

  void write_final(std::size_t b, const Cx<R>* x) const {
    const int d = p_.d;
    R* out = reinterpret_cast<R*>(c_.final_state + b * final_size());  // (re, im) pairs
    if (!p_.closed && !p_.gate) {  // unvec rho
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          out[2 * (std::size_t(i) * d + j)] = x[i + std::size_t(d) * j].re;
          out[2 * (std::size_t(i) * d + j) + 1] = x[i + std::size_t(d) * j].im;
        }
    } else {
      for (std::size_t i = 0; i < nc_; ++i) {
        out[2 * i] = x[i].re;
        out[2 * i + 1] = x[i].im;
      }
    }
  }
  std::size_t final_size() const { return (!p_.closed && !p_.gate) ? std::size_t(p_.d) * p_.d : nc_; }

  // Products with the state's c columns (c = n for gate problems, else 1).
  void gemm_c(N m, N k, int cols, const Cx<R>* a, const Cx<R>* b, Cx<R>* out, bool adj = false) const {
    if (p_.gate) {
      gemm<R>(m, k, m, a, b, out, adj);
    } else {
      gemm<R>(m, k, kern::FixedDim<1>{}, a, b, out, adj);
    }
    (void)cols;
  }
  void outer_c(N m, int cols, const Cx<R>* a, const Cx<R>* b, Cx<R>* out) const {
    if (p_.gate) {
      add_outer<R>(m, m, a, b, out);
    } else {
      add_outer<R>(m, kern::FixedDim<1>{}, a, b, out);
    }
    (void)cols;
  }

  const detail::OpenPlan& p_;
  const OpenCall<R>& c_;
  N n_ = make_dim<N>(p_.n);
  int nseg_ = 0, nctrl_ = 0;
  std::size_t nc_ = 0, nn_ = 0;
  const Tableau* tab_;
  double h_guess_ = 0;

 public:
  bool failed_ = false;

 private:
  std::vector<Cx<R>>&ws_, &tmp_adj_, &scratch_, &step_states_, &u_;
  std::vector<std::vector<Cx<double>>>& steps_;
};


// Runs `runs` tasks across threads. rows: per-task gradient rows (adjoint only).
// Returns 0, or 1 when a task failed (dopri5 step-size underflow, out of memory).
template <class R, class N>
int run_tasks(const detail::OpenPlan& plan, const OpenCall<R>& c, std::size_t runs, bool identical, R* rows,
              std::uint64_t* computed_out, std::uint64_t* reused_out) {
  const std::size_t B = c.batch;
  const int nseg = plan.sys.n_segments(), nctrl = plan.sys.n_controls();
  const std::size_t n_amp = std::size_t(nseg) * nctrl, n_drift = plan.a_drift.size();
  const std::size_t row = n_amp + n_drift + plan.a_rate.size();
  const int max_threads = plan.options.num_threads > 0 ? plan.options.num_threads : omp_get_max_threads();
  const int threads = static_cast<int>(runs < std::size_t(max_threads) ? runs : std::size_t(max_threads));
  std::uint64_t computed = 0, reused = 0;
  int failed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : computed, reused) reduction(| : failed)
  {
    TaskRunner<R, N> runner(plan, c);
#pragma omp for schedule(dynamic, 1)
    for (long long t = 0; t < static_cast<long long>(runs); ++t) {
      const std::size_t b = std::size_t(t);
      R cf = 0, cl = 0;
      if (c.adjoint) {
        if (identical) {  // one simulation stands for every task: sum their cotangents
          for (std::size_t i = 0; i < B; ++i) {
            cf += c.cot_fidelity ? c.cot_fidelity[i] : R(0);
            cl += c.cot_leakage ? c.cot_leakage[i] : R(0);
          }
        } else {
          cf = c.cot_fidelity ? c.cot_fidelity[b] : R(0);
          cl = c.cot_leakage ? c.cot_leakage[b] : R(0);
        }
      }
      R* r = c.adjoint ? rows + b * row : nullptr;
      try {
        runner.failed_ = false;
        runner.run(b, b, cf, cl, r, r ? r + n_amp : nullptr, r ? r + n_amp + n_drift : nullptr, computed, reused);
        failed |= runner.failed_ ? 1 : 0;
      } catch (...) {
        failed |= 1;
      }
    }
  }
  *computed_out = computed;
  *reused_out = reused;
  return failed;
}

template <class R>
int run_open(const detail::OpenPlan& plan, const OpenCall<R>& c, std::size_t runs, bool identical, R* rows,
             std::uint64_t* computed, std::uint64_t* reused) {
  switch (plan.n) {
    case 2:
      return run_tasks<R, kern::FixedDim<2>>(plan, c, runs, identical, rows, computed, reused);
    case 4:
      return run_tasks<R, kern::FixedDim<4>>(plan, c, runs, identical, rows, computed, reused);
    case 16:
      return run_tasks<R, kern::FixedDim<16>>(plan, c, runs, identical, rows, computed, reused);
    default:
      return run_tasks<R, int>(plan, c, runs, identical, rows, computed, reused);
  }
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
