// The hybrid classifier's modules (model.hpp).
#include "model.hpp"

#include <cmath>
#include <stdexcept>

#include "idx.hpp"
#include "qfleet/names.hpp"

namespace qfleet::classify {
namespace nn = torch::nn;

SmallCnnImpl::SmallCnnImpl() {
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)));
  conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)));
  fc = register_module("fc", nn::Linear(32 * 4 * 4, kFeatures));
}

torch::Tensor SmallCnnImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
  h = torch::max_pool2d(torch::relu(conv2->forward(h)), 2);
  h = torch::adaptive_avg_pool2d(h, {4, 4}).flatten(1);
  return torch::relu(fc->forward(h));
}

namespace {

// ResNet's BasicBlock: two 3x3 convolutions with batch norm, the identity (or a 1x1
// stride-s projection where the shape changes) added before the last ReLU.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    c1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    b1 = register_module("bn1", nn::BatchNorm2d(out));
    c2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
    b2 = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out)
      down = register_module("downsample", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                                                          nn::BatchNorm2d(out)));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::relu(b1->forward(c1->forward(x)));
    h = b2->forward(c2->forward(h));
    return torch::relu(h + (down ? down->forward(x) : x));
  }

 private:
  nn::Conv2d c1{nullptr}, c2{nullptr};
  nn::BatchNorm2d b1{nullptr}, b2{nullptr};
  nn::Sequential down{nullptr};
};
TORCH_MODULE(BasicBlock);

}  // namespace

ResNet18Impl::ResNet18Impl() {
  stem = register_module("stem", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 64, 3).padding(1).bias(false)),
                                                 nn::BatchNorm2d(64), nn::ReLU(),
                                                 nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1))));
  stages = nn::Sequential();
  int64_t in = 64;
  for (int64_t out : {64, 128, 256, 512}) {
    const int64_t stride = out == 64 ? 1 : 2;
    stages->push_back(BasicBlock(in, out, stride));
    stages->push_back(BasicBlock(out, out, 1));
    in = out;
  }
  stages = register_module("stages", stages);
  // torchvision's initialisation: Kaiming-normal (fan_out, ReLU) convolutions, BN weight 1 bias 0.
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
  }
}

torch::Tensor ResNet18Impl::forward(const torch::Tensor& x) {
  return torch::adaptive_avg_pool2d(stages->forward(stem->forward(x)), {1, 1}).flatten(1);
}

Circuit make_circuit(const ModelOptions& o) {
  if (o.qubits < 1 || o.qubits > 20) throw std::invalid_argument("qubits = " + std::to_string(o.qubits) + ": 1 to 20");
  if (o.layers < 0 || o.layers > 100) throw std::invalid_argument("layers = " + std::to_string(o.layers) + ": 0 to 100");
  const int n = int(o.qubits);
  std::vector<int> wires(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) wires[std::size_t(i)] = i;
  Rotation rot = Rotation::X;
  if (o.embedding == "y") rot = Rotation::Y;
  else if (o.embedding == "z") rot = Rotation::Z;
  else if (o.embedding != "x") throw std::invalid_argument("embedding \"" + o.embedding + "\": x, y or z");
  Circuit c(n);
  c.angle_embedding(wires, rot);
  if (o.layers > 0) {
    if (o.entangler == "strong") c.strongly_entangling_layers(wires, int(o.layers));
    else if (o.entangler == "basic") c.basic_entangler_layers(wires, int(o.layers));
    else throw std::invalid_argument("entangler \"" + o.entangler + "\": strong or basic");
  }
  if (o.measure == "z") {
    for (int i = 0; i < n; ++i) {
      std::string word = std::to_string(i);
      word.insert(word.begin(), 'Z');  // (not "Z" + s: g++ 12's -Wrestrict misfires on it)
      c.expval(word);
    }
  } else if (o.measure == "probs") {
    c.probs(wires);
  } else {
    throw std::invalid_argument("measure \"" + o.measure + "\": z or probs");
  }
  return c;
}

