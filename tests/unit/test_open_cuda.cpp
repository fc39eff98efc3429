// The open-system cuda backend. Runs everywhere: the per-task path a GPU thread
// takes (kern::open_run_task: cotangents, the shared task body, per-task gradients
// in place, shared-parameter gradients summed with atomic adds) executed by
// std::threads over the host copy of the packed plan, against the independent
// reference of reference/lindblad.hpp (outputs and finite-difference gradients); and
// the device option without a GPU. Needs a GPU (skips with a message otherwise):
// the cuda backend against the cpu backend for every problem kind, solver,
// precision and batch sizes around the block size.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>

#include "unit/expect_error.hpp"
#include "unit/open_emu.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

using emu::packed_plan;
using emu::run_like_gpu;

// A call on a batch, every output and gradient buffer present.
struct Call {
  std::vector<double> fid, leak, exp, g_amp, g_drift, g_rates, cf, cl;
  std::vector<std::complex<double>> fin;
  qfleet::kern::OpenTaskCall<double> c;
  Call(const Model& m, const TaskBatch& b, const std::vector<double>& cot_f, const std::vector<double>& cot_l)
      : fid(b.B, -7), leak(b.B, -7), exp(b.B * (m.durations.size() + 1) * m.observables.size(), -7),
        g_amp(b.amps.size(), -7), g_drift(b.drift.size(), -7), g_rates(b.rates.size(), -7), cf(cot_f), cl(cot_l),
        fin(b.B * m.final_size(), {-7, -7}) {
    c.batch = b.B;
    c.amplitudes = b.amps.data();
    c.amplitudes_per_task = b.amp_pt;
    c.drift = b.drift.data();
    c.drift_per_task = b.drift_pt;
    c.rates = b.rates.data();
    c.rates_per_task = b.rates_pt;
    c.initial = b.initial.empty() ? nullptr : reinterpret_cast<const double*>(b.initial.data());
    c.fidelity = m.target == Target::None ? nullptr : fid.data();
    c.leakage = leak.data();
    c.expvals = exp.empty() ? nullptr : exp.data();
    c.final_state = reinterpret_cast<double*>(fin.data());
    c.adjoint = true;
    c.cot_fidelity = cf.data();
    c.cot_leakage = cl.data();
    c.grad_amplitudes = g_amp.data();
    c.grad_drift = g_drift.data();
    c.grad_rates = g_rates.data();
  }
};

// Outputs against the independent reference, gradients against finite differences.
void expect_matches_reference(const Call& call, const Model& m, const TaskBatch& b, Solver s, const std::string& what) {
  const Scheme scheme = scheme_of(s);
  const double dt = solver_options(s).dt;
  const Flat want = flatten(simulate_batch(m, b, scheme, dt));
  const bool adaptive = s == Solver::dopri5 || s == Solver::tsit5;
  const double tol = adaptive ? 1e-7 : 1e-10;
  EXPECT_TRUE(all_close(call.fid, want.fid, tol)) << what << ": fidelity";
  EXPECT_TRUE(all_close(call.leak, want.leak, tol)) << what << ": leakage";
  EXPECT_TRUE(all_close(call.exp, want.exp, tol)) << what << ": expvals";
  EXPECT_TRUE(all_close(call.fin, want.fin, tol)) << what << ": final state";
  const Grads fd = fd_grads(m, b, call.cf, call.cl, scheme, dt);
  const double ga = adaptive ? 1e-7 : 1e-8, gr = adaptive ? 1e-5 : 1e-6;
  EXPECT_TRUE(all_close(call.g_amp, fd.amps, ga, gr)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(call.g_drift, fd.drift, ga, gr)) << what << ": d/d drift";
  EXPECT_TRUE(all_close(call.g_rates, fd.rates, ga, gr)) << what << ": d/d rates";
}

std::string solver_name(Solver s) {
  return s == Solver::exact ? "exact" : s == Solver::rk4 ? "rk4" : s == Solver::tsit5 ? "tsit5" : "dopri5";
}

