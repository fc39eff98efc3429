// The batched optimiser behind qfleet::control (include/qfleet/control.hpp): B problems,
// each with its own L-BFGS-B state or its own rows of Adam's moments, its own stopping
// rules and its own best point; one round evaluates every running task at once.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <sstream>

#include "lbfgsb.hpp"
#include "qfleet/control.hpp"
#include "qfleet/error.hpp"

namespace qfleet::control {

using torch::Tensor;

std::string_view reason_name(Reason r) {
  switch (r) {
    case Reason::running: return "running";
    case Reason::target: return "target";
    case Reason::gradient: return "gradient";
    case Reason::converged: return "converged";
    case Reason::evaluations: return "evaluations";
    case Reason::iterations: return "iterations";
    case Reason::time: return "time";
    case Reason::line_search: return "line_search";
    case Reason::not_finite: return "not_finite";
  }
  return "running";
}

struct Optimizer::State {
  Options o;
  int64_t B = 0, n = 0;
  torch::ScalarType dtype = torch::kFloat64;
  Tensor lower, upper;  // [B, n] float64
  std::vector<Reason> reason;
  std::vector<int64_t> evals, iters;
  std::vector<double> best_f, last_f, target;  // target: each task's (Options::target or targets)
  std::vector<double> best_x, last_x;  // [B * n]
  std::vector<std::vector<double>> history;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds = 0;
  std::vector<Lbfgsb> lb;
  Tensor x, m, v;  // Adam: [B, n] in dtype
  int64_t step = 0;

  std::vector<int64_t> running() const {
    std::vector<int64_t> r;
    for (int64_t b = 0; b < B; ++b)
      if (reason[b] == Reason::running) r.push_back(b);
    return r;
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void stop(int64_t b, Reason why) {
    if (reason[b] == Reason::running) reason[b] = why;
  }
  double projected_gradient_norm(int64_t b, const double* x_b, const double* g) const;
  void record(int64_t b, double f, const double* x_b);
  void adam_step(const std::vector<int64_t>& rows, const Tensor& grad);
  void lbfgsb_continue(int64_t b);
};

namespace {

void check_options(const Options& o) {
  auto bad = [](const std::string& what) { throw Error("control: " + what); };
  if (o.max_evaluations < 1) bad("max_evaluations must be >= 1, got " + std::to_string(o.max_evaluations));
  if (o.max_iterations < -1)
    bad("max_iterations must be >= 0 (0: evaluate the start only; -1: unlimited), got " + std::to_string(o.max_iterations));
  if (!(o.gtol >= 0)) bad("gtol must be >= 0");
  if (!(o.ftol >= 0)) bad("ftol must be >= 0");
  if (!(o.max_seconds > 0)) bad("max_seconds must be > 0");
  if (std::isnan(o.target)) bad("target is NaN");
  if (o.memory < 1) bad("memory must be >= 1, got " + std::to_string(o.memory));
  if (o.method == Method::adam) {
    if (!(o.lr > 0) || !std::isfinite(o.lr)) bad("lr must be a finite number > 0");
    if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1)) bad("beta1 and beta2 must lie in [0, 1)");
    if (!(o.eps > 0)) bad("eps must be > 0");
    if (o.schedule == Schedule::cosine && o.max_iterations < 0)
      bad("the cosine schedule decays over max_iterations: set it");
  }
}

Tensor bound_tensor(const Tensor& t, int64_t B, int64_t n, double fill, const char* name) {
  if (!t.defined()) return torch::full({B, n}, fill, torch::kFloat64);
  Tensor d = t.to(torch::kFloat64);
  try {
    d = d.expand({B, n}).contiguous();
  } catch (const c10::Error&) {
    std::ostringstream s;
    s << "control: " << name << " bounds of shape " << t.sizes() << " do not broadcast to the parameters' [" << B
      << ", " << n << "]";
    throw Error(s.str());
  }
  if (d.isnan().any().item<bool>()) throw Error(std::string("control: the ") + name + " bounds hold NaN");
  return d;
}

// The first element of x0 outside [lower, upper], as a one-line error.
void check_inside(const Tensor& x0, const Tensor& lower, const Tensor& upper) {
  const Tensor x = x0.to(torch::kFloat64).contiguous();
  const auto xa = x.accessor<double, 2>();
  const auto la = lower.accessor<double, 2>(), ua = upper.accessor<double, 2>();
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t i = 0; i < x.size(1); ++i) {
      const double v = xa[b][i], lo = la[b][i], hi = ua[b][i];
      if (lo <= hi && std::isfinite(v) && v >= lo && v <= hi) continue;
      std::ostringstream s;
      if (lo > hi)
        s << "control: lower bound " << lo << " > upper bound " << hi << " at [" << b << ", " << i << "]";
      else if (!std::isfinite(v))
        s << "control: the initial point is not finite: x0[" << b << ", " << i << "] = " << v;
      else
        s << "control: the initial point is outside the bounds: x0[" << b << ", " << i << "] = " << v
          << (v < lo ? " < lower bound " : " > upper bound ") << (v < lo ? lo : hi);
      throw Error(s.str());
    }
}

}  // namespace

