// MetricMeter: a step's metrics summed on their device, one host transfer per
// sync_every steps (qfleet/train.hpp).
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "qfleet/files.hpp"
#include "qfleet/train.hpp"

namespace qfleet::train {

namespace {

std::string list_text(const std::vector<std::string>& names) {
  std::string s = "[";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

}  // namespace

MetricMeter::MetricMeter(MeterOptions options) : opt_(std::move(options)), t0_(std::chrono::steady_clock::now()) {
  if (opt_.sync_every < 1) {
    throw std::invalid_argument("sync_every must be at least 1, got " + std::to_string(opt_.sync_every));
  }
}

bool MetricMeter::add(const Metrics& m) {
  if (m.names.size() != m.values.size()) {
    throw std::invalid_argument("metrics: " + std::to_string(m.names.size()) + " names but " +
                                std::to_string(m.values.size()) + " values");
  }
  if (m.values.empty()) throw std::invalid_argument("metrics: a step must report at least one metric");
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    const torch::Tensor& v = m.values[i];
    if (!v.defined()) throw std::invalid_argument("metric '" + m.names[i] + "' is an undefined tensor");
    if (v.numel() != 1) {
      throw std::invalid_argument("metric '" + m.names[i] + "' has " + std::to_string(v.numel()) +
                                  " elements; a metric is one number per step (reduce it first)");
    }
    if (v.is_complex()) throw std::invalid_argument("metric '" + m.names[i] + "' is complex; report a real number");
  }
  if (names_.empty()) {
    for (const std::string& n : m.names) {
      if (n == "step" || n == "steps" || n == "seconds") {
        throw std::invalid_argument("metric name '" + n + "' is taken by the row's own keys (step, steps, seconds)");
      }
    }
    if (std::set<std::string>(m.names.begin(), m.names.end()).size() != m.names.size()) {
      throw std::invalid_argument("metrics: the names " + list_text(m.names) + " repeat one");
    }
    names_ = m.names;
  } else if (m.names != names_) {
    throw std::invalid_argument("metrics: this step reports " + list_text(m.names) + ", the first step reported " +
                                list_text(names_) + "; every step must report the same metrics");
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat;
  flat.reserve(m.values.size());
  const torch::Device device = sums_.defined() ? sums_.device() : m.values[0].device();
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (m.values[i].device() != device) {
      throw std::invalid_argument("metric '" + m.names[i] + "' is on " + m.values[i].device().str() +
                                  ", the others on " + device.str() + "; keep a step's metrics on one device");
    }
    flat.push_back(m.values[i].detach().reshape({}).to(torch::kFloat64));
  }
  // On the device: no transfer, no synchronisation.
  const torch::Tensor step = torch::stack(flat);
  if (sums_.defined()) {
    sums_.add_(step);
  } else {
    sums_ = step.clone();
  }
  ++steps_;
  if (++pending_ < opt_.sync_every) return false;
  take_row();
  return true;
}

void MetricMeter::start_at(int64_t steps_done) {
  if (steps_ != 0 || pending_ != 0) throw std::logic_error("MetricMeter::start_at: steps were added already");
  if (steps_done < 0) throw std::invalid_argument("MetricMeter::start_at: steps_done must be >= 0");
  steps_ = steps_done;
}

bool MetricMeter::flush() {
  if (pending_ == 0) return false;
  take_row();
  return true;
}

void MetricMeter::take_row() {
  const torch::Tensor host = sums_.to(torch::kCPU);  // the one transfer: a sync on a GPU
  ++syncs_;
  MetricRow r;
  r.step = steps_;
  r.steps = pending_;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const auto a = host.accessor<double, 1>();
  for (int64_t i = 0; i < a.size(0); ++i) r.means.push_back(a[i] / double(pending_));
  sums_.zero_();
  pending_ = 0;
  rows_.push_back(r);
  if (opt_.log_path.empty()) return;
  nlohmann::json line = {{"step", r.step}, {"steps", r.steps}, {"seconds", r.seconds}};
  for (std::size_t i = 0; i < names_.size(); ++i) line[names_[i]] = r.means[i];  // NaN is written as null
  qfleet::append_to_file(opt_.log_path, line.dump() + '\n');  // refuses a symbolic link planted there
}

}  // namespace qfleet::train
