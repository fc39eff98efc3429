// Measures this machine's double-precision peak: independent FMA chains on every
// core, in the widest vectors the CPU supports (AVX-512, else AVX2). The circuit
// benchmarks report achieved FLOP/s as a fraction of this figure
// (QFLEET_PEAK_GFLOPS). Run: build/bench/peak_flops
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr int kChains = 12;  // enough independent FMAs to cover latency x throughput
constexpr long kIters = 20'000'000;

__attribute__((target("avx512f"))) double run_avx512() {
  double sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    __m512d acc[kChains];
    const __m512d a = _mm512_set1_pd(0.999999), b = _mm512_set1_pd(1e-7);
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_pd(c);
    for (long i = 0; i < kIters; ++i) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_pd(acc[c], a, b);
    }
    for (int c = 0; c < kChains; ++c) sink += _mm512_reduce_add_pd(acc[c]);
  }
  return sink;
}

__attribute__((target("avx2,fma"))) double run_avx2() {
  double sink = 0;
#pragma omp parallel reduction(+ : sink)
  {
    __m256d acc[kChains];
    const __m256d a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-7);
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_pd(c);
    for (long i = 0; i < kIters; ++i) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_pd(acc[c], a, b);
    }
    alignas(32) double t[4];
    for (int c = 0; c < kChains; ++c) {
      _mm256_store_pd(t, acc[c]);
      sink += t[0] + t[1] + t[2] + t[3];
    }
  }
  return sink;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma")) {
    std::printf("no FMA unit detected; peak not measured\n");
    return 0;
  }
  const int width = avx512 ? 8 : 4;
  const int threads = omp_get_max_threads();
  double best = 0, sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += avx512 ? run_avx512() : run_avx2();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 2.0 * width * kChains * double(kIters) * threads;
    if (flops / s > best) best = flops / s;
  }
  std::printf("peak_gflops=%.1f  (%s FMA, %d threads, best of 3; checksum %g)\n", best * 1e-9,
              avx512 ? "AVX-512" : "AVX2", threads, sink);
  return 0;
}