// The thread-per-task path and groups of 1 and 8 threads (the matrix, OpenMatrix.*,
// runs every kind, solver and form on threads and on groups of 5 with per-task
// parameters): shared drift summed by atomics over tasks and groups, against the
// reference, and the groups against the thread path (the same arithmetic in another
// order: close to rounding).
TEST(OpenGpuPaths, GroupsMatchTheThreadPathWithSharedDrift) {
  std::mt19937_64 rng(504);
  for (const ProblemKind& k : kProblemKinds) {
    const Solver s = k.closed ? Solver::rk4 : Solver::exact;
    const Model m = kind_model(k, rng, k.closed ? 3 : 2);
    const auto plan = packed_plan(m, solver_options(s));
    const TaskBatch b = random_batch(rng, m, 5, true, false, true, k.init != Init::Gate);
    const std::vector<double> cot_f = {0.7, -1.3, 0.2, 1.0, -0.5}, cot_l = {1.1, 0.4, -0.3, 0.0, 0.8};
    Call solo(m, b, cot_f, cot_l);
    ASSERT_EQ(run_like_gpu(*plan, solo.c, 3, 64), 0);
    expect_matches_reference(solo, m, b, s, std::string(k.name) + " " + solver_name(s) + " thread per task");
    for (int G : {1, 8}) {
      const std::string what = std::string(k.name) + " " + solver_name(s) + " group of " + std::to_string(G);
      Call call(m, b, cot_f, cot_l);
      ASSERT_EQ(run_like_gpu(*plan, call.c, 2, 64, G), 0) << what;
      expect_matches_reference(call, m, b, s, what);
      EXPECT_TRUE(all_close(call.fid, solo.fid, 1e-12)) << what << ": fidelity vs the thread path";
      EXPECT_TRUE(all_close(call.g_amp, solo.g_amp, 1e-11)) << what << ": d/d amplitudes vs the thread path";
      EXPECT_TRUE(all_close(call.g_drift, solo.g_drift, 1e-11)) << what << ": d/d drift vs the thread path";
    }
  }
}

// The step-solver cases of the two tests below: a closed and two open kinds (d = 2), rk4,
// dopri5 and tsit5, dense and (open kinds) in Lindblad form, three tasks with per-task
// amplitudes, rates and initial states. fn(what, solver, lindblad, model, plan, batch).
template <class Fn>
void for_each_step_solver_case(std::uint64_t seed, const Fn& fn) {
  std::mt19937_64 rng(seed);
  for (int kind : {1, 3, 5}) {
    const ProblemKind& k = kProblemKinds[kind];
    for (Solver s : {Solver::rk4, Solver::dopri5, Solver::tsit5}) {
      for (bool lindblad : {false, true}) {
        if (lindblad && k.closed) continue;
        const Model m = kind_model(k, rng, 2);
        qfleet::OpenCompileOptions o = solver_options(s);
        if (lindblad) o.form = qfleet::OpenForm::lindblad;
        const auto plan = packed_plan(m, o);
        const TaskBatch b = random_batch(rng, m, 3, true, false, true, k.init != Init::Gate);
        fn(std::string(k.name) + " " + solver_name(s) + (lindblad ? " lindblad" : " dense"), s, lindblad, m, *plan, b);
      }
    }
  }
}

// Every output and gradient of two calls, bit for bit.
void expect_same_bits(const Call& a, const Call& b, const std::string& what) {
  EXPECT_EQ(a.fid, b.fid) << what;
  EXPECT_EQ(a.leak, b.leak) << what;
  EXPECT_EQ(a.exp, b.exp) << what;
  EXPECT_EQ(a.fin, b.fin) << what;
  EXPECT_EQ(a.g_amp, b.g_amp) << what << ": d/d amplitudes";
  EXPECT_EQ(a.g_drift, b.g_drift) << what << ": d/d drift";
  EXPECT_EQ(a.g_rates, b.g_rates) << what << ": d/d rates";
}

