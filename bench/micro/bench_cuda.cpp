// Benchmarks of the cuda circuit and open-system backends (Google Benchmark, GPU
// time from CUDA events; device buffers; one call = one kernel launch). Run on a
// machine with a GPU:
//   build/bench/bench_cuda --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Workloads:
//   Target/*  the reference pass of the GPU targets: 10 qubits, 30 gates (RY(input) on every
//             wire, a CNOT ring, RZ(weight) on every wire), <Z_0>, batch 100;
//   Layer/*   the hybrid classifier's layer (AngleEmbedding + 3 StronglyEntanglingLayers,
//             <Z_i> on every wire) for n = 2..16 and batch 1..10^6, forward and
//             forward+backward, complex64 and complex128.
//   Open/*    the open-system backend: a driven, damped d-level ladder (d = 2, 4, 8,
//             16), 60 segments, two controls, one decay channel, exact solver,
//             B = 1..10^6 tasks (fewer for large d: a thread per task holds its
//             superoperators in global memory), forward and forward + gradient,
//             complex64 and complex128; the GPU target row is
//             Open/d2/B100000/fwd+grad/c64.
//   OpenShape/* the thread, tile8, tile16, warp and block launch shapes on the same problems.
//   Mixed/*   density matrices: the layer with a depolarizing channel on every wire.
//   MixedShape/*  the same at pinned block sizes (QFLEET_DM_CUDA_THREADS).
//   */cpu     the same workloads on qfleet's CPU backend with every core of the machine
//             (OpenMP's default; wall-clock time, host buffers): the same machine's CPU
//             beside its GPU in one run (docs/benchmarks.md, "Circuits on a GPU"). They run
//             without a GPU too.
// Counter gates/s = batch x gate applications per second (the backward counts its
// two adjoint applications per gate, like bench_circuits). Without a GPU it says
// so and runs the */cpu rows alone.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <omp.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
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

// The Mixed/ workload: the layer with a depolarizing channel after it on every wire.
qfleet::Circuit mixed_circuit(int n) {
  qfleet::Circuit c = layer_circuit(n);
  for (int w = 0; w < n; ++w) c.channel("Depolarizing", {w}, {0.01});
  return c;
}

// A call's data: zeros, or (fill != 0) uniform in (-1, 1) from a fixed seed, the same
// values for the GPU's device buffers and the CPU rows' host buffers.
std::vector<double> host_values(std::size_t n, double fill) {
  std::vector<double> h(n, 0.0);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  if (fill != 0) {
    for (auto& v : h) v = u(rng);
  }
  return h;
}

template <class R>
std::vector<R> host_buffer(std::size_t n, double fill = 0) {
  const std::vector<double> h = host_values(n, fill);
  return std::vector<R>(h.begin(), h.end());
}

