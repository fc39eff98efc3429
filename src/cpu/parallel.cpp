// qfleet::parallel_for (qfleet/parallel.hpp) on the executors' pool.
#include "qfleet/parallel.hpp"

#include <algorithm>

#include "cpu/task_pool.hpp"

namespace qfleet {

void parallel_for(std::int64_t n, int threads, std::int64_t min_chunk, void* context,
                  void (*call)(void* context, std::int64_t begin, std::int64_t end)) {
  if (n <= 0) return;
  min_chunk = std::max<std::int64_t>(min_chunk, 1);
  // A few chunks per thread, not one: a worker the scheduler sets aside while it holds a
  // chunk delays the call by that chunk only (the caller takes the rest).
  const std::int64_t by_size = n / min_chunk;  // (rounded down: no chunk smaller than min_chunk)
  const std::int64_t chunks = std::max<std::int64_t>(1, std::min<std::int64_t>(by_size, 4 * std::int64_t(std::max(threads, 1))));
  if (chunks == 1) {
    call(context, 0, n);
    return;
  }
  auto chunk = [&](std::size_t item, int) {
    const auto c = std::int64_t(item);
    call(context, n * c / chunks, n * (c + 1) / chunks);
  };
  cpu::run_items(std::size_t(chunks), std::min<std::int64_t>(threads, chunks), chunk);
}

}  // namespace qfleet
