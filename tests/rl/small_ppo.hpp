// The small PPO configuration the RL tests train with (12 rollouts of 32 qubit_x episodes).
#pragma once

#include <string>

#include "ppo.hpp"

namespace qfleet_test {

inline qfleet::rl::PpoConfig small_ppo(const std::string& dir) {
  qfleet::rl::PpoConfig c;
  c.env.num_envs = 32;
  c.total_steps = 32 * 60 * 12;
  c.num_minibatches = 4;
  c.update_epochs = 4;
  c.gamma = 1.0;
  c.learning_rate = 1e-3;
  c.eval_every = 4;
  c.validation_tasks = 8;
  c.checkpoint_every = 3;
  c.output_dir = dir;
  return c;
}

}  // namespace qfleet_test
