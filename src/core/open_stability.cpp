// The fixed-step solvers' results checked against their physical ranges after a call
// on host buffers: an explicit Runge-Kutta step is stable only where dt times the
// generator's eigenvalues lies in the method's stability region (Hairer & Wanner,
// Solving ODEs II, Sec. IV.2), and outside it the states grow geometrically, so a
// step too large for the pulse's amplitudes returns fidelities of 1e15 that look like
// any other number. Checked after the run, not before: a norm bound on the generator
// (the only cheap pre-run test) overestimates the spectral radius, and refusing on it
// would refuse stable problems. The bound is used for the message only, to suggest a dt
// small enough. Reading the outputs costs O(batch * state) against the
// run's O(steps * n^2) per task, outside the kernels.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "core/open_plan.hpp"
#include "kernels/open_workspace.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

namespace {

// How far outside its range a result may lie before it is refused. A stable rk4 step
// keeps every result in range to rounding (none of the tests' rk4 runs leaves it by
// 1e-9); Euler's error is O(T dt ||A||^2) even where it is stable, and
// the tests run it at dt ||A|| ~ 0.28 on random models, up to 0.113 out (the open-system
// matrix's leakage). An unstable step leaves the range by orders of magnitude within a
// few steps.
constexpr double kRk4Tolerance = 1e-3;
constexpr double kEulerTolerance = 0.25;

// The largest radius r with the left half-disk {|z| <= r, Re z <= 0} inside the
// stability region |R(z)| <= 1 of the classical RK4, R(z) = 1 + z + z^2/2 + z^3/6 +
// z^4/24 (computed on a grid: the region reaches 2.828 on the imaginary axis and 2.785
// on the real axis, and narrows between them). A Lindbladian's spectrum lies in the
// closed left half-plane, a closed system's on the imaginary axis.
constexpr double kRk4HalfDisk = 2.6;

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// A value of a per-task-or-shared argument (the length decides, as the call's checks).
template <class R>
double arg(std::span<const R> v, std::size_t b, std::size_t len, std::size_t i) {
  return v.size() == len ? double(v[i]) : double(v[b * len + i]);
}

// An upper bound on ||A||_1 of task b's generator in segment k, as the exact solver's
// action bounds it (kernels/expm_action.hpp): ||H||_1 for a closed system (A = -i H;
// ||H||_2 <= ||H||_1 for a Hermitian H), 2 ||G||_1 + sum_j gamma_j ||L_j||_1^2 for an
// open one, G = -i H - 1/2 sum_j gamma_j L_j^dag L_j.
template <class R>
double generator_bound(const OpenPlan& p, const TaskArgs<R>& a, std::size_t b, int k) {
  const OpenSystem& s = p.sys;
  const int d = p.d, nc = s.n_controls(), nd = s.n_drift_terms(), nj = s.n_jumps();
  double h = norm1(d, s.h0());
  for (int m = 0; m < nd; ++m)
    h += std::abs(arg(a.drift_coeffs, b, nd, m)) * norm1(d, s.drift_terms()[m]);
  for (int c = 0; c < nc; ++c) {
    h += std::abs(arg(a.amplitudes, b, std::size_t(s.n_segments()) * nc, std::size_t(k) * nc + c)) *
         norm1(d, s.controls()[c]);
  }
  if (p.closed) return h;
  double g = h, jumps = 0;
  for (int j = 0; j < nj; ++j) {
    const ComplexMatrix& l = s.jumps()[j];
    ComplexMatrix ldl(std::size_t(d) * d, Complex(0));
    for (int r = 0; r < d; ++r)
      for (int q = 0; q < d; ++q)
        for (int c = 0; c < d; ++c)
          ldl[std::size_t(r) * d + c] +=
              std::conj(l[std::size_t(q) * d + r]) * l[std::size_t(q) * d + c];
    const double gamma = arg(a.rates, b, nj, j), ln = norm1(d, l);
    g += 0.5 * gamma * norm1(d, ldl);
    jumps += gamma * ln * ln;
  }
  return 2 * g + jumps;
}

// The refusal: what was out of range, the step against the stability region, and a dt
// the bound says is small enough (or another solver).
template <class R>
[[noreturn]] void refuse(const OpenPlan& p, const TaskArgs<R>& a, std::size_t b,
                         const std::string& what) {
  const OpenSystem& s = p.sys;
  const bool rk4 = p.options.solver == Solver::rk4;
  const char* name = solver_info(p.options.solver).name;
  double worst = 0, bound = 0, total = 0;  // max_k h_k ||A_k||, max_k ||A_k||, the duration
  for (int k = 0; k < s.n_segments(); ++k) {
    const std::size_t at = (a.durations.size() > std::size_t(s.n_segments()) ? b * s.n_segments() : 0) + std::size_t(k);
    const double dur = a.durations.empty() ? s.segment_durations()[k] : double(a.durations[at]),
                 h = dur / double(kern::open_fixed_steps(dur, p.options.dt));
    const double nrm = generator_bound(p, a, b, k);
    worst = std::max(worst, h * nrm);
    bound = std::max(bound, nrm);
    total += dur;
  }
  std::string msg = "the " + std::string(name) + " step dt = " + num(p.options.dt) +
                    " is too large for task " + std::to_string(b) + ": " + what +
                    ", outside the physical range; dt * ||A|| reaches " + num(worst) +
                    " (||A|| the generator's norm bound, largest over the segments)";
  // A dt the bound says is stable and accurate: dt ||A|| <= 0.1 keeps RK4's error per step
  // near (dt ||A||)^5 / 120 ~ 1e-7 (stable alone, up to the half-disk radius, can still
  // damp the state to nothing); Euler's error grows as exp(T dt ||A||^2 / 2) on an
  // oscillating spectrum (its stability region, the disk |1 + z| <= 1, holds no imaginary
  // eigenvalue), which stays under 1e-3 for dt <= 2e-3 / (T ||A||^2).
  const double accurate_rk4 = 0.1 / bound;
  if (rk4) {
    msg += ", and rk4 is stable only below " + num(kRk4HalfDisk) +
           " and accurate well below it: use dt <= " + num(accurate_rk4) + " or solver exact";
  } else {
    const double dt = std::min(accurate_rk4, 2e-3 / (total * bound * bound));
    msg += ", and euler is unstable at any dt on an oscillating (imaginary) spectrum: use dt <= " +
           num(dt) + ", solver rk4 with dt <= " + num(accurate_rk4) + ", or solver exact";
  }
  throw Error(msg, ErrorSubject::solver);
}

bool outside(double v, double lo, double hi, double tol) {
  return !(v >= lo - tol && v <= hi + tol);
}

}  // namespace

