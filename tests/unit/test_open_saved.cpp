// The open-system saved-state adjoint (OpenProgram::forward with `saved`, then
// vjp_saved): the two calls give exactly what one fused vjp() gives (outputs and
// every gradient, bit for bit), for every solver and method, both generator forms,
// both precisions, closed and open problems, per-task, shared and identical tasks;
// vjp_saved does not run the forward sweep again; wrong buffers are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "unit/expect_error.hpp"
#include "unit/open_harness.hpp"

using qfleet_test::error_of;

namespace {

using namespace ref;
using qfleet::ExactMethod;
using qfleet::OpenForm;
using qfleet::Solver;

struct Config {
  const char* name;
  Solver solver;
  ExactMethod exact;
  OpenForm form;
};
constexpr Config kConfigs[] = {
    {"exact_propagator", Solver::exact, ExactMethod::propagator, OpenForm::automatic},
    {"exact_action", Solver::exact, ExactMethod::action, OpenForm::superoperator},
    {"exact_action_lindblad", Solver::exact, ExactMethod::action, OpenForm::lindblad},
    {"rk4", Solver::rk4, ExactMethod::automatic, OpenForm::superoperator},
    {"rk4_lindblad", Solver::rk4, ExactMethod::automatic, OpenForm::lindblad},
    {"euler", Solver::euler, ExactMethod::automatic, OpenForm::superoperator},
    {"dopri5", Solver::dopri5, ExactMethod::automatic, OpenForm::superoperator},
    {"dopri5_lindblad", Solver::dopri5, ExactMethod::automatic, OpenForm::lindblad},
    {"tsit5", Solver::tsit5, ExactMethod::automatic, OpenForm::superoperator},
    {"tsit5_lindblad", Solver::tsit5, ExactMethod::automatic, OpenForm::lindblad},
};

qfleet::OpenCompileOptions options(const Config& c, qfleet::Precision p) {
  qfleet::OpenCompileOptions o;
  o.precision = p;
  o.solver = c.solver;
  o.exact = c.exact;
  o.form = c.solver == Solver::exact && c.exact == ExactMethod::propagator ? OpenForm::automatic : c.form;
  o.dt = c.solver == Solver::euler ? 0.0113 : 0.0437;
  o.rtol = 1e-7;  // loose enough that dopri5/tsit5 take several steps, some rejected
  o.atol = 1e-9;
  o.num_threads = 1;  // tiny tasks: threads would only add their start-up (the results do not depend on them)
  return o;
}

// forward(saved) then vjp_saved, with the outputs of the forward call.
template <class R>
QOut<R> qsaved(const qfleet::OpenProgram& p, const Model& m, const TaskBatch& b, const std::vector<double>& cot_f,
               const std::vector<double>& cot_l, Want w) {
  QArgs<R> a(b);
  QOut<R> o;
  o.size(m, b.B, w);
  std::vector<R> saved(p.saved_size(b.B), R(-7));
  p.forward<R>(a.args(), o.outputs(), std::span<R>(saved));
  const qfleet::TaskGradients<R> g = gradient_buffers(o, a);
  const std::vector<R> cf(cot_f.begin(), cot_f.end()), cl(cot_l.begin(), cot_l.end());
  p.vjp_saved<R>(a.args(), std::span<const R>(saved), std::span<const R>(cf), std::span<const R>(cl), g);
  return o;
}

template <class T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      return ::testing::AssertionFailure() << "index " << i << ": " << got[i] << " vs " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

template <class R>
void expect_same(const QOut<R>& s, const QOut<R>& f, const std::string& what) {
  EXPECT_TRUE(same_bits(s.fid, f.fid)) << what << ": fidelity";
  EXPECT_TRUE(same_bits(s.leak, f.leak)) << what << ": leakage";
  EXPECT_TRUE(same_bits(s.exp, f.exp)) << what << ": expvals";
  EXPECT_TRUE(same_bits(s.fin, f.fin)) << what << ": final_state";
  EXPECT_TRUE(same_bits(s.g_amp, f.g_amp)) << what << ": d/d amplitudes";
  EXPECT_TRUE(same_bits(s.g_drift, f.g_drift)) << what << ": d/d drift_coeffs";
  EXPECT_TRUE(same_bits(s.g_rates, f.g_rates)) << what << ": d/d rates";
}

template <class R>
void check_config(const Config& cfg, qfleet::Precision prec) {
  for (int ci = 0; ci < 6; ++ci) {
    const ProblemKind& k = kProblemKinds[ci];
    if (k.closed && cfg.form == OpenForm::lindblad) continue;  // the Lindblad form needs jump operators
    std::mt19937_64 rng(900 + 10 * std::uint64_t(ci));
    const Model m = kind_model(k, rng, 3);
    const auto prog = qfleet::compile(build(m), options(cfg, prec));
    const std::string what = std::string(cfg.name) + " " + k.name + (sizeof(R) == 4 ? " complex64" : " complex128");
    ASSERT_GT(prog.saved_size(3), 0u) << what;
    const Want w = want_all(m);
    const std::vector<double> cf = {0.7, -1.3, 0.4}, cl = {1.1, 0.4, -0.9};
    // Per-task amplitudes and rates (and initial states where they apply), shared drift.
    const TaskBatch per_task = random_batch(rng, m, 3, true, false, true, k.init != Init::Gate);
    expect_same(qsaved<R>(prog, m, per_task, cf, cl, w), qvjp<R>(prog, m, per_task, cf, cl, w), what + " per task");
    // Per-task drift only, fidelity cotangent only.
    const TaskBatch drift = random_batch(rng, m, 3, false, true, false);
    expect_same(qsaved<R>(prog, m, drift, cf, {}, w), qvjp<R>(prog, m, drift, cf, {}, w), what + " per-task drift");
    // Everything shared: one simulation stands for the three tasks.
    const TaskBatch same = random_batch(rng, m, 3, false, false, false);
    expect_same(qsaved<R>(prog, m, same, cf, cl, w), qvjp<R>(prog, m, same, cf, cl, w), what + " identical tasks");
  }
}

class OpenSaved : public ::testing::TestWithParam<int> {};

TEST_P(OpenSaved, EqualsTheFusedVjp) {
  const Config& cfg = kConfigs[GetParam()];
  check_config<double>(cfg, qfleet::Precision::complex128);
  check_config<float>(cfg, qfleet::Precision::complex64);
}

INSTANTIATE_TEST_SUITE_P(EverySolver, OpenSaved, ::testing::Range(0, int(std::size(kConfigs))),
                         [](const ::testing::TestParamInfo<int>& p) { return std::string(kConfigs[p.param].name); });

// vjp_saved runs no forward sweep: it adds no propagator (exact) or step sequence
// (step solvers) to the cache counts, where vjp() adds one per segment and task.
TEST(OpenSavedMore, TheBackwardDoesNotRerunTheForward) {
  std::mt19937_64 rng(41);
  const Model m = kind_model(kProblemKinds[4], rng, 2, 4);
  for (Solver s : {Solver::exact, Solver::dopri5}) {
    qfleet::OpenCompileOptions o;
    o.solver = s;
    const auto prog = qfleet::compile(build(m), o);
    const TaskBatch b = random_batch(rng, m, 2, true, false, false);
    QArgs<double> a(b);
    std::vector<double> fid(2), saved(prog.saved_size(2)), ga(a.amps.size());
    const std::vector<double> cf = {1.0, -2.0};
    qfleet::TaskOutputs<double> out;
    out.fidelity = fid;
    qfleet::TaskGradients<double> g;
    g.amplitudes = ga;
    const std::uint64_t c0 = prog.cache_stats().propagators_computed;
    prog.forward<double>(a.args(), out, std::span<double>(saved));
    const std::uint64_t c1 = prog.cache_stats().propagators_computed;
    EXPECT_EQ(c1 - c0, 2u * 4u);  // 2 tasks x 4 segments
    prog.vjp_saved<double>(a.args(), saved, cf, {}, g);
    EXPECT_EQ(prog.cache_stats().propagators_computed, c1);
    prog.vjp<double>(a.args(), cf, {}, g);
    EXPECT_EQ(prog.cache_stats().propagators_computed - c1, 2u * 4u);  // the fused call's forward sweep
  }
}

// A fused vjp keeps the forward sweep's steps for its reverse sweep while they fit the cpu
// executor's trajectory store (32 MiB per thread, src/cpu/open_cpu_impl.hpp) and re-runs
// the later segments, as vjp_saved re-runs all of them: the same bits either way. At d = 32
// (5 local qubits, Lindblad form, complex128) a step record is 4 (rk4) or 6 (tsit5) states
// of 1,024 entries, so the store holds 512 or 341 records; these 10 segments take 870 rk4
// steps (dt = 0.005: segments 0-6 kept, 7-9 re-run) and 353 tsit5 steps (rtol 1e-9:
// segments 0-8 kept in 310 records; segment 9 takes more steps than the 30 left hold, so
// it runs again unkept from its first trial step and is re-run in the backward pass).
TEST(OpenSavedMore, APartlyKeptTrajectoryEqualsTheSavedStates) {
  const Model m = local_qubits(5, Init::Pure, Target::Pure, 10);
  for (Solver s : {Solver::rk4, Solver::tsit5}) {
    qfleet::OpenCompileOptions o;
    o.solver = s;
    o.form = OpenForm::lindblad;
    o.dt = 0.005;
    o.rtol = 1e-9;
    o.atol = 1e-11;
    o.num_threads = 1;
    const auto prog = qfleet::compile(build(m), o);
    std::mt19937_64 rng(47);
    const TaskBatch b = random_batch(rng, m, 1, true, false, true);
    const std::vector<double> cf = {0.8}, cl = {-0.6};
    const Want w = want_all(m);
    expect_same(qsaved<double>(prog, m, b, cf, cl, w), qvjp<double>(prog, m, b, cf, cl, w),
                s == Solver::rk4 ? "rk4 d=32" : "tsit5 d=32");
  }
}

TEST(OpenSavedMore, WrongBuffersAreRefused) {
  std::mt19937_64 rng(43);
  const Model m = kind_model(kProblemKinds[3], rng, 2);
  const auto prog = qfleet::compile(build(m), {});
  EXPECT_EQ(prog.saved_size(4) - prog.saved_size(3), prog.saved_size(3) - prog.saved_size(2));
  const TaskBatch b = random_batch(rng, m, 2, true, false, false);
  QArgs<double> a(b);
  std::vector<double> fid(2), ga(a.amps.size());
  qfleet::TaskOutputs<double> out;
  out.fidelity = fid;
  qfleet::TaskGradients<double> g;
  g.amplitudes = ga;
  const std::vector<double> cf = {1.0, 1.0};

  std::vector<double> small(prog.saved_size(2) - 1);
  EXPECT_NE(error_of([&] { prog.forward<double>(a.args(), out, std::span<double>(small)); }).find("saved has"),
            std::string::npos);
  EXPECT_NE(error_of([&] { prog.vjp_saved<double>(a.args(), small, cf, {}, g); }).find("saved has"),
            std::string::npos);
  std::vector<double> blank(prog.saved_size(2), 0.0);  // never written by forward()
  EXPECT_NE(error_of([&] { prog.vjp_saved<double>(a.args(), blank, cf, {}, g); }).find("not written by forward()"),
            std::string::npos);
  // Saved for per-task amplitudes, replayed with shared ones: the identical-tasks
  // shortcut would read one run where two were kept.
  std::vector<double> saved(prog.saved_size(2));
  prog.forward<double>(a.args(), out, std::span<double>(saved));
  const TaskBatch shared = random_batch(rng, m, 2, false, false, false);
  QArgs<double> s(shared);
  std::vector<double> gs(s.amps.size());
  qfleet::TaskGradients<double> g2;
  g2.amplitudes = gs;
  EXPECT_NE(error_of([&] { prog.vjp_saved<double>(s.args(), saved, cf, {}, g2); }).find("for other arguments"),
            std::string::npos);
  // The other precision's data.
  std::vector<float> f32(prog.saved_size(2));
  QArgs<float> af(b);
  std::vector<float> fid32(2);
  qfleet::TaskOutputs<float> out32;
  out32.fidelity = fid32;
  EXPECT_NE(error_of([&] { prog.forward<float>(af.args(), out32, std::span<float>(f32)); }).find("compiled for"),
            std::string::npos);
  // An empty buffer: a plain forward.
  prog.forward<double>(a.args(), out, std::span<double>());
}

}  // namespace
