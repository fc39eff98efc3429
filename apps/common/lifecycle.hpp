// The loop every app's training run goes through, on qfleet::train's StepRunner. A Run is
// set up by its constructor, then:
//   resume()                -> the first step (0, or where its checkpoint left off)
//   runner_options()        -> steps, sync_every, checkpoint_every, log_path, progress
//   step(i)                 -> the step's metrics, kept on their device (the runner's
//                              meter copies them to the host every sync_every steps)
//   checkpoint(done)        every checkpoint_every steps and after the last
//   finish(first, seconds)  -> the report (seconds: this run's loop, resumed part only)
#pragma once

#include <chrono>
#include <cstdint>

#include "qfleet/train.hpp"

namespace qfleet::app {

template <class Run>
auto run_lifecycle(Run& run) {
  const int64_t first = run.resume();
  train::StepRunner runner(run.runner_options());
  const auto t0 = std::chrono::steady_clock::now();
  runner.run([&](int64_t i) { return run.step(i); }, first, [&](int64_t done) { run.checkpoint(done); });
  return run.finish(first, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace qfleet::app
