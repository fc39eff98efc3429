// The step solvers with the generator in Lindblad form (OpenForm::lindblad,
// kernels/lindblad_action.hpp): outputs against the independent reference's plain
// RK4/Euler steps and exact dynamics, gradients against its finite differences,
// the two forms against each other on multi-qubit models with local terms, and the
// automatic choice between them.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::OpenForm;
using qfleet::Solver;

qfleet::OpenCompileOptions options(Solver s, OpenForm form) {
  qfleet::OpenCompileOptions o;
  o.solver = s;
  o.form = form;
  if (s == Solver::rk4) o.dt = 0.0437;  // duration/dt never an integer for these durations
  if (s == Solver::euler) o.dt = 0.0113;
  if (s == Solver::dopri5 || s == Solver::tsit5) o.rtol = o.atol = 1e-10;
  return o;
}

double dt_of(Solver s) { return s == Solver::rk4 ? 0.0437 : s == Solver::euler ? 0.0113 : 0.0; }
const char* name_of(Solver s) {
  return s == Solver::rk4 ? "rk4" : s == Solver::euler ? "euler" : s == Solver::dopri5 ? "dopri5" : "tsit5";
}
bool adaptive(Solver s) { return s == Solver::dopri5 || s == Solver::tsit5; }

// The open problem kinds of kProblemKinds (pure, mixed and unitary targets).
constexpr int kOpenKinds[] = {3, 4, 5};

class OpenLindbladGradients : public ::testing::TestWithParam<std::tuple<Solver, int, int>> {};

// As OpenGradients.MatchFiniteDifferences, with the generator in Lindblad form:
// the discrete adjoint is the exact gradient of the same Runge-Kutta map.
TEST_P(OpenLindbladGradients, MatchFiniteDifferencesOfTheScheme) {
  const auto [solver, ki, d] = GetParam();
  const ProblemKind& c = kProblemKinds[kOpenKinds[ki]];
  if (c.init == Init::Gate && d > 3) GTEST_SKIP() << "gate problems run at d <= 3 (d^2 state columns)";
  std::mt19937_64 rng(700 + 100 * std::uint64_t(d) + 10 * std::uint64_t(ki) + std::uint64_t(solver));
  const Model m = kind_model(c, rng, d);
  const auto prog = qfleet::compile(build(m), options(solver, OpenForm::lindblad));
  ASSERT_EQ(prog.form(), OpenForm::lindblad);
  const double atol = adaptive(solver) ? 1e-7 : 1e-8, rtol = adaptive(solver) ? 1e-5 : 1e-6;
  const std::string what = std::string(c.name) + " " + name_of(solver) + " d=" + std::to_string(d);

  // per-task amplitudes and rates, shared drift; both cotangents
  const TaskBatch b = random_batch(rng, m, 2, true, false, true);
  const std::vector<double> cf = {0.7, -1.3}, cl = {1.1, 0.4};
  const auto q = qvjp<double>(prog, m, b, cf, cl, want_all(m));
  expect_outputs(q, simulate_batch(m, b, scheme_of(solver), dt_of(solver)), want_all(m),
                 adaptive(solver) ? 1e-7 : 1e-10, 0, what + " outputs");
  const Grads fd = fd_grads(m, b, cf, cl, scheme_of(solver), dt_of(solver));
  double top = 0;
  for (double v : fd.rates) top = std::max(top, std::abs(v));
  EXPECT_GT(top, 1e-4) << what << ": the reference rate gradient is (nearly) zero";
  EXPECT_TRUE(all_close(q.g_amp, fd.amps, atol, rtol)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(q.g_drift, fd.drift, atol, rtol)) << what << ": d/d drift_coeffs";
  EXPECT_TRUE(all_close(q.g_rates, fd.rates, atol, rtol)) << what << ": d/d rates";
}

INSTANTIATE_TEST_SUITE_P(OpenLindbladSolvers, OpenLindbladGradients,
                         ::testing::Combine(::testing::Values(Solver::rk4, Solver::euler, Solver::dopri5, Solver::tsit5),
                                            ::testing::Range(0, 3), ::testing::Values(2, 5)),
                         [](const ::testing::TestParamInfo<std::tuple<Solver, int, int>>& p) {
                           return std::string(name_of(std::get<0>(p.param))) + "_" +
                                  kProblemKinds[kOpenKinds[std::get<1>(p.param)]].name + "_d" +
                                  std::to_string(std::get<2>(p.param));
                         });