// The step solvers' reverse sweep reading each step's kept stage states
// (OpenView::keep_stages, which the cpu executor sets) instead of recomputing them:
// the forward outputs are the same bits, the gradients those of the recomputing sweep
// to rounding (the kept first-same-as-last stage and the recomputed one may differ in
// the last bit) and the finite differences'; alone and in groups, dense and in
// Lindblad form, for a closed and two open kinds.
TEST(OpenGpuPaths, KeptStageStatesGiveTheRecomputedGradients) {
  const std::vector<double> cot_f = {0.7, -1.3, 0.2}, cot_l = {1.1, 0.4, -0.3};
  for_each_step_solver_case(508, [&](const std::string& name, Solver s, bool, const Model& m,
                                     qfleet::detail::OpenPlan& plan, const TaskBatch& b) {
    for (int G : {0, 3}) {
      const std::string what = name + ", group of " + std::to_string(G);
      plan.view.keep_stages = false;
      Call recomputed(m, b, cot_f, cot_l);
      ASSERT_EQ(run_like_gpu(plan, recomputed.c, 2, 64, G), 0) << what;
      plan.view.keep_stages = true;
      Call kept(m, b, cot_f, cot_l);
      ASSERT_EQ(run_like_gpu(plan, kept.c, 2, 64, G), 0) << what;
      if (G == 0) expect_matches_reference(kept, m, b, s, what + ", kept stages");
      EXPECT_EQ(kept.fid, recomputed.fid) << what;
      EXPECT_EQ(kept.fin, recomputed.fin) << what;
      EXPECT_TRUE(all_close(kept.g_amp, recomputed.g_amp, 1e-13, 1e-12)) << what << ": d/d amplitudes";
      EXPECT_TRUE(all_close(kept.g_drift, recomputed.g_drift, 1e-13, 1e-12)) << what << ": d/d drift";
      EXPECT_TRUE(all_close(kept.g_rates, recomputed.g_rates, 1e-13, 1e-12)) << what << ": d/d rates";
    }
  });
}

// A fused call's forward sweep keeping its steps for the reverse sweep
// (OpenView::traj_records, which the cpu executor sets): with room for every segment,
// for some (the store fills part-way, in a segment the records left cannot hold: that
// segment runs again unkept from its first trial step), and for none (3 records), the
// outputs and gradients are the bits of the sweep that re-runs every segment; alone, dense
// and in Lindblad form, and in groups.
TEST(OpenGpuPaths, AKeptTrajectoryGivesTheRerunSweepsBits) {
  const std::vector<double> cot_f = {0.7, -1.3, 0.2}, cot_l = {1.1, 0.4, -0.3};
  for_each_step_solver_case(509, [&](const std::string& name, Solver, bool lindblad, const Model& m,
                                     qfleet::detail::OpenPlan& plan, const TaskBatch& b) {
    plan.view.keep_stages = true;
    for (int G : {0, 3}) {
      if (G > 0 && !lindblad) continue;  // the emulated groups are slow: the Lindblad form's split products
      plan.view.traj_records = 0;
      Call rerun(m, b, cot_f, cot_l);
      ASSERT_EQ(run_like_gpu(plan, rerun.c, 1, 64, G), 0);  // one worker: shared gradients summed in task order
      for (int records : {3, 12, 400}) {
        if (G > 0 && records != 12) continue;  // groups: the part-way store
        const std::string what = name + ", group of " + std::to_string(G) + ", " + std::to_string(records) + " records";
        plan.view.traj_records = records;
        Call kept(m, b, cot_f, cot_l);
        ASSERT_EQ(run_like_gpu(plan, kept.c, 1, 64, G), 0) << what;
        expect_same_bits(kept, rerun, what);
      }
    }
  });
}