template <class R>
struct DeviceBuffer {
  R* p = nullptr;
  explicit DeviceBuffer(std::size_t n, R fill = R(0)) {
    if (cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(R)) != cudaSuccess) throw std::bad_alloc();
    const std::vector<R> h = host_buffer<R>(n, double(fill));
    cudaMemcpy(p, h.data(), n * sizeof(R), cudaMemcpyHostToDevice);
  }
  explicit DeviceBuffer(const std::vector<R>& h) {
    if (cudaMalloc(&p, std::max<std::size_t>(h.size(), 1) * sizeof(R)) != cudaSuccess) throw std::bad_alloc();
    cudaMemcpy(p, h.data(), h.size() * sizeof(R), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Times call() per iteration with CUDA events on stream s (after one warm call),
// then clears the thread's stream and destroys s.
template <class F>
void time_calls(benchmark::State& st, cudaStream_t s, F call) {
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
}

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
  time_calls(st, s, [&] {
    if (backward) {
      p.vjp<R>(a, {cot.p, B * K}, qfleet::Gradients<R>{{gx.p, B * ni}, {gw.p, nw}}, {out.p, B * K});
    } else {
      p.forward<R>(a, {out.p, B * K});
    }
  });
  const double gates = double(c.operations().size()) * (backward ? 3.0 : 1.0);
  st.counters["gates/s"] = benchmark::Counter(gates * double(B), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(p.execution(B, backward));
}

// A d-level ladder: H0 = sum_k k |k><k|, controls (a + a^dag) and i(a - a^dag),
// decay a, from |0> towards |1>, 60 segments over T = 3.
qfleet::OpenSystem ladder(int d) {
  using C = std::complex<double>;
  const std::size_t dd = std::size_t(d) * d;
  qfleet::ComplexMatrix h0(dd), x(dd), y(dd), a(dd);
  for (int k = 0; k < d; ++k) h0[std::size_t(k) * d + k] = C(0.1 * k);
  for (int k = 0; k + 1 < d; ++k) {
    const double s = std::sqrt(double(k + 1));
    a[std::size_t(k) * d + k + 1] = C(s);
    x[std::size_t(k) * d + k + 1] = x[std::size_t(k + 1) * d + k] = C(s);
    y[std::size_t(k) * d + k + 1] = C(0, -s);
    y[std::size_t(k + 1) * d + k] = C(0, s);
  }
  qfleet::ComplexVector psi0(d), target(d);
  psi0[0] = 1;
  target[1] = 1;
  qfleet::OpenSystem sys(d);
  sys.drift(h0).control(x).control(y).jump(a).segments(60, 3.0).initial_state(psi0).target_state(target);
  return sys;
}

template <class R>
void run_open(benchmark::State& st, int d, std::size_t B, bool grad) {
  qfleet::OpenCompileOptions o;
  o.device = qfleet::Device::cuda;
  o.precision = sizeof(R) == 4 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::OpenProgram p = qfleet::compile(ladder(d), o);
  const std::size_t na = 60 * 2;
  DeviceBuffer<R> amps(B * na, R(1)), rates(std::vector<R>{R(0.05)}), fid(B), cot(std::vector<R>(B, R(1)));
  DeviceBuffer<R> g_amps(B * na), g_rates(1);
  qfleet::TaskArgs<R> a;
  a.batch = B;
  a.amplitudes = {amps.p, B * na};
  a.rates = {rates.p, 1};
  qfleet::TaskOutputs<R> out;
  out.fidelity = {fid.p, B};
  qfleet::TaskGradients<R> g;
  g.amplitudes = {g_amps.p, B * na};
  g.rates = {g_rates.p, 1};
  cudaStream_t s;
  cudaStreamCreate(&s);
  qfleet::set_cuda_stream(s);
  time_calls(st, s, [&] {
    if (grad) {
      p.vjp<R>(a, std::span<const R>(cot.p, B), {}, g, out);
    } else {
      p.forward<R>(a, out);
    }
  });
  st.counters["tasks/s"] = benchmark::Counter(double(B), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(p.execution(B, grad));
}

// The same calls on the CPU backend, host buffers, wall-clock time, every core.
template <class R>
void run_cpu(benchmark::State& st, const qfleet::Circuit& c, std::size_t B, bool backward) {
  qfleet::CompileOptions o;
  o.precision = sizeof(R) == 4 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::Program p = qfleet::compile(c, o);
  const std::size_t ni = p.n_inputs(), nw = p.n_weights(), K = p.n_outputs();
  std::vector<R> x = host_buffer<R>(B * ni, 1), w = host_buffer<R>(nw, 1), out(B * K), cot = host_buffer<R>(B * K, 1),
                 gx(B * ni), gw(nw);
  qfleet::BatchArgs<R> a;
  a.batch = B;
  a.inputs = {x.data(), x.size()};
  a.weights = {w.data(), w.size()};
  for (auto _ : st) {
    if (backward) {
      p.vjp<R>(a, {cot.data(), cot.size()}, qfleet::Gradients<R>{{gx.data(), gx.size()}, {gw.data(), gw.size()}},
               {out.data(), out.size()});
    } else {
      p.forward<R>(a, {out.data(), out.size()});
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double gates = double(c.operations().size()) * (backward ? 3.0 : 1.0);
  st.counters["gates/s"] = benchmark::Counter(gates * double(B), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = omp_get_max_threads();
  st.SetLabel(p.execution(B, backward));
}

template <class R>
void run_open_cpu(benchmark::State& st, int d, std::size_t B) {
  qfleet::OpenCompileOptions o;
  o.precision = sizeof(R) == 4 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::OpenProgram p = qfleet::compile(ladder(d), o);
  const std::size_t na = 60 * 2;
  std::vector<R> amps = host_buffer<R>(B * na, 1), rates{R(0.05)}, fid(B), cot(B, R(1)), g_amps(B * na), g_rates(1);
  qfleet::TaskArgs<R> a;
  a.batch = B;
  a.amplitudes = {amps.data(), amps.size()};
  a.rates = {rates.data(), 1};
  qfleet::TaskOutputs<R> out;
  out.fidelity = {fid.data(), B};
  qfleet::TaskGradients<R> g;
  g.amplitudes = {g_amps.data(), g_amps.size()};
  g.rates = {g_rates.data(), 1};
  for (auto _ : st) {
    p.vjp<R>(a, std::span<const R>(cot.data(), B), {}, g, out);
    benchmark::DoNotOptimize(fid.data());
  }
  st.counters["tasks/s"] = benchmark::Counter(double(B), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = omp_get_max_threads();
  st.SetLabel(p.execution(B, true));
}

// The GPU targets' rows on the CPU, complex64, forward + gradient: Target, Layer/n4 (B 10^4 and
// 10^6), Layer/n10/B10000 (beside Shape/n10/B10000), Open/d2/B100000, Open/d4/B10000
// (beside OpenShape/d4), Mixed/n4/B10000.
void register_cpu() {
  const auto reg = [](const std::string& name, auto body) {
    benchmark::RegisterBenchmark(name.c_str(), body)->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  const qfleet::Circuit t = target_circuit();
  reg("Target/n10_g30_B100/fwd+bwd/c64/cpu", [t](benchmark::State& st) { run_cpu<float>(st, t, 100, true); });
  const qfleet::Circuit l4 = layer_circuit(4), l10 = layer_circuit(10);
  for (std::size_t B : {std::size_t{10000}, std::size_t{1000000}}) {
    reg("Layer/n4/B" + std::to_string(B) + "/fwd+bwd/c64/cpu",
        [l4, B](benchmark::State& st) { run_cpu<float>(st, l4, B, true); });
  }
  reg("Layer/n10/B10000/fwd+bwd/c64/cpu", [l10](benchmark::State& st) { run_cpu<float>(st, l10, 10000, true); });
  reg("Open/d2/B100000/fwd+grad/c64/cpu", [](benchmark::State& st) { run_open_cpu<float>(st, 2, 100000); });
  reg("Open/d4/B10000/fwd+grad/c64/cpu", [](benchmark::State& st) { run_open_cpu<float>(st, 4, 10000); });
  const qfleet::Circuit m4 = mixed_circuit(4);
  reg("Mixed/n4/B10000/fwd+bwd/c64/cpu", [m4](benchmark::State& st) { run_cpu<float>(st, m4, 10000, true); });
}

// A device-time row run with the environment variable `var` set to `value` (a pinned
// launch shape, read by the backend at each call), unset after it.
template <class Body>
void register_pinned(const std::string& name, const char* var, const char* value, Body body) {
  benchmark::RegisterBenchmark(name.c_str(), [var, value, body](benchmark::State& st) {
    setenv(var, value, 1);
    body(st);
    unsetenv(var);
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
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
  for (int d : {2, 4, 8, 16}) {
    for (std::size_t B : {std::size_t{1}, std::size_t{100}, std::size_t{10000}, std::size_t{100000}, std::size_t{1000000}}) {
      if ((d == 8 && B > 10000) || (d == 16 && B > 100) || (d == 4 && B > 100000)) continue;
      for (bool grad : {false, true}) {
        for (int prec : {64, 128}) {
          const std::string name = "Open/d" + std::to_string(d) + "/B" + std::to_string(B) +
                                   (grad ? "/fwd+grad/c" : "/fwd/c") + std::to_string(prec);
          benchmark::RegisterBenchmark(name.c_str(), [d, B, grad, prec](benchmark::State& st) {
            if (prec == 64) {
              run_open<float>(st, d, B, grad);
            } else {
              run_open<double>(st, d, B, grad);
            }
          })->UseManualTime()->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  // Density matrices: the layer with a depolarizing channel after it on every wire
  // (Mixed/n{2,4,6}/B{100,10000}/fwd+bwd/c{64,128}), the noisy-circuit workload.
  for (int n : {2, 4, 6}) {
    const qfleet::Circuit c = mixed_circuit(n);
    for (std::size_t B : {std::size_t{100}, std::size_t{10000}}) {
      for (int prec : {64, 128}) {
        const std::string name = "Mixed/n" + std::to_string(n) + "/B" + std::to_string(B) + "/fwd+bwd/c" + std::to_string(prec);
        benchmark::RegisterBenchmark(name.c_str(), [c, B, prec](benchmark::State& st) {
          if (prec == 64) {
            run<float>(st, c, B, true);
          } else {
            run<double>(st, c, B, true);
          }
        })->UseManualTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
  // The density-matrix block sizes side by side (QFLEET_DM_CUDA_THREADS), to tune the
  // automatic choice (128 threads at n = 4 and 6): MixedShape/n{4,6}/B10000/fwd+bwd/c64/t{32,64,128,256}.
  for (int n : {4, 6}) {
    const qfleet::Circuit c = mixed_circuit(n);
    for (const char* threads : {"32", "64", "128", "256"}) {
      const std::string name = "MixedShape/n" + std::to_string(n) + "/B10000/fwd+bwd/c64/t" + threads;
      register_pinned(name, "QFLEET_DM_CUDA_THREADS", threads,
                      [c](benchmark::State& st) { run<float>(st, c, 10000, true); });
    }
  }
  // The circuit launch shapes side by side (QFLEET_CUDA_SHAPE), to tune the automatic
  // choice: Shape/n{4,6,10,14}/B{100,10000}/fwd+bwd/c64/{registers,warp,block,interleaved,global}
  // (a shape a circuit cannot take is skipped: registers needs n <= 5, warp n <= 6,
  // block n <= 13 in complex64 on an H100).
  for (int n : {4, 6, 10, 14}) {
    const qfleet::Circuit c = layer_circuit(n);
    for (std::size_t B : {std::size_t{100}, std::size_t{10000}}) {
      if (double(B) * std::ldexp(32.0, n) > 8.0 * (1u << 30)) continue;
      for (const char* shape : {"registers", "warp", "block", "interleaved", "global"}) {
        const std::string sh(shape);
        if ((sh == "registers" && n > 5) || (sh == "warp" && n > 6) || (sh == "block" && n > 13)) continue;
        const std::string name = "Shape/n" + std::to_string(n) + "/B" + std::to_string(B) + "/fwd+bwd/c64/" + shape;
        register_pinned(name, "QFLEET_CUDA_SHAPE", shape, [c, B](benchmark::State& st) { run<float>(st, c, B, true); });
      }
    }
  }
  // The launch shapes side by side (QFLEET_OPEN_CUDA_SHAPE), to tune the automatic
  // choice: OpenShape/d{2,3,4,8}/B10000/fwd+grad/c64/{thread,tile8,tile16,warp,block}.
  for (int d : {2, 3, 4, 8}) {
    for (const char* shape : {"thread", "tile8", "tile16", "warp", "block"}) {
      const std::string name = "OpenShape/d" + std::to_string(d) + "/B10000/fwd+grad/c64/" + shape;
      register_pinned(name, "QFLEET_OPEN_CUDA_SHAPE", shape,
                      [d](benchmark::State& st) { run_open<float>(st, d, 10000, true); });
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (qfleet::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_cuda: no CUDA device visible; only the */cpu rows run\n");  // (stdout: the JSON)
  } else {
    register_all();
  }
  register_cpu();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
