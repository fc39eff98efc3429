// qfleet::train's first pieces (qfleet/train.hpp): the meter's sync schedule and
// means (checked against sums computed here in plain doubles), its log, its errors,
// the atomic writer and the step runner's checkpoints and resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "qfleet/train.hpp"

namespace fs = std::filesystem;
using qfleet::train::Metrics;
using qfleet::train::MetricMeter;

namespace {

Metrics step_metrics(int64_t i) {
  return {{"loss", "accuracy"},
          {torch::tensor(double(i)), torch::tensor(float(i % 7) / 7.0f, torch::kFloat32).reshape({1})}};
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("qfleet_train_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(MetricMeter, TransfersOncePerSyncEveryWithTheWindowMeans) {
  MetricMeter m({10, ""});
  int syncs_seen = 0;
  for (int64_t i = 0; i < 100; ++i) syncs_seen += m.add(step_metrics(i)) ? 1 : 0;
  EXPECT_EQ(m.host_syncs(), 10);
  EXPECT_EQ(syncs_seen, 10);
  ASSERT_EQ(m.rows().size(), 10u);
  for (int k = 0; k < 10; ++k) {
    double loss = 0, acc = 0;
    for (int64_t i = 10 * k; i < 10 * k + 10; ++i) {
      loss += double(i);
      acc += double(float(i % 7) / 7.0f);
    }
    const auto& r = m.rows()[std::size_t(k)];
    EXPECT_EQ(r.step, 10 * k + 10);
    EXPECT_EQ(r.steps, 10);
    EXPECT_DOUBLE_EQ(r.means[0], loss / 10);
    EXPECT_DOUBLE_EQ(r.means[1], acc / 10);
  }
  EXPECT_FALSE(m.flush());  // nothing pending: no transfer
  EXPECT_EQ(m.host_syncs(), 10);
}

TEST(MetricMeter, FlushTakesThePartialWindow) {
  MetricMeter m({10, ""});
  for (int64_t i = 0; i < 25; ++i) m.add(step_metrics(i));
  EXPECT_EQ(m.host_syncs(), 2);
  EXPECT_TRUE(m.flush());
  EXPECT_EQ(m.host_syncs(), 3);
  EXPECT_EQ(m.rows().back().steps, 5);
  EXPECT_DOUBLE_EQ(m.rows().back().means[0], (20 + 21 + 22 + 23 + 24) / 5.0);
}

TEST(MetricMeter, WritesOneJsonLinePerRowWithNanAsNull) {
  const fs::path d = temp_dir("log");
  const std::string log = (d / "log.jsonl").string();
  MetricMeter m({3, log});
  for (int64_t i = 0; i < 6; ++i) {
    m.add({{"loss", "ratio"}, {torch::tensor(double(i)), torch::tensor(i == 4 ? NAN : 1.0)}});
  }
  std::ifstream f(log);
  std::vector<nlohmann::json> lines;
  for (std::string s; std::getline(f, s);) lines.push_back(nlohmann::json::parse(s));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 3);
  EXPECT_DOUBLE_EQ(lines[0]["loss"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(lines[1]["loss"].get<double>(), 4.0);
  EXPECT_TRUE(lines[1]["ratio"].is_null());  // the window holds a NaN: its mean is NaN
  EXPECT_TRUE(std::isnan(m.rows()[1].means[1]));
  fs::remove_all(d);
}

TEST(MetricMeter, RefusesWhatIsNotOneNumberPerMetric) {
  EXPECT_THROW(MetricMeter({0, ""}), std::invalid_argument);
  MetricMeter m({5, ""});
  EXPECT_THROW(m.add({{"a"}, {}}), std::invalid_argument);
  EXPECT_THROW(m.add({{}, {}}), std::invalid_argument);
  EXPECT_THROW(m.add({{"a"}, {torch::ones({2})}}), std::invalid_argument);
  EXPECT_THROW(m.add({{"a"}, {torch::Tensor()}}), std::invalid_argument);
  EXPECT_THROW(m.add({{"a", "a"}, {torch::ones({}), torch::ones({})}}), std::invalid_argument);
  EXPECT_THROW(m.add({{"seconds"}, {torch::ones({})}}), std::invalid_argument);
  m.add({{"a", "b"}, {torch::ones({}), torch::ones({})}});
  try {
    m.add({{"b", "a"}, {torch::ones({}), torch::ones({})}});
    FAIL() << "a step reporting other metrics was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the first step reported [a, b]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m.steps(), 1);  // the refused steps left nothing behind
}

TEST(WriteFileAtomic, WritesTheWholeFileAndLeavesNoTemporary) {
  const fs::path d = temp_dir("atomic");
  const std::string p = (d / "sub" / "ck.json").string();
  qfleet::train::write_file_atomic(p, "first");
  qfleet::train::write_file_atomic(p, "second, longer");
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(s, "second, longer");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  try {
    qfleet::train::write_file_atomic("/proc/no/such/dir/ck.json", "x");
    FAIL() << "an unwritable path was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(StepRunner, CheckpointsOnScheduleAndResumesWhereItStopped) {
  std::vector<int64_t> checkpoints, ran;
  qfleet::train::RunnerOptions o;
  o.steps = 10;
  o.sync_every = 3;
  o.checkpoint_every = 4;
  auto step = [&](int64_t i) {
    ran.push_back(i);
    return step_metrics(i);
  };
  qfleet::train::StepRunner a(o);
  a.run(step, 0, [&](int64_t done) { checkpoints.push_back(done); });
  EXPECT_EQ(checkpoints, (std::vector<int64_t>{4, 8, 10}));
  EXPECT_EQ(a.meter().steps(), 10);
  // Rows: synced at 3, flushed at 4, synced at 7, flushed at 8, flushed at 10.
  std::vector<int64_t> at;
  for (const auto& r : a.meter().rows()) at.push_back(r.step);
  EXPECT_EQ(at, (std::vector<int64_t>{3, 4, 7, 8, 10}));

  ran.clear();
  qfleet::train::StepRunner b(o);
  b.run(step, 8);
  EXPECT_EQ(ran, (std::vector<int64_t>{8, 9}));
  EXPECT_THROW(b.run(step, 11), std::invalid_argument);

  // stop_after: 3 steps from step 2, then a checkpoint where it stopped.
  ran.clear();
  checkpoints.clear();
  o.stop_after = 3;
  qfleet::train::StepRunner c(o);
  EXPECT_EQ(c.last_step(2), 5);
  EXPECT_EQ(c.last_step(9), 10);
  c.run(step, 2, [&](int64_t done) { checkpoints.push_back(done); });
  EXPECT_EQ(ran, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(checkpoints, (std::vector<int64_t>{4, 5}));
}

TEST(StepRunner, AResumedRunsLogGoesOnFromItsCheckpoint) {
  // A run killed after its checkpoint at step 4 had logged rows to step 6 and half a line;
  // the resume from 4 drops them and logs steps 5.. (not 1.. again): one row per step.
  const fs::path d = temp_dir("log");
  const std::string log = (d / "train_log.jsonl").string();
  qfleet::train::RunnerOptions o;
  o.steps = 8;
  o.sync_every = 1;
  o.log_path = log;
  qfleet::train::StepRunner whole(o);
  whole.run([](int64_t i) { return step_metrics(i); });
  std::ifstream w(log);
  const std::string whole_log((std::istreambuf_iterator<char>(w)), {});
  std::vector<std::string> lines;
  {
    std::istringstream in(whole_log);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 8u);
  {
    std::ofstream killed(log);
    for (int i = 0; i < 6; ++i) killed << lines[i] << "\n";
    killed << lines[6].substr(0, lines[6].size() / 2);  // cut short by the kill
  }
  qfleet::train::StepRunner resumed(o);
  resumed.run([](int64_t i) { return step_metrics(i); }, 4);
  std::ifstream r(log);
  std::vector<int64_t> steps;
  for (std::string l; std::getline(r, l);) steps.push_back(nlohmann::json::parse(l).at("step").get<int64_t>());
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  qfleet::train::StepRunner fresh(o);  // a run from 0 starts a fresh log
  fresh.run([](int64_t i) { return step_metrics(i); });
  std::ifstream f(log);
  std::string l;
  int64_t n = 0;
  while (std::getline(f, l)) ++n;
  EXPECT_EQ(n, 8);
  fs::remove_all(d);
}
