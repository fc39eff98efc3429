// The PyTorch adapter's cost from C++ (LibTorch): one op call at B = 1 next to
// the engine's own time, and the hybrid-classifier layer (4 qubits, 3 layers,
// B = 64) forward + backward through qfleet::nn::QuantumLayer and autograd, beside the
// engine's fused call for the same work and the two calls the layer makes (forward
// keeping the final states, then vjp_saved).
//   build/bench/bench_torch --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "qfleet/torch.hpp"

namespace {

qfleet::Circuit classifier() {
  qfleet::Circuit c(4);
  c.angle_embedding({0, 1, 2, 3}).strongly_entangling_layers({0, 1, 2, 3}, 3);
  for (const char* w : {"Z0", "Z1", "Z2", "Z3"}) c.expval(w);
  return c;
}

void BM_Engine_Forward_B1(benchmark::State& st) {
  const auto prog = qfleet::compile(classifier());
  std::vector<double> x(4, 0.3), w(36, 0.2), out(4);
  for (auto _ : st) {
    prog.forward<double>({1, x, w}, out);
    benchmark::DoNotOptimize(out.data());
  }
}
void BM_TorchOp_Forward_B1(benchmark::State& st) {
  qfleet::nn::QuantumLayer layer(classifier());
  const auto x = torch::full({1, 4}, 0.3, torch::kFloat64);
  torch::NoGradGuard g;
  for (auto _ : st) benchmark::DoNotOptimize(layer->forward(x));
}
void BM_Engine_FwdBwd_B1(benchmark::State& st) {
  const auto prog = qfleet::compile(classifier());
  std::vector<double> x(4, 0.3), w(36, 0.2), cot(4, 1.0), gx(4), gw(36);
  for (auto _ : st) {
    prog.vjp<double>({1, x, w}, cot, {gx, gw});
    benchmark::DoNotOptimize(gw.data());
  }
}
void BM_TorchOp_FwdBwd_B1(benchmark::State& st) {
  qfleet::nn::QuantumLayer layer(classifier());
  const auto x = torch::full({1, 4}, 0.3, torch::kFloat64).requires_grad_();
  for (auto _ : st) {
    layer->forward(x).sum().backward();
    benchmark::DoNotOptimize(layer->weight.grad());
  }
}
// The layer's work at B = 64 as engine arguments (outputs, input and weight gradients).
struct LayerCall {
  std::vector<double> x = std::vector<double>(64 * 4), w = std::vector<double>(36, 0.2),
                      cot = std::vector<double>(64 * 4, 1.0), gx = std::vector<double>(64 * 4),
                      gw = std::vector<double>(36), out = std::vector<double>(64 * 4);
  LayerCall() {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01 * double(i % 97);
  }
};
// The engine's fused call for the layer's work (one forward + reverse sweep): the layer's
// excess over it is the adapter plus autograd.
void BM_Engine_FwdBwd_B64(benchmark::State& st) {
  const auto prog = qfleet::compile(classifier());
  LayerCall a;
  for (auto _ : st) {
    prog.vjp<double>({64, a.x, a.w}, a.cot, {a.gx, a.gw}, a.out);
    benchmark::DoNotOptimize(a.gw.data());
  }
}
// What the layer runs: the forward keeping the final states, then the reverse sweep alone.
struct SavedCall {
  qfleet::Program prog = qfleet::compile(classifier());
  LayerCall a;
  std::vector<double> saved = std::vector<double>(prog.saved_size(64));
  void forward() { prog.forward<double>({64, a.x, a.w}, a.out, saved); }
  void backward() { prog.vjp_saved<double>({64, a.x, a.w}, saved, a.cot, {a.gx, a.gw}); }
};
void BM_Engine_SavedFwdBwd_B64(benchmark::State& st) {
  SavedCall c;
  for (auto _ : st) {
    c.forward();
    c.backward();
    benchmark::DoNotOptimize(c.a.gw.data());
  }
}
// The two calls apart: the forward keeping the states (B = 64 is under the engine's
// threshold for a second thread, kMinFlopsPerThread) and the reverse sweep alone.
void BM_Engine_SavingForward_B64(benchmark::State& st) {
  SavedCall c;
  for (auto _ : st) {
    c.forward();
    benchmark::DoNotOptimize(c.saved.data());
  }
}
void BM_Engine_VjpSaved_B64(benchmark::State& st) {
  SavedCall c;
  c.forward();
  for (auto _ : st) {
    c.backward();
    benchmark::DoNotOptimize(c.a.gw.data());
  }
}
void BM_TorchLayer_FwdBwd_B64(benchmark::State& st) {
  qfleet::nn::QuantumLayer layer(classifier());
  const auto x = torch::rand({64, 4}, torch::kFloat64).requires_grad_();
  for (auto _ : st) {
    layer->forward(x).sum().backward();
    benchmark::DoNotOptimize(layer->weight.grad());
  }
}

BENCHMARK(BM_Engine_Forward_B1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchOp_Forward_B1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Engine_FwdBwd_B1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchOp_FwdBwd_B1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Engine_FwdBwd_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Engine_SavedFwdBwd_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Engine_SavingForward_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Engine_VjpSaved_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchLayer_FwdBwd_B64)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