Optimizer::Optimizer(const Tensor& x0, Options options) : s_(std::make_unique<State>()) {
  State& s = *s_;
  check_options(options);
  if (!x0.defined() || x0.dim() != 2 || x0.size(0) < 1 || x0.size(1) < 1 || !x0.is_floating_point())
    throw Error("control: x0 must be a floating tensor [B, n] with B, n >= 1");
  s.o = std::move(options);
  s.B = x0.size(0);
  s.n = x0.size(1);
  s.dtype = x0.scalar_type();
  const double inf = std::numeric_limits<double>::infinity();
  s.lower = bound_tensor(s.o.lower, s.B, s.n, -inf, "lower");
  s.upper = bound_tensor(s.o.upper, s.B, s.n, inf, "upper");
  check_inside(x0, s.lower, s.upper);
  s.target.assign(s.B, s.o.target);
  if (s.o.targets.defined()) {
    const Tensor t = s.o.targets.to(torch::kCPU, torch::kFloat64).contiguous();
    if (t.dim() != 1 || t.size(0) != s.B || t.isnan().any().item<bool>())
      throw Error("control: targets must be one number per task [" + std::to_string(s.B) + "], without NaN");
    s.target.assign(t.data_ptr<double>(), t.data_ptr<double>() + s.B);
  }
  s.reason.assign(s.B, Reason::running);
  s.evals.assign(s.B, 0);
  s.iters.assign(s.B, 0);
  s.best_f.assign(s.B, inf);
  s.last_f.assign(s.B, inf);
  s.history.resize(s.B);
  const Tensor x = x0.detach().to(torch::kCPU).contiguous().clone();
  const Tensor xd = x.to(torch::kFloat64).contiguous();
  s.best_x.assign(xd.data_ptr<double>(), xd.data_ptr<double>() + s.B * s.n);
  s.last_x = s.best_x;
  if (s.o.method == Method::adam) {
    s.x = x;
    s.m = torch::zeros_like(x);
    s.v = torch::zeros_like(x);
    return;
  }
  const double factr = s.o.ftol / std::numeric_limits<double>::epsilon();
  s.lb.reserve(s.B);
  for (int64_t b = 0; b < s.B; ++b) {
    auto row = [&](const Tensor& t) {
      const double* p = t[b].data_ptr<double>();
      return std::vector<double>(p, p + s.n);
    };
    s.lb.emplace_back(row(xd), row(s.lower), row(s.upper), s.o.memory, factr, s.o.gtol);
    s_->lbfgsb_continue(b);
  }
}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

int64_t Optimizer::n_tasks() const { return s_->B; }
int64_t Optimizer::n_params() const { return s_->n; }
bool Optimizer::done() const { return s_->running().empty(); }

Tensor Optimizer::pending() const { return torch::tensor(pending_tasks(), torch::kInt64); }

Tensor Optimizer::points() const {
  const State& s = *s_;
  if (s.o.method == Method::adam) return s.x.index_select(0, pending());  // (in x0's dtype)
  Tensor p = torch::empty({int64_t(s.running().size()), s.n}, torch::kFloat64);
  points({p.mutable_data_ptr<double>(), std::size_t(p.numel())});
  return p.to(s.dtype);
}

// The infinity norm of the gradient with the components that push out of the box at an
// active bound removed (L-BFGS-B's projgr, used for Adam's gtol rule).
double Optimizer::State::projected_gradient_norm(int64_t b, const double* x_b, const double* g) const {
  const double* l = lower[b].data_ptr<double>();
  const double* u = upper[b].data_ptr<double>();
  double norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    double gi = g[i];
    if (gi < 0) gi = std::max(x_b[i] - u[i], gi);
    else gi = std::min(x_b[i] - l[i], gi);
    norm = std::max(norm, std::abs(gi));
  }
  return norm;
}