// A rate of zero still has a gradient (the reverse sweep forms the jump's sandwich even
// where the forward sweep skips it): two local qubits, task 0's rates all zero, task 1's
// not; rk4 and the
// exact action (whose reverse sweep pairs the monomial jumps' gradients with the adjoint's
// sandwiches), against the reference's central differences.
TEST(OpenLindbladForm, RateGradientsAtZeroRatesMatchFiniteDifferences) {
  std::mt19937_64 rng(711);
  const ProblemKind& c = kProblemKinds[kOpenKinds[0]];
  const Model m = local_qubits(2, c.init, c.target);  // sigma- (monomial) and Z (diagonal) jumps
  TaskBatch b = random_batch(rng, m, 2, true, false, true);
  std::fill_n(b.rates.begin(), m.jumps.size(), 0.0);
  const std::vector<double> cf = {0.7, -1.3}, cl = {1.1, 0.4};
  for (Solver s : {Solver::rk4, Solver::exact}) {
    qfleet::OpenCompileOptions o = options(s, OpenForm::lindblad);
    if (s == Solver::exact) o.exact = qfleet::ExactMethod::action;
    const auto prog = qfleet::compile(build(m), o);
    const auto q = qvjp<double>(prog, m, b, cf, cl, want_all(m));
    const Grads fd = fd_grads(m, b, cf, cl, scheme_of(s), dt_of(s));
    const std::string what = s == Solver::rk4 ? "rk4" : "exact action";
    EXPECT_GT(std::abs(fd.rates[0]), 1e-4) << what << ": the reference gradient at rate 0 is (nearly) zero";
    EXPECT_TRUE(all_close(q.g_rates, fd.rates, 1e-8, 1e-6)) << what << ": d/d rates";
    EXPECT_TRUE(all_close(q.g_amp, fd.amps, 1e-8, 1e-6)) << what << ": d/d amplitudes";
  }
}

// The two forms are the same map: equal outputs and gradients to rounding.
TEST(OpenLindbladForm, EqualsTheSuperoperatorFormOnLocalQubitModels) {
  std::mt19937_64 rng(710);
  struct Case {
    int qubits;
    Init init;
    Target target;
  };
  for (const Case& k : {Case{2, Init::Pure, Target::Pure}, Case{3, Init::Pure, Target::Pure},
                        Case{2, Init::Gate, Target::Unitary}, Case{4, Init::Pure, Target::Pure}}) {
    const Model m = local_qubits(k.qubits, k.init, k.target);
    for (Solver s : {Solver::rk4, Solver::tsit5}) {
      if (k.qubits == 4 && s == Solver::tsit5) continue;  // the d^4 superoperator side is the slow one
      const std::string what = std::to_string(k.qubits) + " qubits " + name_of(s);
      const auto sparse = qfleet::compile(build(m), options(s, OpenForm::lindblad));
      const auto dense = qfleet::compile(build(m), options(s, OpenForm::superoperator));
      EXPECT_EQ(dense.form(), OpenForm::superoperator);
      const TaskBatch b = random_batch(rng, m, 3, true, true, false, false, 0.5);
      const std::vector<double> cf = {0.4, -1.0, 0.9}, cl = {0.2, 0.0, -0.6};
      const auto a = qvjp<double>(sparse, m, b, cf, cl, want_all(m));
      const auto w = qvjp<double>(dense, m, b, cf, cl, want_all(m));
      EXPECT_TRUE(all_close(a.fid, w.fid, 1e-12)) << what << ": fidelity";
      EXPECT_TRUE(all_close(a.leak, w.leak, 1e-12)) << what << ": leakage";
      EXPECT_TRUE(all_close(a.exp, w.exp, 1e-12)) << what << ": expvals";
      EXPECT_TRUE(all_close(a.fin, w.fin, 1e-12)) << what << ": final state";
      EXPECT_TRUE(all_close(a.g_amp, w.g_amp, 1e-11, 1e-9)) << what << ": d/d amplitudes";
      EXPECT_TRUE(all_close(a.g_drift, w.g_drift, 1e-11, 1e-9)) << what << ": d/d drift";
      EXPECT_TRUE(all_close(a.g_rates, w.g_rates, 1e-11, 1e-9)) << what << ": d/d rates";
    }
  }
}

