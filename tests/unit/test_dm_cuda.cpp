// Density-matrix circuits on the cuda backend (a thread block per sample running
// kernels/dm_group.hpp) against the cpu executor: outputs, gradients (shared and
// per-sample weights), density matrices and samples, in both precisions, at batch
// sizes around the grid. Skips, saying why, where no CUDA device is visible: the
// group body itself is tested on the CPU by DmGroupBody.*.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "unit/expect_error.hpp"
#include "unit/harness.hpp"

namespace {

using qfleet::Param;

qfleet::Circuit noisy() {
  qfleet::Circuit c(3);
  c.angle_embedding({0, 1, 2}, qfleet::Rotation::Y).strongly_entangling_layers({0, 1, 2}, 2);
  c.channel("Depolarizing", {0}, {Param::weight(18, 0.1)}).channel("TwoQubitDepolarizing", {1, 2}, {0.05});
  c.channel("ThermalRelaxation", {1}, {0.05, 40.0, 30.0, Param::input(0, 2.0)});
  c.kraus({2}, {{1, 0, 0, 0.8}, {0, 0.6, 0, 0}});
  c.readout_error(0, 0.03, 0.06).expval("Z0 X2").probs({2, 0}).purity();
  return c;
}

template <class R>
void compare(std::size_t B, bool per_sample) {
  qfleet::CompileOptions gpu, cpu;
  gpu.device = qfleet::Device::cuda;
  gpu.precision = cpu.precision = std::is_same_v<R, float> ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::Circuit c = noisy();
  const qfleet::Program pg = qfleet::compile(c, gpu), pc = qfleet::compile(c, cpu);
  ASSERT_GE(pg.cuda_device(), 0);
  std::mt19937_64 rng(B);
  ref::Batch b = ref::random_batch(rng, B, pc.n_inputs(), pc.n_weights(), per_sample, 0.1, 0.9);
  // weight 18 drives the depolarizing probability 0.1 w: w in [0, pi] keeps it in [0, 1]
  // (the layers' weights 0..17 stay in [-pi, pi]); its first run on a GPU drew a negative one
  const std::size_t nw = std::size_t(pc.n_weights());
  for (std::size_t s = 0; s < (per_sample ? B : 1); ++s) b.w[s * nw + 18] = std::abs(b.w[s * nw + 18]);
  const double tol = std::is_same_v<R, float> ? 1e-4 : 1e-11;
  const auto og = ref::q_forward<R>(pg, b), oc = ref::q_forward<R>(pc, b);
  for (std::size_t i = 0; i < oc.size(); ++i) ASSERT_NEAR(og[i], oc[i], tol) << "output " << i << " B " << B;
  const std::vector<double> cot = ref::uniform_vec(rng, B * std::size_t(pc.n_outputs()), -1, 1);
  const auto gg = ref::q_vjp<R>(pg, b, cot, true), gc = ref::q_vjp<R>(pc, b, cot, true);
  for (std::size_t i = 0; i < gc.gi.size(); ++i) ASSERT_NEAR(gg.gi[i], gc.gi[i], 10 * tol) << "grad input " << i;
  for (std::size_t i = 0; i < gc.gw.size(); ++i) ASSERT_NEAR(gg.gw[i], gc.gw[i], 10 * tol * B) << "grad weight " << i;
  const ref::Run<R> run(b);
  std::vector<std::complex<R>> rg(B * 64), rc(B * 64);
  pg.density_matrices<R>(run.args(B), rg);
  pc.density_matrices<R>(run.args(B), rc);
  for (std::size_t i = 0; i < rc.size(); ++i) ASSERT_LT(std::abs(rg[i] - rc[i]), tol) << "rho " << i;
  std::vector<std::uint64_t> sg(B * 64), sc(B * 64);
  pg.sample<R>(run.args(B), {0, 2}, 64, 5, sg);
  pc.sample<R>(run.args(B), {0, 2}, 64, 5, sc);
  if (std::is_same_v<R, double>) {
    EXPECT_EQ(sg, sc);  // same probabilities to 1e-11, same streams
  }
}

// compare() at each batch size, with shared and per-sample weights, in both precisions.
void compare_batches(std::initializer_list<std::size_t> sizes) {
  for (std::size_t B : sizes) {
    for (bool per_sample : {false, true}) {
      compare<double>(B, per_sample);
      compare<float>(B, per_sample);
    }
  }
}

TEST(DmCuda, MatchesTheCpuExecutor) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible; the density-matrix group body the GPU runs is tested on the CPU by "
                    "DmGroupBody.*";
  }
  compare_batches({1, 5, 33, 257, 2000});
}

// Every block size QFLEET_DM_CUDA_THREADS may pin (the automatic choice gives this
// 3-qubit circuit 32 threads: 64 amplitude pairs), the same results; a size it does not
// name is a clear error.
TEST(DmCuda, EveryPinnedBlockSizeMatchesTheCpuExecutor) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible; the density-matrix group body the GPU runs is tested on the CPU by "
                    "DmGroupBody.* (groups of any size)";
  }
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  const qfleet::Program p = qfleet::compile(noisy(), o);
  for (const char* threads : {"32", "64", "128", "256"}) {
    setenv("QFLEET_DM_CUDA_THREADS", threads, 1);
    const std::string shape = p.execution(257, true);
    EXPECT_NE(shape.find(std::string("a block of ") + threads + " threads per sample"), std::string::npos) << shape;
    SCOPED_TRACE(std::string("QFLEET_DM_CUDA_THREADS=") + threads);
    compare_batches({5, 257});
  }
  setenv("QFLEET_DM_CUDA_THREADS", "48", 1);
  EXPECT_QFLEET_ERROR((void)p.execution(10, true), "QFLEET_DM_CUDA_THREADS='48'",
                      "expected 32, 64, 128, 256 or automatic");
  unsetenv("QFLEET_DM_CUDA_THREADS");
}

TEST(DmCuda, AmplitudeEmbeddingStaysOnTheCpu) {
  qfleet::Circuit c(2);
  c.amplitude_embedding({0, 1}, 4, 0, true).channel("Depolarizing", {0}, {0.1}).expval("Z0");
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  const std::string e = qfleet_test::error_of([&] { qfleet::compile(c, o); });
  // The cuda density-matrix row refuses it (its body starts from |0...0><0...0|),
  // GPU or not; a build without the cuda backend has no such row to ask.
  EXPECT_NE(e.find(qfleet::built_with_cuda() ? "run on the cpu only" : "no CUDA backend"), std::string::npos) << e;
  o.device = qfleet::Device::automatic;
  EXPECT_EQ(qfleet::compile(c, o).cuda_device(), -1);
}

TEST(DmCuda, WithoutAGpuCudaIsAClearErrorAndAutomaticIsTheCpu) {
  if (qfleet::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible; DmCuda.MatchesTheCpuExecutor runs";
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  const std::string e = qfleet_test::error_of([&] { qfleet::compile(noisy(), o); });
  EXPECT_TRUE(e.find("no CUDA device is visible") != std::string::npos || e.find("no CUDA backend") != std::string::npos)
      << e;
  o.device = qfleet::Device::automatic;
  const qfleet::Program p = qfleet::compile(noisy(), o);
  EXPECT_EQ(p.cuda_device(), -1);
  EXPECT_EQ(p.execution(100, true).rfind("cpu ", 0), 0u) << p.execution(100, true);
}

}  // namespace
