// Plain data for the open-system task body (kernels/open_task.hpp): the compiled
// open system as one flat view (host or device pointers), and one batched call.
// C++17 and free of functions, so the C++20 library, the per-ISA cpu executors and
// the CUDA translation units all read the same definition.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qfleet/solver.hpp"

namespace qfleet::kern {

// OpenSystem::Target as the kernels name it (open_system.hpp is a C++20 header nvcc
// does not read; open_pack.cpp static_asserts the values match). The solver is
// qfleet::Solver itself (qfleet/solver.hpp is C++17).
enum KernTarget : int { kTargetNone = 0, kTargetPure = 1, kTargetMixed = 2, kTargetUnitary = 3 };

// Every matrix is row-major complex<double> stored as (re, im) pairs.
// Generator A = A0 + sum_m c_m A_m + sum_j gamma_j D_j + sum_k u_k B_k (n x n),
// state X (n x c); see core/open_plan.hpp for what n and c are per problem kind.
struct OpenView {
  int d = 0, n = 0, c = 0;
  int nseg = 0, nctrl = 0, ndrift = 0, nrate = 0, nobs = 0, nsub = 0;
  bool closed = true, gate = false;
  Solver solver = Solver::exact;
  // The exact solver by the action of exp(dt A) on the state (Taylor steps,
  // kernels/expm_action.hpp) instead of the propagator; the generator is then applied
  // densely or in Lindblad form, as the step solvers apply it.
  bool action = false;
  int target = 0;  // a KernTarget (OpenSystem::Target's value)
  double dt = 0, rtol = 0, atol = 0;
  int fixed_steps = 0;  // rk4/euler: the most steps one segment takes
  // Step solvers: the backward pass keeps every accepted step's stage states when it
  // re-runs a segment, rather than computing them again per step in the reverse sweep
  // (open_stage_store). The cpu executor sets it when the store fits its budget
  // (src/cpu/open_cpu_impl.hpp); the cuda kernels do not (yet: not run on a GPU).
  bool keep_stages = false;
  // Step solvers, fused forward + backward calls: the forward sweep keeps every step's
  // state and stage states for up to this many step records (s states each) across the
  // segments, and the backward pass reads the segments kept instead of re-running them
  // (open_trajectory_store). 0: every segment is re-run. Needs keep_stages; set by the
  // cpu executor when the store fits its budget (src/cpu/open_cpu_impl.hpp).
  int traj_records = 0;
  // Exact action, adjoint calls: the backward pass's re-run of a segment keeps the Taylor
  // terms of all its steps when they fit in this many states (taylor_kept_forward), rather
  // than recomputing the step starts from the segment's start and each step's terms again.
  // 0: recomputed. Set by the cpu executor within its budget (src/cpu/open_cpu_impl.hpp);
  // the cuda kernels do not (a GPU task's workspace is per task, not per thread).
  int taylor_terms = 0;
  const double* durations = nullptr;   // [nseg] (plain doubles)
  const double* a0 = nullptr;          // [n, n]
  const double* a_drift = nullptr;     // [ndrift, n, n]
  const double* a_rate = nullptr;      // [nrate, n, n]
  const double* a_ctrl = nullptr;      // [nctrl, n, n]
  const double* x0 = nullptr;          // [n, c]
  const double* fid_lam = nullptr;     // [n, c] or null (linear fidelity)
  double fid_offset = 0;
  const double* leak_lam = nullptr;    // [n, c] or null (linear leakage)
  double leak_offset = 0;
  const double* target_psi = nullptr;  // [d]
  const double* target_mat = nullptr;  // [d, d]
  const double* sqrt_sigma = nullptr;  // [d, d]
  const int* subspace = nullptr;       // [nsub] (plain ints)
  const double* observables = nullptr; // [nobs, d, d]
  // Lindblad form (open systems on a step solver or the exact solver's action;
  // kernels/lindblad_action.hpp): a0,
  // a_drift, a_rate and a_ctrl then hold the d x d G terms (-i H, -1/2 L^dag L) as
  // `ng` values on one sparse pattern instead of n x n superoperators, and the jump
  // operators come as sparse matrices of their own.
  bool lindblad = false;
  int ng = 0;                      // generator entries: n * n, or the pattern's nonzeros
  const int* g_pattern = nullptr;  // kern::SparsePattern ints
  const int* jump_pattern = nullptr;   // every jump's pattern, one after another
  const int* jump_index = nullptr;     // [nrate]: where jump j's pattern starts
  const int* jump_vstart = nullptr;    // [nrate]: where jump j's values start
  const double* jump_vals = nullptr;   // [jump_nnz] pairs
  int jump_nnz = 0;
};

// One batched call. Complex buffers are (re, im) pairs of R. Shared arguments
// (per_task false) have no batch dimension.
template <class R>
struct OpenTaskCall {
  std::size_t batch = 0;
  const R* amplitudes = nullptr;  // [B?, nseg, nctrl]
  bool amplitudes_per_task = false;
  const R* drift = nullptr;  // [B?, ndrift]
  bool drift_per_task = false;
  const R* rates = nullptr;  // [B?, nrate]
  bool rates_per_task = false;
  const R* initial = nullptr;  // per task: [B, d] (pure) or [B, d, d] (density), pairs
  R* fidelity = nullptr;       // [B]
  R* leakage = nullptr;        // [B]
  R* expvals = nullptr;        // [B, nseg + 1, nobs]
  R* final_state = nullptr;    // [B, final size], pairs
  // Segment durations of this call: [B?, nseg]; null: the compiled grid (OpenView::durations).
  const R* durations = nullptr;
  bool durations_per_task = false;
  const R* cot_fidelity = nullptr;  // [B]
  const R* cot_leakage = nullptr;   // [B]
  const R* cot_expvals = nullptr;   // [B, nseg + 1, nobs]: each enters at its segment boundary
  const R* cot_final = nullptr;     // [B, final size], pairs (laid out as final_state)
  bool adjoint = false;
  R* grad_amplitudes = nullptr;  // like amplitudes (summed over tasks when shared)
  R* grad_drift = nullptr;
  R* grad_rates = nullptr;
  R* grad_durations = nullptr;  // like durations; [nseg] summed over tasks when shared or absent
  R* grad_initial = nullptr;    // like initial (per-task initial states only), pairs
  // Saved-state adjoint (cpu only): run r keeps what its backward sweep needs at
  // save + r * open_saved_per_run<R>(view) (a forward call), or a backward call starts
  // its reverse sweep from what a forward call kept there (resume), without the
  // forward sweep.
  R* save = nullptr;
  const R* resume = nullptr;
};

// The call's buffers by role, inputs first, then outputs, in the one order both sides of the
// device seam walk (core/open_program.cpp's sizes and staging list, cuda/cuda_backend.cpp's
// staged copies): for_each_buffer(call, f) calls f(role, field, is_output) for each staged
// pointer field (save and resume, cpu only, are not staged).
enum class OpenBuffer : int {
  amplitudes, drift, rates, initial, cot_fidelity, cot_leakage, durations, cot_expvals, cot_final,  // inputs
  fidelity, leakage, expvals, final_state, grad_amplitudes, grad_drift, grad_rates, grad_durations, grad_initial
};
inline constexpr int kOpenBuffers = 18;

template <class Call, class F>  // Call: OpenTaskCall<R> or const OpenTaskCall<R>
void open_buffers(Call& c, F&& f) {
  f(OpenBuffer::amplitudes, c.amplitudes, false);
  f(OpenBuffer::drift, c.drift, false);
  f(OpenBuffer::rates, c.rates, false);
  f(OpenBuffer::initial, c.initial, false);
  f(OpenBuffer::cot_fidelity, c.cot_fidelity, false);
  f(OpenBuffer::cot_leakage, c.cot_leakage, false);
  f(OpenBuffer::durations, c.durations, false);
  f(OpenBuffer::cot_expvals, c.cot_expvals, false);
  f(OpenBuffer::cot_final, c.cot_final, false);
  f(OpenBuffer::fidelity, c.fidelity, true);
  f(OpenBuffer::leakage, c.leakage, true);
  f(OpenBuffer::expvals, c.expvals, true);
  f(OpenBuffer::final_state, c.final_state, true);
  f(OpenBuffer::grad_amplitudes, c.grad_amplitudes, true);
  f(OpenBuffer::grad_drift, c.grad_drift, true);
  f(OpenBuffer::grad_rates, c.grad_rates, true);
  f(OpenBuffer::grad_durations, c.grad_durations, true);
  f(OpenBuffer::grad_initial, c.grad_initial, true);
}
template <class R, class F>
void for_each_buffer(OpenTaskCall<R>& c, F&& f) {
  open_buffers(c, f);
}
template <class R, class F>
void for_each_buffer(const OpenTaskCall<R>& c, F&& f) {
  open_buffers(c, f);
}

// Every task identical (all parameters shared, no per-task initial state): one
// simulation stands for the whole batch (its cotangents summed, its outputs broadcast).
template <class R>
bool identical_tasks(const OpenTaskCall<R>& c) {
  return !c.amplitudes_per_task && !c.drift_per_task && !c.rates_per_task && !c.durations_per_task && !c.initial;
}

// What one task's run returns.
enum OpenTaskStatus : int {
  kOpenOk = 0,
  kOpenUnderflow = 1,     // dopri5: more than 10^6 steps in one segment
  kOpenStepCapacity = 2,  // dopri5 backward: more accepted steps than the workspace holds
};

}  // namespace qfleet::kern
