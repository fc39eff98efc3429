// Circuit-engine benchmarks (Google Benchmark). Run:
//   build/bench/bench_circuits --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Counters: gates/s = gate applications per second (batch x gates, backward
// counts the two adjoint applications and the derivative sandwiches as gates);
// frac_peak = achieved FLOP/s over the machine's double-precision peak given by
// QFLEET_PEAK_GFLOPS (see docs/benchmarks.md for how the peak is computed).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>
#include <qfleet/qfleet.hpp>

namespace {

using qfleet::BatchArgs;
using qfleet::Circuit;

// The hybrid classifier's quantum layer: AngleEmbedding(RX) of n inputs,
// L StronglyEntanglingLayers, <Z_i> on every wire.
Circuit classifier_layer(int n, int layers) {
  Circuit c(n);
  std::vector<int> wires;
  for (int i = 0; i < n; ++i) wires.push_back(i);
  c.angle_embedding(wires, qfleet::Rotation::X);
  c.strongly_entangling_layers(wires, layers);
  for (int i = 0; i < n; ++i) {
    std::string word = "Z";  // not "Z" + to_string(i): GCC 12 -Wrestrict false positive (PR105329)
    word += std::to_string(i);
    c.expval(word);
  }
  return c;
}

// bench/compare/noisy.py's workload: the classifier with Depolarizing(0.01) on every
// wire of every gate (40 channels at n = 4) and a readout error of 0.02 on each wire.
Circuit noisy_classifier_layer(int n, int layers) {
  const Circuit clean = classifier_layer(n, layers);
  Circuit c(n);
  for (const auto& op : clean.operations()) {
    c.add(op.gate, op.wires, op.params);
    for (int w : op.wires) c.channel("Depolarizing", {w}, {qfleet::Param(0.01)});
  }
  for (int i = 0; i < n; ++i) {
    c.readout_error(i, 0.02, 0.02);
    std::string word = "Z";
    word += std::to_string(i);
    c.expval(word);
  }
  return c;
}

double peak_gflops() {
  const char* e = std::getenv("QFLEET_PEAK_GFLOPS");
  return e ? std::atof(e) : 0.0;
}

// Real FLOPs of one application of a dense k-qubit block to a 2^n state:
// 2^(n-k) groups x D^2 complex multiply-adds (8 flops each), D = 2^k. The reverse
// sweep's pass per gate un-applies psi and lam and, for a gate with parameters,
// accumulates the block's outer product (D^2 multiply-adds per group); each
// parameter's D x D trace is per sample, not per group, and is not counted. X blocks
// (CNOT, Toffoli) count as dense blocks, though tiles of samples swap them.
double flops_of(const Circuit& c, bool backward) {
  double f = 0;
  const double dim = std::ldexp(1.0, c.n_qubits());
  for (const auto& op : c.operations()) {
    const auto& info = qfleet::gate_info(op.gate);
    const int k = op.wires.empty() ? 1 : static_cast<int>(op.wires.size());
    const int kt = k - info.controls;
    const double groups = dim / std::ldexp(1.0, k);
    const double per = groups * std::ldexp(1.0, 2 * kt) * 8.0;
    f += per;
    if (backward) f += 2 * per + (info.params > 0 ? per : 0);  // psi and lam undone, the outer product
  }
  return f;
}

// saved: the backward as autograd runs it, two calls (forward keeping the final
// states, then Program::vjp_saved) instead of one fused vjp.
template <class R>
void run_layer(benchmark::State& st, bool backward, qfleet::Precision prec, bool saved = false, bool noisy = false) {
  const int n = static_cast<int>(st.range(0));
  const std::size_t B = static_cast<std::size_t>(st.range(1));
  const int layers = 3;
  const Circuit c = noisy ? noisy_classifier_layer(n, layers) : classifier_layer(n, layers);
  qfleet::CompileOptions opt;
  opt.precision = prec;
  const auto prog = qfleet::compile(c, opt);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-3.1, 3.1);
  std::vector<R> x(B * n), w(prog.n_weights()), out(B * n), cot(B * n, R(1)), gx(B * n), gw(w.size()),
      states(prog.saved_size(B));
  for (auto& v : x) v = static_cast<R>(u(rng));
  for (auto& v : w) v = static_cast<R>(u(rng));
  const BatchArgs<R> args{B, x, w};
  for (auto _ : st) {
    if (backward && saved) {
      prog.forward(args, std::span<R>(out), std::span<R>(states));
      prog.vjp_saved(args, std::span<const R>(states), std::span<const R>(cot), qfleet::Gradients<R>{gx, gw});
    } else if (backward) {
      prog.vjp(args, std::span<const R>(cot), qfleet::Gradients<R>{gx, gw}, std::span<R>(out));
    } else {
      prog.forward(args, std::span<R>(out));
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double gates = static_cast<double>(c.operations().size()) * B * (backward ? 3.0 : 1.0);
  st.counters["gates/s"] = benchmark::Counter(gates, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(prog.isa());
  if (noisy) return;  // flops_of counts state-vector blocks
  const double flops = flops_of(c, backward) * B;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (peak_gflops() > 0) {
    st.counters["frac_peak"] =
        benchmark::Counter(flops * 1e-9 / peak_gflops(), benchmark::Counter::kIsIterationInvariantRate);
  }
}

// The headline workload, the hybrid classifier's layer: n = 4, B = 64, forward + backward,
// complex128.
void BM_Classifier_FwdBwd_c128(benchmark::State& st) { run_layer<double>(st, true, qfleet::Precision::complex128); }
void BM_Classifier_Fwd_c128(benchmark::State& st) { run_layer<double>(st, false, qfleet::Precision::complex128); }
void BM_Classifier_SavedFwdBwd_c128(benchmark::State& st) {
  run_layer<double>(st, true, qfleet::Precision::complex128, true);
}
void BM_NoisyClassifier_FwdBwd_c128(benchmark::State& st) {
  run_layer<double>(st, true, qfleet::Precision::complex128, false, true);
}
void BM_NoisyClassifier_Fwd_c128(benchmark::State& st) {
  run_layer<double>(st, false, qfleet::Precision::complex128, false, true);
}
void BM_Classifier_FwdBwd_c64(benchmark::State& st) { run_layer<float>(st, true, qfleet::Precision::complex64); }
void BM_Classifier_Fwd_c64(benchmark::State& st) { run_layer<float>(st, false, qfleet::Precision::complex64); }

BENCHMARK(BM_Classifier_FwdBwd_c128)->Args({4, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Classifier_Fwd_c128)->Args({4, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Classifier_SavedFwdBwd_c128)->Args({4, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_NoisyClassifier_FwdBwd_c128)->Args({4, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_NoisyClassifier_Fwd_c128)->Args({4, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();

void scaling(benchmark::internal::Benchmark* b) {
  for (int n : {2, 4, 6, 8, 10, 12, 14, 16, 18, 20}) b->Args({n, n <= 12 ? 256 : (n <= 16 ? 16 : 1)});
  for (int B : {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}) b->Args({4, B});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_Classifier_Fwd_c128)->Name("Scaling/Fwd_c128")->Apply(scaling);
BENCHMARK(BM_Classifier_FwdBwd_c128)->Name("Scaling/FwdBwd_c128")->Apply(scaling);
BENCHMARK(BM_Classifier_Fwd_c64)->Name("Scaling/Fwd_c64")->Apply(scaling);
BENCHMARK(BM_Classifier_FwdBwd_c64)->Name("Scaling/FwdBwd_c64")->Apply(scaling);

}  // namespace

BENCHMARK_MAIN();
