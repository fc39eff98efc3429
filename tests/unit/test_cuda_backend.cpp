// The cuda circuit backend through the public API: the same checks as the cpu
// suite (random circuits against the dense reference — every gate is the backend
// matrix's, test_backend_matrix.cpp — gradients
// against finite differences, batch sizes around 32 and the block size, both
// precisions), one cross-backend test that every Program operation joins, and the
// device choice. GPU tests skip, saying why, where no CUDA device is visible; the
// kernel bodies they run are checked on the CPU, in every shape, by test_sv_group.cpp.
#include <gtest/gtest.h>

#include <cstdlib>

#include "unit/expect_error.hpp"
#include "unit/harness.hpp"

namespace {

constexpr double kGradTol = 1e-6;
constexpr double kFloor = 1e-4;

#define QFLEET_REQUIRE_GPU()                                                                        \
  if (qfleet::cuda_device_count() == 0) {                                                           \
    GTEST_SKIP() << "no CUDA device visible (this build "                                           \
                 << "compiles the cuda backend; it runs where a GPU is); the shared kernel bodies are " \
                 << "tested on the CPU, in every launch shape, by GroupBody.*";                        \
  }

qfleet::Program compile_on(const qfleet::Circuit& c, qfleet::Device d,
                           qfleet::Precision p = qfleet::Precision::complex128) {
  qfleet::CompileOptions o;
  o.device = d;
  o.precision = p;
  return qfleet::compile(c, o);
}

const std::vector<std::size_t> kBatches = {1, 3, 31, 32, 33, 127, 128, 129, 257};

TEST(CudaBackend, RandomCircuitsMatchTheReferenceAtBatchSizesAroundTheBlock) {
  QFLEET_REQUIRE_GPU();
  std::mt19937_64 rng(1101);
  for (int n = 1; n <= 12; ++n) {  // warp (n <= 6), block, and global strategies
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n + 4;
    ref::random_circuit(t, rng, spec);
    const qfleet::Program p = compile_on(t.q, qfleet::Device::cuda);
    for (std::size_t B : kBatches) {
      if (n > 9 && B > 33) continue;  // the reference is slow there
      for (bool per_sample : {false, true}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " batch=" + std::to_string(B) + " " + p.execution(B, true));
        const ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, per_sample);
        EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(p, b), ref::ref_outputs(t.r, b)), 1e-10);
        // The dense reference gradient above n = 9 kept this test running past a minute on
        // the first GPU run (2026-11-24); the block shape's gradients are checked at n = 7..9.
        if (B <= 33 && n <= 9) {
          const std::vector<double> cot = ref::uniform_vec(rng, B * t.r.n_outputs(), -1, 1);
          const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
          const auto got = ref::q_vjp<double>(p, b, cot);
          EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol);
          EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol);
        }
      }
    }
  }
}

// Every launch shape a circuit can take, pinned with QFLEET_CUDA_SHAPE (the automatic
// choice alone would leave the warp shape to n = 6 and the interleaved one to n >= 13).
TEST(CudaBackend, EveryPinnedShapeMatchesTheReference) {
  QFLEET_REQUIRE_GPU();
  std::mt19937_64 rng(1151);
  for (int n : {1, 2, 5, 6, 8}) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n + 4;
    ref::random_circuit(t, rng, spec);
    const qfleet::Program p = compile_on(t.q, qfleet::Device::cuda);
    for (const char* shape : {"registers", "warp", "block", "interleaved", "global"}) {
      if ((std::string(shape) == "registers" && n > 5) || (std::string(shape) == "warp" && n > 6)) continue;
      setenv("QFLEET_CUDA_SHAPE", shape, 1);
      for (std::size_t B : {std::size_t{1}, std::size_t{33}, std::size_t{70}}) {
        for (bool per_sample : {false, true}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " batch=" + std::to_string(B) + " " + p.execution(B, true));
          EXPECT_EQ(p.execution(B, true).rfind(std::string("cuda ") + shape + ":", 0), 0u);
          const ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, per_sample);
          EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(p, b), ref::ref_outputs(t.r, b)), 1e-10);
          EXPECT_LT(ref::max_state_diff(ref::q_states<double>(p, b), t.r, b), 1e-10) << "states";
          const std::vector<double> cot = ref::uniform_vec(rng, B * t.r.n_outputs(), -1, 1);
          const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
          const auto got = ref::q_vjp<double>(p, b, cot);
          EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol);
          EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol);
        }
      }
      unsetenv("QFLEET_CUDA_SHAPE");
    }
  }
  setenv("QFLEET_CUDA_SHAPE", "registers", 1);  // a shape this circuit cannot take: a clear error
  ref::Twin big(7);
  big.add("RX", {0}, {qfleet::Param::weight(0)});
  big.expval({{1.0, ref::word({{'Z', 0}})}});
  const qfleet::Program pb = compile_on(big.q, qfleet::Device::cuda);
  EXPECT_QFLEET_ERROR((void)pb.execution(10, true), "'registers' circuit launch shape needs at most 5 qubits");
  setenv("QFLEET_CUDA_SHAPE", "sideways", 1);
  EXPECT_QFLEET_ERROR((void)pb.execution(10, true), "QFLEET_CUDA_SHAPE='sideways'",
                      "expected \"registers\", \"warp\"");
  unsetenv("QFLEET_CUDA_SHAPE");
}

