// The open-system backend matrix: every problem kind (closed and open systems with
// pure, mixed and unitary targets), every solver of qfleet::kSolvers, and both
// generator forms where the system is open, on every open_system row of the executor
// registry (each cpu instruction set; cuda where a GPU is visible), in both
// precisions, at batch sizes around the row's lanes and the warp (1, L-1, L, L+1,
// 31, 32, 33), against the dense reference of reference/lindblad.hpp: outputs, and
// in complex128 the gradients against its finite differences. A solver added to
// kSolvers or a row added to the registry joins by itself; a device the matrix
// cannot drive fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "unit/matrix_rows.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

constexpr std::size_t kMaxBatch = 33;

std::vector<std::size_t> batches_around(int lanes) {
  std::set<std::size_t> v = {1, 31, 32, 33};
  for (int d : {-1, 0, 1}) {
    if (lanes + d >= 1) v.insert(std::size_t(lanes + d));
  }
  return {v.begin(), v.end()};
}

qfleet::OpenCompileOptions options_for(const qfleet::SolverInfo& s, qfleet::OpenForm form, bool c64) {
  qfleet::OpenCompileOptions o = solver_options(s.id, c64 ? 1e-6 : 1e-10);
  o.form = form;
  o.precision = c64 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  return o;
}


// The first B tasks of a batch whose parameters are all per task.
TaskBatch first(const TaskBatch& b, const Model& m, std::size_t B) {
  TaskBatch s = b;
  s.B = B;
  s.amps.resize(B * m.n_amp());
  s.drift.resize(B * m.drift_terms.size());
  s.rates.resize(B * m.jumps.size());
  if (!b.initial.empty()) s.initial.resize(B * (b.initial.size() / b.B));
  return s;
}
template <class T>
std::vector<T> head(const std::vector<T>& v, std::size_t of, std::size_t B) {
  return {v.begin(), v.begin() + std::ptrdiff_t(v.size() / of * B)};
}

// One (kind, solver, form) case: a batch of kMaxBatch tasks and its reference.
struct Case {
  Model m;
  TaskBatch b;
  Flat want;
  Grads fd;
  std::vector<double> cot_f, cot_l;
};

template <class R>
void check_row(const qfleet::detail::Executor& row, const Case& k, const qfleet::OpenCompileOptions& o,
               const std::string& what, int& cases) {
  const qfleet::OpenCompileOptions opt = qfleet_test::on_row(o, row);
  const qfleet::OpenProgram p = qfleet::compile(build(k.m), opt);
  const bool c64 = std::is_same_v<R, float>;
  const bool adaptive = qfleet::solver_info(o.solver).adaptive;
  const double tol = c64 ? (adaptive ? 2e-4 : 1e-4) : (adaptive ? 1e-7 : 1e-10);
  for (std::size_t B : batches_around(c64 ? row.lanes_f32 : row.lanes_f64)) {
    SCOPED_TRACE(what + " on " + row.device + " " + row.isa + ", B = " + std::to_string(B));
    const TaskBatch b = first(k.b, k.m, B);
    const std::vector<double> cf = head(k.cot_f, kMaxBatch, B), cl = head(k.cot_l, kMaxBatch, B);
    const Want w = want_all(k.m);
    const QOut<R> q = qvjp<R>(p, k.m, b, cf, cl, w);
    EXPECT_TRUE(all_close(q.fid, head(k.want.fid, kMaxBatch, B), tol)) << "fidelity";
    EXPECT_TRUE(all_close(q.leak, head(k.want.leak, kMaxBatch, B), tol)) << "leakage";
    EXPECT_TRUE(all_close(q.exp, head(k.want.exp, kMaxBatch, B), tol)) << "expvals";
    EXPECT_TRUE(all_close(q.fin, head(k.want.fin, kMaxBatch, B), tol)) << "final state";
    ++cases;
    if (c64) continue;
    const double ga = adaptive ? 1e-7 : 1e-8, gr = adaptive ? 1e-5 : 1e-6;
    EXPECT_TRUE(all_close(q.g_amp, head(k.fd.amps, kMaxBatch, B), ga, gr)) << "d/d amplitudes";
    EXPECT_TRUE(all_close(q.g_drift, head(k.fd.drift, kMaxBatch, B), ga, gr)) << "d/d drift";
    EXPECT_TRUE(all_close(q.g_rates, head(k.fd.rates, kMaxBatch, B), ga, gr)) << "d/d rates";
  }
}

TEST(OpenMatrix, EveryKindSolverAndFormOnEveryRowPrecisionAndBatch) {
  const auto rows = qfleet_test::matrix_rows(qfleet::detail::ModelKind::open_system);
  ASSERT_FALSE(rows.empty());
  int cases = 0;
  std::set<std::string> solvers_run;
  for (const ProblemKind& kind : kProblemKinds) {
    for (const qfleet::SolverInfo& s : qfleet::kSolvers) {
      for (qfleet::OpenForm form : {qfleet::OpenForm::superoperator, qfleet::OpenForm::lindblad}) {
        if (kind.closed && form == qfleet::OpenForm::lindblad) continue;  // the Lindblad form is for open systems
        const std::string what = std::string(kind.name) + " " + s.name +
                                 (form == qfleet::OpenForm::lindblad ? " lindblad" : " superoperator");
        std::mt19937_64 rng = case_rng(what);
        Case k;
        k.m = kind_model(kind, rng, kind.closed ? 3 : 2);
        k.b = random_batch(rng, k.m, kMaxBatch, true, true, true, kind.init != Init::Gate);
        k.cot_f = uniform_vec(rng, kMaxBatch, -1, 1);
        k.cot_l = uniform_vec(rng, kMaxBatch, -1, 1);
        const double dt = solver_options(s.id).dt;
        k.want = flatten(simulate_batch(k.m, k.b, scheme_of(s.id), dt));
        k.fd = fd_grads(k.m, k.b, k.cot_f, k.cot_l, scheme_of(s.id), dt);
        for (const auto* row : rows) {
          check_row<double>(*row, k, options_for(s, form, false), what, cases);
          check_row<float>(*row, k, options_for(s, form, true), what, cases);
        }
        solvers_run.insert(s.name);
      }
    }
  }
  EXPECT_EQ(solvers_run.size(), std::size(qfleet::kSolvers));
  std::printf("open-system matrix: %d cases on %zu rows\n", cases, rows.size());
}

}  // namespace
