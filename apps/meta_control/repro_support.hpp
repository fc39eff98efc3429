// What the reproduction's experiments share (experiments.cpp, lemmas.cpp): trained policies
// cached in <out>/models/, seeded task draws, curve statistics. Internal to the app.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "experiments.hpp"
#include "meta_control.hpp"

namespace qfleet::meta::repro {

struct Model {
  std::string key;
  Config cfg;
  torch::Tensor theta;
  nlohmann::json info;  // key, preset, overrides, iterations, selection, seconds, directory
};

// Trains `preset` with `sets` through the app's own run() (baselines off) into
// <out>/models/<key>, or reuses the checkpoint an earlier experiment left for the same configuration.
// `continue_from`: the key of a shorter run of the same configuration to resume from;
// `stop_after` >= 0: stop there (a checkpoint), the schedule still spanning the configuration's iterations.
Model trained(const std::string& key, const std::string& preset, std::vector<std::string> sets, const ReproOptions& o,
              const std::string& continue_from = "", int64_t stop_after = -1);
// The original preset's first `iterations` (100, 150 or 200) iterations, final parameters.
Model short_run(int64_t iterations, const ReproOptions& o);
// At 200 iterations: the checkpoint the paper's Fig. 3 and 4 scripts read
// (checkpoints_gamma/maml_gamma_pauli_x.pt, 200 iterations by its training_history.json).
Model paper_checkpoint(const ReproOptions& o);
// The original preset as configured (1000 iterations, best checkpoint).
Model converged(const ReproOptions& o);

at::Generator gen_for(const ReproOptions& o, uint64_t salt);
void note(const ReproOptions& o, const std::string& text);
std::vector<double> doubles(const torch::Tensor& t);
double mean_of(const torch::Tensor& t);

}  // namespace qfleet::meta::repro
