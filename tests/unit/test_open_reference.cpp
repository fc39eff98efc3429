// The open-system reference checked against itself and textbook facts
// (OpenReference), and qfleet's open-system engine against closed-form dynamics
// (OpenAnalytic): Rabi oscillation, T1 decay, pure dephasing, the steady state of a
// driven damped qubit, a pi pulse.
#include <gtest/gtest.h>

#include "unit/open_harness.hpp"

namespace {

using namespace ref;

// ---------------------------------------------------------------------------
// The reference.

TEST(OpenReference, ColumnStackingConvention) {
  std::mt19937_64 rng(11);
  for (int d : {2, 3, 5}) {
    const Mat a = random_matrix(rng, d, d), b = random_matrix(rng, d, d), x = random_matrix(rng, d, d);
    EXPECT_LT((vec(a * x * b) - sandwich(a, b) * vec(x)).norm(), 1e-12);
    EXPECT_LT((unvec(vec(x), d) - x).norm(), 0.0 + 1e-15);
    EXPECT_EQ(vec(x)(1), x(1, 0));  // column stacking: vec[i + d j] = X[i][j]
  }
}

TEST(OpenReference, LiouvillianMatchesTheLindbladEquation) {
  std::mt19937_64 rng(12);
  for (int d : {2, 3, 4}) {
    const Mat h = random_hermitian(rng, d);
    const std::vector<Mat> ls = {random_matrix(rng, d, d), random_matrix(rng, d, d)};
    const std::vector<double> g = {0.3, 1.7};
    const Mat lv = liouvillian(h, ls, g);
    const Mat x = random_matrix(rng, d, d);  // any matrix, not only Hermitian ones
    EXPECT_LT((unvec(lv * vec(x), d) - lindblad_rhs(h, ls, g, x)).norm(), 1e-12);
    // Trace preserving: tr(L(X)) = 0, i.e. vec(I)^dag Lv = 0.
    EXPECT_LT((vec(eye(d)).adjoint() * lv).norm(), 1e-12);
  }
}

TEST(OpenReference, PropagatorsAgree) {
  std::mt19937_64 rng(13);
  for (int d : {2, 3, 5}) {
    const Mat h = random_hermitian(rng, d, 2.0);
    const double t = 0.37;
    const Mat u = unitary_of(h, t);
    const Mat u2 = (Mat(-kI * t * h)).exp();
    EXPECT_LT((u - u2).norm(), 1e-12);
    EXPECT_LT((u.adjoint() * u - eye(d)).norm(), 1e-12);
    // The Liouvillian of a closed system exponentiates to conj(U) kron U.
    const Mat s = Mat(t * liouvillian(h, {}, {})).exp();
    EXPECT_LT((s - kron(u.conjugate(), u)).norm(), 1e-11);
    // RK4 converges at 4th order, Euler at 1st, to the exact propagator.
    const Mat lv = liouvillian(h, {random_matrix(rng, d, d, 0.5)}, {0.4});
    const Mat x0 = vec(random_density(rng, d));
    const Mat exact = Mat(t * lv).exp() * x0;
    const double e1 = (fixed_steps(lv, x0, t, t / 10.5, Scheme::RK4) - exact).norm();
    const double e2 = (fixed_steps(lv, x0, t, t / 20.5, Scheme::RK4) - exact).norm();
    EXPECT_GT(e1 / e2, 12.0);
    EXPECT_LT(e2, 1e-5);
    const double f1 = (fixed_steps(lv, x0, t, t / 200.5, Scheme::Euler) - exact).norm();
    const double f2 = (fixed_steps(lv, x0, t, t / 400.5, Scheme::Euler) - exact).norm();
    EXPECT_NEAR(f1 / f2, 2.0, 0.1);
  }
}

TEST(OpenReference, UhlmannConstructionsAgree) {
  std::mt19937_64 rng(14);
  for (int d : {2, 3, 4, 6}) {
    const Mat rho = random_density(rng, d), sigma = random_density(rng, d);
    const double f = uhlmann(rho, sigma);
    EXPECT_NEAR(f, uhlmann_sqrtm(rho, sigma), 1e-10);
    EXPECT_NEAR(f, uhlmann_spectrum(rho, sigma), 1e-10);
    EXPECT_NEAR(f, uhlmann(sigma, rho), 1e-10);
    EXPECT_GT(f, 0.0);
    EXPECT_LT(f, 1.0);
    EXPECT_NEAR(uhlmann(rho, rho), 1.0, 1e-10);
    // Pure-state special cases: F(rho, |phi><phi|) = <phi|rho|phi>, F(|psi><psi|, |phi><phi|) = |<phi|psi>|^2.
    const Vec phi = random_state(rng, d), psi = random_state(rng, d);
    const Mat pphi = phi * phi.adjoint(), ppsi = psi * psi.adjoint();
    EXPECT_NEAR(uhlmann(rho, pphi), (phi.adjoint() * rho * phi)(0, 0).real(), 1e-10);
    EXPECT_NEAR(uhlmann(pphi, rho), (phi.adjoint() * rho * phi)(0, 0).real(), 1e-10);
    EXPECT_NEAR(uhlmann_spectrum(rho, pphi), (phi.adjoint() * rho * phi)(0, 0).real(), 1e-10);
    EXPECT_NEAR(uhlmann(ppsi, pphi), std::norm(phi.dot(psi)), 1e-10);
  }
}

TEST(OpenReference, AverageGateFidelityConstructionsAgree) {
  std::mt19937_64 rng(15);
  for (int d : {2, 3, 4, 5}) {
    const Mat h = random_hermitian(rng, d);
    const Mat lv = liouvillian(h, {random_matrix(rng, d, d, 0.6)}, {0.5});
    const Mat s = Mat(0.8 * lv).exp();
    const Channel e = [&](const Mat& x) -> Mat { return unvec(s * vec(x), d); };
    const Mat u = random_unitary(rng, d);
    const double fw = avg_fidelity_weyl(e, u, d);
    EXPECT_NEAR(fw, avg_fidelity_choi(e, u, d), 1e-12);
    if (d == 2 || d == 3 || d == 5) {
      EXPECT_NEAR(fw, avg_fidelity_design(e, u, d), 1e-12);
    }
    // A unitary channel: F = 1 against itself, (|tr V^dag U|^2 + d)/(d(d+1)) against V.
    const Mat w = random_unitary(rng, d);
    const Channel ew = [&](const Mat& x) -> Mat { return w * x * w.adjoint(); };
    EXPECT_NEAR(avg_fidelity_weyl(ew, w, d), 1.0, 1e-12);
    EXPECT_NEAR(avg_fidelity_weyl(ew, u, d), (std::norm((u.adjoint() * w).trace()) + d) / (d * (d + 1.0)), 1e-12);
    if (d == 2 || d == 3 || d == 5) {
      EXPECT_NEAR(avg_fidelity_design(ew, u, d), avg_fidelity_weyl(ew, u, d), 1e-12);
    }
    // The completely depolarising channel E(X) = tr(X) I/d: F_avg = 1/d.
    const Channel dep = [&](const Mat& x) -> Mat { return x.trace() * eye(d) / double(d); };
    EXPECT_NEAR(avg_fidelity_weyl(dep, u, d), 1.0 / d, 1e-12);
  }
}

// ---------------------------------------------------------------------------
// Closed-form dynamics.

qfleet::OpenCompileOptions opts(qfleet::Solver s) {
  qfleet::OpenCompileOptions o;
  o.solver = s;
  o.dt = 1e-3;
  o.rtol = 1e-11;
  o.atol = 1e-12;
  return o;
}

constexpr qfleet::Solver kAllSolvers[] = {qfleet::Solver::exact, qfleet::Solver::rk4, qfleet::Solver::dopri5};

double tol_of(qfleet::Solver s) { return s == qfleet::Solver::exact ? 1e-11 : 1e-8; }

TEST(OpenAnalytic, RabiOscillation) {
  const double omega = 2.3, total = 3.0;
  const int nseg = 12;
  Model m(2);
  m.controls = {pauli('X') / 2.0};
  m.observables = {ket_bra(2, 1, 1)};
  m.durations.assign(nseg, total / nseg);
  m.target = Target::Pure;
  m.target_psi = basis(2, 1);
  for (qfleet::Solver s : kAllSolvers) {
    const auto prog = qfleet::compile(build(m), opts(s));
    TaskBatch b;
    b.amps.assign(nseg, omega);
    const auto q = qforward<double>(prog, m, b, want_all(m));
    for (int k = 0; k <= nseg; ++k) {
      const double t = total * k / nseg;
      EXPECT_NEAR(q.exp[k], std::pow(std::sin(omega * t / 2), 2), tol_of(s)) << "boundary " << k;
    }
    EXPECT_NEAR(q.fid[0], std::pow(std::sin(omega * total / 2), 2), tol_of(s));
    EXPECT_NEAR(std::abs(q.fin[0] - cd(std::cos(omega * total / 2), 0)), 0.0, tol_of(s));
    EXPECT_NEAR(std::abs(q.fin[1] - cd(0, -std::sin(omega * total / 2))), 0.0, tol_of(s));
  }
}

TEST(OpenAnalytic, LeakageOfAResonantTransitionOutOfTheSubspace) {
  // Three levels, a drive on 1 <-> 2 only; starting in |1>, leak = sin^2(Omega t / 2).
  const double omega = 1.9, total = 1.4;
  Model m(3);
  m.controls = {(ket_bra(3, 1, 2) + ket_bra(3, 2, 1)) / 2.0};
  m.durations.assign(4, total / 4);
  m.psi0 = basis(3, 1);
  m.subspace = {0, 1};
  const auto prog = qfleet::compile(build(m));
  TaskBatch b;
  b.amps.assign(4, omega);
  const auto q = qforward<double>(prog, m, b, want_all(m));
  EXPECT_NEAR(q.leak[0], std::pow(std::sin(omega * total / 2), 2), 1e-12);
}

TEST(OpenAnalytic, T1Decay) {
  const double gamma = 0.7, total = 2.5;
  const int nseg = 10;
  for (qfleet::Solver s : kAllSolvers) {
    // L = sqrt(gamma)|0><1| with rate 1.
    Model m(2);
    m.jumps = {std::sqrt(gamma) * ket_bra(2, 0, 1)};
    m.observables = {ket_bra(2, 1, 1), pauli('Z')};
    m.durations.assign(nseg, total / nseg);
    m.psi0 = basis(2, 1);
    const auto prog = qfleet::compile(build(m), opts(s));
    TaskBatch b;
    b.rates = {1.0};
    const auto q = qforward<double>(prog, m, b, want_all(m));
    for (int k = 0; k <= nseg; ++k) {
      const double p1 = std::exp(-gamma * total * k / nseg);
      EXPECT_NEAR(q.exp[2 * k], p1, tol_of(s)) << "boundary " << k;
      EXPECT_NEAR(q.exp[2 * k + 1], 1 - 2 * p1, tol_of(s)) << "boundary " << k;
    }
    const double p1 = std::exp(-gamma * total);
    EXPECT_TRUE(all_close(q.fin, std::vector<cd>{1 - p1, 0, 0, p1}, tol_of(s)));
  }
  // L = |0><1| with the rate given per task at call time.
  Model m(2);
  m.jumps = {ket_bra(2, 0, 1)};
  m.observables = {ket_bra(2, 1, 1)};
  m.durations.assign(nseg, total / nseg);
  m.psi0 = basis(2, 1);
  const auto prog = qfleet::compile(build(m));
  TaskBatch b;
  b.B = 3;
  b.rates = {0.1, 0.7, 2.2};
  b.rates_pt = true;
  const auto q = qforward<double>(prog, m, b, want_all(m));
  for (std::size_t t = 0; t < 3; ++t)
    for (int k = 0; k <= nseg; ++k)
      EXPECT_NEAR(q.exp[t * (nseg + 1) + k], std::exp(-b.rates[t] * total * k / nseg), 1e-11);
}

TEST(OpenAnalytic, PureDephasing) {
  // L = sigma_z at rate gamma/2: the coherence decays as exp(-gamma t), populations stay;
  // a drift term (omega/2) Z with coefficient omega rotates it.
  const double gamma = 0.9, total = 2.0;
  const int nseg = 8;
  for (double omega : {0.0, 1.3}) {
    for (qfleet::Solver s : kAllSolvers) {
      Model m(2);
      m.jumps = {pauli('Z')};
      m.drift_terms = {pauli('Z') / 2.0};
      m.observables = {pauli('X'), pauli('Y'), pauli('Z')};
      m.durations.assign(nseg, total / nseg);
      m.psi0 = (basis(2, 0) + basis(2, 1)) / std::sqrt(2.0);
      const auto prog = qfleet::compile(build(m), opts(s));
      TaskBatch b;
      b.rates = {gamma / 2};
      b.drift = {omega};
      const auto q = qforward<double>(prog, m, b, want_all(m));
      for (int k = 0; k <= nseg; ++k) {
        const double t = total * k / nseg, c = std::exp(-gamma * t);
        EXPECT_NEAR(q.exp[3 * k], c * std::cos(omega * t), tol_of(s)) << "boundary " << k;
        EXPECT_NEAR(q.exp[3 * k + 1], c * std::sin(omega * t), tol_of(s)) << "boundary " << k;
        EXPECT_NEAR(q.exp[3 * k + 2], 0.0, tol_of(s)) << "boundary " << k;
      }
    }
  }
}

TEST(OpenAnalytic, DrivenDampedQubitReachesTheBlochSteadyState) {
  // H = (Omega/2) X, L = sigma_- = |0><1| at rate gamma. Steady state:
  // p1 = Omega^2 / (gamma^2 + 2 Omega^2), <X> = 0, <Y> = -2 Omega gamma / (gamma^2 + 2 Omega^2).
  const double omega = 1.3, gamma = 1.0;
  Model m(2);
  m.controls = {pauli('X') / 2.0};
  m.jumps = {ket_bra(2, 0, 1)};
  m.observables = {ket_bra(2, 1, 1), pauli('X'), pauli('Y')};
  m.durations.assign(30, 2.0);  // 60 / gamma: transients below e^-30
  m.target = Target::Mixed;
  const double den = gamma * gamma + 2 * omega * omega;
  const double p1 = omega * omega / den, y = -2 * omega * gamma / den;
  // The steady state as a density matrix: rho = (I + x X + y Y + z Z)/2 with z = 1 - 2 p1.
  const Mat rho_ss = (eye(2) + y * pauli('Y') + (1 - 2 * p1) * pauli('Z')) / 2.0;
  m.target_mat = rho_ss;
  // Cross-check of the closed form: rho_ss spans the null space of the reference Liouvillian.
  EXPECT_LT((liouvillian(omega * pauli('X') / 2.0, m.jumps, {gamma}) * vec(rho_ss)).norm(), 1e-14);
  const auto prog = qfleet::compile(build(m));
  TaskBatch b;
  b.amps.assign(30, omega);
  b.rates = {gamma};
  const auto q = qforward<double>(prog, m, b, want_all(m));
  const std::size_t last = 30 * 3;
  EXPECT_NEAR(q.exp[last], p1, 1e-9);
  EXPECT_NEAR(q.exp[last + 1], 0.0, 1e-9);
  EXPECT_NEAR(q.exp[last + 2], y, 1e-9);
  EXPECT_TRUE(all_close(q.fin, row_major(rho_ss), 1e-9));
  EXPECT_NEAR(q.fid[0], 1.0, 1e-8);  // Uhlmann fidelity with itself
}

TEST(OpenAnalytic, PiPulseIsAnXGate) {
  // A constant X drive for time pi/Omega gives exp(-i pi X / 2) = -i X.
  const double omega = 1.7;
  for (qfleet::Solver s : kAllSolvers) {
    Model m(2);
    m.controls = {pauli('X') / 2.0};
    m.durations.assign(4, kPi / omega / 4);
    m.init = Init::Gate;
    m.target = Target::Unitary;
    m.target_mat = pauli('X');
    const auto prog = qfleet::compile(build(m), opts(s));
    TaskBatch b;
    b.amps.assign(4, omega);
    const auto q = qforward<double>(prog, m, b, want_all(m));
    EXPECT_NEAR(q.fid[0], 1.0, tol_of(s));
    EXPECT_TRUE(all_close(q.fin, row_major(Mat(-kI * pauli('X'))), tol_of(s)));
    // Against Y: F = (|tr(Y^dag (-iX))|^2 + 2) / 6 = 1/3.
    m.target_mat = pauli('Y');
    const auto prog_y = qfleet::compile(build(m), opts(s));
    EXPECT_NEAR(qforward<double>(prog_y, m, b, want_all(m)).fid[0], 1.0 / 3, tol_of(s));
    // The same as an open system with a jump operator at rate 0: S = conj(U) kron U.
    m.target_mat = pauli('X');
    m.jumps = {ket_bra(2, 0, 1)};
    const auto prog_open = qfleet::compile(build(m), opts(s));
    b.rates = {0.0};
    const auto qo = qforward<double>(prog_open, m, b, want_all(m));
    EXPECT_NEAR(qo.fid[0], 1.0, tol_of(s));
    const Mat u = -kI * pauli('X');
    EXPECT_TRUE(all_close(qo.fin, row_major(kron(u.conjugate(), u)), tol_of(s)));
    // With T1 during the gate the fidelity drops below 1.
    b.rates = {0.3};
    EXPECT_LT(qforward<double>(prog_open, m, b, want_all(m)).fid[0], 0.99);
  }
}

}  // namespace