// Runs of constant permutation gates fused into one gather (kern::PermRun) in every
// shape that fuses them: registers, warp and interleaved (n = 5), block and global
// (n = 10); and runs of diagonal gates, applied amplitude by amplitude where the group
// syncs a block (OpDesc::diag_first); against the dense reference and finite differences.
TEST(CudaBackend, FusedRunsMatchTheReference) {
  QFLEET_REQUIRE_GPU();
  std::mt19937_64 rng(4343);
  for (const bool diagonal : {false, true}) {
    for (int n : {5, 10}) {
      ref::Twin t(n);
      if (diagonal) {
        ref::diagonal_runs_circuit(t, n);
      } else {
        ref::permutation_runs_circuit(t, n);
      }
      const qfleet::Program p = compile_on(t.q, qfleet::Device::cuda);
      for (const char* shape : {"registers", "warp", "block", "interleaved", "global"}) {
        const std::string s = shape;
        if ((s == "registers" || s == "warp" || s == "interleaved") != (n == 5)) continue;
        setenv("QFLEET_CUDA_SHAPE", shape, 1);
        const ref::Batch b = ref::random_batch(rng, 33, t.r.n_inputs, t.r.n_weights, n == 5);
        const std::string how = p.execution(b.B, true);
        SCOPED_TRACE("n=" + std::to_string(n) + " " + how);
        const bool block_sync = s == "block" || s == "interleaved" || s == "global";
        if (diagonal) {
          EXPECT_EQ(how.find("2 runs of diagonal gates fused") != std::string::npos, block_sync);
        }
        EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(p, b), ref::ref_outputs(t.r, b)), 1e-10);
        const std::vector<double> cot = ref::uniform_vec(rng, b.B * t.r.n_outputs(), -1, 1);
        const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
        const auto got = ref::q_vjp<double>(p, b, cot);
        EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol);
        EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol);
        unsetenv("QFLEET_CUDA_SHAPE");
      }
    }
  }
}

// Every gate on the cuda backend (when a GPU is visible): BackendMatrix.*.

TEST(CudaBackend, Complex64StaysWithinSinglePrecision) {
  QFLEET_REQUIRE_GPU();
  std::mt19937_64 rng(1303);
  for (int n : {2, 5, 8, 11}) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 2 * n + 4;
    ref::random_circuit(t, rng, spec);
    const ref::Batch b = ref::random_batch(rng, 64, t.r.n_inputs, t.r.n_weights, false);
    const qfleet::Program p = compile_on(t.q, qfleet::Device::cuda, qfleet::Precision::complex64);
    EXPECT_LT(ref::max_abs_diff(ref::q_forward<float>(p, b), ref::ref_outputs(t.r, b)), 2e-5) << "n=" << n;
  }
}