template <class R>
void check_fixed_step_results(const OpenPlan& p, const TaskArgs<R>& a, const TaskOutputs<R>& o) {
  if (!solver_info(p.options.solver).fixed_step) return;
  const double tol = p.options.solver == Solver::rk4 ? kRk4Tolerance : kEulerTolerance;
  for (std::size_t b = 0; b < o.fidelity.size(); ++b) {
    if (outside(o.fidelity[b], 0, 1, tol)) refuse(p, a, b, "its fidelity is " + num(o.fidelity[b]));
  }
  for (std::size_t b = 0; b < o.leakage.size(); ++b) {
    if (outside(o.leakage[b], 0, 1, tol)) refuse(p, a, b, "its leakage is " + num(o.leakage[b]));
  }
  // Every entry of a state, a density matrix, a unitary or a channel's superoperator has
  // modulus <= 1 (|rho_ij|^2 <= rho_ii rho_jj; |S_(ij),(kl)| <= 1 by Cauchy-Schwarz over
  // the Kraus operators, whose columns' squared norms sum to one).
  const std::size_t per = o.final_state.size() / std::max<std::size_t>(a.batch, 1);
  for (std::size_t i = 0; i < o.final_state.size(); ++i) {
    const double m = std::abs(std::complex<double>(o.final_state[i]));
    if (outside(m, 0, 1, tol)) refuse(p, a, i / per, "a final-state entry has modulus " + num(m));
  }
  if (o.expvals.empty()) return;
  // |<O>| <= ||O||_2 <= ||O||_F for a state; observable by observable, so that a call
  // allocates nothing (tests/alloc).
  const std::size_t n_obs = p.observables.size();
  const std::size_t per_task = o.expvals.size() / std::max<std::size_t>(a.batch, 1);
  for (std::size_t j = 0; j < n_obs; ++j) {
    double bound = 0;
    for (const auto& z : p.observables[j]) bound += std::norm(z);
    bound = std::sqrt(bound);
    for (std::size_t i = j; i < o.expvals.size(); i += n_obs) {
      if (outside(o.expvals[i], -bound, bound, tol * std::max(bound, 1.0))) {
        refuse(p, a, i / per_task,
               "an expectation value is " + num(o.expvals[i]) + " (|<O>| <= " + num(bound) + ")");
      }
    }
  }
}

template void check_fixed_step_results<float>(const OpenPlan&, const TaskArgs<float>&,
                                              const TaskOutputs<float>&);
template void check_fixed_step_results<double>(const OpenPlan&, const TaskArgs<double>&,
                                               const TaskOutputs<double>&);

}  // namespace qfleet::detail
