// The PyTorch adapter's cost from C++ (LibTorch): one op call at B = 1 next to
// the engine's own time, and the hybrid-classifier layer (4 qubits, 3 layers,
// B = 64) forward + backward through qfleet::nn::QuantumLayer and autograd, beside the
// engine's fused call for the same work and the two calls the layer makes (forward
// keeping the final states, then vjp_saved). Then the open-system layer on the
// meta-control app's default problem (one qubit, 60 segments, exact solver, B = 64)
// beside the engine's fused vjp, and the least LibTorch's autograd costs for a
// builtin op at B = 64 ((x * v).sum().backward()).
//   build/bench/bench_torch --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <complex>
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

// The meta-control app's default problem (qubit_x): X/2 and Y/2 controls, relaxation
// and dephasing, 60 segments, average gate fidelity to X (bench/micro/torch_layer.py's open case).
qfleet::OpenSystem qubit_x() {
  using C = std::complex<double>;
  const double r = 0.7071067811865476;
  qfleet::OpenSystem s(2);
  s.control({0, 0.5, 0.5, 0}).control({0, C(0, -0.5), C(0, 0.5), 0}).jump({0, 1, 0, 0}).jump({r, 0, 0, -r});
  s.segments(60, 1.0).propagate_gate().target_unitary({0, 1, 1, 0});
  return s;
}
struct OpenBatch {
  std::vector<double> a = std::vector<double>(64 * 60 * 2), rates = std::vector<double>(64 * 2);
  OpenBatch() {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.02 * double(i % 97) - 1;
    for (std::size_t i = 0; i < rates.size(); ++i) rates[i] = 0.001 * double(i % 89);
  }
};
void BM_Engine_OpenFusedVjp_B64(benchmark::State& st) {
  const auto prog = qfleet::compile(qubit_x());
  OpenBatch b;
  std::vector<double> ones(64, 1.0), fid(64), ga(b.a.size()), gr(b.rates.size());
  qfleet::TaskOutputs<double> out;
  out.fidelity = fid;
  for (auto _ : st) {
    prog.vjp<double>(qfleet::TaskArgs<double>{64, b.a, {}, b.rates, {}}, ones, {},
                     qfleet::TaskGradients<double>{ga, {}, gr}, out);
    benchmark::DoNotOptimize(ga.data());
  }
}
// The open layer with B = 64 per-task pulses and rates that need gradients.
struct OpenLayerCall {
  qfleet::nn::OpenSystemLayer layer{qubit_x()};
  OpenBatch b;
  torch::Tensor a = torch::tensor(b.a, torch::kFloat64).view({64, 60, 2}).requires_grad_();
  torch::Tensor rates = torch::tensor(b.rates, torch::kFloat64).view({64, 2}).requires_grad_();
  void clear_grads() {
    a.mutable_grad() = torch::Tensor();
    rates.mutable_grad() = torch::Tensor();
  }
  torch::Tensor forward() {
    clear_grads();
    return layer->forward(a, rates);
  }
};
void BM_TorchOpenLayer_FwdBwd_B64(benchmark::State& st) {
  OpenLayerCall c;
  for (auto _ : st) {
    c.forward().sum().backward();
    benchmark::DoNotOptimize(c.a.grad());
  }
}
// The open layer's backward alone (manual time: sum, backward and the gradients'
// accumulation after each forward), where the engine's work is all in the forward (per-task
// gradient rows): what autograd and the adapter add, run just after the engine's call.
// With `again`, the same backward a second time at once (retain_graph on the first): the
// same work with the caches warm.
void open_layer_backward(benchmark::State& st, bool again) {
  OpenLayerCall c;
  for (auto _ : st) {
    const auto fid = c.forward();
    if (again) {
      fid.sum().backward({}, true);
      c.clear_grads();
    }
    const auto t0 = std::chrono::steady_clock::now();
    fid.sum().backward();
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(c.a.grad());
  }
}
void BM_TorchOpenLayer_BackwardAlone_B64(benchmark::State& st) { open_layer_backward(st, false); }
void BM_TorchOpenLayer_BackwardAgain_B64(benchmark::State& st) { open_layer_backward(st, true); }
// The least autograd costs any layer: one builtin op on two tensors, one a leaf.
void BM_TorchBuiltin_FwdBwd_B64(benchmark::State& st) {
  const auto x = torch::rand({64, 4}, torch::kFloat64).requires_grad_();
  const auto v = torch::rand({64, 4}, torch::kFloat64);
  for (auto _ : st) {
    x.mutable_grad() = torch::Tensor();
    (x * v).sum().backward();
    benchmark::DoNotOptimize(x.grad());
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
BENCHMARK(BM_Engine_OpenFusedVjp_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchOpenLayer_FwdBwd_B64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchOpenLayer_BackwardAlone_B64)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchOpenLayer_BackwardAgain_B64)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TorchBuiltin_FwdBwd_B64)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
