// Forward runs of the open-system engine against the independent reference
// (reference/lindblad.hpp): random problems d = 2..6 in state and gate modes, open and
// closed, every solver, both precisions; physical sanity of long pulses; the
// propagator cache, shared parameters and thread counts.
#include <gtest/gtest.h>

#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

qfleet::OpenCompileOptions opt(Solver s, double dt = 0, qfleet::Precision p = qfleet::Precision::complex128) {
  qfleet::OpenCompileOptions o;
  o.solver = s;
  o.dt = dt;
  o.precision = p;
  o.rtol = 1e-10;
  o.atol = 1e-10;
  return o;
}

std::string label(const Model& m, const std::string& extra = "") {
  static const char* init[] = {"density", "pure", "gate"};
  static const char* tgt[] = {"none", "pure", "mixed", "unitary"};
  return "d=" + std::to_string(m.d) + (m.closed() ? " closed " : " open ") + init[int(m.init)] + " target " +
         tgt[int(m.target)] + " " + extra;
}

// ---------------------------------------------------------------------------
// exact solver vs reference, complex128.

TEST(OpenForward, ExactMatchesReferenceOnStateProblems) {
  std::mt19937_64 rng(101);
  for (int d = 2; d <= 6; ++d) {
    for (bool closed : {true, false}) {
      for (Target target : {Target::Pure, Target::Mixed}) {
        Spec sp;
        sp.d = d;
        sp.n_drift = 2;
        sp.n_jumps = closed ? 0 : 2;
        sp.n_obs = 2;
        sp.init = (!closed && d % 2 == 1) ? Init::Density : Init::Pure;
        sp.target = target;
        sp.leakage = true;
        const Model m = random_model(rng, sp);
        const auto prog = qfleet::compile(build(m));
        const TaskBatch b = random_batch(rng, m, 3, d % 2 == 0, target == Target::Pure, d % 2 == 1);
        const auto q = qforward<double>(prog, m, b, want_all(m));
        const auto ref = simulate_batch(m, b);
        expect_outputs(q, ref, want_all(m), 1e-10, 0, label(m));
        if (!closed && target == Target::Mixed) {  // a second Uhlmann construction
          for (std::size_t t = 0; t < b.B; ++t) {
            const Mat rho = unvec(ref[t].x.col(0), d);
            EXPECT_NEAR(q.fid[t], uhlmann_sqrtm(rho, m.target_mat), 1e-10) << label(m);
          }
        }
      }
    }
  }
}

TEST(OpenForward, ExactMatchesReferenceOnGateProblems) {
  std::mt19937_64 rng(102);
  for (int d = 2; d <= 6; ++d) {
    for (bool closed : {true, false}) {
      Spec sp;
      sp.d = d;
      sp.n_jumps = closed ? 0 : 2;
      sp.init = Init::Gate;
      sp.target = Target::Unitary;
      sp.leakage = true;
      const Model m = random_model(rng, sp);
      const auto prog = qfleet::compile(build(m));
      const TaskBatch b = random_batch(rng, m, 2, true, d % 2 == 0, d % 2 == 1);
      const auto q = qforward<double>(prog, m, b, want_all(m));
      expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-10, 0, label(m));
      EXPECT_EQ(prog.final_state_size(), m.final_size());
    }
  }
}

TEST(OpenForward, PerTaskInitialStates) {
  std::mt19937_64 rng(103);
  for (int d : {2, 4}) {
    for (bool closed : {true, false}) {
      Spec sp;
      sp.d = d;
      sp.n_jumps = closed ? 0 : 1;
      sp.target = closed ? Target::Pure : Target::Mixed;
      sp.leakage = true;
      sp.n_obs = 2;
      const Model m = random_model(rng, sp);
      const auto prog = qfleet::compile(build(m));
      const TaskBatch b = random_batch(rng, m, 3, true, false, false, /*per_task_initial=*/true);
      const auto q = qforward<double>(prog, m, b, want_all(m));
      const auto ref = simulate_batch(m, b);
      expect_outputs(q, ref, want_all(m), 1e-10, 0, label(m, "per-task initial"));
      // The boundary-0 expectation values are those of each task's own initial state.
      for (std::size_t t = 0; t < b.B; ++t) {
        const Task task = b.task(m, t);
        const double e0 = closed ? (task.psi0->adjoint() * m.observables[0] * *task.psi0)(0, 0).real()
                                 : (m.observables[0] * *task.rho0).trace().real();
        EXPECT_NEAR(q.exp[t * (m.durations.size() + 1) * 2], e0, 1e-12);
      }
    }
  }
}

