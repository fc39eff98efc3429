// The executors' pool (src/cpu/task_pool.hpp): every item runs exactly once, no slot runs
// on two threads at once, errors come back, and callers that meet (several threads, a
// call inside an item, a forked child) still get every item run. Run here and in the
// ThreadSanitizer tree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "cpu/task_pool.hpp"
#include "qfleet/parallel.hpp"

namespace task_pool_test {

using qfleet::cpu::run_items;

// Runs n items on `threads` threads; checks each ran once and no slot overlapped itself.
void check_every_item_once(std::size_t n, int threads) {
  std::vector<std::atomic<int>> ran(n);
  std::vector<std::atomic<int>> in_slot(static_cast<std::size_t>(threads));
  std::atomic<int> overlaps{0}, bad_slots{0};
  const auto body = [&](std::size_t item, int slot) {
    if (slot < 0 || slot >= threads) {
      bad_slots.fetch_add(1);
      return;
    }
    if (in_slot[std::size_t(slot)].fetch_add(1) != 0) overlaps.fetch_add(1);
    ran[item].fetch_add(1);
    volatile double x = 0;  // a little work, so the threads meet
    for (int k = 0; k < 200; ++k) x = x + k;
    in_slot[std::size_t(slot)].fetch_sub(1);
  };
  run_items(n, threads, body);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), 1) << "item " << i << " of " << n;
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(bad_slots.load(), 0);
}

TEST(Threads, PoolRunsEveryItemOnceWithSlotsOfTheirOwn) {
  for (int threads : {1, 2, 3, 4}) {
    for (std::size_t n : {0, 1, 2, 7, 1000}) check_every_item_once(n, threads);
  }
  for (int call = 0; call < 200; ++call) check_every_item_once(16, 2);  // back to back, as training calls
}

TEST(Threads, PoolCallersFromSeveralThreadsAndFromInsideAnItem) {
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int call = 0; call < 50; ++call) {
        std::atomic<int> sum{0};
        const auto body = [&](std::size_t item, int) {
          std::atomic<int> inner{0};
          const auto nested = [&](std::size_t, int slot) { inner.fetch_add(slot == 0 ? 1 : 1000); };
          run_items(3, 2, nested);  // inside an item: on this thread alone (slot 0)
          sum.fetch_add(static_cast<int>(item) + inner.load());
        };
        run_items(10, 2, body);
        if (sum.load() != 45 + 30) failures.fetch_add(1);
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Threads, PoolRethrowsAnItemsErrorAfterTheOthersRan) {
  std::atomic<int> ran{0};
  const auto body = [&](std::size_t item, int) {
    ran.fetch_add(1);
    if (item == 5) throw std::runtime_error("item 5 failed");
  };
  EXPECT_THROW(run_items(64, 2, body), std::runtime_error);
  EXPECT_EQ(ran.load(), 64);
  check_every_item_once(64, 2);  // and the pool serves the next call
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QFLEET_UNDER_TSAN 1
#endif
#endif

TEST(Threads, PoolWorksInAForkedChild) {
#ifdef QFLEET_UNDER_TSAN
  GTEST_SKIP() << "ThreadSanitizer does not support threads started after a multi-threaded fork";
#endif
  check_every_item_once(100, 2);  // the parent's workers exist
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int> ran{0};
    const auto body = [&](std::size_t, int) { ran.fetch_add(1); };
    run_items(100, 2, body);  // the child's own pool: it has none of the parent's threads
    _exit(ran.load() == 100 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// qfleet::parallel_for (qfleet/parallel.hpp): contiguous chunks covering [0, n) once each, none
// smaller than min_chunk (or n), at most four a thread, a small loop on the caller
// alone, and a body's error rethrown.
TEST(Threads, ParallelForCoversTheRangeInChunksOfAtLeastTheMinimum) {
  for (const auto& [n, min_chunk] : {std::pair<std::int64_t, std::int64_t>{1000, 16}, {1000, 1}, {7, 3}, {128, 1000}}) {
    std::vector<std::atomic<int>> ran(static_cast<std::size_t>(n));
    std::atomic<std::int64_t> chunks{0}, smallest{n};
    std::atomic<int> off_caller{0};
    const auto caller = std::this_thread::get_id();
    qfleet::parallel_for(n, 2, min_chunk, [&](std::int64_t begin, std::int64_t end) {
      chunks.fetch_add(1);
      std::int64_t s = smallest.load();
      while (end - begin < s && !smallest.compare_exchange_weak(s, end - begin)) {
      }
      if (std::this_thread::get_id() != caller) off_caller.fetch_add(1);
      for (std::int64_t i = begin; i < end; ++i) ran[std::size_t(i)].fetch_add(1);
    });
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(ran[std::size_t(i)].load(), 1) << i << " of " << n;
    const std::int64_t most = std::max<std::int64_t>(1, std::min<std::int64_t>(n / min_chunk, 8));
    EXPECT_LE(chunks.load(), most) << n << " / " << min_chunk;
    EXPECT_GE(smallest.load(), std::min(min_chunk, n)) << n << " / " << min_chunk;
    if (n < 2 * min_chunk) {
      EXPECT_EQ(chunks.load(), 1) << n << " / " << min_chunk;
      EXPECT_EQ(off_caller.load(), 0);
    }
  }
  int calls = 0;
  qfleet::parallel_for(0, 2, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(qfleet::parallel_for(100, 2, 1,
                                    [](std::int64_t begin, std::int64_t) {
                                      if (begin == 0) throw std::runtime_error("chunk 0");
                                    }),
               std::runtime_error);
}

}  // namespace task_pool_test
