// The exact solver by the action of the exponential (ExactMethod::action,
// kernels/expm_action.hpp): outputs against the independent reference's exact
// dynamics and gradients against its finite differences for every problem kind and
// both generator forms, the action against the propagator to rounding, many Taylor
// steps per segment, complex64, the automatic choice, d = 32 and 64 problems the
// propagator refuses, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::ExactMethod;
using qfleet::OpenForm;
using qfleet::Solver;

qfleet::OpenCompileOptions options(ExactMethod method, OpenForm form = OpenForm::automatic) {
  qfleet::OpenCompileOptions o;
  o.solver = Solver::exact;
  o.exact = method;
  o.form = form;
  return o;
}

class OpenActionGradients : public ::testing::TestWithParam<std::tuple<int, OpenForm>> {};

// The action is the exact solution to the working precision, so it matches the
// reference's exact dynamics and its finite differences, as the propagator does
// (OpenGradients.MatchFiniteDifferences).
TEST_P(OpenActionGradients, MatchTheExactDynamicsAndTheirFiniteDifferences) {
  const auto [ki, form] = GetParam();
  const ProblemKind& c = kProblemKinds[ki];
  if (c.closed && form == OpenForm::lindblad) GTEST_SKIP() << "the Lindblad form is for open systems";
  std::mt19937_64 rng(900 + 10 * std::uint64_t(ki) + std::uint64_t(form));
  const Model m = kind_model(c, rng, 3);
  const auto prog = qfleet::compile(build(m), options(ExactMethod::action, form));
  ASSERT_EQ(prog.exact_method(), ExactMethod::action);
  ASSERT_EQ(prog.form(), form == OpenForm::lindblad ? OpenForm::lindblad : OpenForm::superoperator);
  const std::string what = std::string(c.name) + " " + std::string(qfleet::to_string(prog.form()));

  // per-task amplitudes, shared drift, per-task rates; both cotangents; amplitudes up
  // to 3 so that segments take several Taylor steps
  const TaskBatch b = random_batch(rng, m, 2, true, false, true, false, 3.0);
  const std::vector<double> cf = {0.7, -1.3}, cl = {1.1, 0.4};
  const auto q = qvjp<double>(prog, m, b, cf, cl, want_all(m));
  expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-11, 0, what + " outputs");
  const Grads fd = fd_grads(m, b, cf, cl);
  EXPECT_TRUE(all_close(q.g_amp, fd.amps, 1e-8, 1e-6)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(q.g_drift, fd.drift, 1e-8, 1e-6)) << what << ": d/d drift_coeffs";
  EXPECT_TRUE(all_close(q.g_rates, fd.rates, 1e-8, 1e-6)) << what << ": d/d rates";
}

INSTANTIATE_TEST_SUITE_P(OpenActionKinds, OpenActionGradients,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values(OpenForm::superoperator, OpenForm::lindblad)),
                         [](const ::testing::TestParamInfo<std::tuple<int, OpenForm>>& p) {
                           return std::string(kProblemKinds[std::get<0>(p.param)].name) + "_" +
                                  std::string(qfleet::to_string(std::get<1>(p.param)));
                         });

void expect_same(const QOut<double>& a, const QOut<double>& w, double tol, const std::string& what) {
  EXPECT_TRUE(all_close(a.fid, w.fid, tol)) << what << ": fidelity";
  EXPECT_TRUE(all_close(a.leak, w.leak, tol)) << what << ": leakage";
  EXPECT_TRUE(all_close(a.exp, w.exp, tol)) << what << ": expvals";
  EXPECT_TRUE(all_close(a.fin, w.fin, tol)) << what << ": final state";
  EXPECT_TRUE(all_close(a.g_amp, w.g_amp, 10 * tol, 1e-9)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(a.g_drift, w.g_drift, 10 * tol, 1e-9)) << what << ": d/d drift";
  EXPECT_TRUE(all_close(a.g_rates, w.g_rates, 10 * tol, 1e-9)) << what << ": d/d rates";
}

