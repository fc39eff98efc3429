// Fixed-step solvers (rk4, euler) with a step too large for the generator: the states
// grow geometrically and the results leave their physical range. Whatever output a call
// asks for, it is refused with a message naming the solver and dt; the dt the message
// suggests runs and agrees with the closed form. Reference: Rabi oscillation, H = u X
// from |0>: |psi(t)> = cos(u t)|0> - i sin(u t)|1>, so <1|rho(T)|1> = sin^2(u T).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

constexpr double kRabiTime = 4.0;  // 4 segments of 1

// Closed (a pure state) or open (a density matrix: a decay jump, given rate 0 below).
qfleet::OpenSystem rabi_system(bool open) {
  qfleet::OpenSystem s(2);
  s.control(row_major(pauli('X')))
      .segments(4, kRabiTime)
      .initial_state(stdvec(basis(2, 0)))
      .target_state(stdvec(basis(2, 1)));
  s.observable(row_major(pauli('Z')));
  if (open) s.jump(row_major(ket_bra(2, 0, 1)));
  return s;
}

qfleet::OpenCompileOptions fixed_step_options(Solver s, double dt) {
  qfleet::OpenCompileOptions o;
  o.solver = s;
  o.dt = dt;
  return o;
}

TEST(OpenStability, AnUnstableStepIsRefusedWhicheverOutputIsAsked) {
  for (bool open : {false, true}) {
    for (Solver s : {Solver::rk4, Solver::euler}) {
      const auto prog = qfleet::compile(rabi_system(open), fixed_step_options(s, 0.5));
      const std::vector<double> amp(4, 100.0), rates(open ? 1 : 0, 0.0);
      const qfleet::TaskArgs<double> a{1, amp, {}, rates, {}};
      std::vector<double> f(1), e(5), cot{1.0}, g(4);
      std::vector<std::complex<double>> x(prog.final_state_size());
      const std::string name = std::string(s == Solver::rk4 ? "rk4" : "euler") + " step dt = 0.5";
      qfleet::TaskOutputs<double> fid, state, expvals;
      fid.fidelity = f;
      state.final_state = x;
      expvals.expvals = e;
      EXPECT_QFLEET_ERROR(prog.forward(a, fid), name.c_str(), "its fidelity is",
                          "use dt <=", "solver exact");
      EXPECT_QFLEET_ERROR(prog.forward(a, state), name.c_str(), "final-state entry");
      EXPECT_QFLEET_ERROR(prog.forward(a, expvals), name.c_str(), "expectation value");
      EXPECT_QFLEET_ERROR(prog.vjp<double>(a, cot, {}, {g, {}, {}}, fid), name.c_str());
    }
  }
}

// The dt after "use dt <= " in a refusal.
double stability_suggested_dt(const std::string& message, const char* after) {
  const auto at = message.find(after);
  EXPECT_NE(at, std::string::npos) << message;
  return at == std::string::npos
             ? 0.0
             : std::strtod(message.c_str() + at + std::string(after).size(), nullptr);
}

TEST(OpenStability, TheSuggestedStepRunsAndAgreesWithTheClosedForm) {
  const double u = 100, want = std::pow(std::sin(u * kRabiTime), 2);
  for (bool open : {false, true}) {
    const std::vector<double> amp(4, u), rates(open ? 1 : 0, 0.0);
    const qfleet::TaskArgs<double> a{1, amp, {}, rates, {}};
    std::vector<double> f(1);
    qfleet::TaskOutputs<double> out;
    out.fidelity = f;
    const std::string m = qfleet_test::error_of([&] {
      qfleet::compile(rabi_system(open), fixed_step_options(Solver::rk4, 0.5)).forward(a, out);
    });
    const double dt = stability_suggested_dt(m, "use dt <= ");
    ASSERT_GT(dt, 0.0) << m;
    qfleet::compile(rabi_system(open), fixed_step_options(Solver::rk4, dt)).forward(a, out);
    EXPECT_NEAR(f[0], want, 2e-3) << (open ? "open" : "closed") << ", dt " << dt;
    // Euler's suggestion is rk4 or a dt of its own: the run at the rk4 dt it names agrees too.
    const std::string me = qfleet_test::error_of([&] {
      qfleet::compile(rabi_system(open), fixed_step_options(Solver::euler, 0.5)).forward(a, out);
    });
    EXPECT_NEAR(stability_suggested_dt(me, "solver rk4 with dt <= "), dt, 1e-12 * dt) << me;
  }
}

TEST(OpenStability, StableStepsOfTheTestsAndAppsAreNotRefused) {
  // u = 1: rk4 at dt = 0.05 (the meta-control app's original_rk4 step) and euler at
  // 1e-3 stay within range and near sin^2(u T).
  const std::vector<double> amp(4, 1.0);
  for (auto [s, dt, tol] :
       {std::tuple{Solver::rk4, 0.05, 1e-6}, std::tuple{Solver::euler, 1e-3, 1e-2}}) {
    std::vector<double> f(1);
    qfleet::TaskOutputs<double> out;
    out.fidelity = f;
    qfleet::compile(rabi_system(false), fixed_step_options(s, dt))
        .forward(qfleet::TaskArgs<double>{1, amp, {}, {}, {}}, out);
    EXPECT_NEAR(f[0], std::pow(std::sin(kRabiTime), 2), tol);
  }
}

}  // namespace
