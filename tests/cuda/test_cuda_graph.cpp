// The cuda backend on device-resident buffers: a forward + backward training step
// (a circuit layer, and an open-system pulse batch) enqueued on a caller's stream
// with no host synchronisation, captured into a CUDA graph and replayed, must give
// the numbers the cpu backend gives. Skips, saying why, where no CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "qfleet/qfleet.hpp"

namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

template <class T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  if (cudaMalloc(&p, std::max<std::size_t>(v.size(), 1) * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}
template <class T>
std::vector<T> to_host(const T* p, std::size_t n) {
  std::vector<T> v(n);
  cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

qfleet::Circuit layer(int n) {
  qfleet::Circuit c(n);
  c.angle_embedding({0, 1, 2, 3}, qfleet::Rotation::Y).strongly_entangling_layers({0, 1, 2, 3}, 2);
  const char* words[] = {"Z0", "Z1", "Z2", "Z3"};
  for (int w = 0; w < n && w < 4; ++w) c.expval(words[w]);
  return c;
}

TEST(CudaGraph, ForwardAndBackwardOnDeviceBuffersCaptureAndReplay) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: graph capture needs a GPU (the kernel body is tested on the CPU)";
  }
  const qfleet::Circuit c = layer(4);
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  const qfleet::Program gpu = qfleet::compile(c, o);
  const qfleet::Program cpu = qfleet::compile(c);
  const std::size_t B = 1000, ni = gpu.n_inputs(), nw = gpu.n_weights(), K = gpu.n_outputs();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> x(B * ni), w(nw), cot(B * K);
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  for (auto& v : cot) v = u(rng) / 3;

  double *dx = to_device(x), *dw = to_device(w), *dcot = to_device(cot);
  double *dout = to_device(std::vector<double>(B * K)), *dgx = to_device(std::vector<double>(B * ni));
  double* dgw = to_device(std::vector<double>(nw));
  ASSERT_TRUE(dx && dw && dcot && dout && dgx && dgw);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  qfleet::set_cuda_stream(s);
  qfleet::BatchArgs<double> a;
  a.batch = B;
  a.inputs = {dx, B * ni};
  a.weights = {dw, nw};
  auto step = [&] {
    gpu.forward<double>(a, {dout, B * K});
    gpu.vjp<double>(a, {dcot, B * K}, qfleet::Gradients<double>{{dgx, B * ni}, {dgw, nw}});
  };
  step();  // warm (pools, shared-memory opt-in) outside the capture
  CK(cudaStreamSynchronize(s));

  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  step();
  CK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaMemset(dout, 0, B * K * sizeof(double)));
  CK(cudaMemset(dgw, 0, nw * sizeof(double)));
  for (int r = 0; r < 3; ++r) CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  qfleet::set_cuda_stream(nullptr);

  qfleet::BatchArgs<double> h;
  h.batch = B;
  h.inputs = x;
  h.weights = w;
  std::vector<double> out(B * K), gx(B * ni), gw(nw);
  cpu.vjp<double>(h, cot, qfleet::Gradients<double>{gx, gw}, out);
  const auto dout_h = to_host(dout, B * K), dgx_h = to_host(dgx, B * ni), dgw_h = to_host(dgw, nw);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(dout_h[i], out[i], 1e-12) << i;
  for (std::size_t i = 0; i < gx.size(); ++i) ASSERT_NEAR(dgx_h[i], gx[i], 1e-11) << i;
  for (std::size_t i = 0; i < gw.size(); ++i) ASSERT_NEAR(dgw_h[i], gw[i], 1e-9 * (1 + std::abs(gw[i]))) << i;

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  for (double* p : {dx, dw, dcot, dout, dgx, dgw}) cudaFree(p);
}

