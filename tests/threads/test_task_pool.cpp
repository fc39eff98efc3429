// The executors' pool (src/cpu/task_pool.hpp): every item runs exactly once, no slot runs
// on two threads at once, errors come back, and callers that meet (several threads, a
// call inside an item, a forked child) still get every item run. Run here and in the
// ThreadSanitizer tree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/task_pool.hpp"

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

}  // namespace task_pool_test