TEST(OpenForward, EdgeShapes) {
  std::mt19937_64 rng(104);
  // No controls, no drift terms, a single segment; and a one-level system.
  for (bool closed : {true, false}) {
    Spec sp;
    sp.d = 3;
    sp.n_ctrl = 0;
    sp.n_drift = 0;
    sp.n_seg = 1;
    sp.n_jumps = closed ? 0 : 1;
    sp.target = Target::Pure;
    sp.leakage = true;
    const Model m = random_model(rng, sp);
    const auto prog = qfleet::compile(build(m));
    const TaskBatch b = random_batch(rng, m, 2, false, false, true);
    expect_outputs(qforward<double>(prog, m, b, want_all(m)), simulate_batch(m, b), want_all(m), 1e-10, 0,
                   label(m, "no controls"));
  }
  Model m(1);
  m.h0 = Mat::Constant(1, 1, 0.7);
  m.controls = {Mat::Constant(1, 1, 1.0)};
  m.durations = {0.5, 0.25};
  m.target = Target::Pure;
  m.target_psi = basis(1, 0);
  m.observables = {Mat::Constant(1, 1, 2.0)};
  const auto prog = qfleet::compile(build(m));
  TaskBatch b;
  b.amps = {0.3, -1.1};
  const auto q = qforward<double>(prog, m, b, want_all(m));
  expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-12, 0, "d=1");
  EXPECT_NEAR(std::arg(q.fin[0]), std::remainder(-(0.7 * 0.75 + 0.3 * 0.5 - 1.1 * 0.25), 2 * kPi), 1e-12);
}

TEST(OpenForward, VjpReturnsTheForwardOutputsOfTheSamePass) {
  std::mt19937_64 rng(105);
  Spec sp;
  sp.d = 3;
  sp.n_jumps = 1;
  sp.target = Target::Mixed;
  sp.leakage = true;
  const Model m = random_model(rng, sp);
  const auto prog = qfleet::compile(build(m));
  const TaskBatch b = random_batch(rng, m, 2, true, true, true);
  const auto q = qvjp<double>(prog, m, b, {1.0, -0.5}, {0.25, 2.0}, want_all(m));
  expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-10, 0, "vjp outputs");
}

TEST(OpenForward, Complex64MatchesComplex128) {
  std::mt19937_64 rng(106);
  struct Case {
    int d;
    bool closed;
    Init init;
    Target target;
  };
  for (const Case c : {Case{2, true, Init::Pure, Target::Pure}, Case{4, false, Init::Density, Target::Mixed},
                       Case{5, false, Init::Pure, Target::Pure}, Case{3, true, Init::Gate, Target::Unitary},
                       Case{4, false, Init::Gate, Target::Unitary}}) {
    Spec sp;
    sp.d = c.d;
    sp.n_jumps = c.closed ? 0 : 2;
    sp.init = c.init;
    sp.target = c.target;
    sp.leakage = true;
    const Model m = random_model(rng, sp);
    const TaskBatch b = random_batch(rng, m, 2, true, false, true);
    const auto ref = simulate_batch(m, b);
    for (Solver s : {Solver::exact, Solver::rk4, Solver::dopri5}) {
      auto o = opt(s, 2e-3, qfleet::Precision::complex64);
      o.rtol = 1e-6;
      o.atol = 1e-7;
      const auto prog = qfleet::compile(build(m), o);
      EXPECT_EQ(prog.precision(), qfleet::Precision::complex64);
      const auto q = qforward<float>(prog, m, b, want_all(m));
      expect_outputs(q, ref, want_all(m), 1e-4, 0, label(m, "complex64"));
    }
  }
}

// ---------------------------------------------------------------------------
// Solvers.

TEST(OpenSolvers, FixedStepSolversAreTheirRungeKuttaSchemes) {
  // rk4/euler take ceil(duration/dt) equal steps per segment: the same map as the
  // reference's plain RK4/Euler steps (dt chosen so that duration/dt is not an integer).
  std::mt19937_64 rng(111);
  for (int d = 2; d <= 6; ++d) {
    for (bool closed : {true, false}) {
      for (bool gate : {false, true}) {
        if (gate && d > 4) continue;
        Spec sp;
        sp.d = d;
        sp.n_jumps = closed ? 0 : 2;
        sp.init = gate ? Init::Gate : Init::Pure;
        sp.target = gate ? Target::Unitary : Target::Mixed;
        sp.leakage = true;
        const Model m = random_model(rng, sp);
        const TaskBatch b = random_batch(rng, m, 2, true, true, false);
        for (auto [s, scheme, dt] : {std::tuple{Solver::rk4, Scheme::RK4, 0.0437}, std::tuple{Solver::euler, Scheme::Euler, 0.0113}}) {
          const auto prog = qfleet::compile(build(m), opt(s, dt));
          EXPECT_EQ(prog.solver(), s);
          const auto q = qforward<double>(prog, m, b, want_all(m));
          expect_outputs(q, simulate_batch(m, b, scheme, dt), want_all(m), 1e-10, 0,
                         label(m, s == Solver::rk4 ? "rk4 scheme" : "euler scheme"));
        }
      }
    }
  }
}

