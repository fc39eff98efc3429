// The engine's CPU threads for a loop of one's own beside its calls (an environment's
// per-task bookkeeping, say): the pool the cpu executors run on (src/cpu/task_pool.hpp),
// whose waiting workers sleep almost at once while other processes want the cores, where an
// OpenMP team's idle threads spin. A `#pragma omp parallel for` over 128 environments' steps
// took 8.0 ms on 2 threads beside a busy process per core, against 0.12 ms on one thread
// (docs/benchmarks.md#threads-under-contention).
#pragma once

#include <cstdint>
#include <type_traits>

namespace qfleet {

// Runs body(begin, end) over [0, n) in contiguous chunks on at most `threads` threads (the
// calling thread and the pool's workers): each index exactly once; chunks of at least
// `min_chunk` indices, so a loop too small to pay for a second thread runs on the caller
// alone. Returns when every chunk has run; an exception from the body is rethrown here
// after the others have run. A call from inside a body, or while the pool serves another
// caller, runs on the calling thread alone.
void parallel_for(std::int64_t n, int threads, std::int64_t min_chunk, void* context,
                  void (*call)(void* context, std::int64_t begin, std::int64_t end));

template <class F>
void parallel_for(std::int64_t n, int threads, std::int64_t min_chunk, F&& body) {
  using Fn = std::remove_reference_t<F>;
  parallel_for(n, threads, min_chunk, const_cast<void*>(static_cast<const void*>(&body)),
               [](void* c, std::int64_t begin, std::int64_t end) { (*static_cast<Fn*>(c))(begin, end); });
}

}  // namespace qfleet