// Every Program operation on cpu, cuda and automatic: the same numbers.
TEST(CudaBackend, CrossBackendConsistencyOfEveryOperation) {
  QFLEET_REQUIRE_GPU();
  std::mt19937_64 rng(1404);
  for (int n : {3, 7, 11}) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n;
    ref::random_circuit(t, rng, spec);
    const ref::Batch b = ref::random_batch(rng, 100, t.r.n_inputs, t.r.n_weights, true);
    const std::vector<double> cot = ref::uniform_vec(rng, b.B * t.r.n_outputs(), -1, 1);
    const qfleet::Program cpu = compile_on(t.q, qfleet::Device::cpu);
    for (qfleet::Device d : {qfleet::Device::cuda, qfleet::Device::automatic}) {
      const qfleet::Program gpu = compile_on(t.q, d);
      EXPECT_EQ(gpu.cuda_device(), 0);  // the current device of this process
      EXPECT_EQ(cpu.cuda_device(), -1);
      SCOPED_TRACE("n=" + std::to_string(n) + " " + gpu.execution(b.B, true));
      EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(gpu, b), ref::q_forward<double>(cpu, b)), 1e-12);
      const auto gg = ref::q_vjp<double>(gpu, b, cot, true), gc = ref::q_vjp<double>(cpu, b, cot, true);
      EXPECT_LT(ref::max_abs_diff(gg.gi, gc.gi), 1e-11);
      EXPECT_LT(ref::max_abs_diff(gg.gw, gc.gw), 1e-11);
      EXPECT_LT(ref::max_abs_diff(gg.out, gc.out), 1e-12);
      const auto sg = ref::q_states<double>(gpu, b), sc = ref::q_states<double>(cpu, b);
      double ds = 0;
      for (std::size_t i = 0; i < sg.size(); ++i) ds = std::max(ds, std::abs(sg[i] - sc[i]));
      EXPECT_LT(ds, 1e-12);
      const ref::Run<double> run(b);
      const std::size_t K = t.r.n_outputs();
      std::vector<double> jg(b.B * K * b.nw), jc(b.B * K * b.nw);
      gpu.jacobian<double>(run.args(b.B), {}, jg);
      cpu.jacobian<double>(run.args(b.B), {}, jc);
      EXPECT_LT(ref::max_abs_diff(jg, jc), 1e-11);
      std::vector<std::uint64_t> xg(b.B * 50), xc(b.B * 50);
      gpu.sample<double>(run.args(b.B), {0}, 50, 7, xg);
      cpu.sample<double>(run.args(b.B), {0}, 50, 7, xc);
      std::size_t same = 0;
      for (std::size_t i = 0; i < xg.size(); ++i) same += xg[i] == xc[i];
      EXPECT_GE(same, xg.size() - 2) << "samples come from the same streams and the same probabilities";
    }
  }
}

// Without a GPU: cuda is refused with a clear message, automatic runs on the cpu.
TEST(DeviceChoice, CudaWithoutAGpuIsAClearErrorAndAutomaticFallsBackToTheCpu) {
  if (qfleet::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible; CudaBackend.* covers it";
  qfleet::Circuit c(2);
  c.add("RX", {0}, {qfleet::Param::weight(0)}).expval("Z0");
  try {
    (void)compile_on(c, qfleet::Device::cuda);
    ADD_FAILURE() << "compile(device=cuda) succeeded without a GPU";
  } catch (const qfleet::Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("no CUDA device is visible") != std::string::npos ||
                m.find("no CUDA backend") != std::string::npos)
        << m;
  }
  const qfleet::Program p = compile_on(c, qfleet::Device::automatic);
  EXPECT_EQ(p.device(), qfleet::Device::automatic);
  EXPECT_EQ(p.cuda_device(), -1);  // no GPU copy
  EXPECT_EQ(compile_on(c, qfleet::Device::cpu).cuda_device(), -1);
  EXPECT_EQ(p.execution(1000000, true).rfind("cpu ", 0), 0u) << p.execution(1000000, true);
  const std::vector<double> w = {0.3};
  qfleet::BatchArgs<double> a;
  a.weights = w;
  EXPECT_NEAR(p.forward(a)[0], std::cos(0.3), 1e-14);
}

}  // namespace

#if defined(QFLEET_WITH_CUDA)
#include "cuda/dm_cuda.hpp"
#include "cuda/open_cuda.hpp"
#include "cuda/sv_cuda.hpp"

