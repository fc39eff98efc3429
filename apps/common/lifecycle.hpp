// The loop every app's training run goes through, on qfleet::train's StepRunner. A Run is
// set up by its constructor, then:
//   resume()                -> the first step (0, or where its checkpoint left off)
//   runner_options()        -> steps, sync_every, checkpoint_every, log_path, progress
//   step(i)                 -> the step's metrics, kept on their device (the runner's
//                              meter copies them to the host every sync_every steps)
//   checkpoint(done)        every checkpoint_every steps and after the last
//   finish(loop)            -> the report (loop: this call's first step, the loop's
//                              seconds, the meter's host transfers)
//   settings() (optional)   -> the settings an error while running should name
//                              ("batch = 64, device = cuda"): each phase runs in
//                              app::doing (doing.hpp), so a failure inside LibTorch says where
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "doing.hpp"
#include "qfleet/train.hpp"

namespace qfleet::app {

struct Loop {
  int64_t first = 0;       // the first step of this call (0, or where a checkpoint left off)
  double seconds = 0;      // this call's loop, resumed part only
  int64_t host_syncs = 0;  // the meter's host transfers (MetricMeter::host_syncs)
};

// The options of a run stepped by batches with a checkpoint at the end of every epoch:
// the meter syncs every 50 steps, or every epoch where an epoch is shorter.
inline train::RunnerOptions epoch_runner_options(int64_t per_epoch, int64_t epochs, bool progress, std::string log_path) {
  train::RunnerOptions ro;
  ro.steps = per_epoch * epochs;
  ro.sync_every = std::max<int64_t>(1, std::min<int64_t>(50, per_epoch));
  ro.progress = progress;
  ro.checkpoint_every = per_epoch;
  ro.log_path = std::move(log_path);
  return ro;
}

// A run's history (a JSON array, a row per epoch) travels inside its checkpoint as the
// text "history" (TrainState::texts), so the checkpoint and the history a resume continues
// are one file: a run killed between writing checkpoint.pt and history.json (the copy for
// readers and plots) resumes with both at the same step (tests/python/test_faults.py kills
// runs at chosen moments). Rows past the checkpoint's `rows` are dropped, and the copy at
// `copy_path` is written again at once: a run killed after its last checkpoint and before
// the copy resumes at its end, runs no step and writes no checkpoint that would update it.
inline nlohmann::json history_from_checkpoint(const std::string& text, int64_t rows, const std::string& copy_path) {
  nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
  if (!h.is_array()) throw train::CheckpointError("the checkpoint's history is not a JSON array");
  while (int64_t(h.size()) > rows) h.erase(h.end() - 1);
  train::write_file_atomic(copy_path, h.dump(1));
  return h;
}

// " (the run's settings)", or "" for a run that names none.
template <class Run>
std::string settings_of(const Run& run) {
  if constexpr (requires { run.settings(); }) {
    const std::string s = run.settings();
    return s.empty() ? s : " (" + s + ")";
  } else {
    return "";
  }
}

template <class Run>
auto run_lifecycle(Run& run) {
  Loop loop;
  loop.first =
      doing([&] { return "resuming from the run's checkpoint" + settings_of(run); }, [&] { return run.resume(); });
  const train::RunnerOptions ro = run.runner_options();
  train::StepRunner runner(ro);
  const auto t0 = std::chrono::steady_clock::now();
  runner.run(
      [&](int64_t i) {
        const auto what = [&] {
          return "training, step " + std::to_string(i + 1) + " of " + std::to_string(ro.steps) + settings_of(run);
        };
        return doing(what, [&] { return run.step(i); });
      },
      loop.first,
      [&](int64_t done) {
        doing([&] { return "writing the checkpoint after step " + std::to_string(done) + settings_of(run); },
              [&] { run.checkpoint(done); });
      });
  loop.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  loop.host_syncs = runner.meter().host_syncs();
  return doing([&] { return "writing the report" + settings_of(run); }, [&]() -> decltype(auto) { return run.finish(loop); });
}

}  // namespace qfleet::app