void Optimizer::State::record(int64_t b, double f, const double* x_b) {
  ++evals[b];
  if (o.record_history) history[b].push_back(f);
  last_f[b] = f;
  std::copy_n(x_b, n, last_x.begin() + b * n);
  if (f < best_f[b] || (std::isnan(best_f[b]) && !std::isnan(f))) {
    best_f[b] = f;
    std::copy_n(x_b, n, best_x.begin() + b * n);
  }
}

// torch::optim::Adam's update (libtorch's adam.cpp), on the rows of the running tasks, then
// the projection onto the box.
void Optimizer::State::adam_step(const std::vector<int64_t>& rows, const Tensor& grad) {
  const Tensor idx = torch::tensor(rows, torch::kInt64);
  ++step;
  double lr = o.lr;
  if (o.schedule == Schedule::cosine)
    lr = o.lr * (0.01 + 0.99 * 0.5 * (1 + std::cos(std::numbers::pi * double(step - 1) / double(o.max_iterations))));
  Tensor xr = x.index_select(0, idx), mr = m.index_select(0, idx), vr = v.index_select(0, idx);
  const double bc1 = 1 - std::pow(o.beta1, double(step)), bc2 = 1 - std::pow(o.beta2, double(step));
  mr.mul_(o.beta1).add_(grad, 1 - o.beta1);
  vr.mul_(o.beta2).addcmul_(grad, grad, 1 - o.beta2);
  const Tensor denom = (vr.sqrt() / std::sqrt(bc2)).add_(o.eps);
  xr.addcdiv_(mr, denom, -lr / bc1);
  xr = torch::clamp(xr, lower.index_select(0, idx).to(x.scalar_type()), upper.index_select(0, idx).to(x.scalar_type()));
  x.index_copy_(0, idx, xr);
  m.index_copy_(0, idx, mr);
  v.index_copy_(0, idx, vr);
}

// Runs task b's L-BFGS-B until it wants an evaluation or stops.
void Optimizer::State::lbfgsb_continue(int64_t b) {
  Lbfgsb& t = lb[b];
  for (;;) {
    switch (t.advance()) {
      case Lbfgsb::Ask::evaluate: return;
      case Lbfgsb::Ask::iterated:
        iters[b] = t.iterations();
        if (o.max_iterations > 0 && iters[b] >= o.max_iterations) return stop(b, Reason::iterations);
        continue;
      case Lbfgsb::Ask::converged_gradient: return stop(b, Reason::gradient);
      case Lbfgsb::Ask::converged_reduction: return stop(b, Reason::converged);
      case Lbfgsb::Ask::line_search: return stop(b, Reason::line_search);
      case Lbfgsb::Ask::error: throw Error("control: L-BFGS-B stopped: " + std::string(t.message()));
    }
  }
}

void Optimizer::tell(const Tensor& cost, const Tensor& grad) {
  State& s = *s_;
  const int64_t A = int64_t(s.running().size());
  if (!cost.defined() || cost.dim() != 1 || cost.size(0) != A)
    throw Error("control: tell expects the costs [" + std::to_string(A) + "] of the pending tasks");
  if (!grad.defined() || grad.dim() != 2 || grad.size(0) != A || grad.size(1) != s.n)
    throw Error("control: tell expects the gradients [" + std::to_string(A) + ", " + std::to_string(s.n) +
                "] of the pending tasks");
  const Tensor f = cost.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  const Tensor g = grad.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  tell({f.const_data_ptr<double>(), std::size_t(A)}, {g.const_data_ptr<double>(), std::size_t(A * s.n)});
}

std::vector<int64_t> Optimizer::pending_tasks() const { return s_->running(); }

void Optimizer::points(std::span<double> out) const {
  const State& s = *s_;
  const auto r = s.running();
  if (out.size() != r.size() * std::size_t(s.n)) throw Error("control: points() needs [pending, n] doubles");
  if (s.o.method == Method::adam) {
    const Tensor p = s.x.index_select(0, torch::tensor(r, torch::kInt64)).to(torch::kFloat64).contiguous();
    std::copy_n(p.const_data_ptr<double>(), out.size(), out.data());
    return;
  }
  for (std::size_t a = 0; a < r.size(); ++a) std::copy_n(s.lb[r[a]].x().data(), s.n, out.data() + a * s.n);
}

