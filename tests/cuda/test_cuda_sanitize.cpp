// Small cases for compute-sanitizer (scripts/gpu_check.sh runs memcheck, racecheck,
// initcheck and synccheck over SanitizerCases.*): every kernel family and launch
// shape once, at batch sizes 1 and 33 (one sample, and one past a warp), forward and
// vjp, both precisions - a few seconds under the tools, where the full GPU tests
// run for minutes. Each case also checks that the GPU agrees with the cpu backend,
// so a case that runs but computes nothing fails. Skips where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qfleet/qfleet.hpp"

namespace {

constexpr std::size_t kBatches[] = {1, 33};

#define QFLEET_REQUIRE_GPU_HERE()                                                                   \
  if (qfleet::cuda_device_count() == 0) {                                                           \
    GTEST_SKIP() << "no CUDA device visible: these cases exist to run under compute-sanitizer on a GPU"; \
  }

std::vector<double> draws(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> v(n);
  for (auto& t : v) t = u(rng);
  return v;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Forward and vjp of `c` on the cpu and, with shape pinned, on cuda (host data: the
// staged path), compared.
void circuit_case(const qfleet::Circuit& c, const char* shape, std::size_t B, std::uint64_t seed) {
  if (shape != nullptr) setenv("QFLEET_CUDA_SHAPE", shape, 1);
  qfleet::CompileOptions o;
  const qfleet::Program cpu = qfleet::compile(c, o);
  o.device = qfleet::Device::cuda;
  const qfleet::Program gpu = qfleet::compile(c, o);
  std::mt19937_64 rng(seed);
  const std::vector<double> x = draws(rng, B * std::size_t(cpu.n_inputs())), w = draws(rng, std::size_t(cpu.n_weights()));
  const std::vector<double> cot = draws(rng, B * std::size_t(cpu.n_outputs()));
  qfleet::BatchArgs<double> a;
  a.batch = B;
  a.inputs = x;
  a.weights = w;
  std::vector<double> out[2], gi[2], gw[2];
  for (int k = 0; k < 2; ++k) {
    const qfleet::Program& p = k ? gpu : cpu;
    out[k].assign(B * std::size_t(p.n_outputs()), 0.0);
    gi[k].assign(x.size(), 0.0);
    gw[k].assign(w.size(), 0.0);
    p.vjp<double>(a, cot, qfleet::Gradients<double>{gi[k], gw[k]}, out[k]);
  }
  std::vector<double> fwd(out[0].size());
  gpu.forward<double>(a, fwd);
  if (shape != nullptr) unsetenv("QFLEET_CUDA_SHAPE");
  EXPECT_LT(max_diff(out[1], out[0]), 1e-10) << gpu.execution(B, true);
  EXPECT_LT(max_diff(fwd, out[0]), 1e-10) << gpu.execution(B, false);
  EXPECT_LT(max_diff(gi[1], gi[0]), 1e-9) << "input gradients";
  EXPECT_LT(max_diff(gw[1], gw[0]), 1e-9 * double(B)) << "weight gradients (summed over the batch)";
}

qfleet::Circuit layer(int n) {
  qfleet::Circuit c(n);
  std::vector<int> wires;
  for (int i = 0; i < n; ++i) wires.push_back(i);
  c.angle_embedding(wires, qfleet::Rotation::Y).strongly_entangling_layers(wires, 1);
  c.expval("Z0").probs({0, n - 1});
  return c;
}

TEST(SanitizerCases, EveryCircuitLaunchShape) {
  QFLEET_REQUIRE_GPU_HERE();
  for (const char* shape : {"registers", "warp", "block", "interleaved", "global"}) {
    for (std::size_t B : kBatches) {
      SCOPED_TRACE(std::string(shape) + ", B = " + std::to_string(B));
      circuit_case(layer(4), shape, B, 7 + B);
    }
  }
}

TEST(SanitizerCases, DensityMatrices) {
  QFLEET_REQUIRE_GPU_HERE();
  qfleet::Circuit c = layer(3);
  c.channel("Depolarizing", {0}, {0.05}).channel("AmplitudeDamping", {2}, {0.1});
  for (std::size_t B : kBatches) {
    SCOPED_TRACE("B = " + std::to_string(B));
    circuit_case(c, nullptr, B, 11 + B);
  }
}

// A driven, damped qubit: every open-system launch shape (QFLEET_OPEN_CUDA_SHAPE).
TEST(SanitizerCases, EveryOpenSystemLaunchShape) {
  QFLEET_REQUIRE_GPU_HERE();
  using C = std::complex<double>;
  qfleet::OpenSystem sys(2);
  sys.drift({C(0), C(0), C(0), C(0.3)})
      .control({C(0), C(1), C(1), C(0)})
      .control({C(0), C(0, -1), C(0, 1), C(0)})
      .jump({C(0), C(1), C(0), C(0)})
      .segments(6, 1.0)
      .initial_state({C(1), C(0)})
      .target_state({C(0), C(1)});
  qfleet::OpenCompileOptions o;
  const qfleet::OpenProgram cpu = qfleet::compile(sys, o);
  o.device = qfleet::Device::cuda;
  const qfleet::OpenProgram gpu = qfleet::compile(sys, o);
  for (const char* shape : {"thread", "warp", "block"}) {
    for (std::size_t B : kBatches) {
      SCOPED_TRACE(std::string(shape) + ", B = " + std::to_string(B));
      setenv("QFLEET_OPEN_CUDA_SHAPE", shape, 1);
      std::mt19937_64 rng(13 + B);
      const std::size_t na = 6 * 2;
      const std::vector<double> amps = draws(rng, B * na), rates = {0.05};
      const std::vector<double> cot(B, 1.0);
      qfleet::TaskArgs<double> a;
      a.batch = B;
      a.amplitudes = amps;
      a.rates = rates;
      std::vector<double> fid[2], ga[2], gr[2];
      for (int k = 0; k < 2; ++k) {
        fid[k].assign(B, 0.0);
        ga[k].assign(B * na, 0.0);
        gr[k].assign(1, 0.0);
        qfleet::TaskOutputs<double> out;
        out.fidelity = fid[k];
        qfleet::TaskGradients<double> g;
        g.amplitudes = ga[k];
        g.rates = gr[k];
        (k ? gpu : cpu).vjp<double>(a, cot, {}, g, out);
      }
      unsetenv("QFLEET_OPEN_CUDA_SHAPE");
      EXPECT_LT(max_diff(fid[1], fid[0]), 1e-10) << gpu.execution(B, true);
      EXPECT_LT(max_diff(ga[1], ga[0]), 1e-9);
      EXPECT_LT(max_diff(gr[1], gr[0]), 1e-9 * double(B));
    }
  }
}

}  // namespace
