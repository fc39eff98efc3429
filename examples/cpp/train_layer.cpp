// A downstream LibTorch project on qfleet::torch: a circuit as a torch::nn module, trained by
// torch::optim. <Z0> after RY(x) RY(w) is cos(x + w), so the layer's gradient is -sin(x + w)
// (checked), and Adam drives cos(x + w) to the targets cos(x + 0.7): w -> 0.7.
#include <cmath>
#include <cstdio>

#include <torch/torch.h>

#include <qfleet/torch.hpp>

int main() {
  qfleet::Circuit c(1);
  c.add("RY", {0}, {qfleet::Param::input(0)}).add("RY", {0}, {qfleet::Param::weight(0)}).expval("Z0");
  qfleet::nn::QuantumLayer layer(c);  // one trainable parameter "weight" [1], start in [0, 2 pi)
  const auto x = torch::linspace(-1.0, 1.0, 8, torch::kFloat64).unsqueeze(1);  // [B = 8, 1]

  const auto out = layer->forward(x);
  out.sum().backward();
  const double w0 = layer->weight.item<double>();
  const double expected = -torch::sin(x + w0).sum().item<double>();
  if (std::abs(layer->weight.grad().item<double>() - expected) > 1e-12) {
    std::printf("gradient %.15g, analytic %.15g\n", layer->weight.grad().item<double>(), expected);
    return 1;
  }

  const auto target = torch::cos(x + 0.7).squeeze(1);
  torch::optim::Adam opt(layer->parameters(), torch::optim::AdamOptions(0.1));
  double loss_value = 0.0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    const auto loss = (layer->forward(x).squeeze(1) - target).pow(2).mean();
    loss.backward();
    opt.step();
    loss_value = loss.item<double>();
  }
  const double w = std::remainder(layer->weight.item<double>() - 0.7, 2 * M_PI);
  if (loss_value > 1e-8 || std::abs(w) > 1e-3) {
    std::printf("not trained: loss %g, weight - 0.7 = %g (mod 2 pi)\n", loss_value, w);
    return 1;
  }
  std::printf("train_layer ok (loss %.2e, weight %.6f)\n", loss_value, layer->weight.item<double>());
  return 0;
}
