// Multi-process data parallel on localhost: the test starts the worker
// (train_worker.cpp) on 1 and on 2 processes and compares the trained parameters;
// a rank that dies stops the job with its rank named, and a resume from the last
// checkpoint finishes it; the group's pieces (share, all-reduce order) directly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "qfleet/train.hpp"

namespace {

namespace fs = std::filesystem;
namespace tr = qfleet::train;

fs::path fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("qfleet_dist_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int run_worker(const std::string& args, const fs::path& log) {
  const std::string cmd = std::string(QFLEET_TRAIN_WORKER) + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<torch::Tensor> final_parameters(const fs::path& dir) {
  torch::serialize::InputArchive ar;
  ar.load_from((dir / "final.pt").string());
  std::vector<torch::Tensor> out;
  for (int i = 0; i < 5; ++i) {  // pre.weight, pre.bias, q.weight, post.weight, post.bias
    torch::Tensor t;
    ar.read("p" + std::to_string(i), t);
    out.push_back(t);
  }
  return out;
}

std::string text_of(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(TrainDistributed, ShareSplitsEvenlyInRankOrder) {
  tr::DistOptions o;
  o.world_size = 1;
  EXPECT_EQ(tr::ProcessGroup(o).share(7), (std::pair<int64_t, int64_t>{0, 7}));
  EXPECT_THROW(tr::ProcessGroup(tr::DistOptions{.rank = 2, .world_size = 2}), std::invalid_argument);
}

TEST(TrainDistributed, TwoProcessesTrainTheSameParametersAsOne) {
  const fs::path one = fresh("one"), two = fresh("two");
  ASSERT_EQ(run_worker("--steps 6 --out " + one.string(), one / "log"), 0) << text_of(one / "log");
  ASSERT_EQ(run_worker("--steps 6 --nproc 2 --out " + two.string(), two / "log"), 0) << text_of(two / "log");
  const auto a = final_parameters(one), b = final_parameters(two);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(torch::equal(a[i], torch::zeros_like(a[i])));
    // The shards' gradients are summed in one order on any number of ranks: the same bits.
    EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i << " differs by "
                                          << (a[i] - b[i]).abs().max().item<double>();
  }
  fs::remove_all(one);
  fs::remove_all(two);
}

TEST(TrainDistributed, ARankThatDiesStopsTheJobAndAResumeFinishesIt) {
  const fs::path whole = fresh("whole"), cut = fresh("cut");
  ASSERT_EQ(run_worker("--steps 6 --nproc 2 --out " + whole.string(), whole / "log"), 0) << text_of(whole / "log");
  EXPECT_EQ(run_worker("--steps 6 --nproc 2 --die-at 3 --out " + cut.string(), cut / "log"), 3);
  EXPECT_NE(text_of(cut / "log").find("rank 1 exited with status 3"), std::string::npos) << text_of(cut / "log");
  EXPECT_FALSE(fs::exists(cut / "final.pt"));
  ASSERT_EQ(run_worker("--steps 6 --nproc 2 --resume --out " + cut.string(), cut / "log2"), 0) << text_of(cut / "log2");
  const auto a = final_parameters(whole), b = final_parameters(cut);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
  fs::remove_all(whole);
  fs::remove_all(cut);
}

}  // namespace