// Where both run, the action and the propagator compute the same map to rounding:
// local-qubit models in Lindblad form (state and gate problems) and a closed system.
TEST(OpenAction, EqualsThePropagator) {
  std::mt19937_64 rng(910);
  struct Case {
    const char* name;
    Model m;
  };
  const Case cases[] = {{"3 qubits state", local_qubits(3, Init::Pure, Target::Pure)},
                        {"2 qubits gate", local_qubits(2, Init::Gate, Target::Unitary)},
                        {"closed d=5 state", kind_model(kProblemKinds[0], rng, 5)}};
  for (const Case& k : cases) {
    const auto action = qfleet::compile(build(k.m), options(ExactMethod::action));
    const auto prop = qfleet::compile(build(k.m), options(ExactMethod::propagator));
    ASSERT_EQ(action.exact_method(), ExactMethod::action);
    ASSERT_EQ(prop.exact_method(), ExactMethod::propagator);
    const TaskBatch b = random_batch(rng, k.m, 3, true, true, !k.m.closed(), false, 2.0);
    const std::vector<double> cf = {0.4, -1.0, 0.9}, cl = {0.2, 0.0, -0.6};
    expect_same(qvjp<double>(action, k.m, b, cf, cl, want_all(k.m)), qvjp<double>(prop, k.m, b, cf, cl, want_all(k.m)),
                1e-12, k.name);
  }
}

// ||dt A||_1 in the thousands: a few hundred Taylor steps per segment, more than the
// backward pass's first store of step starts holds (it grows and the task reruns).
TEST(OpenAction, ManyTaylorStepsPerSegment) {
  std::mt19937_64 rng(911);
  Model m = kind_model(kProblemKinds[3], rng, 2, 2);
  m.durations = {2.0, 1.5};
  const TaskBatch b = random_batch(rng, m, 2, true, false, false, false, 400.0);
  const std::vector<double> cf = {1.0, 0.5}, cl = {0.3, -0.2};
  const auto action = qvjp<double>(qfleet::compile(build(m), options(ExactMethod::action)), m, b, cf, cl, want_all(m));
  const auto prop = qvjp<double>(qfleet::compile(build(m), options(ExactMethod::propagator)), m, b, cf, cl, want_all(m));
  // Both are backward stable for a norm ~10^3: agreement to ~norm * u, not 1e-12.
  EXPECT_TRUE(all_close(action.fid, prop.fid, 1e-10)) << "fidelity";
  EXPECT_TRUE(all_close(action.fin, prop.fin, 1e-10)) << "final state";
  EXPECT_TRUE(all_close(action.g_amp, prop.g_amp, 1e-9, 1e-7)) << "d/d amplitudes";
  EXPECT_TRUE(all_close(action.g_rates, prop.g_rates, 1e-9, 1e-7)) << "d/d rates";
}

// complex64 takes its own theta table (unit roundoff 2^-24): fewer Taylor terms, the
// same result to single precision.
TEST(OpenAction, Complex64FollowsComplex128) {
  std::mt19937_64 rng(912);
  const Model m = local_qubits(3, Init::Pure, Target::Pure);
  const TaskBatch b = random_batch(rng, m, 2, true, false, true, false, 2.0);
  auto o = options(ExactMethod::action, OpenForm::lindblad);
  const auto q128 = qvjp<double>(qfleet::compile(build(m), o), m, b, {1.0, -0.5}, {}, want_all(m));
  o.precision = qfleet::Precision::complex64;
  const auto q64 = qvjp<float>(qfleet::compile(build(m), o), m, b, {1.0, -0.5}, {}, want_all(m));
  EXPECT_TRUE(all_close(q64.fid, q128.fid, 1e-5)) << "fidelity";
  EXPECT_TRUE(all_close(q64.fin, q128.fin, 1e-5)) << "final state";
  EXPECT_TRUE(all_close(q64.g_amp, q128.g_amp, 1e-4, 1e-3)) << "d/d amplitudes";
  EXPECT_TRUE(all_close(q64.g_rates, q128.g_rates, 1e-4, 1e-3)) << "d/d rates";
}

