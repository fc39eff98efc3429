// Links between the environments and the meta-control app (agent.cpp): its configuration
// for the same task, and `qfleet eval` problems (docs/cli.md) that recompute the fidelity
// of a policy's pulses independently of the environment.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "env_config.hpp"

namespace qfleet::rl {

// The meta-control configuration (overrides of its "fast" preset) of the same physics:
// qubit_x -> qubit_x, cz -> two_qubit_cz_xx_zz, with the environment's segments, gate
// time, amplitude bound and rate ranges. std::invalid_argument for the ladder.
nlohmann::json meta_config_json(const EnvConfig& env, int64_t validation_tasks, uint64_t seed);

// One `qfleet eval` problem per task: amplitudes [V, n_steps, n_ctrl], tasks [V, n_params].
std::vector<nlohmann::json> eval_problems(const EnvConfig& env, const torch::Tensor& amplitudes, const torch::Tensor& tasks);

}  // namespace qfleet::rl
