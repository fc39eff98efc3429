// The first keys of every app's report (report_header.hpp).
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include "common/report_header.hpp"
#include "qfleet/program.hpp"
#include "qfleet/version.hpp"
#include "qfleet_app/commit.hpp"  // (generated: cmake/qfleet_commit.cmake)

namespace qfleet::app {

namespace {

// /proc/cpuinfo's first "model name" ("" where there is none, as on arm64).
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    return colon == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "";
}

std::string utc(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

nlohmann::json report_header(const std::string& app, const nlohmann::json& config, uint64_t seed,
                             const RunClock& started) {
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  const int gpus = cuda_device_count();
  return {{"app", app},
          {"config", config},
          {"seed", seed},
          {"started_utc", utc(started.wall)},
          {"finished_utc", utc(std::chrono::system_clock::now())},
          {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started.steady).count()},
          {"versions", {{"qfleet", QFLEET_VERSION_STRING}, {"commit", QFLEET_GIT_COMMIT}, {"torch", TORCH_VERSION}}},
          {"machine",
           {{"cpu", cpu_model()},
            {"logical_cores", std::thread::hardware_concurrency()},
            {"cuda_devices", gpus},
            {"compute_capability", gpus > 0 ? nlohmann::json(cuda_compute_capability(0)) : nlohmann::json()}}},
          {"build",
           {{"compiler", __VERSION__},
#ifdef NDEBUG
            {"assertions", false},
#else
            {"assertions", true},
#endif
            {"cuda_backend", built_with_cuda()},
            {"cpu_isa", available_isas().front()}}},
          {"runtime", {{"torch_threads", torch::get_num_threads()}, {"omp_wait_policy", wait ? wait : ""}}}};
}

}  // namespace qfleet::app
