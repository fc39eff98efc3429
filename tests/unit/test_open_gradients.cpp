// Reverse-mode gradients of the open-system engine against central finite
// differences of the independent reference (reference/lindblad.hpp), complex128.
//   exact:     FD of the exact reference (relative error <= 1e-6, absolute floor 1e-8)
//   rk4/euler: the engine claims the exact gradient of its discretised dynamics, so
//              the reference is FD of plain RK4/Euler steps with the same step count,
//              ceil(duration/dt) per segment (same tolerances)
//   dopri5, tsit5: FD of the exact reference, with rtol = atol = 1e-10 in the engine and a
//              looser tolerance (relative 1e-5, absolute 1e-7)
// for targets pure, mixed (Uhlmann) and unitary, open and closed, d = 2, 3, 4 (the
// engine specialises some generator sizes), with the leakage cotangent, both
// cotangents at once, per-task and shared parameters.
#include <gtest/gtest.h>

#include <tuple>

#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

// The engine's options and the reference scheme its gradients are compared with.
struct SolverSetup {
  qfleet::OpenCompileOptions options;
  Scheme scheme = Scheme::Exact;
  double dt = 0, atol = 1e-8, rtol = 1e-6;
};

SolverSetup setup(Solver s, qfleet::Precision p = qfleet::Precision::complex128) {
  SolverSetup u;
  u.options.solver = s;
  u.options.precision = p;
  switch (s) {
    case Solver::exact:
      break;
    case Solver::rk4:
      u.dt = u.options.dt = 0.0437;  // duration/dt never an integer for these durations
      u.scheme = Scheme::RK4;
      break;
    case Solver::euler:
      u.dt = u.options.dt = 0.0113;
      u.scheme = Scheme::Euler;
      break;
    case Solver::dopri5:
    case Solver::tsit5:
      u.options.rtol = 1e-10;
      u.options.atol = 1e-10;
      u.atol = 1e-7;
      u.rtol = 1e-5;
      break;
  }
  return u;
}

void expect_grads(const QOut<double>& q, const Grads& fd, const SolverSetup& u, const std::string& what) {
  // Not vacuous: the reference gradient is far from zero.
  double top = 0;
  for (double v : fd.amps) top = std::max(top, std::abs(v));
  EXPECT_GT(top, 1e-4) << what << ": the reference amplitude gradient is (nearly) zero";
  EXPECT_TRUE(all_close(q.g_amp, fd.amps, u.atol, u.rtol)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(q.g_drift, fd.drift, u.atol, u.rtol)) << what << ": d/d drift_coeffs";
  EXPECT_TRUE(all_close(q.g_rates, fd.rates, u.atol, u.rtol)) << what << ": d/d rates";
}

class OpenGradients : public ::testing::TestWithParam<std::tuple<Solver, int, int>> {};

TEST_P(OpenGradients, MatchFiniteDifferences) {
  const auto [solver, ci, d] = GetParam();
  const ProblemKind& c = kProblemKinds[ci];
  std::mt19937_64 rng(300 + 100 * std::uint64_t(d) + 10 * std::uint64_t(ci) + std::uint64_t(solver));
  const Model m = kind_model(c, rng, d);
  const SolverSetup u = setup(solver);
  const auto prog = qfleet::compile(build(m), u.options);

  // (a) per-task amplitudes and rates, shared drift; both cotangents.
  {
    const TaskBatch b = random_batch(rng, m, 2, true, false, true);
    const std::vector<double> cf = {0.7, -1.3}, cl = {1.1, 0.4};
    const auto q = qvjp<double>(prog, m, b, cf, cl, want_all(m));
    expect_grads(q, fd_grads(m, b, cf, cl, u.scheme, u.dt), u, "per-task amplitudes/rates, both cotangents");
    // The forward outputs of the same pass are those of the scheme.
    expect_outputs(q, simulate_batch(m, b, u.scheme, u.dt), want_all(m), (solver == Solver::dopri5 || solver == Solver::tsit5) ? 1e-7 : 1e-10,
                   0, "vjp outputs");
  }
  // (b) shared amplitudes and rates (gradients summed over tasks), per-task drift; fidelity only.
  {
    const TaskBatch b = random_batch(rng, m, 2, false, true, false);
    const std::vector<double> cf = {-0.6, 1.5};
    expect_grads(qvjp<double>(prog, m, b, cf, {}), fd_grads(m, b, cf, {}, u.scheme, u.dt), u,
                 "shared amplitudes/rates, fidelity cotangent");
  }
  // (c) everything per task; leakage only.
  {
    const TaskBatch b = random_batch(rng, m, 2, true, true, true);
    const std::vector<double> cl = {2.0, -0.8};
    expect_grads(qvjp<double>(prog, m, b, {}, cl), fd_grads(m, b, {}, cl, u.scheme, u.dt), u,
                 "per-task everything, leakage cotangent");
  }
}

