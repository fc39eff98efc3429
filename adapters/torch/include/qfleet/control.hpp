// Optimal control over fleets: B independent problems optimised in one batched loop, each
// with its own optimiser state, line search and convergence (docs/control.md).
//
// The optimiser is driven by reverse communication: it names the tasks whose cost and
// gradient it needs and where (pending(), points()); the caller evaluates them together,
// in one batched engine call, and hands the results back (tell()). Callers that own a
// cost function call minimize(); Python's qfleet.control drives the same Optimizer
// through torch.classes.qfleet.ControlOptimizer, so both languages run one implementation.
//
// Methods: L-BFGS-B (Byrd, Lu, Nocedal, Zhu 1995; Morales, Nocedal 2011: version 3.0, the
// reference Fortran code from Debian's liblbfgsb, with exact box bounds), and Adam
// (Kingma, Ba 2015; torch::optim::Adam's update, step for step) projected onto the bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "qfleet/torch.hpp"

namespace qfleet::control {

enum class Method { lbfgsb, adam };

// Why a task stopped (running: it has not).
enum class Reason {
  running,
  target,       // its cost reached Options::target
  gradient,     // the infinity norm of its projected gradient <= Options::gtol
  converged,    // L-BFGS-B: relative reduction of the cost <= Options::ftol
  evaluations,  // Options::max_evaluations
  iterations,   // Options::max_iterations
  time,         // Options::max_seconds, for the whole optimisation
  line_search,  // L-BFGS-B's line search found no lower cost (often: at the optimum to rounding)
  not_finite,   // its cost or gradient was NaN or infinite
};
std::string_view reason_name(Reason r);

enum class Schedule { constant, cosine };  // Adam's learning rate; cosine: to 1% over max_iterations

struct Options {
  Method method = Method::lbfgsb;
  // Box bounds, broadcastable to x0's [B, n] (float64; +-inf where unbounded). Undefined:
  // unbounded. Every point handed to the caller lies within them, to the bit.
  torch::Tensor lower, upper;
  double target = -std::numeric_limits<double>::infinity();
  torch::Tensor targets;  // per task [B] (instead of `target`): each task's own goal
  double gtol = 1e-10;
  double ftol = 0.0;  // L-BFGS-B's factr = ftol / machine epsilon; 0: never on this rule
  int64_t max_evaluations = 1000;  // per task
  int64_t max_iterations = -1;     // per task (L-BFGS-B iterations, Adam steps); 0: x0 only; -1: unlimited
  double max_seconds = std::numeric_limits<double>::infinity();
  int memory = 10;  // L-BFGS-B: stored corrections
  double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam
  Schedule schedule = Schedule::constant;
  bool keep_best = true;  // the result holds each task's best point evaluated (false: its last)
  bool record_history = true;
};

struct Result {
  torch::Tensor x;            // [B, n] in x0's dtype (Adam steps in it; L-BFGS-B in float64)
  torch::Tensor cost;         // [B]: the cost at x
  torch::Tensor evaluations;  // [B] int64
  torch::Tensor iterations;   // [B] int64
  std::vector<Reason> reasons;
  std::vector<std::vector<double>> history;  // per task, the cost of every evaluation
  double seconds = 0;
};

class Optimizer {
 public:
  // x0 [B, n], any floating dtype. Throws std::invalid_argument naming
  // the first element of x0 outside the bounds, bounds with lower > upper, or NaN.
  Optimizer(const torch::Tensor& x0, Options options);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  // The tasks that want a cost and gradient now ([A] int64, ascending) and their points [A, n].
  torch::Tensor pending() const;
  torch::Tensor points() const;
  // cost [A] and gradient [A, n] at points(), in pending()'s order.
  void tell(const torch::Tensor& cost, const torch::Tensor& grad);
  // The same on host doubles, for loops that keep their own buffers (no tensor per round).
  std::vector<int64_t> pending_tasks() const;
  void points(std::span<double> out) const;  // [A, n]
  void tell(std::span<const double> cost, std::span<const double> grad);
  bool done() const;
  Result result() const;
  int64_t n_tasks() const;
  int64_t n_params() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The caller's cost: x [A, n] of tasks `tasks` [A] -> (cost [A], gradient [A, n]).
using CostGradient = std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor& x,
                                                                           const torch::Tensor& tasks)>;
Result minimize(const CostGradient& fg, const torch::Tensor& x0, const Options& options);
// The same with the gradient by autograd: cost(x [A, n], tasks) -> [A], task a's cost
// depending on row a of x only (the tasks are independent problems).
using Cost = std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& tasks)>;
Result minimize_autograd(const Cost& cost, const torch::Tensor& x0, const Options& options);

// The plain problem's cost straight from the engine, without autograd: x [A, n_seg * n_ctrl]
// amplitudes -> 1 - F per task (rates [B, n_jumps] / drift_coeffs [B, n_terms] per task, or
// shared without B), or, with weights [M], one pulse (A = 1) for an ensemble of M members
// (rates / drift_coeffs [M, ...]) and the cost 1 - sum_m w_m F_m. complex128 programs.
CostGradient infidelity(const c10::intrusive_ptr<nn::OpenSystemProgram>& program, const torch::Tensor& rates,
                        const torch::Tensor& drift_coeffs, const torch::Tensor& weights);
// Runs `opt` to its end on that cost, the loop on host buffers (no tensor per round).
void run_infidelity(Optimizer& opt, const c10::intrusive_ptr<nn::OpenSystemProgram>& program,
                    const torch::Tensor& rates, const torch::Tensor& drift_coeffs, const torch::Tensor& weights);

// Pulse shapes: parameters -> amplitudes [..., n_seg, n_ctrl] at the segments' midpoints
// s_j = (j + 1/2) / n_seg of the gate's time, in units of its duration (so a shape keeps
// its form when the duration changes). Differentiable (ATen ops); also torch.ops.qfleet.*.
//   fourier: coeffs [..., 2K, n_ctrl] (cosines, then sines) at frequencies [K] (cycles per
//            duration; CRAB: k + r_k with random r_k), u = sum_k a_k cos(2 pi f_k s) + b_k sin(...)
//   gaussian: params [..., n_ctrl, 3] = (amplitude, centre, width), widths in units of the duration
//   drag: params [..., 4] = (amplitude, centre, width, beta) -> two controls: the Gaussian
//         and beta times its derivative in s (Motzoi et al., PRL 103, 110501 (2009))
torch::Tensor fourier_pulse(const torch::Tensor& coeffs, const torch::Tensor& frequencies, int64_t n_seg);
torch::Tensor gaussian_pulse(const torch::Tensor& params, int64_t n_seg);
torch::Tensor drag_pulse(const torch::Tensor& params, int64_t n_seg);
// Penalties per pulse [...]: sum of squared differences of neighbouring segments, and the
// pulse's energy sum_j u_j^2 dt_j (dt [n_seg] or [..., n_seg]).
torch::Tensor smoothness_penalty(const torch::Tensor& amplitudes);
torch::Tensor power_penalty(const torch::Tensor& amplitudes, const torch::Tensor& dt);

}  // namespace qfleet::control
