// Multi-process data parallel on localhost: the test starts the worker
// (train_worker.cpp) on 1 and on 2 processes and compares the trained parameters;
// a rank that dies stops the job with its rank named, and a resume from the last
// checkpoint finishes it; the group's pieces (share, all-reduce order) directly.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

// The local addresses (hex "0100007F:1F90" as in /proc/net/tcp) of the sockets listening on `port`.
std::vector<std::string> listening_on(int port) {
  std::vector<std::string> out;
  char hex_port[8];
  std::snprintf(hex_port, sizeof hex_port, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(table);
    std::string line;
    std::getline(f, line);  // the header
    while (std::getline(f, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state;
      row >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.substr(local.size() - 4) == hex_port) out.push_back(local);
    }
  }
  return out;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(TrainDistributed, TheStoreListensOnlyOnTheAddressItIsGiven) {
  // Two ranks in two threads meet at 127.0.0.1: the store's socket is bound to the loopback
  // address only (a store listening on every interface lets anyone who reaches the machine
  // read or inject the gradients).
  const int port = free_port();
  std::vector<std::string> seen;
  std::atomic<int> ready{0};
  auto rank = [&](int r) {
    tr::ProcessGroup g(tr::DistOptions{.rank = r, .world_size = 2, .master_addr = "127.0.0.1", .master_port = port});
    ++ready;  // both constructed: the store is up and every rank has met it
    while (ready < 2) std::this_thread::yield();
    if (r == 0) seen = listening_on(port);
    g.barrier();
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  ASSERT_FALSE(seen.empty()) << "no socket listening on port " << port;
  for (const auto& local : seen) EXPECT_EQ(local.substr(0, 8), "0100007F") << local << " on port " << port;
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
