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
  if (opt_.lr_on_device) lr_ = torch::full({}, opt_.lr, params_[0].options());
}

void DeviceOptimizer::set_lr(double lr) {
  if (!(lr >= 0)) throw std::invalid_argument("DeviceOptimizer: needs lr >= 0");
  opt_.lr = lr;
  if (lr_.defined()) lr_.fill_(lr);
}

// torch.optim's capturable update (its _single_tensor_adam with capturable=True, and SGD's
// rule) with the learning rate read from lr_ on the device: no value of it is baked in.
void DeviceOptimizer::step_with_lr_tensor(const std::vector<torch::Tensor>& grads) {
  const double b1 = opt_.beta1, b2 = opt_.beta2, wd = opt_.weight_decay;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& p = params_[i];
    torch::Tensor g = grads[i];
    if (opt_.kind == OptimizerKind::sgd) {
      if (wd != 0) g = g.add(p, wd);
      if (opt_.momentum > 0) g = momentum_[i].mul_(opt_.momentum).add_(g);  // (a zero buffer: the first step's is g)
      p.sub_(lr_ * g);
      continue;
    }
    steps_[i].add_(1);
    if (opt_.kind == OptimizerKind::adamw) p.mul_(1 - lr_ * wd);
    else if (wd != 0) g = g.add(p, wd);
    exp_avg_[i].lerp_(g, 1 - b1);
    exp_avg_sq_[i].mul_(b2).addcmul_(g, g, 1 - b2);
    const torch::Tensor t = steps_[i].to(p.scalar_type());
    const torch::Tensor bc1 = 1 - torch::pow(b1, t), bc2 = 1 - torch::pow(b2, t);
    p.sub_((lr_ / bc1) * exp_avg_[i] / (exp_avg_sq_[i].sqrt() / bc2.sqrt() + opt_.eps));
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
  if (lr_.defined()) {
    step_with_lr_tensor(grads);
    return;
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

namespace {
template <class State>
State& state_of(torch::optim::Optimizer& o, const torch::Tensor& p) {
  auto& slot = o.state()[p.unsafeGetTensorImpl()];
  if (!slot) slot = std::make_unique<State>();
  auto* st = dynamic_cast<State*>(slot.get());
  if (st == nullptr) throw std::invalid_argument("DeviceOptimizer: the torch::optim optimizer is not of this kind");
  return *st;
}
template <class State>
const State* state_of(const torch::optim::Optimizer& o, const torch::Tensor& p) {
  const auto it = o.state().find(p.unsafeGetTensorImpl());
  if (it == o.state().end() || !it->second) return nullptr;
  const auto* st = dynamic_cast<const State*>(it->second.get());
  if (st == nullptr) throw std::invalid_argument("DeviceOptimizer: the torch::optim optimizer is not of this kind");
  return st;
}
// torch::optim's parameters, checked against ours (count, shapes).
const std::vector<torch::Tensor>& their_params(const torch::optim::Optimizer& o, const std::vector<torch::Tensor>& mine) {
  if (o.param_groups().size() != 1 || o.param_groups()[0].params().size() != mine.size())
    throw std::invalid_argument("DeviceOptimizer: the torch::optim optimizer holds other parameters");
  const auto& ps = o.param_groups()[0].params();
  for (std::size_t i = 0; i < ps.size(); ++i)
    if (ps[i].sizes() != mine[i].sizes()) throw std::invalid_argument("DeviceOptimizer: a parameter's shape differs");
  return ps;
}
}  // namespace

void DeviceOptimizer::export_state(torch::optim::Optimizer& into) const {
  const auto& ps = their_params(into, params_);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const torch::Device dev = ps[i].device();
    if (opt_.kind == OptimizerKind::sgd) {
      if (opt_.momentum > 0) state_of<torch::optim::SGDParamState>(into, ps[i]).momentum_buffer(momentum_[i].to(dev).clone());
      continue;
    }
    const auto n = int64_t(steps_[i].item<float>());
    if (opt_.kind == OptimizerKind::adam) {
      auto& st = state_of<torch::optim::AdamParamState>(into, ps[i]);
      st.step(n);
      st.exp_avg(exp_avg_[i].to(dev).clone());
      st.exp_avg_sq(exp_avg_sq_[i].to(dev).clone());
    } else {
      auto& st = state_of<torch::optim::AdamWParamState>(into, ps[i]);
      st.step(n);
      st.exp_avg(exp_avg_[i].to(dev).clone());
      st.exp_avg_sq(exp_avg_sq_[i].to(dev).clone());
    }
  }
}

void DeviceOptimizer::import_state(const torch::optim::Optimizer& from) {
  const auto& ps = their_params(from, params_);
  torch::NoGradGuard no_grad;  // in place: a captured graph keeps the addresses
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (opt_.kind == OptimizerKind::sgd) {
      const auto* st = state_of<torch::optim::SGDParamState>(from, ps[i]);
      if (opt_.momentum > 0) {
        if (st != nullptr && st->momentum_buffer().defined()) momentum_[i].copy_(st->momentum_buffer());
        else momentum_[i].zero_();
      }
      continue;
    }
    int64_t n = 0;
    torch::Tensor m, v;
    if (opt_.kind == OptimizerKind::adam) {
      if (const auto* st = state_of<torch::optim::AdamParamState>(from, ps[i])) n = st->step(), m = st->exp_avg(), v = st->exp_avg_sq();
    } else if (const auto* st = state_of<torch::optim::AdamWParamState>(from, ps[i])) {
      n = st->step(), m = st->exp_avg(), v = st->exp_avg_sq();
    }
    steps_[i].fill_(double(n));
    if (m.defined()) exp_avg_[i].copy_(m), exp_avg_sq_[i].copy_(v);
    else exp_avg_[i].zero_(), exp_avg_sq_[i].zero_();
  }
}

}  // namespace qfleet::train