INSTANTIATE_TEST_SUITE_P(OpenEverySolver, OpenGradients,
                         ::testing::Combine(::testing::Values(Solver::exact, Solver::rk4, Solver::euler, Solver::dopri5,
                                                              Solver::tsit5),
                                            ::testing::Range(0, 6), ::testing::Values(2, 3, 4)),
                         [](const ::testing::TestParamInfo<std::tuple<Solver, int, int>>& pinfo) {
                           return std::string(qfleet::solver_info(std::get<0>(pinfo.param)).name) + "_" +
                                  kProblemKinds[std::get<1>(pinfo.param)].name + "_d" +
                                  std::to_string(std::get<2>(pinfo.param));
                         });

TEST(OpenGradientsMore, LargerProblemsWithTheExactSolver) {
  std::mt19937_64 rng(351);
  // A 5-level open system over 8 segments, and a 4-level open gate.
  for (const auto& [c, d, nseg] : {std::tuple{kProblemKinds[4], 5, 8}, std::tuple{kProblemKinds[5], 4, 3},
                                   std::tuple{kProblemKinds[2], 6, 8}}) {
    const Model m = kind_model(c, rng, d, nseg);
    const SolverSetup u = setup(Solver::exact);
    const auto prog = qfleet::compile(build(m), u.options);
    const TaskBatch b = random_batch(rng, m, 2, true, false, true);
    const std::vector<double> cf = {1.0, 0.5}, cl = {-0.5, 1.0};
    expect_grads(qvjp<double>(prog, m, b, cf, cl), fd_grads(m, b, cf, cl), u,
                 std::string(c.name) + " d=" + std::to_string(d));
  }
}

TEST(OpenGradientsMore, DrivenSegmentsWithRepeatedPropagators) {
  // Repeated amplitudes (the forward pass reuses propagators): gradients stay per segment.
  std::mt19937_64 rng(352);
  Model m = kind_model(kProblemKinds[3], rng, 3, 6);
  m.durations.assign(6, 0.2);
  const auto prog = qfleet::compile(build(m));
  TaskBatch b = random_batch(rng, m, 1, true, false, false);
  for (int k = 1; k < 6; ++k)
    for (int i = 0; i < 2; ++i) b.amps[k * 2 + i] = b.amps[i];
  const std::vector<double> cf = {1.0}, cl = {0.5};
  expect_grads(qvjp<double>(prog, m, b, cf, cl), fd_grads(m, b, cf, cl), setup(Solver::exact), "repeated segments");
}

TEST(OpenGradientsMore, SharedParametersWithPerTaskInitialStates) {
  // Shared parameters but per-task initial states: the tasks differ, and the shared
  // gradients are sums over them.
  std::mt19937_64 rng(355);
  for (int ci : {1, 4}) {
    const Model m = kind_model(kProblemKinds[ci], rng);
    const TaskBatch b = random_batch(rng, m, 3, false, false, false, /*per_task_initial=*/true);
    const auto prog = qfleet::compile(build(m));
    const std::vector<double> cf = {1.0, -0.5, 0.8}, cl = {0.3, 0.6, -1.0};
    const auto q = qvjp<double>(prog, m, b, cf, cl, want_all(m));
    expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-10, 0, kProblemKinds[ci].name);
    EXPECT_NE(q.fid[0], q.fid[1]);
    expect_grads(q, fd_grads(m, b, cf, cl), setup(Solver::exact), kProblemKinds[ci].name);
  }
}

