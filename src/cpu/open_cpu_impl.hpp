// The open-system cpu executor, compiled once per instruction set like the circuit
// executor (open_cpu_{baseline,avx2,avx512}.cpp define QFLEET_KERN_ISA and include
// this file). The per-task work is the shared task body (kernels/open_task.hpp, the
// same code the cuda backend runs); this file only spreads tasks over the executors'
// pool (task_pool.hpp) and keeps each slot's workspace between calls.
//
// Hygiene for per-ISA compilation: every template instantiated here is on a type of
// this ISA's namespace (kern::Cx<R>), and no std:: function doing floating-point work
// is instantiated on plain types (std::complex, std::min...), so no weak symbol
// compiled with wide instructions can be picked by the linker for another ISA.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "cpu/open_cpu.hpp"
#include "cpu/task_pool.hpp"
#include "kernels/open_task.hpp"

namespace qfleet::cpu::QFLEET_KERN_ISA {

using kern::Cx;

// Per-thread workspace, kept between calls so a warm program does not allocate.
// cap: dopri5 steps per segment the backward pass can hold; grows when a task needs more.
template <class R>
struct OpenWorkspace {
  std::vector<Cx<R>> work;
  int cap = 64;
};

// The calling thread's workspaces, one per slot of the pool's team (task_pool.hpp; slot 0
// is the caller's own), kept between calls.
template <class R>
std::vector<OpenWorkspace<R>>& slot_workspaces(int slots) {
  thread_local std::vector<OpenWorkspace<R>> w;
  if (w.size() < std::size_t(slots)) w.resize(std::size_t(slots));
  return w;
}

// The most a thread's workspace holds of kept stage states (OpenView::keep_stages):
// 32 MiB holds a d = 64 open system's tsit5 stages at 64 steps per segment in
// complex128 (64 x 5 x 4096 x 16 B = 21 MiB); past it the reverse sweep recomputes them.
inline constexpr std::size_t kStageStoreBytes = std::size_t(32) << 20;

// The most a thread's workspace holds of a fused call's forward trajectory
// (OpenView::traj_records): the backward pass then reads the segments kept rather than
// stepping through them again, the forward sweep's cost a second time. 32 MiB holds
// 1,365 tsit5 steps at d = 16 (6 states x 256 x 16 B each; BM_LocalQubits' run takes
// fewer) and 341 at d = 32; past it the later segments are re-run as before.
inline constexpr std::size_t kTrajectoryBytes = std::size_t(32) << 20;

// The most a thread's workspace holds of an exact-action segment's Taylor terms
// (OpenView::taylor_terms), and at most 16 steps of the largest degree: 3.4 MiB at
// d = 16 in complex128, 32 MiB (512 terms) at d = 64; a segment that takes more
// recomputes them per step.
inline constexpr std::size_t kTaylorTermBytes = std::size_t(32) << 20;
inline constexpr int kTaylorTermStates = 16 * kern::kTaylorMaxDegree;

// This thread's view: the caller's, keeping the stage states of an adjoint call's
// steps when the store fits (kStageStoreBytes), and in a fused call (forward and
// backward in one: not the backward of a saved forward) the trajectory too; an adjoint
// call on the exact action keeps a segment's Taylor terms (kTaylorTermBytes).
template <class R>
kern::OpenView thread_view(const kern::OpenView& v, bool adjoint, bool fused, int cap) {
  kern::OpenView tv = v;
  tv.keep_stages = true;  // (open_stage_store sizes the store only when it is kept)
  tv.keep_stages = adjoint && kern::open_stage_store(tv, cap) * sizeof(Cx<R>) <= kStageStoreBytes;
  tv.traj_records = 0;
  tv.taylor_terms = 0;
  if (adjoint && tv.action) {
    const std::size_t fit = kTaylorTermBytes / (sizeof(Cx<R>) * std::size_t(tv.n) * std::size_t(tv.c));
    tv.taylor_terms = static_cast<int>(fit < std::size_t(kTaylorTermStates) ? fit : std::size_t(kTaylorTermStates));
  }
  if (tv.keep_stages && fused && tv.solver != qfleet::Solver::exact) {
    kern::OpenView one = tv;  // the store's size per record, from its one definition
    one.traj_records = 1;
    const std::size_t record = sizeof(Cx<R>) * kern::open_trajectory_store(one);
    const int steps = kern::open_detail::adaptive(tv.solver) ? cap : tv.fixed_steps;
    const std::size_t all = std::size_t(tv.nseg) * (std::size_t(steps) + 1), fit = kTrajectoryBytes / record;
    const std::size_t records = all < fit ? all : fit;
    tv.traj_records = records >= 2 ? static_cast<int>(records) : 0;
  }
  return tv;
}

// Runs `runs` tasks across threads. rows: per-task gradient rows (adjoint only).
// Returns 0, or 1 when a task failed (dopri5 step-size underflow, out of memory).
template <class R, class N>
int run_tasks(const kern::OpenView& v, const OpenCall<R>& c, std::size_t runs, R* rows,
              int num_threads, std::uint64_t* computed_out, std::uint64_t* reused_out) {
  const std::size_t n_amp = std::size_t(v.nseg) * v.nctrl, n_drift = std::size_t(v.ndrift);
  const std::size_t n_rate = std::size_t(v.nrate);
  const std::size_t row = n_amp + n_drift + n_rate + std::size_t(v.nseg);
  const int max_threads = num_threads > 0 ? num_threads : omp_get_max_threads();
  const int threads = static_cast<int>(runs < std::size_t(max_threads) ? runs : std::size_t(max_threads));
  const bool fused = c.adjoint && c.resume == nullptr;
  std::vector<OpenWorkspace<R>>& slots = slot_workspaces<R>(threads);
  std::atomic<std::uint64_t> computed{0}, reused{0};
  std::atomic<int> failed{0};
  // Every slot's workspace is sized whether or not a task reaches it this call: otherwise
  // which slots allocate varies from call to call, and a warm program still allocates.
  for (int s = 0; s < threads; ++s) {
    try {
      const std::size_t need = kern::open_task_work<R>(thread_view<R>(v, c.adjoint, fused, slots[s].cap), slots[s].cap);
      if (slots[s].work.size() < need) slots[s].work.resize(need);
    } catch (...) {
      failed.store(1);
    }
  }
  const auto task = [&](std::size_t b, int slot) {
    OpenWorkspace<R>& ws = slots[std::size_t(slot)];
    kern::OpenView tv = thread_view<R>(v, c.adjoint, fused, ws.cap);
    // (Identical tasks: one run, whose cotangents execute_open summed into row 0.)
    const R cf = c.adjoint && c.cot_fidelity ? c.cot_fidelity[b] : R(0);
    const R cl = c.adjoint && c.cot_leakage ? c.cot_leakage[b] : R(0);
    R* r = c.adjoint ? rows + b * row : nullptr;
    try {
      for (;;) {  // retried with a larger step store when dopri5 accepts more steps than it holds
        const std::size_t need = kern::open_task_work<R>(tv, ws.cap);
        if (ws.work.size() < need) ws.work.resize(need);
        std::uint64_t cp = 0, ru = 0;
        kern::OpenTask<R, N> t(tv, c, ws.work.data(), ws.cap);
        // Per-segment gradients only when asked: each costs the exact propagator its runs of
        // identical segments (kernels/open_task.hpp) and an inner product a segment.
        R* ga = r && c.grad_amplitudes ? r : nullptr;
        R* gd = r && c.grad_durations ? r + n_amp + n_drift + n_rate : nullptr;
        const int st = t.run(b, b, cf, cl, ga, r ? r + n_amp : nullptr, r ? r + n_amp + n_drift : nullptr, gd, cp, ru);
        if (st == kern::kOpenStepCapacity) {
          ws.cap *= 2;
          tv = thread_view<R>(v, c.adjoint, fused, ws.cap);
          continue;
        }
        computed.fetch_add(cp, std::memory_order_relaxed);
        reused.fetch_add(ru, std::memory_order_relaxed);
        if (st != kern::kOpenOk) failed.store(1, std::memory_order_relaxed);
        break;
      }
    } catch (...) {
      failed.store(1, std::memory_order_relaxed);
    }
  };
  run_items(runs, threads, task);
  *computed_out = computed.load();
  *reused_out = reused.load();
  return failed.load();
}

template <class R>
int run_open(const kern::OpenView& v, const OpenCall<R>& c, std::size_t runs, R* rows,
             int num_threads, std::uint64_t* computed, std::uint64_t* reused) {
  switch (v.n) {
    case 2:
      return run_tasks<R, kern::FixedDim<2>>(v, c, runs, rows, num_threads, computed, reused);
    case 4:
      return run_tasks<R, kern::FixedDim<4>>(v, c, runs, rows, num_threads, computed, reused);
    case 16:
      return run_tasks<R, kern::FixedDim<16>>(v, c, runs, rows, num_threads, computed, reused);
    default:
      return run_tasks<R, int>(v, c, runs, rows, num_threads, computed, reused);
  }
}

}  // namespace qfleet::cpu::QFLEET_KERN_ISA
