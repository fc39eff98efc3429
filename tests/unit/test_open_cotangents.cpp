// Reverse mode with every output's cotangent at once (OpenProgram::vjp with
// TaskCotangents): the gradients with respect to amplitudes, drift coefficients, rates,
// segment durations (per task and shared) and per-task initial states, against central
// finite differences of the dense reference (reference/lindblad_vjp.hpp), for the six
// problem kinds, every solver (the exact one by its propagator and by its action) and
// both generator forms of an open system, in complex128, on every open-system row of the
// executor registry and on the cuda task body's launch shapes run on CPU threads
// (unit/open_emu.hpp). Initial states
// are checked along random directions (Hermitian ones for densities). Also: complex64
// against complex128, identical tasks (one simulation for the batch, its cotangents
// summed), runs of identical segments (one adjoint Frechet derivative per run), and the
// one-line errors of bad cotangents and durations.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "reference/lindblad_vjp.hpp"
#include "unit/expect_error.hpp"
#include "unit/matrix_rows.hpp"
#include "unit/open_emu.hpp"
#include "unit/open_harness.hpp"

// (A named namespace: the unit tests build in unity batches, where anonymous ones merge.)
namespace open_cotangents_test {

using namespace ref;
using qfleet::ExactMethod;
using qfleet::OpenForm;
using qfleet::Solver;

// One solver configuration and the reference scheme its gradients are held to.
struct Config {
  const char* name;
  Solver solver;
  ExactMethod exact;
  OpenForm form;  // open systems only
  double atol;
};
constexpr Config kConfigs[] = {
    {"exact_propagator", Solver::exact, ExactMethod::propagator, OpenForm::superoperator, 2e-6},
    {"exact_action", Solver::exact, ExactMethod::action, OpenForm::superoperator, 2e-6},
    {"exact_action_lindblad", Solver::exact, ExactMethod::action, OpenForm::lindblad, 2e-6},
    {"rk4", Solver::rk4, ExactMethod::automatic, OpenForm::superoperator, 2e-6},
    {"rk4_lindblad", Solver::rk4, ExactMethod::automatic, OpenForm::lindblad, 2e-6},
    {"euler_lindblad", Solver::euler, ExactMethod::automatic, OpenForm::lindblad, 2e-6},
    {"dopri5", Solver::dopri5, ExactMethod::automatic, OpenForm::superoperator, 2e-5},
    {"tsit5_lindblad", Solver::tsit5, ExactMethod::automatic, OpenForm::lindblad, 2e-5},
};

qfleet::OpenCompileOptions options_of(const Config& c, bool closed, qfleet::Precision p) {
  qfleet::OpenCompileOptions o = solver_options(c.solver, 1e-11);
  o.exact = c.exact;
  if (!closed) o.form = c.form;
  o.precision = p;
  return o;
}

// Random cotangents for every output the model has.
Cotangents random_cotangents(std::mt19937_64& rng, const Model& m, std::size_t B) {
  Cotangents c;
  if (m.target != Target::None) c.fid = uniform_vec(rng, B, -1, 1);
  if (!m.subspace.empty()) c.leak = uniform_vec(rng, B, -1, 1);
  c.exp = uniform_vec(rng, B * (m.durations.size() + 1) * m.observables.size(), -1, 1);
  const std::vector<double> re = uniform_vec(rng, B * m.final_size(), -1, 1),
                            im = uniform_vec(rng, B * m.final_size(), -1, 1);
  for (std::size_t i = 0; i < re.size(); ++i) c.fin.emplace_back(re[i], im[i]);
  return c;
}

// qfleet's gradients of one call, every gradient buffer requested.
template <class R>
struct Grads {
  std::vector<R> amps, drift, rates, durs;
  std::vector<std::complex<R>> init;
};

template <class R>
std::vector<R> narrow(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}
template <class R>
std::vector<std::complex<R>> narrow(const std::vector<cd>& v) {
  std::vector<std::complex<R>> out;
  for (const cd& z : v) out.emplace_back(R(z.real()), R(z.imag()));
  return out;
}

// The call's typed inputs, kept alive while spans point into them.
template <class R>
struct Call {
  QArgs<R> a;
  std::vector<R> durs, cf, cl, ce;
  std::vector<std::complex<R>> cx;
  Grads<R> g;
  Call(const Model& m, const TaskBatch& b, const Durations& d, const Cotangents& c)
      : a(b), durs(narrow<R>(d.values)), cf(narrow<R>(c.fid)), cl(narrow<R>(c.leak)), ce(narrow<R>(c.exp)),
        cx(narrow<R>(c.fin)) {
    g.amps.assign(a.amps.size(), R(-7));
    g.drift.assign(a.drift.size(), R(-7));
    g.rates.assign(a.rates.size(), R(-7));
    g.durs.assign(d.values.empty() ? m.durations.size() : d.values.size(), R(-7));
    g.init.assign(a.initial.size(), std::complex<R>(R(-7), R(-7)));
  }
  qfleet::TaskArgs<R> args() const {
    qfleet::TaskArgs<R> t = a.args();
    t.durations = durs;
    return t;
  }
  qfleet::TaskCotangents<R> cotangents() const { return {cf, cl, ce, cx}; }
  qfleet::TaskGradients<R> gradients() { return {g.amps, g.drift, g.rates, g.durs, g.init}; }
};

template <class R>
Grads<R> qfleet_vjp(const qfleet::OpenProgram& p, const Model& m, const TaskBatch& b, const Durations& d,
                    const Cotangents& c) {
  Call<R> call(m, b, d, c);
  p.vjp<R>(call.args(), call.cotangents(), call.gradients());
  return call.g;
}

// The same call on an emulated cuda launch shape (the task body's staged call, as
// run_open_call makes it).
Grads<double> emulated_cotangent_vjp(const qfleet::detail::OpenPlan& p, const emu::OpenShape& shape, const Model& m,
                           const TaskBatch& b, const Durations& d, const Cotangents& c) {
  Call<double> call(m, b, d, c);
  auto ptr = [](auto& v) { return v.empty() ? nullptr : v.data(); };
  qfleet::kern::OpenTaskCall<double> k;
  k.batch = b.B;
  k.amplitudes = ptr(call.a.amps);
  k.amplitudes_per_task = b.amp_pt;
  k.drift = ptr(call.a.drift);
  k.drift_per_task = b.drift_pt;
  k.rates = ptr(call.a.rates);
  k.rates_per_task = b.rates_pt;
  k.initial = call.a.initial.empty() ? nullptr : reinterpret_cast<const double*>(call.a.initial.data());
  k.durations = ptr(call.durs);
  k.durations_per_task = d.per_task;
  k.adjoint = true;
  k.cot_fidelity = ptr(call.cf);
  k.cot_leakage = ptr(call.cl);
  k.cot_expvals = ptr(call.ce);
  k.cot_final = call.cx.empty() ? nullptr : reinterpret_cast<const double*>(call.cx.data());
  k.grad_amplitudes = ptr(call.g.amps);
  k.grad_drift = ptr(call.g.drift);
  k.grad_rates = ptr(call.g.rates);
  k.grad_durations = ptr(call.g.durs);
  k.grad_initial = call.g.init.empty() ? nullptr : reinterpret_cast<double*>(call.g.init.data());
  for (int cap = 64;; cap *= 4) {
    const int status = emu::run_like_gpu<double>(p, k, shape.slots, cap, shape.group);
    if (status == 0) break;
    if (status != 1 << qfleet::kern::kOpenStepCapacity || cap >= 1 << 16) {
      ADD_FAILURE() << shape.name << ": task status bits " << status;
      break;
    }
  }
  return call.g;
}

// Random directions for the initial-state check: complex vectors, or Hermitian matrices.
std::vector<cd> random_direction(std::mt19937_64& rng, const Model& m) {
  if (m.closed()) return stdvec(random_state(rng, m.d));
  return row_major(random_hermitian(rng, m.d));
}

struct Problem {
  Model m;
  TaskBatch b;
  Durations d;
  Cotangents c;
  Scheme scheme;
  double dt;
};

Problem problem(const ProblemKind& kind, const Config& cfg, bool per_task, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.m = kind_model(kind, rng, 3, 3);
  const std::size_t B = per_task ? 3 : 2;
  p.b = random_batch(rng, p.m, B, per_task, false, per_task, per_task && !p.m.gate());
  p.d.per_task = per_task;
  p.d.values = uniform_vec(rng, (per_task ? B : 1) * p.m.durations.size(), 0.15, 0.4);
  p.c = random_cotangents(rng, p.m, B);
  const qfleet::OpenCompileOptions o = solver_options(cfg.solver);
  p.scheme = scheme_of(cfg.solver);
  p.dt = o.dt;
  return p;
}

template <class R, class G>
void expect_grads(const G& got, const Problem& p, const AllGrads& want, double atol, const std::string& what) {
  const double rtol = 1e-5;
  EXPECT_TRUE(all_close(got.amps, want.amps, atol, rtol)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(got.drift, want.drift, atol, rtol)) << what << ": d/d drift";
  EXPECT_TRUE(all_close(got.rates, want.rates, atol, rtol)) << what << ": d/d rates";
  EXPECT_TRUE(all_close(got.durs, want.durations, atol, rtol)) << what << ": d/d durations";
  if (got.init.empty()) return;
  std::mt19937_64 rng(5);
  const std::size_t per = p.m.state_size();
  for (std::size_t task = 0; task < p.b.B; ++task) {
    for (int k = 0; k < 2; ++k) {
      const std::vector<cd> v = random_direction(rng, p.m);
      double dot = 0;  // Re <grad, v>
      for (std::size_t i = 0; i < per; ++i) dot += (std::conj(widen(got.init[task * per + i])) * v[i]).real();
      const double fd = fd_initial_direction(p.m, p.b, p.d, p.c, task, v, p.scheme, p.dt);
      EXPECT_NEAR(dot, fd, atol + rtol * std::abs(fd)) << what << ": d/d initial state of task " << task;
    }
  }
}

// On every open-system row of the executor registry (each cpu instruction set; cuda
// where a GPU is visible).
TEST(OpenCotangents, EveryOutputEverySolverAgainstFiniteDifferences) {
  const auto rows = qfleet_test::matrix_rows(qfleet::detail::ModelKind::open_system);
  ASSERT_FALSE(rows.empty());
  std::uint64_t seed = 100;
  for (const ProblemKind& kind : kProblemKinds) {
    for (const Config& cfg : kConfigs) {
      if (kind.closed && cfg.form == OpenForm::lindblad) continue;  // (one form for closed systems)
      for (bool per_task : {true, false}) {
        const Problem p = problem(kind, cfg, per_task, ++seed);
        const AllGrads want = fd_all_grads(p.m, p.b, p.d, p.c, p.scheme, p.dt);
        for (const qfleet::detail::Executor* row : rows) {
          const std::string what = std::string(kind.name) + "/" + cfg.name + (per_task ? "/per task/" : "/shared/") +
                                   row->device + "/" + row->isa;
          const qfleet::OpenProgram prog = qfleet::compile(
              build(p.m), qfleet_test::on_row(options_of(cfg, kind.closed, qfleet::Precision::complex128), *row));
          expect_grads<double>(qfleet_vjp<double>(prog, p.m, p.b, p.d, p.c), p, want, cfg.atol, what);
        }
      }
    }
  }
}

// The cuda task body on its launch shapes (a task per thread; a task per group of 5,
// splitting every product unevenly), every cotangent and gradient.
TEST(OpenCotangents, EmulatedCudaShapesAgainstFiniteDifferences) {
  const emu::OpenShape shapes[] = {{"thread", 2, 0}, {"group5", 2, 5}};
  std::uint64_t seed = 300;
  for (const ProblemKind& kind : kProblemKinds) {
    for (const Config& cfg : {kConfigs[0], kConfigs[7]}) {  // the propagator; a step solver in Lindblad form
      if (kind.closed && cfg.form == OpenForm::lindblad) continue;
      const Problem p = problem(kind, cfg, true, ++seed);
      const AllGrads want = fd_all_grads(p.m, p.b, p.d, p.c, p.scheme, p.dt);
      const auto plan = emu::packed_plan(p.m, options_of(cfg, kind.closed, qfleet::Precision::complex128));
      for (const emu::OpenShape& shape : shapes) {
        // The group shape (std::threads meeting at every product's barrier: slow on the
        // CPU) on the open systems' propagator alone.
        if (shape.group > 0 && (kind.closed || cfg.solver != Solver::exact)) continue;
        const std::string what = std::string(kind.name) + "/" + cfg.name + "/" + shape.name;
        expect_grads<double>(emulated_cotangent_vjp(*plan, shape, p.m, p.b, p.d, p.c), p, want, cfg.atol, what);
      }
    }
  }
}

TEST(OpenCotangents, Complex64FollowsComplex128) {
  std::uint64_t seed = 500;
  for (const ProblemKind& kind : kProblemKinds) {
    const Config& cfg = kind.closed ? kConfigs[0] : kConfigs[4];
    const Problem p = problem(kind, cfg, true, ++seed);
    const auto o64 = options_of(cfg, kind.closed, qfleet::Precision::complex128);
    const auto o32 = options_of(cfg, kind.closed, qfleet::Precision::complex64);
    const Grads<double> g64 = qfleet_vjp<double>(qfleet::compile(build(p.m), o64), p.m, p.b, p.d, p.c);
    const Grads<float> g32 = qfleet_vjp<float>(qfleet::compile(build(p.m), o32), p.m, p.b, p.d, p.c);
    EXPECT_TRUE(all_close(g32.durs, g64.durs, 2e-3, 1e-3)) << kind.name << ": d/d durations";
    EXPECT_TRUE(all_close(g32.amps, g64.amps, 2e-3, 1e-3)) << kind.name << ": d/d amplitudes";
    EXPECT_TRUE(all_close(g32.init, g64.init, 2e-3, 1e-3)) << kind.name << ": d/d initial";
  }
}

// With the compiled grid (no durations argument) the durations' gradient is [n_seg],
// summed over tasks, and equals the call's with the same durations passed shared.
TEST(OpenCotangents, CompiledGridDurationGradient) {
  std::mt19937_64 rng(9);
  const Model m = kind_model(kProblemKinds[3], rng, 3, 4);
  TaskBatch b = random_batch(rng, m, 4, true, false, true);
  const Cotangents c = random_cotangents(rng, m, 4);
  const qfleet::OpenProgram prog = qfleet::compile(build(m));
  const Grads<double> none = qfleet_vjp<double>(prog, m, b, Durations{}, c);
  const Grads<double> given = qfleet_vjp<double>(prog, m, b, Durations{m.durations, false}, c);
  ASSERT_EQ(none.durs.size(), m.durations.size());
  EXPECT_TRUE(all_close(none.durs, given.durs, 1e-12, 0));
  const AllGrads want = fd_all_grads(m, b, Durations{}, c, Scheme::Exact, 0);
  EXPECT_TRUE(all_close(none.durs, want.durations, 2e-6, 1e-5));
}

// Runs of identical segments: the exact propagator's reverse sweep takes one adjoint
// Frechet derivative per run when no per-segment gradient (amplitudes, durations) is
// asked. The drift, rate and initial-state gradients are then those of the per-segment
// sweep (asked for with the durations' gradient) to rounding, and the finite differences'.
TEST(OpenCotangents, RunsOfIdenticalSegmentsShareOneFrechetDerivative) {
  std::uint64_t seed = 700;
  for (const ProblemKind& kind : kProblemKinds) {
    std::mt19937_64 rng(++seed);
    Problem p = problem(kind, kConfigs[0], true, seed);
    p.m = kind_model(kind, rng, 3, 6);
    p.b = random_batch(rng, p.m, 3, true, true, true, !p.m.gate());
    p.c = random_cotangents(rng, p.m, 3);
    p.d.values = uniform_vec(rng, 3 * 6, 0.15, 0.4);
    // Each task: segments 0-3 alike, then 4-5 alike (a run of four, a run of two).
    const std::size_t nctrl = p.m.n_amp() / 6;
    for (std::size_t t = 0; t < 3; ++t) {
      for (std::size_t k = 0; k < 6; ++k) {
        const std::size_t first = k < 4 ? 0 : 4;
        p.d.values[t * 6 + k] = p.d.values[t * 6 + first];
        for (std::size_t i = 0; i < nctrl; ++i) p.b.amps[(t * 6 + k) * nctrl + i] = p.b.amps[(t * 6 + first) * nctrl + i];
      }
    }
    const qfleet::OpenProgram prog = qfleet::compile(build(p.m), options_of(kConfigs[0], kind.closed, qfleet::Precision::complex128));
    Call<double> folded(p.m, p.b, p.d, p.c);
    folded.g.amps.clear();
    folded.g.durs.clear();
    prog.vjp<double>(folded.args(), folded.cotangents(), folded.gradients());
    const Grads<double> per_segment = qfleet_vjp<double>(prog, p.m, p.b, p.d, p.c);
    EXPECT_TRUE(all_close(folded.g.drift, per_segment.drift, 1e-12, 1e-10)) << kind.name << ": d/d drift";
    EXPECT_TRUE(all_close(folded.g.rates, per_segment.rates, 1e-12, 1e-10)) << kind.name << ": d/d rates";
    EXPECT_TRUE(all_close(folded.g.init, per_segment.init, 1e-12, 1e-10)) << kind.name << ": d/d initial";
    const AllGrads want = fd_all_grads(p.m, p.b, p.d, p.c, p.scheme, p.dt);
    EXPECT_TRUE(all_close(folded.g.drift, want.drift, 2e-6, 1e-5)) << kind.name << ": d/d drift";
    EXPECT_TRUE(all_close(folded.g.rates, want.rates, 2e-6, 1e-5)) << kind.name << ": d/d rates";
  }
}

TEST(OpenCotangents, BadCotangentsAndDurationsAreOneLineErrors) {
  std::mt19937_64 rng(11);
  const Model m = kind_model(kProblemKinds[3], rng, 3, 3);
  const TaskBatch b = random_batch(rng, m, 2, true, false, true);
  const Cotangents c = random_cotangents(rng, m, 2);
  const qfleet::OpenProgram prog = qfleet::compile(build(m));
  auto call_with = [&](auto&& edit) {
    Call<double> k(m, b, Durations{}, c);
    qfleet::TaskArgs<double> a = k.args();
    qfleet::TaskCotangents<double> t = k.cotangents();
    qfleet::TaskGradients<double> g = k.gradients();
    std::vector<double> bad;
    edit(a, t, g, bad);
    prog.vjp<double>(a, t, g);
  };
  using A = qfleet::TaskArgs<double>;
  using T = qfleet::TaskCotangents<double>;
  using G = qfleet::TaskGradients<double>;
  using V = std::vector<double>;
  EXPECT_QFLEET_ERROR(call_with([](A&, T& t, G&, V&) { t.expvals = t.expvals.first(3); }),
                      "expvals cotangent has 3 values", "[batch, n_seg + 1, n_observables]");
  EXPECT_QFLEET_ERROR(call_with([](A&, T& t, G&, V&) { t.final_state = t.final_state.first(1); }),
                      "final_state cotangent has 1 values");
  EXPECT_QFLEET_ERROR(call_with([](A& a, T&, G&, V& v) {
                        v = {0.2, -0.1, 0.3};
                        a.durations = v;
                      }),
                      "durations must be finite and > 0", "index 1");
  EXPECT_QFLEET_ERROR(call_with([](A& a, T&, G&, V& v) {
                        v = {0.2, std::nan(""), 0.3};
                        a.durations = v;
                      }),
                      "durations must be finite and > 0");
  EXPECT_QFLEET_ERROR(call_with([](A& a, T&, G&, V& v) {
                        v = {0.2, 0.3};
                        a.durations = v;
                      }),
                      "durations has 2 values", "n_seg=3");
  EXPECT_QFLEET_ERROR(call_with([](A&, T&, G& g, V& v) {
                        v.assign(2, 0);
                        g.durations = v;
                      }),
                      "gradient durations has 2 values");
  std::vector<std::complex<double>> init(6);
  EXPECT_QFLEET_ERROR(call_with([&](A&, T&, G& g, V&) { g.initial = init; }),
                      "gradient initial needs per-task initial states");
  EXPECT_QFLEET_ERROR(call_with([](A&, T& t, G&, V& v) {
                        v.assign(t.expvals.size(), 0);
                        v[2] = std::nan("");
                        t.expvals = v;
                      }),
                      "expvals cotangent contains a non-finite value");
}

}  // namespace open_cotangents_test