// The exact action's reverse sweep reading a segment's Taylor terms kept by its re-run
// (OpenView::taylor_terms, which the cpu executor sets) instead of recomputing the step
// starts and each step's terms: the kept terms are the recomputed ones bit for bit, so
// every output and gradient is too; with room for every segment, for some (a store of 40
// terms: the segments of more steps recompute) and for none; alone and in groups, dense
// and in Lindblad form, one and several Taylor steps a segment (amplitudes x 1 and x 60).
TEST(OpenGpuPaths, KeptTaylorTermsGiveTheRecomputedBits) {
  std::mt19937_64 rng(510);
  const std::vector<double> cot_f = {0.7, -1.3, 0.2}, cot_l = {1.1, 0.4, -0.3};
  for (int kind : {1, 3, 5}) {
    const ProblemKind& k = kProblemKinds[kind];
    for (bool lindblad : {false, true}) {
      if (lindblad && k.closed) continue;
      const Model m = kind_model(k, rng, 2);
      qfleet::OpenCompileOptions o = solver_options(Solver::exact);
      o.exact = qfleet::ExactMethod::action;
      o.form = lindblad ? qfleet::OpenForm::lindblad : qfleet::OpenForm::superoperator;
      const auto plan = packed_plan(m, o);
      for (double scale : {1.0, 60.0}) {
        const TaskBatch b = random_batch(rng, m, 3, true, false, true, k.init != Init::Gate, scale);
        for (int G : {0, 3}) {
          if (G > 0 && !(lindblad && scale == 1)) continue;  // the emulated groups are slow
          plan->view.taylor_terms = 0;
          Call recomputed(m, b, cot_f, cot_l);
          ASSERT_EQ(run_like_gpu(*plan, recomputed.c, 1, 64, G), 0);
          if (G == 0 && scale == 1.0) expect_matches_reference(recomputed, m, b, Solver::exact, k.name);
          for (int terms : {40, 1 << 16}) {
            const std::string what = std::string(k.name) + (lindblad ? " lindblad" : " dense") + ", amplitudes x" +
                                     std::to_string(int(scale)) + ", group of " + std::to_string(G) + ", " +
                                     std::to_string(terms) + " terms";
            plan->view.taylor_terms = terms;
            Call kept(m, b, cot_f, cot_l);
            ASSERT_EQ(run_like_gpu(*plan, kept.c, 1, 64, G), 0) << what;
            expect_same_bits(kept, recomputed, what);
          }
        }
      }
    }
  }
}

// Larger generators, where the GPU uses a warp (d = 3 open, n = 9) or a block
// (d = 4 open, n = 16: 256 products per matrix, more entries than members).
TEST(OpenGpuGroupPath, LargerSystemsWithWarpAndBlockSizedGroups) {
  std::mt19937_64 rng(505);
  for (int d : {3, 4}) {
    for (Solver s : {Solver::exact, Solver::rk4}) {
      const Model m = kind_model(kProblemKinds[4], rng, d);
      const auto plan = packed_plan(m, solver_options(s));
      const TaskBatch b = random_batch(rng, m, 3, true, true, false);
      Call call(m, b, {0.9, -0.4, 1.2}, {0.3, 0.0, -0.7});
      ASSERT_EQ(run_like_gpu(*plan, call.c, 2, 64, d == 3 ? 32 : 13), 0);
      expect_matches_reference(call, m, b, s, std::string(kProblemKinds[4].name) + " d=" + std::to_string(d) + " " +
                                                  solver_name(s));
    }
  }
}

// B tasks of an open qubit (the FixedDim<4> instantiation on the thread path) with
// shared amplitudes and rates, summed over the tasks by atomic adds, against
// finite differences.
void expect_shared_sums(std::uint64_t seed, std::size_t B, int slots, int group) {
  std::mt19937_64 rng(seed);
  const Model m = kind_model(kProblemKinds[3], rng, 2);
  const auto plan = packed_plan(m, solver_options(Solver::exact));
  const TaskBatch b = random_batch(rng, m, B, false, true, false);
  std::vector<double> cot_f(B), cot_l(B);
  for (std::size_t i = 0; i < B; ++i) {
    cot_f[i] = std::sin(double(i));
    cot_l[i] = std::cos(double(i));
  }
  Call call(m, b, cot_f, cot_l);
  ASSERT_EQ(run_like_gpu(*plan, call.c, slots, 64, group), 0);
  const Grads fd = fd_grads(m, b, cot_f, cot_l);
  EXPECT_TRUE(all_close(call.g_amp, fd.amps, 1e-8, 1e-6));
  EXPECT_TRUE(all_close(call.g_drift, fd.drift, 1e-8, 1e-6));
  EXPECT_TRUE(all_close(call.g_rates, fd.rates, 1e-8, 1e-6));
}