// The Lindblad form's state problems use Hermitian products and apply every diagonal
// jump at once (kernels/lindblad_action.hpp): per-task density matrices, per-task
// rates, and diagonal jumps with zeros and with unequal phases on their diagonals
// (so the merged weights are complex) must still give the superoperator form's
// outputs and gradients.
TEST(OpenLindbladForm, DensityStatesAndDiagonalJumpsEqualTheSuperoperatorForm) {
  std::mt19937_64 rng(714);
  Model m = local_qubits(3, Init::Density, Target::Mixed);
  m.rho0 = random_density(rng, m.d);
  m.target_mat = random_density(rng, m.d);
  m.jumps.push_back(local(3, 1, mat2(0, 0, 0, std::complex<double>(0.6, 0.8))));
  m.jumps.push_back(local(3, 2, mat2(0.5, 0, 0, std::complex<double>(0, 0.5))));
  for (Solver s : {Solver::rk4, Solver::tsit5}) {
    const auto sparse = qfleet::compile(build(m), options(s, OpenForm::lindblad));
    const auto dense = qfleet::compile(build(m), options(s, OpenForm::superoperator));
    const TaskBatch b = random_batch(rng, m, 3, true, false, true, true, 0.5);
    const std::vector<double> cf = {0.7, -1.0, 0.3}, cl = {-0.4, 0.5, 0.0};
    const auto a = qvjp<double>(sparse, m, b, cf, cl, want_all(m));
    const auto w = qvjp<double>(dense, m, b, cf, cl, want_all(m));
    const std::string what = name_of(s);
    EXPECT_TRUE(all_close(a.fid, w.fid, 1e-12)) << what << ": fidelity";
    EXPECT_TRUE(all_close(a.leak, w.leak, 1e-12)) << what << ": leakage";
    EXPECT_TRUE(all_close(a.fin, w.fin, 1e-12)) << what << ": final state";
    EXPECT_TRUE(all_close(a.g_amp, w.g_amp, 1e-11, 1e-9)) << what << ": d/d amplitudes";
    EXPECT_TRUE(all_close(a.g_rates, w.g_rates, 1e-11, 1e-9)) << what << ": d/d rates";
  }
}

TEST(OpenLindbladForm, Complex64FollowsComplex128) {
  std::mt19937_64 rng(711);
  const Model m = local_qubits(3, Init::Pure, Target::Pure);
  const TaskBatch b = random_batch(rng, m, 2, true, false, true, false, 0.5);
  auto o = options(Solver::rk4, OpenForm::lindblad);
  const auto q128 = qvjp<double>(qfleet::compile(build(m), o), m, b, {1.0, -0.5}, {}, want_all(m));
  o.precision = qfleet::Precision::complex64;
  const auto q64 = qvjp<float>(qfleet::compile(build(m), o), m, b, {1.0, -0.5}, {}, want_all(m));
  EXPECT_TRUE(all_close(q64.fid, q128.fid, 1e-5)) << "fidelity";
  EXPECT_TRUE(all_close(q64.g_amp, q128.g_amp, 1e-4, 1e-3)) << "d/d amplitudes";
  EXPECT_TRUE(all_close(q64.g_rates, q128.g_rates, 1e-4, 1e-3)) << "d/d rates";
}

// automatic: the Lindblad form where it needs fewer operations (local terms from a
// few qubits up) or the superoperators would not fit; the dense form for a dense
// qubit, closed systems and the exact solver's propagator.
TEST(OpenLindbladForm, AutomaticPicksTheCheaperForm) {
  std::mt19937_64 rng(712);
  const auto automatic = [](const Model& m, Solver s) {
    return qfleet::compile(build(m), options(s, OpenForm::automatic)).form();
  };
  EXPECT_EQ(automatic(local_qubits(4, Init::Pure, Target::Pure), Solver::rk4), OpenForm::lindblad);
  // the exact solver's action takes it too (test_open_action.cpp); its propagator never
  EXPECT_EQ(automatic(local_qubits(4, Init::Pure, Target::Pure), Solver::exact), OpenForm::lindblad);
  EXPECT_EQ(automatic(kind_model(kProblemKinds[3], rng, 2), Solver::dopri5), OpenForm::superoperator);
  EXPECT_EQ(automatic(kind_model(kProblemKinds[0], rng, 8), Solver::rk4), OpenForm::superoperator);  // closed
  const auto prog = qfleet::compile(build(local_qubits(4, Init::Pure, Target::Pure)), options(Solver::rk4, OpenForm::automatic));
  EXPECT_NE(prog.execution(4).find("Lindblad form"), std::string::npos) << prog.execution(4);
}

TEST(OpenLindbladForm, ForcedWhereItDoesNotApplyIsAClearError) {
  std::mt19937_64 rng(713);
  const Model open = kind_model(kProblemKinds[3], rng, 2), closed = kind_model(kProblemKinds[0], rng, 2);
  auto propagator = options(Solver::exact, OpenForm::lindblad);
  propagator.exact = qfleet::ExactMethod::propagator;
  EXPECT_QFLEET_ERROR(qfleet::compile(build(open), propagator), "form lindblad", "step solver");
  EXPECT_QFLEET_ERROR(qfleet::compile(build(closed), options(Solver::rk4, OpenForm::lindblad)), "form lindblad",
                      "jump operators");
}