// automatic: the propagator for small generators, the action (in Lindblad form) for
// open systems from a few qubits, and wherever the propagator exceeds n = 256.
TEST(OpenAction, AutomaticPicksTheCheaperMethod) {
  std::mt19937_64 rng(913);
  const auto method = [](const Model& m) { return qfleet::compile(build(m), options(ExactMethod::automatic)); };
  EXPECT_EQ(method(kind_model(kProblemKinds[3], rng, 2)).exact_method(), ExactMethod::propagator);
  EXPECT_EQ(method(kind_model(kProblemKinds[0], rng, 4)).exact_method(), ExactMethod::propagator);  // closed
  const auto three = method(local_qubits(3, Init::Pure, Target::Pure));
  EXPECT_EQ(three.exact_method(), ExactMethod::action);
  EXPECT_EQ(three.form(), OpenForm::lindblad);
  EXPECT_NE(three.execution(2).find("action of the exponential"), std::string::npos) << three.execution(2);
  qfleet::OpenCompileOptions rk4;
  rk4.solver = Solver::rk4;
  rk4.dt = 0.1;
  EXPECT_EQ(qfleet::compile(build(local_qubits(2, Init::Pure, Target::Pure)), rk4).exact_method(),
            ExactMethod::automatic);
}

TEST(OpenAction, BadOptionsAreClearErrors) {
  const Model m = local_qubits(2, Init::Pure, Target::Pure);
  qfleet::OpenCompileOptions o;
  o.solver = Solver::tsit5;
  o.exact = ExactMethod::action;
  EXPECT_QFLEET_ERROR(qfleet::compile(build(m), o), "exact: action applies to the exact solver only",
                      "solver is tsit5");
  EXPECT_QFLEET_ERROR(qfleet::compile(build(m), options(ExactMethod::propagator, OpenForm::lindblad)),
                      "form lindblad", "exact solver's action");
  // The propagator keeps its limit; the action lifts it.
  const Model big = local_qubits(5, Init::Pure, Target::Pure, 1);
  EXPECT_QFLEET_ERROR(qfleet::compile(build(big), options(ExactMethod::propagator)), "1024x1024", "exact: action");
  // A norm that needs more than 10^6 Taylor steps in a segment fails the call.
  std::mt19937_64 rng(914);
  const auto prog = qfleet::compile(build(m), options(ExactMethod::action));
  TaskBatch b = random_batch(rng, m, 1, false, false, false);
  for (double& u : b.amps) u = 1e12;
  EXPECT_QFLEET_ERROR(qforward<double>(prog, m, b, want_all(m)), "10^6 Taylor steps");
}

// d = 32 and 64, beyond the propagator's limit: the action in Lindblad form keeps the
// trace and matches a tight tsit5 run of the same problem.
TEST(OpenAction, FiveAndSixQubitsMatchTsit5) {
  for (int qubits : {5, 6}) {
    Model m = local_qubits(qubits, Init::Pure, Target::Pure, 2);
    m.durations = {0.05, 0.04};
    const auto exact = qfleet::compile(build(m), options(ExactMethod::automatic));
    ASSERT_EQ(exact.exact_method(), ExactMethod::action);
    ASSERT_EQ(exact.form(), OpenForm::lindblad);
    qfleet::OpenCompileOptions o;
    o.solver = Solver::tsit5;
    o.rtol = 1e-11;
    o.atol = 1e-13;
    const auto tsit5 = qfleet::compile(build(m), o);
    std::mt19937_64 rng(915);
    const TaskBatch b = random_batch(rng, m, 1, false, false, false, false, 0.5);
    const std::vector<double> cf = {1.0};
    const auto a = qvjp<double>(exact, m, b, cf, {}, want_all(m));
    const auto t = qvjp<double>(tsit5, m, b, cf, {}, want_all(m));
    const std::string what = std::to_string(qubits) + " qubits";
    std::complex<double> tr = 0;
    for (Index i = 0; i < m.d; ++i) tr += a.fin[std::size_t(i * m.d + i)];
    EXPECT_NEAR(tr.real(), 1.0, 1e-12) << what;
    EXPECT_NEAR(tr.imag(), 0.0, 1e-12) << what;
    EXPECT_TRUE(all_close(a.fid, t.fid, 1e-9)) << what << ": fidelity";
    EXPECT_TRUE(all_close(a.fin, t.fin, 1e-9)) << what << ": final state";
    EXPECT_TRUE(all_close(a.g_amp, t.g_amp, 1e-8, 1e-6)) << what << ": d/d amplitudes";
    EXPECT_TRUE(all_close(a.g_rates, t.g_rates, 1e-8, 1e-6)) << what << ": d/d rates";
  }
}

}  // namespace
