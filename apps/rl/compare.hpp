// `qfleet-rl compare` (docs/rl.md): PPO's deterministic policy beside the meta-control
// app's per-task GRAPE, robust pulse and meta-learned (adapted) policy, on the same
// validation tasks, and PPO's pulses recomputed by `qfleet eval`'s library as an
// independent check of the environment's fidelity.
#pragma once

#include <string>

#include "ppo.hpp"

namespace qfleet::rl {

// Trains PPO (or reads the run in ppo_dir), runs qfleet-meta's training and baselines with
// meta_iterations iterations into <output_dir>/meta, writes <output_dir>/compare.json and
// prints the table. Returns whether the independent check agreed (to 1e-9).
bool compare_main(const PpoConfig& cfg, const std::string& ppo_dir, int64_t meta_iterations, const TrainOptions& options);

}  // namespace qfleet::rl