TEST(OpenGpuGroupPath, SharedGradientsSumOverGroups) {
  expect_shared_sums(506, 11, 4, 5);  // 4 groups of 5 threads
}

TEST(OpenGpuThreadPath, SharedAmplitudesSumOverTasksWithAtomics) {
  expect_shared_sums(502, 37, 8, 0);  // 8 threads
}

// On the thread path and with groups of 3 (every member must report it).
TEST(OpenGpuPaths, ATaskWhoseStepsDoNotFitReportsItAndGetsNaN) {
  std::mt19937_64 rng(503);
  Model m = kind_model(kProblemKinds[3], rng, 2);
  for (double& t : m.durations) t *= 20;  // hundreds of dopri5 steps per segment
  const auto plan = packed_plan(m, solver_options(Solver::dopri5));
  const TaskBatch b = random_batch(rng, m, 2, true, false, false);
  for (int group : {0, 3}) {
    Call call(m, b, {1.0, 1.0}, {0.0, 0.0});
    const int status = run_like_gpu(*plan, call.c, 2, 4, group);  // room for 4 steps per segment
    EXPECT_EQ(status, 1 << qfleet::kern::kOpenStepCapacity) << "group " << group;
    EXPECT_TRUE(std::isnan(call.fid[0]) && std::isnan(call.fid[1])) << "group " << group;
    EXPECT_TRUE(std::isnan(call.leak[0]) && std::isnan(call.leak[1])) << "group " << group;
    // Forward only needs no step store: the same tasks then succeed.
    call.c.adjoint = false;
    EXPECT_EQ(run_like_gpu(*plan, call.c, 2, 4, group), 0) << "group " << group;
    EXPECT_FALSE(std::isnan(call.fid[0])) << "group " << group;
  }
}

