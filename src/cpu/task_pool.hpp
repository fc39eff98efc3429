// The cpu executors' threads: a call's items (tiles of samples, open-system tasks) run on
// the calling thread and on workers of one process-wide pool, handed out one at a time.
//
// Why not an OpenMP team: between calls OpenMP's idle threads spin (the runtime LibTorch
// ships spins unless OMP_WAIT_POLICY=passive, a setting read once per process), and on
// cores shared with other processes the spinning takes the time the caller needs: a
// classifier layer's call at B = 1,024 took 2.0-3.6x one thread's time beside one busy
// process per core (bench/micro/contention.py). Here a waiting worker spins as OpenMP's do
// while the machine is idle and sleeps almost at once while it is busy (machine_busy());
// the caller always works through the items itself, so a call never waits for a worker the
// scheduler has not run yet, only for one that holds an item
// (docs/architecture.md#threads-on-shared-machines).
#pragma once

#include <cstddef>
#include <type_traits>

namespace qfleet::cpu {

// A body without ownership or allocation (a warm call allocates nothing): the callable
// and a function calling it.
struct ItemBody {
  void* context;
  void (*call)(void* context, std::size_t item, int slot);
  void operator()(std::size_t item, int slot) const { call(context, item, slot); }
};

void run_items(std::size_t n_items, int threads, const ItemBody& body);

// Runs body(item, slot) for every item in [0, n_items) on at most `threads` threads: the
// caller (slot 0) and pool workers (slots 1 .. threads - 1), each item exactly once, each
// slot on one thread at a time (slots index per-thread scratch). Returns when every item
// has run. A call made while the pool serves another caller, or from inside a body, runs
// its items on the calling thread alone. An exception from a body is rethrown here after
// every item has run or been skipped.
// Whether at least two more threads are runnable than the machine has CPUs (Linux's
// /proc/loadavg, read at most every 20 ms; false elsewhere): other processes want these cores. The circuit executors then give each thread more work
// (exec_shape.hpp): a worker the scheduler puts aside while it holds an item makes the call
// wait for it, which costs less the longer each thread's share is.
bool machine_busy();

template <class F>
void run_items(std::size_t n_items, int threads, F& body) {
  using Fn = std::remove_reference_t<F>;
  run_items(n_items, threads,
            ItemBody{const_cast<void*>(static_cast<const void*>(&body)),
                     [](void* c, std::size_t item, int slot) { (*static_cast<Fn*>(c))(item, slot); }});
}

}  // namespace qfleet::cpu