HybridNetImpl::HybridNetImpl(const ModelOptions& o) : opt_(o) {
  if (o.backbone == "small") {
    small_ = register_module("backbone", SmallCnn());
    backbone_ = small_.ptr();
    feature_dim_ = SmallCnnImpl::kFeatures;
  } else if (o.backbone == "resnet18") {
    resnet_ = register_module("backbone", ResNet18());
    backbone_ = resnet_.ptr();
    feature_dim_ = ResNet18Impl::kFeatures;
  } else {
    throw std::invalid_argument("backbone \"" + o.backbone + "\": small or resnet18");
  }
  if (o.layer == "quantum") {
    c10::intrusive_ptr<qfleet::nn::CircuitProgram> program;
    if (!o.circuit_json.empty()) {
      program = c10::make_intrusive<qfleet::nn::CircuitProgram>(o.circuit_json);
      if (program->n_inputs() != o.qubits)
        throw std::invalid_argument("the circuit reads " + std::to_string(program->n_inputs()) + " inputs, but qubits = " +
                                    std::to_string(o.qubits) + " angles feed it (set qubits to its input count)");
    } else {
      CompileOptions co;
      co.precision = value_named(kPrecisionNames, o.precision, "precision");
      co.device = o.cuda ? Device::cuda : Device::cpu;
      program = c10::make_intrusive<qfleet::nn::CircuitProgram>(make_circuit(o), co);
    }
    quantum_ = register_module("quantum", qfleet::nn::QuantumLayer(program, o.seed));
    middle_outputs_ = program->n_outputs();
  } else if (o.layer == "classical") {
    const int64_t width = o.measure == "probs" ? (int64_t(1) << o.qubits) : o.qubits;
    classical_ = register_module("classical", nn::Linear(o.qubits, width));
    middle_outputs_ = width;
  } else {
    throw std::invalid_argument("layer \"" + o.layer + "\": quantum or classical");
  }
  if (o.head_inputs != 0 && o.head_inputs != middle_outputs_)
    throw std::invalid_argument("the " + o.layer + " layer gives " + std::to_string(middle_outputs_) +
                                " outputs, but head_inputs = " + std::to_string(o.head_inputs) + " (0: the layer's own)");
  if (o.n_classes < 2) throw std::invalid_argument("n_classes = " + std::to_string(o.n_classes) + ": at least 2");
  to_angles_ = register_module("to_angles", nn::Linear(feature_dim_, o.qubits));
  head_ = register_module("head", nn::Linear(middle_outputs_, o.n_classes));
}

torch::Tensor HybridNetImpl::features(const torch::Tensor& images) {
  return small_ ? small_->forward(images) : resnet_->forward(images);
}

torch::Tensor HybridNetImpl::angles(const torch::Tensor& feats) {
  return torch::tanh(to_angles_->forward(feats)) * (M_PI / 2);
}

torch::Tensor HybridNetImpl::middle(const torch::Tensor& a) {
  if (!quantum_) return torch::tanh(classical_->forward(a));
  // The engine computes in its program's precision; the network's dtype goes back out.
  const auto real = quantum_->program()->dtype();
  return quantum_->forward(a.to(real)).to(a.scalar_type());
}

torch::Tensor HybridNetImpl::head_logits(const torch::Tensor& mid) { return head_->forward(mid); }

std::string HybridNetImpl::describe() const {
  std::string mid;
  if (!quantum_) {
    mid = "classical Linear(" + std::to_string(opt_.qubits) + ", " + std::to_string(middle_outputs_) + ") + tanh (the ablation)";
  } else if (!opt_.circuit_json.empty()) {
    mid = "the circuit of --circuit (" + std::to_string(quantum_->program()->n_qubits()) + " qubits, " +
          std::to_string(quantum_->program()->n_weights()) + " weights, " + std::to_string(middle_outputs_) + " outputs)";
  } else {
    mid = "QuantumLayer: AngleEmbedding(R" + opt_.embedding + ") on " + std::to_string(opt_.qubits) + " qubits, " +
          std::to_string(opt_.layers) + (opt_.entangler == "strong" ? " StronglyEntanglingLayers" : " BasicEntanglerLayers") +
          (opt_.measure == "z" ? ", <Z_i> per wire" : ", basis-state probabilities") + " (" +
          std::to_string(quantum_->program()->n_weights()) + " weights, " + opt_.precision + ")";
  }
  return opt_.backbone + " backbone (" + std::to_string(feature_dim_) + " features) -> Linear(" + std::to_string(feature_dim_) +
         ", " + std::to_string(opt_.qubits) + ") -> (pi/2) tanh -> " + mid + " -> Linear(" + std::to_string(middle_outputs_) +
         ", " + std::to_string(opt_.n_classes) + ")";
}

ParameterCounts count_parameters(HybridNetImpl& net) {
  ParameterCounts c;
  for (const auto& p : net.named_parameters()) {
    const std::string& k = p.key();
    const int64_t n = p.value().numel();
    if (k.rfind("backbone.", 0) == 0) c.backbone += n;
    else if (k.rfind("to_angles.", 0) == 0) c.to_angles += n;
    else if (k.rfind("head.", 0) == 0) c.head += n;
    else c.middle += n;
  }
  return c;
}

}  // namespace qfleet::classify