// The Lindblad form stores no superoperator, but a gate problem still propagates the
// d^2 x d^2 channel: at d = 256 its states alone would take terabytes.
TEST(OpenLindbladForm, StatesThatWouldNotFitAreAClearError) {
  const int d = 256;
  qfleet::ComplexMatrix lower(std::size_t(d) * d);
  for (int i = 0; i + 1 < d; ++i) lower[std::size_t(i) * d + i + 1] = 1;
  qfleet::OpenSystem s(d);
  s.jump(lower).segments(4, 1.0).propagate_gate();
  EXPECT_QFLEET_ERROR(qfleet::compile(s, options(Solver::tsit5, OpenForm::lindblad)), "d = 256 gate problem",
                      "GiB of states");
}

// d = 32 (5 local qubits): the gradient's dot products on a row of G's pattern hold the
// row's cotangent column in registers (simd::conj_dots_shared), as 8 vectors under
// AVX-512 double, a size the smaller tests do not reach. Checked against central
// differences of the engine's own forward pass, which runs no gradient code: the rk4
// adjoint is the exact gradient of the same map.
TEST(OpenLindbladForm, FiveQubitGradientsMatchCentralDifferences) {
  Model m = local_qubits(5, Init::Pure, Target::Pure, 2);
  m.durations = {0.05, 0.04};
  const auto prog = qfleet::compile(build(m), options(Solver::rk4, OpenForm::lindblad));
  ASSERT_EQ(prog.form(), OpenForm::lindblad);
  std::mt19937_64 rng(716);
  const TaskBatch b = random_batch(rng, m, 1, true, false, true);
  const Want w{true, false, false, false};
  const auto q = qvjp<double>(prog, m, b, {1.0}, {}, w);
  auto fidelity = [&](const TaskBatch& t) { return qforward<double>(prog, m, t, w).fid[0]; };
  const double h = 1e-5;
  auto central = [&](std::vector<double> TaskBatch::*field, std::size_t i) {
    TaskBatch up = b, down = b;
    (up.*field)[i] += h;
    (down.*field)[i] -= h;
    return (fidelity(up) - fidelity(down)) / (2 * h);
  };
  std::vector<double> fd_amp(b.amps.size()), fd_rates(b.rates.size());
  for (std::size_t i = 0; i < fd_amp.size(); ++i) fd_amp[i] = central(&TaskBatch::amps, i);
  for (std::size_t i = 0; i < fd_rates.size(); ++i) fd_rates[i] = central(&TaskBatch::rates, i);
  double top = 0;
  for (double v : fd_amp) top = std::max(top, std::abs(v));
  EXPECT_GT(top, 1e-3) << "the reference amplitude gradient is (nearly) zero";
  EXPECT_TRUE(all_close(q.g_amp, fd_amp, 1e-8, 1e-5)) << "d/d amplitudes, d = 32";
  EXPECT_TRUE(all_close(q.g_rates, fd_rates, 1e-8, 1e-5)) << "d/d rates, d = 32";
}

// d = 64 (6 qubits): the superoperators alone would take 16 * 4096^2 bytes each
// (~268 MB, 31 of them); the Lindblad form runs it and keeps the trace.
TEST(OpenLindbladForm, SixQubitsRunWithoutSuperoperators) {
  Model m = local_qubits(6, Init::Pure, Target::Pure, 1);
  m.durations = {0.05};
  auto o = options(Solver::rk4, OpenForm::automatic);
  o.dt = 0.025;
  const auto prog = qfleet::compile(build(m), o);
  EXPECT_EQ(prog.form(), OpenForm::lindblad);
  std::mt19937_64 rng(714);
  const TaskBatch b = random_batch(rng, m, 1, false, false, false, false, 0.5);
  const auto q = qforward<double>(prog, m, b, want_all(m));
  std::complex<double> tr = 0;
  for (Index i = 0; i < m.d; ++i) tr += q.fin[std::size_t(i * m.d + i)];
  EXPECT_NEAR(tr.real(), 1.0, 1e-12);
  EXPECT_NEAR(tr.imag(), 0.0, 1e-12);
  EXPECT_GT(q.fid[0], 0.0);
  EXPECT_LT(q.fid[0], 1.0);
}

}  // namespace
