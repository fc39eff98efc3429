// The baselines a meta-learned policy is measured against: per-task GRAPE and one robust
// pulse for the whole task distribution (meta_control.hpp; docs/meta_control.md), both on
// qfleet::control's projected Adam (include/qfleet/control.hpp), the optimiser a library
// user calls.
#include "qfleet/control.hpp"

#include "meta_control.hpp"

namespace qfleet::meta {

using torch::Tensor;

void adam_step(torch::optim::Adam& opt, const Tensor& param, const Tensor& grad) {
  param.mutable_grad() = grad;
  opt.step();
}

namespace {

// Adam within the policy's amplitude range, for `iterations` steps (and the last point's
// evaluation): the options both baselines share.
control::Options adam_options(const Policy& policy, int64_t iterations, double lr) {
  control::Options o;
  o.method = control::Method::adam;
  o.lr = lr;
  o.max_iterations = iterations;
  o.max_evaluations = iterations + 1;
  o.gtol = 0;
  o.record_history = false;
  if (const double b = policy.amplitude_bound(); b > 0) {
    o.lower = torch::tensor(-b, torch::kFloat64);
    o.upper = torch::tensor(b, torch::kFloat64);
  }
  return o;
}

}  // namespace

// Adam on per-task pulses (elementwise, so the tasks are optimised independently), each
// step projected onto the policy's amplitude range (bounded GRAPE).
std::pair<Tensor, Tensor> grape(const Problem& problem, const Policy& policy, Tensor u, const Tensor& noise,
                                const GrapeOptions& o) {
  torch::NoGradGuard outer;
  const auto shape = u.sizes().vec();
  u = policy.bound(u.detach()).contiguous();
  control::Options opt = adam_options(policy, o.iterations, o.lr);
  opt.schedule = o.cosine ? control::Schedule::cosine : control::Schedule::constant;
  opt.keep_best = o.keep_best;
  const auto r = control::minimize_autograd(
      [&](const Tensor& x, const Tensor& tasks) {
        return 1 - problem.fidelity(x.view({x.size(0), shape[1], shape[2]}), noise.index_select(0, tasks));
      },
      u.view({shape[0], -1}), opt);
  const Tensor pulses = r.x.view(shape);
  return {problem.fidelity(pulses, noise), pulses};
}

Tensor robust_pulse(const Problem& problem, const Policy& policy, Tensor u, const std::function<Tensor()>& tasks,
                    int64_t iterations, double lr) {
  torch::NoGradGuard outer;
  const auto shape = u.sizes().vec();
  u = policy.bound(u.detach()).contiguous();
  control::Options opt = adam_options(policy, iterations, lr);
  opt.keep_best = false;  // the tasks are drawn afresh each step: the costs are not comparable
  const auto r = control::minimize_autograd(
      [&](const Tensor& x, const Tensor&) { return (1 - problem.fidelity(x.view(shape), tasks())).mean().view({1}); },
      u.view({1, -1}), opt);
  return r.x.view(shape);
}

}  // namespace qfleet::meta