TEST(CudaGraph, MixingHostAndDeviceBuffersIsAClearError) {
  if (qfleet::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  qfleet::CompileOptions o;
  o.device = qfleet::Device::cuda;
  const qfleet::Program p = qfleet::compile(layer(4), o);
  std::vector<double> x(4 * 2), w(p.n_weights()), out(2 * 4);
  double* dw = to_device(w);
  qfleet::BatchArgs<double> a;
  a.batch = 2;
  a.inputs = x;
  a.weights = {dw, w.size()};
  try {
    p.forward<double>(a, out);
    ADD_FAILURE() << "no error";
  } catch (const qfleet::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mixes host and device buffers"), std::string::npos) << e.what();
  }
  cudaFree(dw);
}

// A driven, damped qubit: 32 tasks x 60 segments, per-task amplitudes, shared rate.
qfleet::OpenSystem damped_qubit() {
  using C = std::complex<double>;
  qfleet::OpenSystem s(2);
  s.drift({C(0.5), C(0), C(0), C(-0.5)})
      .control({C(0), C(1), C(1), C(0)})
      .control({C(0), C(0, -1), C(0, 1), C(0)})
      .jump({C(0), C(1), C(0), C(0)})
      .segments(60, 3.0)
      .initial_state({C(1), C(0)})
      .target_state({C(0), C(1)});
  return s;
}

TEST(CudaGraph, OpenSystemVjpOnDeviceBuffersCapturesAndReplays) {
  if (qfleet::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device visible: graph capture needs a GPU (the task body is tested on the CPU)";
  }
  qfleet::OpenCompileOptions o;
  const qfleet::OpenProgram cpu = qfleet::compile(damped_qubit(), o);
  o.device = qfleet::Device::cuda;
  const qfleet::OpenProgram gpu = qfleet::compile(damped_qubit(), o);
  const std::size_t B = 32, na = 60 * 2;
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> amps(B * na), rates = {0.1}, cot(B, 1.0);
  for (auto& v : amps) v = u(rng);
  double *damps = to_device(amps), *drates = to_device(rates), *dcot = to_device(cot);
  double *dfid = to_device(std::vector<double>(B)), *dga = to_device(std::vector<double>(B * na));
  double* dgr = to_device(std::vector<double>(1));
  ASSERT_TRUE(damps && drates && dcot && dfid && dga && dgr);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  qfleet::set_cuda_stream(s);
  qfleet::TaskArgs<double> a;
  a.batch = B;
  a.amplitudes = {damps, B * na};
  a.rates = {drates, 1};
  qfleet::TaskGradients<double> g;
  g.amplitudes = {dga, B * na};
  g.rates = {dgr, 1};
  qfleet::TaskOutputs<double> out;
  out.fidelity = {dfid, B};
  auto step = [&] { gpu.vjp<double>(a, std::span<const double>(dcot, B), {}, g, out); };
  step();  // warm the pools outside the capture
  CK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  step();
  CK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaMemset(dfid, 0, B * sizeof(double)));
  CK(cudaMemset(dgr, 0, sizeof(double)));
  for (int r = 0; r < 3; ++r) CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  qfleet::set_cuda_stream(nullptr);

  std::vector<double> fid(B), ga(B * na), gr(1);
  qfleet::TaskArgs<double> h;
  h.batch = B;
  h.amplitudes = amps;
  h.rates = rates;
  qfleet::TaskGradients<double> hg;
  hg.amplitudes = ga;
  hg.rates = gr;
  qfleet::TaskOutputs<double> ho;
  ho.fidelity = fid;
  cpu.vjp<double>(h, cot, {}, hg, ho);
  const auto fid_d = to_host(dfid, B), ga_d = to_host(dga, B * na), gr_d = to_host(dgr, 1);
  for (std::size_t i = 0; i < B; ++i) ASSERT_NEAR(fid_d[i], fid[i], 1e-12) << i;
  for (std::size_t i = 0; i < ga.size(); ++i) ASSERT_NEAR(ga_d[i], ga[i], 1e-11) << i;
  ASSERT_NEAR(gr_d[0], gr[0], 1e-10 * (1 + std::abs(gr[0])));

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  for (double* p : {damps, drates, dcot, dfid, dga, dgr}) cudaFree(p);
}

}  // namespace
