// The apps' error ladder names what a run was doing when LibTorch (or anything else) failed
// under it (apps/common/doing.hpp, cli_errors.hpp, lifecycle.hpp): the innermost phase an
// exception left, its text built only then, nothing stale from an error handled earlier, the
// exception's type kept, and the user's own input errors (status 2) left as they are.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>

#include "common/cli_errors.hpp"
#include "common/lifecycle.hpp"

namespace qfleet::app {
namespace {

// run_guarded(body) -> (status, stderr)
template <class Body>
std::pair<int, std::string> guarded(Body body) {
  testing::internal::CaptureStderr();
  const int status = run_guarded("prog", body);
  return {status, testing::internal::GetCapturedStderr()};
}

TEST(ErrorContext, ALibTorchErrorNamesTheInnermostPhaseItLeft) {
  int built = 0;
  const auto [status, err] = guarded([&]() -> int {
    return doing("setting up (device = cpu)", [&] {
      return doing(
          [&] {
            ++built;
            return std::string("training, step 3 of 5 (batch = 64)");
          },
          [&]() -> int { TORCH_CHECK(false, "Expected all tensors to be on the same device"); });
    });
  });
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "prog: error: while training, step 3 of 5 (batch = 64): Expected all tensors to be on the same device\n");
  EXPECT_EQ(built, 1);
}

TEST(ErrorContext, TheTextIsBuiltOnlyOnFailureAndNothingStaleIsReported) {
  int built = 0;
  const auto [status, err] = guarded([&]() -> int {
    return doing("the run (device = cpu)", [&]() -> int {
      doing(
          [&] {
            ++built;
            return std::string("a step");
          },
          [] {});
      try {  // handled inside the program: its note must not name a later error
        doing("reading an optional file", []() -> int { throw std::runtime_error("absent"); });
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "absent");  // (its type and text unchanged)
      }
      throw std::runtime_error("a later failure");
    });
  });
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "prog: error: while the run (device = cpu): a later failure\n");
  EXPECT_EQ(built, 0);
}

TEST(ErrorContext, TheUsersOwnInputErrorsStayAsTheyAre) {
  const auto [status, err] = guarded([&]() -> int {
    return doing("setting up (device = cpu)", []() -> int { throw std::invalid_argument("batch: expected >= 1, got 0"); });
  });
  EXPECT_EQ(status, 2);
  EXPECT_EQ(err, "prog: error: batch: expected >= 1, got 0\n");
}

// A run whose step or checkpoint fails where asked, through app::run_lifecycle.
struct FailingRun {
  int64_t fail_step = -1, fail_checkpoint = -1;
  int64_t resume() { return 0; }
  train::RunnerOptions runner_options() const {
    train::RunnerOptions ro;
    ro.steps = 5;
    ro.checkpoint_every = 2;
    return ro;
  }
  train::Metrics step(int64_t i) {
    TORCH_CHECK(i != fail_step, "CUDA error: an illegal memory access was encountered");
    return {{"loss"}, {torch::zeros({})}};
  }
  void checkpoint(int64_t done) {
    if (done == fail_checkpoint) throw std::runtime_error("cannot write run/checkpoint.pt: File too large");
  }
  int finish(const Loop&) { return 0; }
  std::string settings() const { return "batch = 64, device = cuda"; }
};

TEST(ErrorContext, TheLifecycleNamesTheStepOrTheCheckpointAndTheRunsSettings) {
  auto [status, err] = guarded([]() -> int {
    FailingRun run;
    run.fail_step = 2;
    return run_lifecycle(run);
  });
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "prog: error: while training, step 3 of 5 (batch = 64, device = cuda): CUDA error: an illegal memory "
                 "access was encountered\n");
  std::tie(status, err) = guarded([]() -> int {
    FailingRun run;
    run.fail_checkpoint = 4;
    return run_lifecycle(run);
  });
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err, "prog: error: while writing the checkpoint after step 4 (batch = 64, device = cuda): cannot write "
                 "run/checkpoint.pt: File too large\n");
}

}  // namespace
}  // namespace qfleet::app
