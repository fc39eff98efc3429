// StepRunner: drives a user's step with a MetricMeter, a ProgressBar and checkpoints
// (qfleet/train.hpp).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "qfleet/files.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {
namespace {

// The log's rows up to `first` steps: a run resumed from its checkpoint at `first` drops the
// rows a killed run wrote after that checkpoint, and a line a kill cut short. Rewritten (one
// writer: write_file_atomic) only when something is dropped.
void trim_log(const std::string& path, int64_t first) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const auto row = nlohmann::json::parse(line, nullptr, false);
    const bool keep = row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
                      row["step"].get<int64_t>() <= first && !in.eof();  // (the last line had no newline: cut short)
    if (keep) kept += line + '\n';
    else dropped = true;
  }
  if (dropped) qfleet::write_file_atomic(path, kept);
}

}  // namespace

StepRunner::StepRunner(RunnerOptions options)
    : opt_(std::move(options)), meter_(MeterOptions{opt_.sync_every, opt_.log_path}) {
  if (opt_.steps < 0) throw std::invalid_argument("steps must be >= 0, got " + std::to_string(opt_.steps));
  if (opt_.checkpoint_every < 0) {
    throw std::invalid_argument("checkpoint_every must be >= 0, got " + std::to_string(opt_.checkpoint_every));
  }
}

void StepRunner::run(const std::function<Metrics(int64_t)>& step, int64_t first,
                     const std::function<void(int64_t)>& checkpoint) {
  if (first < 0 || first > opt_.steps) {
    throw std::invalid_argument("first step " + std::to_string(first) + " is outside 0.." + std::to_string(opt_.steps));
  }
  if (meter_.steps() == 0) {  // (this runner's first run)
    if (!opt_.log_path.empty()) trim_log(opt_.log_path, first);
    meter_.start_at(first);
  }
  ProgressBar bar;
  auto note = [&] {
    if (meter_.rows().empty()) return std::string();
    const MetricRow& r = meter_.rows().back();
    // The meter's row is a mean over its last steps: say so, so that the bar's figure is
    // not read as the latest step's (the report's final figure).
    char buf[96];
    if (r.steps > 1)
      std::snprintf(buf, sizeof buf, "%s %.5g (mean of the last %lld steps)", meter_.names()[0].c_str(), r.means[0],
                    static_cast<long long>(r.steps));
    else
      std::snprintf(buf, sizeof buf, "%s %.5g", meter_.names()[0].c_str(), r.means[0]);
    return std::string(buf);
  };
  const int64_t last = last_step(first);
  for (int64_t i = first; i < last; ++i) {
    const bool synced = meter_.add(step(i));
    const int64_t done = i + 1;
    const bool at_checkpoint =
        checkpoint && ((opt_.checkpoint_every > 0 && done % opt_.checkpoint_every == 0) || done == last);
    if (at_checkpoint) {
      meter_.flush();  // the log is complete up to the checkpoint
      checkpoint(done);
    }
    if (opt_.progress && (synced || at_checkpoint || done == last)) bar.update(done, opt_.steps, note());
  }
  meter_.flush();
  if (opt_.progress && first < last) bar.finish();
}

int64_t StepRunner::last_step(int64_t first) const {
  return opt_.stop_after >= 0 ? std::min(opt_.steps, first + opt_.stop_after) : opt_.steps;
}

}  // namespace qfleet::train
