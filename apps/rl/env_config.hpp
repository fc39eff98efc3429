// The configuration of a vector of quantum-control environments (docs/rl.md has every
// key). The same keys come from C++, from the command line (--env key=value) and from
// Python (gymnasium.make_vec("qfleet/QubitX-v0", num_envs=..., **kwargs)).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"

namespace qfleet::rl {

struct EnvConfig {
  std::string task = "qubit_x";           // qubit_x | cz | ladder
  int64_t num_envs = 16;
  int64_t n_steps = 0;                    // control segments per episode (0: the task's own)
  double gate_time = 0;                   // episode duration (0: the task's own)
  double max_amplitude = 0;               // action +-1 = this amplitude (0: the task's own)
  int64_t levels = 3;                     // ladder: d
  std::string action = "continuous";      // continuous (Box[-1, 1]^n_ctrl) | discrete (pulse library)
  bool clip_actions = true;               // continuous actions outside [-1, 1]: clipped (else an error)
  std::vector<std::vector<double>> pulse_library;  // discrete: rows of n_ctrl values in [-1, 1] ([]: the default)
  std::string observation = "expectations";       // expectations | density | measurements
  int64_t shots = 100;                    // measurements: shots per observable per step
  bool observe_noise = false;             // append the task's parameters, scaled to [-1, 1]
  std::string reward = "final";           // final (F at the last step) | step (F_t - F_{t-1})
  std::string noise = "distribution";     // distribution (each reset draws the task) | none (closed system)
  std::vector<double> gamma_deph, gamma_relax, detuning;  // [lo, hi] ranges ([]: the task's own)
  uint64_t seed = 0;                      // env i's stream is seeded with seed + i
  int64_t threads = 0;                    // 0: all cores
  std::string device = "cpu";             // where the environments run and return their tensors (cpu | cuda | automatic)
  // How a step runs: loop (a host loop over the environments, CPU only: per-environment
  // random streams), tensors (batched tensor ops on the device, tensor_envs.hpp), automatic
  // (tensors on a GPU, the loop on the CPU).
  std::string stepping = "automatic";

  nlohmann::json to_json() const;
  // The keys given, over the defaults above; unknown keys, wrong types and out-of-range
  // values throw app::ConfigError naming the key (schema()'s env.KEY).
  static EnvConfig from_json(const nlohmann::json& j);
  // "key=value" (the value read as the schema reads a command-line value) applied onto this config.
  void set(const std::string& assignment);
};

// The keys are the members' names: one list gives both directions (nlohmann's macro; a key
// absent from the JSON keeps its default).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EnvConfig, task, num_envs, n_steps, gate_time, max_amplitude, levels,
                                                action, clip_actions, pulse_library, observation, shots,
                                                observe_noise, reward, noise, gamma_deph, gamma_relax, detuning, seed,
                                                threads, device, stepping)

// The keys of qfleet-rl's train and compare (config.json: the PPO keys and the
// environment's as env.KEY), the one checker of both configurations' values.
const app::Schema& schema();

}  // namespace qfleet::rl
