// launch_local: N copies of this process on this machine, as torchrun would start
// them, with the group stopped when one fails; run_command: one other program, waited
// for (qfleet/train.hpp).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "qfleet/train.hpp"

extern char** environ;

namespace qfleet::train {

namespace {

// A port nobody listens on now (the kernel's pick for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("launch: socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("launch: no free port: ") + std::strerror(errno));
  return ntohs(a.sin_port);
}

}  // namespace

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') {
      args.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  if (args.empty()) throw std::runtime_error("launch: cannot read this process's command line (/proc/self/cmdline)");
  return args;
}

int run_command(const std::vector<std::string>& args) {
  if (args.empty()) throw std::invalid_argument("run_command: no command");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waiting for " + args[0] + ": " + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int launch_local(int nproc, std::string* report) {
  if (nproc < 1 || nproc > 1024) throw std::invalid_argument("launch: nproc must be in [1, 1024], got " + std::to_string(nproc));
  const std::vector<std::string> args = own_command_line();
  const int port = free_port();
  std::vector<std::string> base_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "RANK" && key != "LOCAL_RANK" && key != "WORLD_SIZE" && key != "LOCAL_WORLD_SIZE" &&
        key != "MASTER_ADDR" && key != "MASTER_PORT" && key != "TORCHELASTIC_USE_AGENT_STORE")
      base_env.push_back(kv);
  }
  std::vector<pid_t> pids(std::size_t(nproc), -1);
  for (int r = 0; r < nproc; ++r) {
    std::vector<std::string> env = base_env;
    for (const auto& kv : {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                           "WORLD_SIZE=" + std::to_string(nproc), "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
                           std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + std::to_string(port)})
      env.push_back(kv);
    std::vector<char*> argv, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pids[std::size_t(r)], "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
    if (rc != 0) {
      for (int k = 0; k < r; ++k) ::kill(pids[std::size_t(k)], SIGTERM);
      for (int k = 0; k < r; ++k) ::waitpid(pids[std::size_t(k)], nullptr, 0);
      throw std::runtime_error("launch: cannot start rank " + std::to_string(r) + ": " + std::strerror(rc));
    }
  }
  int first_status = 0, running = nproc;
  std::string lines;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int rank = -1;
    for (int r = 0; r < nproc; ++r)
      if (pids[std::size_t(r)] == pid) rank = r;
    if (rank < 0) continue;
    pids[std::size_t(rank)] = -1;
    --running;
    const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (!failed) continue;
    if (first_status == 0) {
      first_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      lines += "rank " + std::to_string(rank) +
               (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                  : " was killed by signal " + std::to_string(WTERMSIG(status))) +
               "; the other ranks were stopped\n";
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGTERM);
    }
  }
  if (report != nullptr) *report = lines;
  return first_status;
}

}  // namespace qfleet::train