namespace {

// The launch-shape table of docs/architecture.md, for an H100-like device (pure
// host code: runs without a GPU).
TEST(LaunchShape, FollowsTheDocumentedTable) {
  using qfleet::gpu::Strategy;
  qfleet::gpu::DeviceProps h100;
  h100.sm_count = 132;
  h100.smem_optin = 227 * 1024;
  h100.total_mem = std::size_t{80} << 30;
  qfleet::kern::SvPlan p;
  auto shape = [&](int n, std::size_t B, int bytes, bool adj, Strategy want = Strategy::automatic) {
    p.n = n;
    p.dim = std::uint64_t{1} << n;
    return qfleet::gpu::launch_shape(p, B, bytes, adj, h100, want);
  };
  for (int n = 1; n <= 5; ++n) {  // registers: 2^n lanes per circuit, blocks of 128 threads, no shared memory
    const auto s = shape(n, 100000, 8, true);
    EXPECT_EQ(s.strategy, Strategy::registers) << n;
    EXPECT_EQ(s.group, 1 << n);
    EXPECT_EQ(s.per_block * s.group, 128);
    EXPECT_EQ(s.blocks, (100000 + s.per_block - 1) / s.per_block);
    EXPECT_EQ(s.smem, 0u);
    EXPECT_EQ(s.work_bytes, 0u);
    EXPECT_EQ(shape(n, 10, 8, true).strategy, Strategy::registers) << n;  // every batch size
  }
  for (int n = 1; n <= 6; ++n) {  // warp: pinned only
    const auto s = shape(n, 1000, 8, true, Strategy::warp);
    EXPECT_EQ(s.strategy, Strategy::warp) << n;
    EXPECT_EQ(s.group, 1 << (n - 1));
    EXPECT_EQ(s.per_block * s.group, 128);
    EXPECT_EQ(s.blocks, (1000 + s.per_block - 1) / s.per_block);
    EXPECT_EQ(s.smem, std::size_t(s.per_block) * 2 * 16 * (std::size_t{1} << n));
  }
  EXPECT_EQ(shape(6, 100000, 8, true).strategy, Strategy::block);
  EXPECT_EQ(shape(7, 10, 8, true).strategy, Strategy::block);
  EXPECT_EQ(shape(7, 10, 8, true).threads, 64);
  EXPECT_EQ(shape(10, 10, 8, true).threads, 256);
  EXPECT_EQ(shape(12, 10, 8, true).strategy, Strategy::block);   // psi + lam: 128 KiB
  EXPECT_EQ(shape(13, 10, 8, true).strategy, Strategy::global);   // 256 KiB > 227 KiB
  EXPECT_EQ(shape(13, 10, 8, false).strategy, Strategy::block);   // forward: one state
  EXPECT_EQ(shape(13, 10, 4, true).strategy, Strategy::block);    // complex64
  EXPECT_EQ(shape(14, 10, 4, true).strategy, Strategy::global);
  const auto g = shape(20, 100000, 8, true);
  EXPECT_EQ(g.blocks, 132u * 8);
  EXPECT_EQ(g.work_bytes, g.blocks * 2 * 16 * (std::size_t{1} << 20));
  EXPECT_EQ(shape(20, 3, 8, true).blocks, 3u);
  // Interleaved (pinned only): 32-sample tiles, one block of 32 x 8 threads per tile,
  // a tile per SM at most, within a quarter of the device memory.
  const auto il = shape(6, 4224, 8, true, Strategy::interleaved);
  EXPECT_EQ(il.strategy, Strategy::interleaved);
  EXPECT_EQ(il.threads, 256);
  EXPECT_EQ(il.per_block, 32);
  EXPECT_EQ(il.blocks, 132u);  // min(ceil(4224 / 32) tiles, SMs)
  EXPECT_EQ(il.work_bytes, 132u * 32 * 2 * 16 * (std::size_t{1} << 6));
  EXPECT_EQ(shape(10, 100000, 8, true).strategy, Strategy::block);    // measured: 1.3x faster than interleaved
  EXPECT_EQ(shape(13, 100000, 8, true).strategy, Strategy::global);   // measured: global 2.2x faster at n = 14
  const auto pinned13 = shape(13, 1000, 8, true, Strategy::interleaved);
  EXPECT_EQ(pinned13.blocks, 32u);  // ceil(1000 / 32) tiles
  EXPECT_EQ(pinned13.work_bytes, 32u * 32 * 2 * 16 * (std::size_t{1} << 13));
  EXPECT_EQ(shape(17, 100000, 8, true, Strategy::interleaved).blocks, 132u);  // 132 x 128 MiB <= 20 GiB
  EXPECT_EQ(shape(18, 100000, 8, true, Strategy::interleaved).blocks, 80u);   // 256 MiB tiles in 20 GiB
  const auto pinned = shape(20, 100000, 8, true, Strategy::interleaved);
  EXPECT_EQ(pinned.blocks, 20u);  // 1 GiB tiles in 20 GiB
  EXPECT_THROW(shape(25, 100, 8, true, Strategy::interleaved), qfleet::Error);
  // Block tables (kernels/sv_table.hpp): blocks, derivative blocks and one partial per
  // parameter and part (a warp; a tile's member; a warp slice's one), where they fit.
  p.mat_entries = 120;
  p.dmat_entries = 80;
  p.n_params = 20;
  const auto tb = shape(10, 100, 4, true);  // 256 threads: 8 warps
  EXPECT_EQ(tb.table, 4u * (2 * 120 + 2 * 80 + 20 * 8));
  EXPECT_EQ(tb.smem, 2 * 8 * 1024u + tb.table);  // psi and lam, complex64
  EXPECT_EQ(shape(10, 100, 4, false).table, 4u * 2 * 120);  // forward: the blocks alone
  const auto tw = shape(4, 1000, 4, true, Strategy::warp);
  EXPECT_EQ(tw.table, 4u * (2 * 120 + 2 * 80 + 20));
  EXPECT_EQ(tw.smem, std::size_t(tw.per_block) * (2 * 8 * 16 + tw.table));
  EXPECT_EQ(shape(10, 10000, 4, true, Strategy::interleaved).table, 4u * 32 * (2 * 120 + 2 * 80 + 20 * 8));
  EXPECT_EQ(shape(14, 100, 4, true).table, 4u * (2 * 120 + 2 * 80 + 20 * 8));  // global: the table alone in shared memory
  const auto tr = shape(4, 100000, 4, true);  // registers: a table per circuit, no partials (shuffle sums)
  EXPECT_EQ(tr.strategy, Strategy::registers);
  EXPECT_EQ(tr.table, 4u * (2 * 120 + 2 * 80));
  EXPECT_EQ(tr.smem, 8 * tr.table);  // 128 threads / 16 lanes
  p.mat_entries = 20000;  // 160 KB of blocks beside 128 KiB of states: the blocks come per gate
  EXPECT_EQ(shape(12, 10, 8, true).strategy, Strategy::block);
  EXPECT_EQ(shape(12, 10, 8, true).table, 0u);
  EXPECT_EQ(shape(12, 10, 8, true).smem, 2 * 16 * 4096u);
  p.mat_entries = p.dmat_entries = 0;
  p.n_params = 0;
  // Pinned shapes (QFLEET_CUDA_SHAPE): any circuit may run global or, when its states
  // fit, block; registers and warp refuse circuits too large for them, saying why.
  EXPECT_EQ(shape(3, 10, 8, true, Strategy::global).strategy, Strategy::global);
  EXPECT_EQ(shape(3, 10, 8, true, Strategy::block).threads, 32);  // whole warps
  EXPECT_THROW(shape(6, 10, 8, true, Strategy::registers), qfleet::Error);
  EXPECT_THROW(shape(7, 10, 8, true, Strategy::warp), qfleet::Error);
  EXPECT_THROW(shape(13, 10, 8, true, Strategy::block), qfleet::Error);
  // QFLEET_CUDA_SHAPE's values, and a clear error for any other.
  EXPECT_EQ(qfleet::gpu::parse_strategy("interleaved"), Strategy::interleaved);
  EXPECT_EQ(qfleet::gpu::parse_strategy("registers"), Strategy::registers);
  EXPECT_EQ(qfleet::gpu::parse_strategy("automatic"), Strategy::automatic);
  EXPECT_QFLEET_ERROR(qfleet::gpu::parse_strategy("sideways"), "QFLEET_CUDA_SHAPE='sideways'",
                      "expected \"registers\", \"warp\", \"block\", \"interleaved\", \"global\" or \"automatic\"");
  for (auto s : {Strategy::registers, Strategy::warp, Strategy::block, Strategy::interleaved, Strategy::global,
                 Strategy::automatic})
    EXPECT_EQ(qfleet::gpu::parse_strategy(qfleet::gpu::strategy_name(s)), s);
  // QFLEET_OPEN_CUDA_SHAPE's, likewise.
  using qfleet::gpu::OpenShape;
  for (auto s : {OpenShape::thread, OpenShape::tile8, OpenShape::tile16, OpenShape::warp, OpenShape::block,
                 OpenShape::automatic})
    EXPECT_EQ(qfleet::gpu::parse_open_shape(qfleet::gpu::open_shape_name(s)), s);
  EXPECT_QFLEET_ERROR(qfleet::gpu::parse_open_shape("grid"), "QFLEET_OPEN_CUDA_SHAPE='grid'",
                      "expected \"thread\", \"tile8\", \"tile16\", \"warp\", \"block\" or \"automatic\"");
  // QFLEET_DM_CUDA_THREADS: the block sizes of density-matrix calls.
  for (int t : {32, 64, 128, 256}) EXPECT_EQ(qfleet::gpu::parse_dm_threads(std::to_string(t).c_str()), t);
  EXPECT_EQ(qfleet::gpu::parse_dm_threads("automatic"), 0);
  for (const char* bad : {"48", "512", "0", "-32", "32x"}) {
    const std::string named = std::string("QFLEET_DM_CUDA_THREADS='") + bad + "'";
    EXPECT_QFLEET_ERROR(qfleet::gpu::parse_dm_threads(bad), named.c_str(), "expected 32, 64, 128, 256 or automatic");
  }
  try {
    shape(6, 10, 8, true, Strategy::registers);
  } catch (const qfleet::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'registers' circuit launch shape needs at most 5 qubits"), std::string::npos)
        << e.what();
  }
}

}  // namespace
#endif
