// qfleet::train — the training runtime every app runs on (issue 20), first part: a
// step's metrics kept on their device and copied to the host once every
// `sync_every` steps (one transfer for all of them), JSON-lines logging, a progress
// bar with ETA, atomic file writes for checkpoints, and a step runner that drives a
// user's step with them. C++ users call it directly; Python reaches the same code
// through torch.classes.qfleet_train (python/qfleet/train.py).
//
// Why: the research codes qfleet replaces synchronised the GPU every step
// (`loss.item()` to print a running loss); a host transfer stalls the queue of
// asynchronous launches. Here the per-step metrics are summed on the device and only
// the schedule's sync points transfer, which tests count (`host_syncs()`).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qfleet::train {

// A step's metrics: named scalars (0-dim tensors, or one-element), on any one device.
struct Metrics {
  std::vector<std::string> names;
  std::vector<torch::Tensor> values;
};

// The means of each metric over the steps since the previous sync.
struct MetricRow {
  int64_t step = 0;       // steps done when the row was taken
  int64_t steps = 0;      // steps the means are over
  double seconds = 0;     // wall time since the meter was made
  std::vector<double> means;  // in the order of names()
};

struct MeterOptions {
  int64_t sync_every = 100;  // steps between host transfers (>= 1)
  std::string log_path;      // JSON lines, one object per row ("" = no log); appended to
};

// Sums each step's metrics on their device; every sync_every steps copies the sums to
// the host in one transfer and appends a row. Names and device are fixed by the first
// step; a later step that differs is an error (std::invalid_argument), as is a metric
// with more than one element.
class MetricMeter {
 public:
  explicit MetricMeter(MeterOptions options);
  // Adds one step; returns true when this call synchronised (a row was taken).
  bool add(const Metrics& m);
  // Takes a row of what is pending (end of training, before a checkpoint); false if nothing was.
  bool flush();

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<MetricRow>& rows() const { return rows_; }
  int64_t steps() const { return steps_; }
  // Host transfers so far: steps / sync_every, plus flushes that had something pending.
  int64_t host_syncs() const { return syncs_; }

 private:
  void take_row();
  MeterOptions opt_;
  std::vector<std::string> names_;
  torch::Tensor sums_;  // [n_metrics] float64, on the metrics' device
  int64_t steps_ = 0, pending_ = 0, syncs_ = 0;
  std::vector<MetricRow> rows_;
  std::chrono::steady_clock::time_point t0_;
};

// A progress bar with ETA on stderr: redrawn in place on a terminal, one line per 10%
// otherwise (logs, CI). `note` is appended (e.g. the latest metric).
class ProgressBar {
 public:
  ProgressBar();
  void update(int64_t done, int64_t total, const std::string& note = "");
  void finish();

 private:
  bool tty_;
  std::chrono::steady_clock::time_point t0_;
  int64_t first_ = -1;
  int last_decile_ = -1;
  double last_draw_ = -1;
};

// "mm:ss" (or "h:mm:ss") for a progress bar.
std::string clock_text(double seconds);

// Writes `text` to `path` so that a reader sees the old file or the whole new one,
// never a part: a temporary next to it, fsync, rename. Creates the parent folders.
// Throws std::runtime_error with the path and the system's reason.
void write_file_atomic(const std::string& path, const std::string& text);

struct RunnerOptions {
  int64_t steps = 0;           // total steps (the loop runs from the first step given to run())
  int64_t sync_every = 100;
  std::string log_path;
  bool progress = false;
  int64_t checkpoint_every = 0;  // 0: only at the end
};

// Drives `step(i)` for i = first .. steps-1 with a MetricMeter and a ProgressBar;
// calls `checkpoint(i + 1)` every checkpoint_every steps and after the last one (after
// a flush, so the log is complete up to the checkpoint).
class StepRunner {
 public:
  explicit StepRunner(RunnerOptions options);
  void run(const std::function<Metrics(int64_t)>& step, int64_t first = 0,
           const std::function<void(int64_t)>& checkpoint = nullptr);
  const MetricMeter& meter() const { return meter_; }

 private:
  RunnerOptions opt_;
  MetricMeter meter_;
};

}  // namespace qfleet::train