TEST(OpenDevice, WithoutAGpuCudaIsAClearErrorAndAutomaticRunsOnTheCpu) {
  if (qfleet::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible: OpenCudaBackend.* covers this";
  std::mt19937_64 rng(504);
  const Model m = kind_model(kProblemKinds[3], rng, 2);
  qfleet::OpenCompileOptions o;
  o.device = qfleet::Device::cuda;
  EXPECT_QFLEET_ERROR(qfleet::compile(build(m), o), "device 'cuda'", "use device 'cpu'");
  o.device = qfleet::Device::automatic;
  const auto autoprog = qfleet::compile(build(m), o);
  EXPECT_EQ(autoprog.device(), qfleet::Device::automatic);
  EXPECT_EQ(autoprog.cuda_device(), -1);  // no GPU copy
  EXPECT_EQ(qfleet::compile(build(m)).cuda_device(), -1);
  EXPECT_EQ(autoprog.execution(100000, true).rfind("cpu ", 0), 0u) << autoprog.execution(100000, true);
  const auto cpuprog = qfleet::compile(build(m));
  const TaskBatch b = random_batch(rng, m, 4, true, true, true);
  const auto q1 = qvjp<double>(autoprog, m, b, {1, 2, 3, 4}, {}, want_all(m));
  const auto q2 = qvjp<double>(cpuprog, m, b, {1, 2, 3, 4}, {}, want_all(m));
  EXPECT_EQ(q1.fid, q2.fid);
  EXPECT_EQ(q1.g_amp, q2.g_amp);
}

// ---------------------------------------------------------------------------
// On a GPU: the cuda backend against the cpu backend.

template <class R>
void expect_backends_agree(const Model& m, Solver s, qfleet::Precision prec, std::size_t B, std::mt19937_64& rng,
                           const std::string& what, qfleet::OpenForm form = qfleet::OpenForm::automatic,
                           qfleet::ExactMethod exact = qfleet::ExactMethod::automatic) {
  qfleet::OpenCompileOptions o = solver_options(s);
  o.precision = prec;
  o.form = form;
  o.exact = exact;
  if (prec == qfleet::Precision::complex64 && (s == Solver::dopri5 || s == Solver::tsit5)) o.rtol = o.atol = 1e-6;
  const auto cpu = qfleet::compile(build(m), o);
  o.device = qfleet::Device::cuda;
  const auto gpu = qfleet::compile(build(m), o);
  ASSERT_EQ(gpu.execution(B, true).rfind("cuda ", 0), 0u) << gpu.execution(B, true);
  EXPECT_EQ(gpu.cuda_device(), 0);  // the current device of this process
  const bool initial = m.init != Init::Gate;
  const TaskBatch b = random_batch(rng, m, B, B % 2 == 1, false, true, initial && B > 1);
  std::vector<double> cf(B), cl(B);
  for (std::size_t i = 0; i < B; ++i) {
    cf[i] = std::sin(1.0 + double(i));
    cl[i] = std::cos(2.0 + double(i));
  }
  const Want w = want_all(m);
  const auto qc = qvjp<R>(cpu, m, b, m.target == Target::None ? std::vector<double>{} : cf, cl, w);
  const auto qg = qvjp<R>(gpu, m, b, m.target == Target::None ? std::vector<double>{} : cf, cl, w);
  const double tol = prec == qfleet::Precision::complex64 ? 2e-4 : 1e-10;
  EXPECT_TRUE(all_close(qg.fid, qc.fid, tol)) << what << ": fidelity";
  EXPECT_TRUE(all_close(qg.leak, qc.leak, tol)) << what << ": leakage";
  EXPECT_TRUE(all_close(qg.exp, qc.exp, tol)) << what << ": expvals";
  EXPECT_TRUE(all_close(qg.fin, qc.fin, tol)) << what << ": final state";
  // A parameter shared by the tasks sums one term per task, each as large as its
  // cotangents and rounded on its own (the GPU and the CPU add them in other orders):
  // its absolute bound grows with the cotangents' sum, where the true sum may cancel.
  double cot_sum = 0;
  for (std::size_t i = 0; i < B; ++i) cot_sum += std::abs(cf[i]) + std::abs(cl[i]);
  const auto atol = [&](bool per_task) { return per_task || B == 1 ? tol : tol * cot_sum; };
  EXPECT_TRUE(all_close(qg.g_amp, qc.g_amp, atol(b.amp_pt), tol)) << what << ": d/d amplitudes";
  EXPECT_TRUE(all_close(qg.g_drift, qc.g_drift, atol(b.drift_pt), tol)) << what << ": d/d drift";
  EXPECT_TRUE(all_close(qg.g_rates, qc.g_rates, atol(b.rates_pt), tol)) << what << ": d/d rates";
  // forward alone gives the same outputs as the vjp pass
  const auto fg = qforward<R>(gpu, m, b, w);
  EXPECT_TRUE(all_close(fg.fid, qg.fid, tol)) << what << ": forward fidelity";
}

TEST(OpenCudaBackend, MatchesTheCpuBackendForEveryKindSolverAndPrecision) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: the open-system cuda backend needs a GPU (its task body is tested on "
                    "the CPU by OpenMatrix.* and OpenGpuPaths.*)";
  }
  std::mt19937_64 rng(505);
  for (const ProblemKind& k : kProblemKinds) {
    for (int d : {2, 3}) {
      const Model m = kind_model(k, rng, d);
      for (Solver s : {Solver::exact, Solver::rk4, Solver::euler, Solver::dopri5}) {
        for (std::size_t B : {std::size_t(1), std::size_t(33), std::size_t(129)}) {
          const std::string what = std::string(k.name) + " d=" + std::to_string(d) + " solver " +
                                   std::to_string(int(s)) + " B=" + std::to_string(B);
          expect_backends_agree<double>(m, s, qfleet::Precision::complex128, B, rng, what + " c128");
          expect_backends_agree<float>(m, s, qfleet::Precision::complex64, B, rng, what + " c64");
        }
      }
    }
  }
}

