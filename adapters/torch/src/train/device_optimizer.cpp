// DeviceOptimizer: Adam, AdamW and SGD with their state on the device, updated by
// ATen's fused kernels, so a step has no host work and can be captured in a CUDA
// graph (qfleet/train.hpp). The rules are torch.optim's; PyTorch's own "capturable"
// Adam keeps the step count as a device tensor for the same reason.
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_sgd.h>

#include "qfleet/train.hpp"

namespace qfleet::train {

DeviceOptimizer::DeviceOptimizer(std::vector<torch::Tensor> parameters, DeviceOptimizerOptions options)
    : opt_(options), params_(std::move(parameters)) {
  if (params_.empty()) throw std::invalid_argument("DeviceOptimizer: no parameters");
  if (!(opt_.lr >= 0) || !(opt_.eps >= 0) || !(opt_.weight_decay >= 0) || !(opt_.beta1 >= 0 && opt_.beta1 < 1) ||
      !(opt_.beta2 >= 0 && opt_.beta2 < 1) || !(opt_.momentum >= 0 && opt_.momentum < 1))
    throw std::invalid_argument("DeviceOptimizer: needs lr, eps, weight_decay >= 0 and betas, momentum in [0, 1)");
  const torch::Device dev = params_[0].device();
  for (const auto& p : params_) {
    if (!p.is_floating_point()) throw std::invalid_argument("DeviceOptimizer: parameters must be floating point");
    if (p.device() != dev) throw std::invalid_argument("DeviceOptimizer: parameters on two devices");
    if (opt_.kind == OptimizerKind::sgd) {
      momentum_.push_back(torch::zeros_like(p));
    } else {
      exp_avg_.push_back(torch::zeros_like(p));
      exp_avg_sq_.push_back(torch::zeros_like(p));
      steps_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
    }
  }
}

void DeviceOptimizer::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& p : params_) {
    if (p.grad().defined()) {
      p.mutable_grad().zero_();
    } else {
      p.mutable_grad() = torch::zeros_like(p);
    }
  }
}

void DeviceOptimizer::step() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (auto& p : params_) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  switch (opt_.kind) {
    case OptimizerKind::adam:
      at::_foreach_add_(steps_, 1);  // the fused kernels read the count; torch.optim adds it first too
      at::_fused_adam_(params_, grads, exp_avg_, exp_avg_sq_, {}, steps_, opt_.lr, opt_.beta1, opt_.beta2,
                       opt_.weight_decay, opt_.eps, false, false);
      break;
    case OptimizerKind::adamw:
      at::_foreach_add_(steps_, 1);
      at::_fused_adamw_(params_, grads, exp_avg_, exp_avg_sq_, {}, steps_, opt_.lr, opt_.beta1, opt_.beta2,
                        opt_.weight_decay, opt_.eps, false, false);
      break;
    case OptimizerKind::sgd:
      // With a zero buffer and dampening 0, the first step's buffer is the gradient, as
      // torch.optim.SGD's is_first_step branch makes it: the branch is not needed.
      at::_fused_sgd_(params_, grads, opt_.momentum > 0 ? momentum_ : std::vector<torch::Tensor>{},
                      opt_.weight_decay, opt_.momentum, opt_.lr, 0.0, false, false, false);
      break;
  }
}

void DeviceOptimizer::save(torch::serialize::OutputArchive& archive) const {
  auto list = [&](const std::string& name, const std::vector<torch::Tensor>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) archive.write(name + "." + std::to_string(i), v[i].cpu());
  };
  list("exp_avg", exp_avg_);
  list("exp_avg_sq", exp_avg_sq_);
  list("step", steps_);
  list("momentum", momentum_);
}

void DeviceOptimizer::load(torch::serialize::InputArchive& archive) {
  auto read = [&](const std::string& key, const torch::Tensor& like) {
    torch::Tensor t;
    archive.read(key, t);
    if (t.sizes() != like.sizes() || t.scalar_type() != like.scalar_type())
      throw std::runtime_error("DeviceOptimizer: saved '" + key + "' does not fit this optimizer's parameters");
    return t.to(like.device());
  };
  std::vector<std::vector<torch::Tensor>*> lists{&exp_avg_, &exp_avg_sq_, &steps_, &momentum_};
  const char* names[] = {"exp_avg", "exp_avg_sq", "step", "momentum"};
  std::vector<std::vector<torch::Tensor>> loaded(lists.size());
  for (std::size_t k = 0; k < lists.size(); ++k)
    for (std::size_t i = 0; i < lists[k]->size(); ++i)
      loaded[k].push_back(read(std::string(names[k]) + "." + std::to_string(i), (*lists[k])[i]));
  torch::NoGradGuard no_grad;  // in place: a captured graph keeps the addresses
  for (std::size_t k = 0; k < lists.size(); ++k)
    for (std::size_t i = 0; i < lists[k]->size(); ++i) (*lists[k])[i].copy_(loaded[k][i]);
}

}  // namespace qfleet::train
