// Prints the C++ QuantumLayer's weights and outputs for the hybrid-classifier
// circuit (AngleEmbedding + StronglyEntanglingLayers, Z expvals) as JSON, so the
// Python tests can check that the Python module gives identical numbers.
//   qfleet_torch_layer_eval N_QUBITS LAYERS SEED BATCH
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "qfleet/torch.hpp"
#include "classifier.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: qfleet_torch_layer_eval N_QUBITS LAYERS SEED BATCH\n";
    return 2;
  }
  const int n = std::stoi(argv[1]), layers = std::stoi(argv[2]), batch = std::stoi(argv[4]);
  const auto seed = std::stoull(argv[3]);
  const qfleet::Circuit c = classifier(n, layers);
  qfleet::nn::QuantumLayer layer(c, qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 0, seed});
  // inputs[b, i] = sin(1 + b * n + i), computed the same way in the Python test.
  const auto x = torch::sin(torch::arange(batch * n, torch::kFloat64) + 1).view({batch, n});
  const auto y = layer->forward(x).detach();
  auto dump = [](const torch::Tensor& t) {
    std::ostringstream o;
    o << std::setprecision(17) << '[';
    const auto f = t.contiguous().view(-1);
    for (int64_t i = 0; i < f.numel(); ++i) {
      if (i > 0) o << ',';
      o << f[i].item<double>();
    }
    o << ']';
    return o.str();
  };
  std::cout << "{\"weight\": " << dump(layer->weight.detach()) << ", \"outputs\": " << dump(y) << "}\n";
  return 0;
}
