// The execution shape both circuit executors choose (sv_cpu.cpp, dm_cpu.cpp): how many
// threads a call's work pays for, tiles of SIMD lanes or one sample each, whether one
// large state's amplitudes are split across threads; and the workspace.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "cpu/task_pool.hpp"
#include "qfleet/error.hpp"

namespace qfleet::cpu {

// Threads only pay when each has enough work: a parallel call costs microseconds,
// and when other processes share the cores a region can wait a whole scheduler
// slice for a descheduled worker. ~0.5 MFLOP is 25-50 us of work for one core.
inline constexpr double kMinFlopsPerThread = 0.5e6;
// While other processes want the cores (machine_busy(), task_pool.hpp), a thread must have
// several milliseconds of work: a worker descheduled while it holds a tile makes the call
// wait for it (a scheduler slice). Beside one busy process per core the classifier layer at
// B = 1,024 (~2.5 ms of work) took up to 1.85x one thread's time on two threads with the idle
// share, the noisy one at B = 64 (~2.3 ms) 1.54x with 64 times it (bench/micro/contention.py).
inline constexpr double kBusyWorkFactor = 256.0;

struct ExecShape {
  int lanes = 1;                    // samples per tile
  bool amplitude_parallel = false;  // one large state's groups split across threads
  int threads = 1;
  std::size_t n_tiles = 0;
};

// `wide`: the ISA's lanes; tiles of `wide` samples while a state of up to
// `max_lane_qubits` qubits fits a core's L2 cache as a tile and the tiles are mostly full.
inline ExecShape exec_shape(const detail::Plan& plan, std::size_t batch, bool adjoint, int wide, int max_lane_qubits) {
  const int max_threads = plan.num_threads > 0 ? plan.num_threads : omp_get_max_threads();
  const double flops = double(batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
  const double per_thread = kMinFlopsPerThread * (machine_busy() ? kBusyWorkFactor : 1.0);
  const int threads = static_cast<int>(std::clamp<double>(flops / per_thread, 1.0, max_threads));
  ExecShape s;
  s.amplitude_parallel = plan.n > max_lane_qubits && batch < std::size_t(threads) && threads > 1;
  s.lanes = (plan.n <= max_lane_qubits && 2 * batch > std::size_t(wide)) ? wide : 1;
  s.n_tiles = (batch + s.lanes - 1) / s.lanes;
  s.threads = s.amplitude_parallel ? threads : static_cast<int>(std::min<std::size_t>(threads, s.n_tiles));
  return s;
}

// A call's workspace of `reals` values, grow-only per calling thread (a warm program
// allocates nothing); throws when it would not fit in memory, `rest()` ending the
// message after "this call needs N MiB of workspace".
template <class R, class Rest>
R* call_workspace(std::size_t reals, Rest rest) {
  if (static_cast<double>(reals) * sizeof(R) > 0.9 * static_cast<double>(detail::physical_memory_bytes())) {
    throw Error("this call needs " + std::to_string(reals * sizeof(R) >> 20) + " MiB of workspace" + rest());
  }
  thread_local std::vector<R> workspace;
  if (workspace.size() < reals) workspace.resize(reals);
  return workspace.data();
}

// Runs every tile of L samples of a batch as `ex` (an executor's Exec) says:
// runner.run(tile, first sample, valid samples, scratch, amplitude threads) one tile
// at a time with the state's amplitudes split over ex.threads, serially (small calls),
// or tiles over the executors' pool (task_pool.hpp), each slot its scratch slice of
// ex.work_per_thread reals from `scratch`. The tiles are handed out one at a time, not a
// fixed share a thread: on cores shared with other processes a descheduled thread would
// hold its whole share while the others wait (bench/micro/contention.py measures it;
// docs/architecture.md#threads-on-shared-machines); the tiles' results and gradient
// partials do not depend on which thread runs them.
template <int L, class Runner, class R, class Ex>
void run_tiles(const Runner& runner, std::size_t batch, R* scratch, const Ex& ex) {
  const std::size_t n_tiles = (batch + L - 1) / L;
  if (ex.amplitude_parallel) {
    for (std::size_t t = 0; t < n_tiles; ++t) runner.run(t, t * L, 1, scratch, ex.threads);
    return;
  }
  const auto tile = [&](std::size_t t, int slot) {
    const std::size_t b0 = t * L;
    const int nvalid = static_cast<int>(batch - b0 < std::size_t(L) ? batch - b0 : L);
    runner.run(t, b0, nvalid, scratch + std::size_t(slot) * ex.work_per_thread, 0);
  };
  run_items(n_tiles, ex.threads, tile);
}

// The shared weights' gradient: the tiles' partial rows summed in tile order, so
// the sum does not depend on the thread count.
template <class R>
void sum_tile_partials(const R* partials, std::size_t n_tiles, int n_weights, R* grad_weights) {
  for (int i = 0; i < n_weights; ++i) grad_weights[i] = 0;
  for (std::size_t t = 0; t < n_tiles; ++t) {
    for (int i = 0; i < n_weights; ++i) grad_weights[i] += partials[t * n_weights + i];
  }
}

}  // namespace qfleet::cpu
