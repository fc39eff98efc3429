// The first keys of every app's report, the same in each, so that a report says what
// ran, with which configuration and seed, on which versions, machine and build:
//   app, config, seed, started_utc, finished_utc, wall_seconds (the run's, from its RunClock),
//   versions (qfleet, torch), machine (CPU model, logical cores, CUDA devices and the
//   first one's compute capability), build (compiler, assertions, CUDA backend, the CPU
//   instruction set the engine uses), runtime (torch's threads, OMP_WAIT_POLICY).
// The app adds its own keys (results, its timings) after them.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace qfleet::app {

// When a run started: the wall clock (the report's started_utc) and a steady clock (its length).
struct RunClock {
  std::chrono::system_clock::time_point wall = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point steady = std::chrono::steady_clock::now();
};

nlohmann::json report_header(const std::string& app, const nlohmann::json& config, uint64_t seed,
                             const RunClock& started);

}  // namespace qfleet::app