TEST(OpenSolvers, AllSolversConvergeToTheExactDynamics) {
  std::mt19937_64 rng(112);
  for (int d = 2; d <= 6; ++d) {
    for (bool closed : {true, false}) {
      for (bool gate : {false, true}) {
        if (gate && d > 3) continue;
        Spec sp;
        sp.d = d;
        sp.n_jumps = closed ? 0 : 2;
        sp.init = gate ? Init::Gate : (d % 2 && !closed ? Init::Density : Init::Pure);
        sp.target = gate ? Target::Unitary : (d % 2 ? Target::Mixed : Target::Pure);
        sp.leakage = true;
        sp.n_obs = 2;
        const Model m = random_model(rng, sp);
        const TaskBatch b = random_batch(rng, m, 2, d % 2 == 0, true, d % 2 == 1);
        const auto ref = simulate_batch(m, b);
        const auto w = want_all(m);
        expect_outputs(qforward<double>(qfleet::compile(build(m), opt(Solver::exact)), m, b, w), ref, w, 1e-10, 0,
                       label(m, "exact"));
        expect_outputs(qforward<double>(qfleet::compile(build(m), opt(Solver::rk4, 1e-3)), m, b, w), ref, w, 1e-8,
                       0, label(m, "rk4 dt=1e-3"));
        expect_outputs(qforward<double>(qfleet::compile(build(m), opt(Solver::dopri5)), m, b, w), ref, w, 1e-7, 0,
                       label(m, "dopri5 tol=1e-10"));
        expect_outputs(qforward<double>(qfleet::compile(build(m), opt(Solver::euler, 1e-4)), m, b, w), ref, w,
                       2e-2, 0, label(m, "euler dt=1e-4"));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Physics of a long pulse.

TEST(OpenPhysics, LongPulseKeepsTraceAndPositivity) {
  std::mt19937_64 rng(121);
  Spec sp;
  sp.d = 4;
  sp.n_seg = 200;
  sp.n_jumps = 3;
  sp.n_obs = 0;
  sp.init = Init::Density;
  sp.target = Target::Mixed;
  sp.seg_lo = 0.05;
  sp.seg_hi = 0.1;
  Model m = random_model(rng, sp);
  m.observables = {eye(4)};  // <I> = tr(rho) at every boundary
  const auto prog = qfleet::compile(build(m));
  const TaskBatch b = random_batch(rng, m, 2, true, false, true, false, 2.0);
  const auto q = qforward<double>(prog, m, b, want_all(m));
  for (double tr : q.exp) EXPECT_NEAR(tr, 1.0, 1e-10);
  for (std::size_t t = 0; t < b.B; ++t) {
    const Mat rho = from_row_major(q.fin.data() + t * 16, 4, 4);
    EXPECT_NEAR(std::abs(rho.trace() - 1.0), 0.0, 1e-10);
    EXPECT_LT((rho - rho.adjoint()).norm(), 1e-10);
    Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (rho + rho.adjoint()));
    EXPECT_GE(es.eigenvalues().minCoeff(), -1e-10);
    EXPECT_GE(q.fid[t], 0.0);
    EXPECT_LE(q.fid[t], 1.0 + 1e-10);
  }
  expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-9, 0, "200 segments");
}

// ---------------------------------------------------------------------------
// Cache, shared parameters, threads.

TEST(OpenCache, IdenticalSegmentsReusePropagators) {
  std::mt19937_64 rng(131);
  Spec sp;
  sp.d = 3;
  sp.n_seg = 8;
  sp.n_jumps = 1;
  sp.n_ctrl = 2;
  sp.target = Target::Pure;
  sp.leakage = true;
  Model m = random_model(rng, sp);
  m.durations.assign(8, 0.2);
  const auto prog = qfleet::compile(build(m));
  // Per task, segments a a a b b a a c: 4 segments repeat their predecessor.
  TaskBatch b = random_batch(rng, m, 2, true, false, true);
  const int pattern[8] = {0, 0, 0, 1, 1, 0, 0, 2};
  for (std::size_t t = 0; t < 2; ++t) {
    const std::vector<double> v = uniform_vec(rng, 6, -1, 1);
    for (int k = 0; k < 8; ++k)
      for (int i = 0; i < 2; ++i) b.amps[t * 16 + k * 2 + i] = v[pattern[k] * 2 + i];
  }
  const qfleet::CacheStats before = prog.cache_stats();
  const auto q = qforward<double>(prog, m, b, want_all(m));
  const qfleet::CacheStats after = prog.cache_stats();
  expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-10, 0, "repeated segments");
  EXPECT_EQ(after.calls, before.calls + 1);
  EXPECT_GE(after.propagators_reused - before.propagators_reused, 8u);
  EXPECT_EQ((after.propagators_reused - before.propagators_reused) +
                (after.propagators_computed - before.propagators_computed),
            16u);
  // Identical amplitudes but different durations, or different rates per task, must
  // not share a propagator.
  m.durations = {0.2, 0.2, 0.3, 0.3, 0.3, 0.1, 0.2, 0.2};
  const auto prog2 = qfleet::compile(build(m));
  TaskBatch b2 = b;
  b2.amp_pt = false;
  b2.amps.assign(16, 0.4);
  b2.B = 3;
  b2.rates = {0.1, 0.2, 0.3};
  expect_outputs(qforward<double>(prog2, m, b2, want_all(m)), simulate_batch(m, b2), want_all(m), 1e-10, 0,
                 "same amplitudes, other durations/rates");
  EXPECT_GT(prog2.cache_stats().propagators_reused, 0u);
}

TEST(OpenCache, SharedParametersGiveIdenticalTasks) {
  std::mt19937_64 rng(132);
  for (bool gate : {false, true}) {
    Spec sp;
    sp.d = 3;
    sp.n_jumps = 2;
    sp.init = gate ? Init::Gate : Init::Pure;
    sp.target = gate ? Target::Unitary : Target::Mixed;
    sp.leakage = true;
    const Model m = random_model(rng, sp);
    const auto prog = qfleet::compile(build(m));
    const TaskBatch b = random_batch(rng, m, 4, false, false, false);
    const auto q = qforward<double>(prog, m, b, want_all(m));
    expect_outputs(q, simulate_batch(m, b), want_all(m), 1e-10, 0, label(m, "all shared"));
    const std::size_t per = m.final_size();
    for (std::size_t t = 1; t < 4; ++t) {
      EXPECT_EQ(q.fid[t], q.fid[0]);
      EXPECT_EQ(q.leak[t], q.leak[0]);
      EXPECT_TRUE(std::equal(q.fin.begin(), q.fin.begin() + std::ptrdiff_t(per), q.fin.begin() + std::ptrdiff_t(t * per)));
    }
    // Shared gradients are summed over the tasks' cotangents.
    const std::vector<double> cf = {0.5, -1.0, 2.0, 0.25}, cl = {1.0, 0.0, -0.5, 3.0};
    const auto g = qvjp<double>(prog, m, b, cf, cl);
    const Grads fd = fd_grads(m, b, cf, cl);
    EXPECT_TRUE(all_close(g.g_amp, fd.amps, 1e-8, 1e-6)) << "shared amplitudes";
    EXPECT_TRUE(all_close(g.g_drift, fd.drift, 1e-8, 1e-6)) << "shared drift";
    EXPECT_TRUE(all_close(g.g_rates, fd.rates, 1e-8, 1e-6)) << "shared rates";
  }
}

TEST(OpenCache, ThreadCountDoesNotChangeResults) {
  std::mt19937_64 rng(133);
  Spec sp;
  sp.d = 3;
  sp.n_jumps = 1;
  sp.target = Target::Mixed;
  sp.leakage = true;
  sp.n_obs = 2;
  const Model m = random_model(rng, sp);
  const TaskBatch b = random_batch(rng, m, 5, true, false, true);
  const std::vector<double> cf = {1, -1, 0.5, 2, 0}, cl = {0.3, 0.1, -1, 0, 1};
  for (Solver s : {Solver::exact, Solver::rk4, Solver::dopri5, Solver::euler}) {
    auto o1 = opt(s, 0.0123), o2 = o1;
    o1.num_threads = 1;
    o2.num_threads = 2;
    const auto p1 = qfleet::compile(build(m), o1), p2 = qfleet::compile(build(m), o2);
    const auto a = qvjp<double>(p1, m, b, cf, cl, want_all(m));
    const auto c = qvjp<double>(p2, m, b, cf, cl, want_all(m));
    EXPECT_EQ(a.fid, c.fid);
    EXPECT_EQ(a.leak, c.leak);
    EXPECT_EQ(a.exp, c.exp);
    EXPECT_EQ(a.fin, c.fin);
    EXPECT_EQ(a.g_amp, c.g_amp);
    EXPECT_EQ(a.g_drift, c.g_drift);
    EXPECT_EQ(a.g_rates, c.g_rates);
    const auto f1 = qforward<double>(p1, m, b, want_all(m));
    EXPECT_EQ(a.fid, f1.fid);
    EXPECT_EQ(a.fin, f1.fin);
  }
}

}  // namespace