TEST(OpenGradientsMore, PartialGradientRequestsAndZeroCotangents) {
  std::mt19937_64 rng(353);
  const Model m = kind_model(kProblemKinds[4], rng);
  const auto prog = qfleet::compile(build(m));
  const TaskBatch b = random_batch(rng, m, 2, true, true, true);
  QArgs<double> a(b);
  const std::vector<double> cf = {1.0, -1.0};
  // Only the rates' gradient: the other spans are empty.
  std::vector<double> g_rates(a.rates.size(), -7);
  qfleet::TaskGradients<double> g;
  g.rates = g_rates;
  prog.vjp<double>(a.args(), std::span<const double>(cf), {}, g);
  const Grads fd = fd_grads(m, b, cf, {});
  EXPECT_TRUE(all_close(g_rates, fd.rates, 1e-8, 1e-6));
  // Zero cotangents (given or omitted) give zero gradients.
  const auto z = qvjp<double>(prog, m, b, {0.0, 0.0}, {});
  const auto e = qvjp<double>(prog, m, b, {}, {});
  for (const auto* q : {&z, &e}) {
    for (double v : q->g_amp) EXPECT_EQ(v, 0.0);
    for (double v : q->g_drift) EXPECT_EQ(v, 0.0);
    for (double v : q->g_rates) EXPECT_EQ(v, 0.0);
  }
}

TEST(OpenGradientsMore, Complex64GradientsFollowComplex128) {
  std::mt19937_64 rng(354);
  for (int ci : {0, 4, 5}) {
    const Model m = kind_model(kProblemKinds[ci], rng);
    const TaskBatch b = random_batch(rng, m, 2, true, false, true);
    const std::vector<double> cf = {1.0, 0.5}, cl = {0.5, -1.0};
    const Grads fd = fd_grads(m, b, cf, cl);
    for (Solver s : {Solver::exact, Solver::dopri5}) {
      SolverSetup u = setup(s, qfleet::Precision::complex64);
      u.options.rtol = 1e-6;
      u.options.atol = 1e-7;
      const auto prog = qfleet::compile(build(m), u.options);
      const auto q = qvjp<float>(prog, m, b, cf, cl);
      const std::string what = std::string(kProblemKinds[ci].name) + " complex64 " + qfleet::solver_info(s).name;
      EXPECT_TRUE(all_close(q.g_amp, fd.amps, 2e-4, 1e-3)) << what;
      EXPECT_TRUE(all_close(q.g_drift, fd.drift, 2e-4, 1e-3)) << what;
      EXPECT_TRUE(all_close(q.g_rates, fd.rates, 2e-4, 1e-3)) << what;
    }
  }
}

// Long segments: dopri5 at rtol 1e-10 accepts hundreds of steps per segment, more
// than the backward pass's first step store holds (64), so the store grows and the
// task is re-run; the gradient must not notice.
TEST(OpenGradientsMore, Dopri5WithHundredsOfStepsPerSegment) {
  std::mt19937_64 rng(355);
  for (int ci : {0, 3}) {
    Model m = kind_model(kProblemKinds[ci], rng, 2, 2);
    for (double& t : m.durations) t *= 20;
    const SolverSetup u = setup(Solver::dopri5);
    const auto prog = qfleet::compile(build(m), u.options);
    const TaskBatch b = random_batch(rng, m, 2, true, false, true);
    const std::vector<double> cf = {0.9, -0.4}, cl = {0.3, 1.2};
    expect_grads(qvjp<double>(prog, m, b, cf, cl), fd_grads(m, b, cf, cl), u,
                 std::string(kProblemKinds[ci].name) + " dopri5, long segments");
  }
}

}  // namespace
