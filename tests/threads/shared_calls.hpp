// The threads tests' one check (tests/threads): calls made alone, then the same calls from
// four threads at once, each thread making call (t + round) % n: every result equals the
// one made alone, and no call throws.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace threads_tests {

// `call(k)` returns call k's results; `same(a, b)` compares two of them.
template <class Call, class Same>
void expect_shared_calls_match_serial(int n_calls, const Call& call, const Same& same, int rounds,
                                      const std::string& what) {
  constexpr int kThreads = 4;
  std::vector<decltype(call(0))> serial;
  for (int k = 0; k < n_calls; ++k) serial.push_back(call(k));
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < rounds; ++r) {
          const int k = (t + r) % n_calls;
          if (!same(call(k), serial[std::size_t(k)])) ++mismatches[std::size_t(t)];
        }
      } catch (const std::exception& e) {
        errors[std::size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(mismatches[std::size_t(t)], 0) << what << ": thread " << t;
    EXPECT_EQ(errors[std::size_t(t)], "") << what << ": thread " << t;
  }
}

}  // namespace threads_tests
