// The loop every app's training run goes through, on qfleet::train's StepRunner. A Run is
// set up by its constructor, then:
//   resume()                -> the first step (0, or where its checkpoint left off)
//   runner_options()        -> steps, sync_every, checkpoint_every, log_path, progress
//   step(i)                 -> the step's metrics, kept on their device (the runner's
//                              meter copies them to the host every sync_every steps)
//   checkpoint(done)        every checkpoint_every steps and after the last
//   finish(loop)            -> the report (loop: this call's first step, the loop's
//                              seconds, the meter's host transfers)
#pragma once

#include <chrono>
#include <cstdint>

#include "qfleet/train.hpp"

namespace qfleet::app {

struct Loop {
  int64_t first = 0;       // the first step of this call (0, or where a checkpoint left off)
  double seconds = 0;      // this call's loop, resumed part only
  int64_t host_syncs = 0;  // the meter's host transfers (MetricMeter::host_syncs)
};

template <class Run>
auto run_lifecycle(Run& run) {
  Loop loop;
  loop.first = run.resume();
  train::StepRunner runner(run.runner_options());
  const auto t0 = std::chrono::steady_clock::now();
  runner.run([&](int64_t i) { return run.step(i); }, loop.first, [&](int64_t done) { run.checkpoint(done); });
  loop.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  loop.host_syncs = runner.meter().host_syncs();
  return run.finish(loop);
}

}  // namespace qfleet::app
