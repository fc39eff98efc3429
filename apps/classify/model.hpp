// The hybrid classifier: backbone (CNN) -> linear to n_qubits -> angles (pi/2) tanh(z)
// -> QuantumLayer (or, for the ablation, a classical layer of the same width) -> head.
// The system it rebuilds: a ResNet18 feeding a 4-qubit AngleEmbedding + 3 strongly
// entangling layers circuit with <Z> per wire, then a linear head (docs/classify.md).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "qfleet/torch.hpp"

namespace qfleet::classify {

// Two conv-ReLU-maxpool stages (16, 32 channels), adaptive average pooling to 4x4 and a
// linear layer: 64 features. Any image of at least 8x8.
class SmallCnnImpl : public torch::nn::Module {
 public:
  SmallCnnImpl();
  torch::Tensor forward(const torch::Tensor& x);  // [B, 1, H, W] -> [B, 64]
  static constexpr int64_t kFeatures = 64;

 private:
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(SmallCnn);

// ResNet18 (He et al. 2016, arXiv:1512.03385: BasicBlocks [2, 2, 2, 2], 64-512
// channels) adapted to small grey images: one input channel and a 3x3 stride-1 stem
// instead of 7x7 stride 2, keeping the 3x3 stride-2 max-pool (28x28 -> 14x14 at the
// first stage). 512 features after global average pooling.
class ResNet18Impl : public torch::nn::Module {
 public:
  ResNet18Impl();
  torch::Tensor forward(const torch::Tensor& x);  // [B, 1, H, W] -> [B, 512]
  static constexpr int64_t kFeatures = 512;

 private:
  torch::nn::Sequential stem{nullptr}, stages{nullptr};
};
TORCH_MODULE(ResNet18);

struct ModelOptions {
  std::string backbone = "small";     // small | resnet18
  std::string layer = "quantum";      // quantum | classical (the ablation: Linear(n, n_outputs) + tanh)
  int64_t qubits = 4, layers = 3;
  std::string embedding = "x";        // AngleEmbedding's rotation: x | y | z
  std::string entangler = "strong";   // strong (StronglyEntanglingLayers) | basic (BasicEntanglerLayers)
  std::string measure = "z";          // z: <Z_i> per wire | probs: the 2^n basis-state probabilities
  std::string circuit_json;           // a circuit of docs/cli.md instead of the above ("" = none)
  int64_t head_inputs = 0;            // the head's width; 0 = the layer's outputs (else they must agree)
  int64_t n_classes = 10;
  std::string precision = "complex128";
  bool cuda = false;                  // the quantum layer's GPU copy (the model on a CUDA device)
  uint64_t seed = 0;                  // the circuit's weights: uniform in [0, 2 pi) from this seed
};

// The circuit the options describe (qubits inputs, its weights, measure outputs).
Circuit make_circuit(const ModelOptions& o);

class HybridNetImpl : public torch::nn::Module {
 public:
  explicit HybridNetImpl(const ModelOptions& o);
  // The pieces of forward(), separately, so a step can time each.
  torch::Tensor features(const torch::Tensor& images);   // backbone: [B, 1, H, W] -> [B, F]
  torch::Tensor angles(const torch::Tensor& feats);      // [B, F] -> [B, qubits], (pi/2) tanh
  torch::Tensor middle(const torch::Tensor& angles);     // the quantum (or classical) layer
  torch::Tensor head_logits(const torch::Tensor& mid);   // [B, outputs] -> [B, classes]
  torch::Tensor forward(const torch::Tensor& images) { return head_logits(middle(angles(features(images)))); }

  int64_t feature_dim() const { return feature_dim_; }
  int64_t middle_outputs() const { return middle_outputs_; }
  torch::nn::Module& backbone_module() { return *backbone_; }
  const ModelOptions& options() const { return opt_; }
  std::string describe() const;  // one line: backbone, the middle layer (its circuit), head

 private:
  ModelOptions opt_;
  std::shared_ptr<torch::nn::Module> backbone_;
  SmallCnn small_{nullptr};
  ResNet18 resnet_{nullptr};
  torch::nn::Linear to_angles_{nullptr}, classical_{nullptr}, head_{nullptr};
  qfleet::nn::QuantumLayer quantum_{nullptr};
  int64_t feature_dim_ = 0, middle_outputs_ = 0;
};
TORCH_MODULE(HybridNet);

// Parameter counts by part, for the report.
struct ParameterCounts {
  int64_t backbone = 0, to_angles = 0, middle = 0, head = 0;
};
ParameterCounts count_parameters(HybridNetImpl& net);

}  // namespace qfleet::classify
