// The baselines a meta-learned policy is measured against: per-task GRAPE and one robust
// pulse for the whole task distribution (meta_control.hpp; docs/meta_control.md).
#include <cmath>
#include <numbers>

#include "meta_control.hpp"

namespace qfleet::meta {

using torch::Tensor;

void adam_step(torch::optim::Adam& opt, const Tensor& param, const Tensor& grad) {
  param.mutable_grad() = grad;
  opt.step();
}

// Adam on per-task pulses (elementwise, so the tasks are optimised independently), each
// step projected onto the policy's amplitude range (bounded GRAPE).
std::pair<Tensor, Tensor> grape(const Problem& problem, const Policy& policy, Tensor u, const Tensor& noise,
                                const GrapeOptions& o) {
  torch::NoGradGuard outer;
  u = policy.bound(u.detach()).clone();
  torch::optim::Adam opt({u}, torch::optim::AdamOptions(o.lr));
  Tensor best_f = problem.fidelity(u, noise), best_u = u.clone();
  for (int64_t i = 0; i < o.iterations; ++i) {
    if (o.cosine)  // decay to 1% of lr over the iterations
      static_cast<torch::optim::AdamOptions&>(opt.param_groups()[0].options())
          .lr(o.lr * (0.01 + 0.99 * 0.5 * (1 + std::cos(std::numbers::pi * double(i) / double(o.iterations)))));
    Tensor f, g;
    {
      torch::AutoGradMode on(true);
      const Tensor p = u.detach().requires_grad_(true);
      f = problem.fidelity(p, noise);
      g = torch::autograd::grad({(1 - f).sum()}, {p})[0];
    }
    const Tensor better = f.detach() > best_f;
    best_f = torch::where(better, f.detach(), best_f);
    best_u = torch::where(better.view({-1, 1, 1}), u, best_u);
    adam_step(opt, u, g);
    u.copy_(policy.bound(u));
  }
  const Tensor f = problem.fidelity(u, noise);
  if (!o.keep_best) return {f, u};
  const Tensor better = f > best_f;
  return {torch::where(better, f, best_f), torch::where(better.view({-1, 1, 1}), u, best_u)};
}

Tensor robust_pulse(const Problem& problem, const Policy& policy, Tensor u, const std::function<Tensor()>& tasks,
                    int64_t iterations, double lr) {
  torch::NoGradGuard outer;
  u = policy.bound(u.detach()).clone();
  torch::optim::Adam opt({u}, torch::optim::AdamOptions(lr));
  for (int64_t i = 0; i < iterations; ++i) {
    const Tensor noise = tasks();
    Tensor g;
    {
      torch::AutoGradMode on(true);
      const Tensor p = u.detach().requires_grad_(true);
      g = torch::autograd::grad({(1 - problem.fidelity(p, noise)).mean()}, {p})[0];
    }
    adam_step(opt, u, g);
    u.copy_(policy.bound(u));
  }
  return u;
}

}  // namespace qfleet::meta
