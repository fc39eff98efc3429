// Reference gradients of every open-system output at once, for the reverse-mode tests
// of qfleet::OpenProgram::vjp with TaskCotangents: central finite differences of the
// dense reference (reference/lindblad.hpp) of the real scalar
//   L = sum_b (cf_b F_b + cl_b leak_b + sum_{k,o} ce_{b,k,o} <O_o>_{b,k} + Re sum conj(cx_b) x_b),
// x_b the final state as qfleet lays it out (row-major rho, psi, S or U), with respect to
// amplitudes, drift coefficients, rates, segment durations (per task or shared), and, as
// directional derivatives, per-task initial states. Plain Eigen; shares no code with qfleet.
#pragma once

#include <cstddef>
#include <vector>

#include "reference/lindblad.hpp"

namespace ref {

struct Cotangents {
  std::vector<double> fid, leak, exp;  // [B], [B], [B, n_seg + 1, n_obs] (each may be empty)
  std::vector<cd> fin;                 // [B, final size] (may be empty)
};

// Segment durations of a batch: per task [B, n_seg], shared [n_seg], or empty (the model's).
struct Durations {
  std::vector<double> values;
  bool per_task = false;
  std::vector<double> of(const Model& m, std::size_t task) const;
};

struct AllGrads {
  std::vector<double> amps, drift, rates, durations;  // like the arguments ([n_seg] when durations are absent)
};

// L's share of task `task` (its outputs only).
double task_objective(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c,
                      std::size_t task, Scheme s, double dt);

// dL/d(each argument) by central differences of step h.
AllGrads fd_all_grads(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c, Scheme s,
                      double dt, double h = 1e-5);

// d/dt L(initial state of `task` + t v) at t = 0 (central differences; v: [d] or [d, d]
// row-major, a Hermitian direction for densities). The batch must have per-task initial states.
double fd_initial_direction(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c,
                            std::size_t task, const std::vector<cd>& v, Scheme s, double dt, double h = 1e-5);

}  // namespace ref
