// The sizes around one open-system task (kernels/open_task.hpp): a segment's fixed
// step count, a task's workspace and its scalars, what the saved-state adjoint keeps
// per run and the stage and trajectory stores. Read by the planner, the cpu executor
// and the cuda launch code to size buffers before any task runs. C++17, host and
// device (QFLEET_HD).
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/dense.hpp"
#include "kernels/expm.hpp"
#include "kernels/expm_action.hpp"
#include "kernels/hd.hpp"
#include "kernels/open_view.hpp"
#include "kernels/rk_tableaux.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// The fixed-step solvers' step count for a segment of length `duration`.
QFLEET_HD inline long open_fixed_steps(double duration, double dt) {
  using std::ceil;
  const double m = ceil(duration / dt - 1e-9);
  return m < 1 ? 1L : static_cast<long>(m);
}

// Scalars (doubles) at the head of a task's workspace: dopri5's first trial step per
// segment, its accepted steps (backward pass) and, in Lindblad form, the rates' jump
// gradients.
QFLEET_HD inline std::size_t open_task_doubles(const OpenView& v, int cap) {
  return std::size_t(v.nseg) + (open_detail::adaptive(v.solver) ? std::size_t(cap) : 0) +
         (v.lindblad ? std::size_t(v.nrate) : 0) +
         (v.traj_records > 0 ? std::size_t(v.traj_records) + 2 * std::size_t(v.nseg) : 0);
}

// Saved-state adjoint (OpenTaskCall::save / resume): what one run keeps between a
// forward call and its backward call, in R entries: X_0 .. X_N as (re, im) pairs,
// then for the adaptive solvers every segment's first trial step as raw doubles.
QFLEET_HD inline std::size_t open_saved_states(const OpenView& v) {
  return 2 * std::size_t(v.n) * v.c * (std::size_t(v.nseg) + 1);
}
template <class R>
QFLEET_HD inline std::size_t open_saved_per_run(const OpenView& v) {
  const std::size_t steps = open_detail::adaptive(v.solver) ? std::size_t(v.nseg) * sizeof(double) : 0;
  return open_saved_states(v) + (steps + sizeof(R) - 1) / sizeof(R);
}

// With OpenView::keep_stages, what the backward pass's re-run of a segment keeps for
// its reverse sweep, in Cx<R>: the step solvers' stage states 2..s of every step
// (stage 1 is the step's start, kept already). (The exact action recomputes its
// Taylor terms: its segments mostly take one Taylor step, whose terms cost as much
// to keep as to recompute.)
QFLEET_HD inline std::size_t open_stage_store(const OpenView& v, int cap) {
  if (!v.keep_stages || v.solver == Solver::exact) return 0;
  const int steps = open_detail::adaptive(v.solver) ? cap : v.fixed_steps;
  return std::size_t(v.n) * v.c * std::size_t(steps) * std::size_t(open_detail::tableau(v.solver).s - 1);
}

// With OpenView::traj_records, the forward sweep's store of whole segments, in Cx<R>:
// records of a step's state and its stage states 2..s (s nc entries each); a segment of
// m steps takes m + 1 records (its end state is the last one's).
QFLEET_HD inline std::size_t open_trajectory_store(const OpenView& v) {
  if (v.traj_records <= 0) return 0;
  return std::size_t(v.traj_records) * std::size_t(open_detail::tableau(v.solver).s) * v.n * v.c;
}

// Workspace of one task, in Cx<R> entries; `cap` is how many accepted dopri5 steps
// (or the action's Taylor steps) per segment the backward pass can hold (rk4/euler
// use v.fixed_steps instead). The propagator's n x n work matrices exist only for
// it; the generator and its gradients take v.ng entries each (n x n, or the
// Lindblad form's pattern).
template <class R>
QFLEET_HD inline std::size_t open_task_work(const OpenView& v, int cap) {
  const std::size_t nn = std::size_t(v.n) * v.n, nc = std::size_t(v.n) * v.c, dd = std::size_t(v.d) * v.d;
  const int steps = open_detail::adaptive(v.solver) || v.action ? cap : v.fixed_steps;
  std::size_t w = (open_task_doubles(v, cap) * sizeof(double) + sizeof(Cx<R>) - 1) / sizeof(Cx<R>);
  w += 4 * std::size_t(v.ng) + 2 * nc + nc * (std::size_t(v.nseg) + 1);
  if (v.solver == Solver::exact && !v.action) {
    w += 3 * nn + expm_frechet_work(v.n);
  } else {
    w += (v.action ? taylor_work_states() : 30) * nc + nc * (std::size_t(steps) + 1) + open_stage_store(v, cap) +
         open_trajectory_store(v) + (v.action ? nc * std::size_t(v.taylor_terms) : 0);
  }
  if (v.lindblad) w += 2 * dd + std::size_t(v.jump_nnz);
  w += 6 * dd + hermitian_eig_work(v.d) + std::size_t(v.d);
  return w;
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
