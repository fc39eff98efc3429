// One hybrid training step (Linear -> QuantumLayer on cuda -> mean-square loss ->
// backward -> DeviceOptimizer's Adam) run eagerly and as a captured CUDA graph
// (qfleet::train::GraphStep), timed per step on the GPU, the medians side by side:
// what graph mode saves in launch and host overhead on a small model.
//   train_graph_step [--qubits N] [--layers L] [--batch B] [--steps S]
// Prints one JSON object (config, eager and graph medians in microseconds, their
// ratio, and the last losses of both, which must agree). Without a GPU it says so
// and exits 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "qfleet/torch.hpp"
#include "qfleet/train_graph.hpp"

namespace {

namespace tr = qfleet::train;

qfleet::Circuit layer(int n, int layers) {
  qfleet::Circuit c(n);
  std::vector<int> wires;
  for (int q = 0; q < n; ++q) wires.push_back(q);
  c.angle_embedding(wires).strongly_entangling_layers(wires, layers);
  for (int q = 0; q < n; ++q) {
    std::string word = "Z";
    word += std::to_string(q);
    c.expval(word);
  }
  return c;
}

struct Run {
  double median_us = 0;
  double last_loss = 0;
  bool captured = false;
};

Run train(bool graph, int n, int layers, int batch, int steps) {
  const torch::Device dev(torch::kCUDA, 0);
  torch::manual_seed(4);
  auto pre = torch::nn::Linear(n, n);
  pre->to(dev, torch::kFloat32);
  auto q = qfleet::nn::QuantumLayer(layer(n, layers),
                                    qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex64, 0, 3, qfleet::Device::cuda});
  q->to(dev);
  std::vector<torch::Tensor> params = pre->parameters();
  params.push_back(q->weight);
  tr::DeviceOptimizer opt(params, {.kind = tr::OptimizerKind::adam, .lr = 0.01});
  auto x = torch::zeros({batch, n}, torch::TensorOptions().dtype(torch::kFloat32).device(dev));
  auto body = [&] {
    opt.zero_grad();
    const auto loss = (q(pre(x)) - 0.5).square().mean();
    loss.backward();
    opt.step();
    return tr::Metrics{{"loss"}, {loss.detach()}};
  };
  tr::GraphStep graphed(body, dev, {.warmup = 3, .log = false});
  auto gen = at::make_generator<at::CPUGeneratorImpl>(8);
  const auto data = torch::rand({batch, n}, gen, torch::kFloat32).to(dev);
  std::vector<double> us;
  Run r;
  for (int i = 0; i < steps; ++i) {
    x.copy_(data);
    torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = graph ? graphed() : body();
    torch::cuda::synchronize();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (i == steps - 1) r.last_loss = m.values[0].item<double>();
  }
  us.erase(us.begin(), us.begin() + std::min<std::ptrdiff_t>(5, std::ptrdiff_t(us.size()) - 1));  // warm-up and capture
  std::nth_element(us.begin(), us.begin() + std::ptrdiff_t(us.size() / 2), us.end());
  r.median_us = us[us.size() / 2];
  r.captured = graph && graphed.captured();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 4, layers = 2, batch = 256, steps = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::stoi(argv[i + 1]);
    if (a == "--qubits") n = v;
    else if (a == "--layers") layers = v;
    else if (a == "--batch") batch = v;
    else if (a == "--steps") steps = v;
    else {
      std::fprintf(stderr, "train_graph_step: unknown option %s (--qubits, --layers, --batch, --steps)\n", a.c_str());
      return 2;
    }
  }
  if (!torch::cuda::is_available()) {
    std::printf("train_graph_step: no CUDA device visible; nothing to measure\n");
    return 0;
  }
  const Run eager = train(false, n, layers, batch, steps), graph = train(true, n, layers, batch, steps);
  std::printf("{\"qubits\": %d, \"layers\": %d, \"batch\": %d, \"steps\": %d, \"eager_median_us\": %.2f, "
              "\"graph_median_us\": %.2f, \"eager_over_graph\": %.3f, \"captured\": %s, \"last_loss_eager\": %.9g, "
              "\"last_loss_graph\": %.9g}\n",
              n, layers, batch, steps, eager.median_us, graph.median_us, eager.median_us / graph.median_us,
              graph.captured ? "true" : "false", eager.last_loss, graph.last_loss);
  return graph.captured ? 0 : 1;
}
