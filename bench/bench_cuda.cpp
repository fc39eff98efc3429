// Benchmarks of the cuda circuit backend (Google Benchmark, GPU time from CUDA
// events; device buffers; one call = one kernel launch). Run on a machine with a
// GPU:
//   build/bench/bench_cuda --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Workloads:
//   Target/*  the reference pass: 10 qubits, 30 gates (RY(input) on every
//             wire, a CNOT ring, RZ(weight) on every wire), <Z_0>, batch 100;
//   Layer/*   the hybrid classifier's layer (AngleEmbedding + 3 StronglyEntanglingLayers,
//             <Z_i> on every wire) for n = 2..16 and batch 1..10^6, forward and
//             forward+backward, complex64 and complex128.
// Counter gates/s = batch x gate applications per second (the backward counts its
// two adjoint applications per gate, like bench_circuits). Without a GPU it says
// so and exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <qfleet/qfleet.hpp>

namespace {

qfleet::Circuit target_circuit() {
  qfleet::Circuit c(10);
  for (int w = 0; w < 10; ++w) c.add("RY", {w}, {qfleet::Param::input(w)});
  for (int w = 0; w < 10; ++w) c.add("CNOT", {w, (w + 1) % 10});
  for (int w = 0; w < 10; ++w) c.add("RZ", {w}, {qfleet::Param::weight(w)});
  c.expval("Z0");
  return c;
}

qfleet::Circuit layer_circuit(int n) {
  qfleet::Circuit c(n);
  std::vector<int> wires;
  for (int i = 0; i < n; ++i) wires.push_back(i);
  c.angle_embedding(wires, qfleet::Rotation::X).strongly_entangling_layers(wires, 3);
  for (int i = 0; i < n; ++i) {
    std::string word = "Z";  // not "Z" + to_string(i): GCC 12 -Wrestrict false positive
    word += std::to_string(i);
    c.expval(word);
  }
  return c;
}

template <class R>
struct DeviceBuffer {
  R* p = nullptr;
  explicit DeviceBuffer(std::size_t n, R fill = R(0)) {
    if (cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(R)) != cudaSuccess) throw std::bad_alloc();
    std::vector<R> h(n, fill);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : h) v = fill == R(0) ? R(0) : static_cast<R>(u(rng));
    cudaMemcpy(p, h.data(), n * sizeof(R), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <class R>
void run(benchmark::State& st, const qfleet::Circuit& c, std::size_t B, bool backward) {
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  o.precision = sizeof(R) == 4 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::Program p = qfleet::compile(c, o);
  const std::size_t ni = p.n_inputs(), nw = p.n_weights(), K = p.n_outputs();
  DeviceBuffer<R> x(B * ni, R(1)), w(nw, R(1)), out(B * K), cot(B * K, R(1)), gx(B * ni), gw(nw);
  qfleet::BatchArgs<R> a;
  a.batch = B;
  a.inputs = {x.p, B * ni};
  a.weights = {w.p, nw};
  cudaStream_t s;
  cudaStreamCreate(&s);
  qfleet::set_cuda_stream(s);
  auto call = [&] {
    if (backward) {
      p.vjp<R>(a, {cot.p, B * K}, qfleet::Gradients<R>{{gx.p, B * ni}, {gw.p, nw}}, {out.p, B * K});
    } else {
      p.forward<R>(a, {out.p, B * K});
    }
  };
  call();
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto _ : st) {
    cudaEventRecord(e0, s);
    call();
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    st.SetIterationTime(ms * 1e-3);
  }
  qfleet::set_cuda_stream(nullptr);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  const double gates = double(c.operations().size()) * (backward ? 3.0 : 1.0);
  st.counters["gates/s"] = benchmark::Counter(gates * double(B), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(p.execution(B, backward));
}

void register_all() {
  const qfleet::Circuit t = target_circuit();
  for (bool bwd : {false, true}) {
    for (int prec : {64, 128}) {
      const std::string name = std::string("Target/n10_g30_B100/") + (bwd ? "fwd+bwd/" : "fwd/") + "c" + std::to_string(prec);
      benchmark::RegisterBenchmark(name.c_str(), [t, bwd, prec](benchmark::State& st) {
        if (prec == 64) {
          run<float>(st, t, 100, bwd);
        } else {
          run<double>(st, t, 100, bwd);
        }
      })->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
  }
  for (int n : {2, 4, 6, 8, 10, 12, 14, 16}) {
    const qfleet::Circuit c = layer_circuit(n);
    for (std::size_t B : {std::size_t{1}, std::size_t{100}, std::size_t{10000}, std::size_t{1000000}}) {
      // Keep the states of one call under ~8 GiB.
      if (double(B) * std::ldexp(32.0, n) > 8.0 * (1u << 30)) continue;
      for (bool bwd : {false, true}) {
        for (int prec : {64, 128}) {
          const std::string name = "Layer/n" + std::to_string(n) + "/B" + std::to_string(B) +
                                   (bwd ? "/fwd+bwd/c" : "/fwd/c") + std::to_string(prec);
          benchmark::RegisterBenchmark(name.c_str(), [c, B, bwd, prec](benchmark::State& st) {
            if (prec == 64) {
              run<float>(st, c, B, bwd);
            } else {
              run<double>(st, c, B, bwd);
            }
          })->UseManualTime()->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (qfleet::cuda_device_count() == 0) {
    std::printf("bench_cuda: no CUDA device visible; nothing to measure\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
