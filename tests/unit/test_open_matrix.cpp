// The open-system backend matrix: every problem kind (closed and open systems with
// pure, mixed and unitary targets), every solver of qfleet::kSolvers, and both
// generator forms where the system is open, on every open_system row of the executor
// registry (each cpu instruction set; cuda where a GPU is visible) and on the cuda
// task body's launch shapes run on CPU threads (unit/open_emu.hpp: a task per thread,
// a task per group), in both precisions, at batch sizes around the row's lanes and
// the warp (1, L-1, L, L+1, 31, 32, 33; the emulated shapes at 1 and 33, the
// group's odd size 5 splitting every product unevenly), against the dense reference
// of reference/lindblad.hpp: outputs, and in complex128 the gradients against its
// finite differences. A solver added to kSolvers or a row added to the registry joins
// by itself; a device the matrix cannot drive fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "unit/matrix_rows.hpp"
#include "unit/open_emu.hpp"

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

// Outputs within tol, and with gradient tolerances (ga, gr) the gradients, of the
// first B tasks of case k.
template <class R>
void expect_case(const QOut<R>& q, const Case& k, std::size_t B, double tol, double ga = 0, double gr = 0) {
  EXPECT_TRUE(all_close(q.fid, head(k.want.fid, kMaxBatch, B), tol)) << "fidelity";
  EXPECT_TRUE(all_close(q.leak, head(k.want.leak, kMaxBatch, B), tol)) << "leakage";
  EXPECT_TRUE(all_close(q.exp, head(k.want.exp, kMaxBatch, B), tol)) << "expvals";
  EXPECT_TRUE(all_close(q.fin, head(k.want.fin, kMaxBatch, B), tol)) << "final state";
  if (ga == 0) return;
  EXPECT_TRUE(all_close(q.g_amp, head(k.fd.amps, kMaxBatch, B), ga, gr)) << "d/d amplitudes";
  EXPECT_TRUE(all_close(q.g_drift, head(k.fd.drift, kMaxBatch, B), ga, gr)) << "d/d drift";
  EXPECT_TRUE(all_close(q.g_rates, head(k.fd.rates, kMaxBatch, B), ga, gr)) << "d/d rates";
}

struct Tolerances {
  double out, ga, gr;
};
Tolerances tolerances(const qfleet::OpenCompileOptions& o) {
  const bool c64 = o.precision == qfleet::Precision::complex64;
  const bool adaptive = qfleet::solver_info(o.solver).adaptive;
  if (c64) return {adaptive ? 2e-4 : 1e-4, 0, 0};  // outputs only
  return {adaptive ? 1e-7 : 1e-10, adaptive ? 1e-7 : 1e-8, adaptive ? 1e-5 : 1e-6};
}

template <class R>
void check_row(const qfleet::detail::Executor& row, const Case& k, const qfleet::OpenCompileOptions& o,
               const std::string& what, int& cases) {
  const qfleet::OpenProgram p = qfleet::compile(build(k.m), qfleet_test::on_row(o, row));
  const Tolerances t = tolerances(o);
  for (std::size_t B : batches_around(std::is_same_v<R, float> ? row.lanes_f32 : row.lanes_f64)) {
    SCOPED_TRACE(what + " on " + row.device + " " + row.isa + ", B = " + std::to_string(B));
    const TaskBatch b = first(k.b, k.m, B);
    const QOut<R> q = qvjp<R>(p, k.m, b, head(k.cot_f, kMaxBatch, B), head(k.cot_l, kMaxBatch, B), want_all(k.m));
    expect_case(q, k, B, t.out, t.ga, t.gr);
    ++cases;
  }
}

// The cuda task body in `shape` on CPU threads (its packed plan, no device).
template <class R>
void check_emulated(const emu::OpenShape& shape, const Case& k, const qfleet::OpenCompileOptions& o,
                    const std::string& what, int& cases) {
  const auto plan = emu::packed_plan(k.m, o);
  const Tolerances t = tolerances(o);
  // Slots stride over the tasks: a batch larger than the slots (three tasks on the
  // group shape's two groups of barrier-synced threads, slow on the CPU) covers it.
  const std::size_t most = shape.group > 0 ? 3 : kMaxBatch;
  for (std::size_t B : {std::size_t(1), most}) {
    if (std::is_same_v<R, float> && B == 1) continue;
    SCOPED_TRACE(what + " on the " + shape.name + ", B = " + std::to_string(B));
    const TaskBatch b = first(k.b, k.m, B);
    const QOut<R> q = emu::emulated_vjp<R>(*plan, shape, k.m, b, head(k.cot_f, kMaxBatch, B),
                                           head(k.cot_l, kMaxBatch, B), want_all(k.m));
    expect_case(q, k, B, t.out, t.ga, t.gr);
    ++cases;
  }
}

constexpr emu::OpenShape kEmulatedShapes[] = {{"emulated cuda thread shape", 3, 0},
                                              {"emulated cuda group shape", 2, 5}};

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
        for (const emu::OpenShape& shape : kEmulatedShapes) {
          check_emulated<double>(shape, k, options_for(s, form, false), what, cases);
          check_emulated<float>(shape, k, options_for(s, form, true), what, cases);
        }
        solvers_run.insert(s.name);
      }
    }
  }
  EXPECT_EQ(solvers_run.size(), std::size(qfleet::kSolvers));
  std::printf("open-system matrix: %d cases on %zu rows and %zu emulated shapes\n", cases, rows.size(),
              std::size(kEmulatedShapes));
}

}  // namespace
