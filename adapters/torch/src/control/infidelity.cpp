// The plain control problem straight from the engine (include/qfleet/control.hpp,
// infidelity / run_infidelity): 1 - F and its gradient with respect to the amplitudes from
// one OpenProgram::vjp per round, on buffers kept across rounds: no autograd graph and no
// tensor per round. On small systems a call through autograd from Python costs several times
// the engine's own work (a qubit gate of 60 segments: about 40 us in the engine, 250-300 us
// through open_outputs and backward(): bench/micro/control_overhead.py).
#include <algorithm>

#include "qfleet/control.hpp"
#include "qfleet/error.hpp"
#include "qfleet/torch.hpp"

namespace qfleet::control {

using torch::Tensor;

namespace {

std::vector<double> values(const Tensor& t) {
  if (!t.defined()) return {};
  const Tensor c = t.to(torch::kCPU, torch::kFloat64).contiguous();
  return {c.const_data_ptr<double>(), c.const_data_ptr<double>() + c.numel()};
}

// 1 - F per task, or the ensemble's weighted 1 - F, and the gradient, into caller buffers.
class Infidelity {
 public:
  Infidelity(const c10::intrusive_ptr<nn::OpenSystemProgram>& program, const Tensor& rates, const Tensor& drift,
             const Tensor& weights)
      : program_(program), rates_(values(rates)), drift_(values(drift)), weights_(values(weights)),
        per_task_rates_(rates.defined() && rates.dim() == 2), per_task_drift_(drift.defined() && drift.dim() == 2),
        J_(rates.defined() ? rates.size(-1) : 0), K_(drift.defined() ? drift.size(-1) : 0),
        n_amp_(program->program.n_segments() * int64_t(program->program.system().n_controls())) {
    const OpenProgram& p = program->program;
    if (p.precision() != Precision::complex128)
      throw Error("control: the engine's infidelity runs complex128 programs (use the autograd cost for complex64)");
    if (p.system().target_kind() == OpenSystem::Target::None) throw Error("control: the system has no target");
  }

  int64_t n_amp() const { return n_amp_; }
  bool ensemble() const { return !weights_.empty(); }

  // x [A, n_amp] of `tasks` (an ensemble: A = 1) -> cost [A], grad [A, n_amp].
  void operator()(std::span<const int64_t> tasks, std::span<const double> x, std::span<double> cost,
                  std::span<double> grad) {
    const std::size_t A = tasks.size();
    const std::size_t batch = ensemble() ? weights_.size() : A;
    // Per-task rows of the tasks evaluated; an ensemble's members are all rows.
    gather(rates_, per_task_rates_ && !ensemble(), J_, tasks, rr_);
    gather(drift_, per_task_drift_ && !ensemble(), K_, tasks, cc_);
    cot_.assign(batch, -1.0);
    if (ensemble()) std::transform(weights_.begin(), weights_.end(), cot_.begin(), [](double w) { return -w; });
    fid_.resize(batch);
    std::fill(grad.begin(), grad.end(), 0.0);
    const TaskArgs<double> args{batch, ensemble() ? x.first(std::size_t(n_amp_)) : x, cc_, rr_, {}};
    TaskOutputs<double> out;
    out.fidelity = fid_;
    program_->program.vjp<double>(args, std::span<const double>(cot_), {}, TaskGradients<double>{grad, {}, {}}, out);
    if (ensemble()) {
      double f = 0;
      for (std::size_t m = 0; m < batch; ++m) f += weights_[m] * fid_[m];
      cost[0] = 1 - f;
    } else {
      for (std::size_t a = 0; a < A; ++a) cost[a] = 1 - fid_[a];
    }
  }

 private:
  static void gather(const std::vector<double>& all, bool per_task, int64_t width, std::span<const int64_t> tasks,
                     std::vector<double>& out) {
    if (!per_task) {
      out = all;
      return;
    }
    out.resize(tasks.size() * std::size_t(width));
    for (std::size_t a = 0; a < tasks.size(); ++a)
      std::copy_n(all.begin() + tasks[a] * width, width, out.begin() + a * width);
  }

  c10::intrusive_ptr<nn::OpenSystemProgram> program_;
  std::vector<double> rates_, drift_, weights_, rr_, cc_, cot_, fid_;
  bool per_task_rates_, per_task_drift_;
  int64_t J_, K_, n_amp_;
};

}  // namespace

CostGradient infidelity(const c10::intrusive_ptr<nn::OpenSystemProgram>& program, const Tensor& rates,
                        const Tensor& drift_coeffs, const Tensor& weights) {
  auto f = std::make_shared<Infidelity>(program, rates, drift_coeffs, weights);
  return [f](const Tensor& x, const Tensor& tasks) {
    const Tensor xd = x.to(torch::kCPU, torch::kFloat64).contiguous();
    const Tensor t = tasks.to(torch::kCPU, torch::kInt64).contiguous();
    const int64_t A = xd.size(0);
    if (xd.dim() != 2 || xd.size(1) != f->n_amp() || t.numel() != A || (f->ensemble() && A != 1))
      throw Error("control: the infidelity takes amplitudes [A, " + std::to_string(f->n_amp()) +
                  "] of A tasks (an ensemble: A = 1)");
    Tensor cost = torch::empty({A}, torch::kFloat64), grad = torch::empty({A, f->n_amp()}, torch::kFloat64);
    (*f)({t.const_data_ptr<int64_t>(), std::size_t(A)}, {xd.const_data_ptr<double>(), std::size_t(xd.numel())},
         {cost.mutable_data_ptr<double>(), std::size_t(A)}, {grad.mutable_data_ptr<double>(), std::size_t(grad.numel())});
    return std::pair{cost, grad};
  };
}

void run_infidelity(Optimizer& opt, const c10::intrusive_ptr<nn::OpenSystemProgram>& program, const Tensor& rates,
                    const Tensor& drift_coeffs, const Tensor& weights) {
  Infidelity f(program, rates, drift_coeffs, weights);
  if (opt.n_params() != f.n_amp())
    throw Error("control: the optimiser's points have " + std::to_string(opt.n_params()) +
                " parameters; the program's amplitudes " + std::to_string(f.n_amp()));
  std::vector<double> x, cost, grad;
  while (!opt.done()) {
    const std::vector<int64_t> tasks = opt.pending_tasks();
    x.resize(tasks.size() * std::size_t(f.n_amp()));
    opt.points(x);
    cost.resize(tasks.size());
    grad.resize(x.size());
    f(tasks, x, cost, grad);
    opt.tell(cost, grad);
  }
}

}  // namespace qfleet::control
