// libFuzzer target for qfleet-rl's environment configuration reader (apps/rl/env_config.cpp,
// its values checked by the apps' schema reader, apps/common/config.cpp) and the task it
// builds (apps/rl/tasks.cpp): any bytes give a task or a std::invalid_argument (or
// nlohmann's parse error), never a crash, a sanitizer report or a runaway allocation.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tasks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const auto cfg = qfleet::rl::EnvConfig::from_json(j);
    const auto task = qfleet::rl::make_task(cfg);
    if (task.dim < 2 || task.n_steps < 1 || task.controls.empty()) __builtin_trap();
    if (qfleet::rl::EnvConfig::from_json(cfg.to_json()).to_json() != cfg.to_json()) __builtin_trap();  // round trip
  } catch (const std::invalid_argument&) {  // (app::ConfigError is one)
  }
  return 0;
}