// What came after the test above: tsit5, the step solvers with the generator in Lindblad
// form (open kinds) and the exact solver by its action (Al-Mohy & Higham), on the GPU
// against the cpu backend. Written 2026-11-27 after that day's GPU run: not yet run on a GPU.
TEST(OpenCudaBackend, Tsit5TheLindbladFormAndTheExactActionMatchTheCpuBackend) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: these paths of the task body are tested on the CPU by OpenMatrix.*";
  }
  using qfleet::ExactMethod;
  using qfleet::OpenForm;
  std::mt19937_64 rng(509);
  for (const ProblemKind& k : kProblemKinds) {
    for (int d : {2, 3}) {
      const Model m = kind_model(k, rng, d);
      struct Case {
        Solver s;
        OpenForm form;
        ExactMethod exact;
      };
      std::vector<Case> cases = {{Solver::tsit5, OpenForm::automatic, ExactMethod::automatic},
                                 {Solver::exact, OpenForm::automatic, ExactMethod::action}};
      if (!k.closed) {
        for (Solver s : {Solver::rk4, Solver::dopri5, Solver::tsit5})
          cases.push_back({s, OpenForm::lindblad, ExactMethod::automatic});
      }
      for (const Case& c : cases) {
        for (std::size_t B : {std::size_t(1), std::size_t(33)}) {
          const std::string what = std::string(k.name) + " d=" + std::to_string(d) + " " + solver_name(c.s) +
                                   (c.form == OpenForm::lindblad ? " lindblad" : "") +
                                   (c.exact == ExactMethod::action ? " action" : "") + " B=" + std::to_string(B);
          expect_backends_agree<double>(m, c.s, qfleet::Precision::complex128, B, rng, what + " c128", c.form, c.exact);
          expect_backends_agree<float>(m, c.s, qfleet::Precision::complex64, B, rng, what + " c64", c.form, c.exact);
        }
      }
    }
  }
}

// Every launch shape (thread, warp = a 32-thread block per task, block) against the
// cpu backend, pinned with QFLEET_OPEN_CUDA_SHAPE; d = 4 is n = 16 (the warp
// shape's shared-memory workspace for small d, global memory for the gate kind).
TEST(OpenCudaBackend, EveryLaunchShapeMatchesTheCpuBackend) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: the group launch shapes run on the CPU in OpenMatrix.*";
  }
  std::mt19937_64 rng(507);
  for (const char* shape : {"thread", "tile8", "tile16", "warp", "block"}) {
    setenv("QFLEET_OPEN_CUDA_SHAPE", shape, 1);
    for (const ProblemKind& k : kProblemKinds) {
      for (int d : {2, 3, 4}) {
        const Model m = kind_model(k, rng, d);
        for (Solver s : {Solver::exact, Solver::rk4, Solver::dopri5}) {
          for (std::size_t B : {std::size_t(1), std::size_t(70)}) {
            const std::string what = std::string(shape) + " " + k.name + " d=" + std::to_string(d) + " solver " +
                                     std::to_string(int(s)) + " B=" + std::to_string(B);
            expect_backends_agree<double>(m, s, qfleet::Precision::complex128, B, rng, what + " c128");
            expect_backends_agree<float>(m, s, qfleet::Precision::complex64, B, rng, what + " c64");
          }
        }
      }
    }
  }
  setenv("QFLEET_OPEN_CUDA_SHAPE", "diagonal", 1);
  std::mt19937_64 r2(508);
  qfleet::OpenCompileOptions o;
  o.device = qfleet::Device::cuda;
  const qfleet::OpenProgram p = qfleet::compile(build(kind_model(kProblemKinds[3], r2, 2)), o);
  EXPECT_QFLEET_ERROR((void)p.execution(10, true), "QFLEET_OPEN_CUDA_SHAPE='diagonal'",
                      "expected \"thread\", \"tile8\", \"tile16\", \"warp\", \"block\" or \"automatic\"");
  unsetenv("QFLEET_OPEN_CUDA_SHAPE");
}

TEST(OpenCudaBackend, LargeBatchAndLongDopri5Segments) {
  if (qfleet::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  std::mt19937_64 rng(506);
  const Model m = kind_model(kProblemKinds[3], rng, 2);
  expect_backends_agree<double>(m, Solver::exact, qfleet::Precision::complex128, 20000, rng, "B=20000");
  Model longm = kind_model(kProblemKinds[3], rng, 2);
  for (double& t : longm.durations) t *= 20;  // the staged call re-runs with a larger step store
  expect_backends_agree<double>(longm, Solver::dopri5, qfleet::Precision::complex128, 3, rng, "long dopri5");
}

}  // namespace