// The core of tell, on host doubles: each pending task's evaluation recorded, its stopping
// rules checked, and its optimiser advanced (L-BFGS-B to its next evaluation; Adam one step).
void Optimizer::tell(std::span<const double> cost, std::span<const double> grad) {
  State& s = *s_;
  const auto r = s.running();
  const int64_t A = int64_t(r.size());
  if (int64_t(cost.size()) != A || int64_t(grad.size()) != A * s.n)
    throw Error("control: tell expects the costs and gradients of the " + std::to_string(A) + " pending tasks");
  std::vector<double> adam_x;
  if (s.o.method == Method::adam) {
    adam_x.resize(std::size_t(A * s.n));
    points(adam_x);
  }
  std::vector<int64_t> step_rows, step_from;
  for (int64_t a = 0; a < A; ++a) {
    const int64_t b = r[a];
    const double fa = cost[a], *ga = grad.data() + a * s.n;
    const double* xa = s.o.method == Method::adam ? adam_x.data() + a * s.n : s.lb[b].x().data();
    s.record(b, fa, xa);
    if (!std::isfinite(fa) || !std::all_of(ga, ga + s.n, [](double v) { return std::isfinite(v); })) {
      s.stop(b, Reason::not_finite);
      continue;
    }
    if (fa <= s.target[b]) s.stop(b, Reason::target);
    else if (s.o.method == Method::adam && s.o.gtol > 0 && s.projected_gradient_norm(b, xa, ga) <= s.o.gtol)
      s.stop(b, Reason::gradient);
    else if (s.o.max_iterations == 0 || (s.o.method == Method::adam && s.o.max_iterations > 0 &&
                                         s.step >= s.o.max_iterations))
      s.stop(b, Reason::iterations);
    else if (s.evals[b] >= s.o.max_evaluations) s.stop(b, Reason::evaluations);
    if (s.reason[b] != Reason::running) continue;
    if (s.o.method == Method::adam) {
      step_rows.push_back(b);
      step_from.push_back(a);
      continue;
    }
    Lbfgsb& t = s.lb[b];
    t.cost() = fa;
    std::copy_n(ga, s.n, t.grad().data());
    s.lbfgsb_continue(b);
  }
  if (!step_rows.empty()) {
    const Tensor g = torch::from_blob(const_cast<double*>(grad.data()), {A, s.n}, torch::kFloat64);
    s.adam_step(step_rows, g.index_select(0, torch::tensor(step_from, torch::kInt64)).to(s.dtype));
    for (int64_t b : step_rows) s.iters[b] = s.step;
  }
  if (s.elapsed() >= s.o.max_seconds)
    for (int64_t b : s.running()) s.stop(b, Reason::time);
  if (done()) s.seconds = s.elapsed();
}

Result Optimizer::result() const {
  const State& s = *s_;
  Result out;
  out.x = torch::tensor(s.o.keep_best ? s.best_x : s.last_x, torch::kFloat64).view({s.B, s.n}).to(s.dtype);
  out.cost = torch::tensor(s.o.keep_best ? s.best_f : s.last_f, torch::kFloat64);
  out.evaluations = torch::tensor(s.evals, torch::kInt64);
  out.iterations = torch::tensor(s.iters, torch::kInt64);
  out.reasons = s.reason;
  out.history = s.history;
  out.seconds = done() ? s.seconds : s.elapsed();
  return out;
}

Result minimize(const CostGradient& fg, const Tensor& x0, const Options& options) {
  Optimizer opt(x0, options);
  while (!opt.done()) {
    const Tensor tasks = opt.pending();
    auto [f, g] = fg(opt.points(), tasks);
    opt.tell(f, g);
  }
  return opt.result();
}

Result minimize_autograd(const Cost& cost, const Tensor& x0, const Options& options) {
  return minimize(
      [&](const Tensor& x, const Tensor& tasks) {
        torch::AutoGradMode on(true);
        const Tensor p = x.detach().requires_grad_(true);
        const Tensor f = cost(p, tasks);
        if (f.dim() != 1 || f.size(0) != x.size(0))
          throw Error("control: the cost must be one value per task [" + std::to_string(x.size(0)) + "], got shape " +
                      c10::str(f.sizes()));
        Tensor g = torch::autograd::grad({f.sum()}, {p}, {}, false, false, true)[0];
        if (!g.defined()) g = torch::zeros_like(p);
        return std::pair{f.detach(), g};
      },
      x0, options);
}

}  // namespace qfleet::control
