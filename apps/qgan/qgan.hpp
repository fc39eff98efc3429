// qfleet-qgan train: a quantum GAN (Zoufal, Lucchi & Woerner, npj Quantum Inf. 5, 103
// (2019)) whose generator is a parameterised circuit and whose discriminator is a
// PyTorch MLP, written once in C++ on LibTorch and qfleet::train (docs/qgan.md).
//
// The generator's distribution is the circuit's exact probabilities over all 2^n
// outcomes (one engine call per epoch, adjoint gradient), or seeded shots: then the
// discriminator sees shot histograms and the generator's gradient is the
// parameter-shift rule estimated from shots (all 2P shifted circuits in one batched
// sampling call), as on hardware. Optionally under a device noise model (the circuit
// routed and translated to the device's basis, simulated as density matrices).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "circuits.hpp"
#include "common/settings.hpp"
#include "qfleet/program.hpp"
#include "targets.hpp"

namespace qfleet::qgan {

struct TrainConfig {
  TargetOptions target;
  int reps = -1;                      // generator layers (circuits.hpp); -1: max(2, qubits - 2)
  int64_t epochs = 600;               // the embedded default: the 3-qubit log-normal to KL <= 0.01
  int d_steps = 5;                    // discriminator steps per epoch (one generator step)
  double lr_g = 0.01, lr_d = 0.01, beta1 = 0.5, beta2 = 0.999;  // Adam, both players
  std::vector<int64_t> hidden;        // discriminator widths (empty: the target's default)
  int64_t shots = 0;                  // 0: exact probabilities; else shots per distribution estimate
  std::string noise_model;            // a noise-model JSON file (docs/noisy.md); "" = noiseless
  std::string precision = "complex128";
  uint64_t seed = 1;
  int threads = 0;                    // 0 = all cores
  std::string device = "cpu";         // cpu | cuda | automatic (the discriminator's; the circuit runs on the cpu)
  int64_t checkpoint_every = 100;     // epochs
  std::string out = "qgan-out";
  bool resume = false, progress = true;

  // What decides the results (not out/progress/resume/threads/checkpoint_every), for the
  // report and the checkpoint's configuration hash.
  nlohmann::json to_json() const;
  // From a resolved configuration (config.json's keys, each checked by the schema).
  static TrainConfig from_settings(const nlohmann::json& resolved);
};

// config.json's schema, and its keys bound to TrainConfig's fields (train_settings.cpp).
const app::Schema& train_schema();
const std::vector<app::Setting<TrainConfig>>& train_settings();

// app::ConfigError (a std::invalid_argument) naming the setting for anything the schema
// refuses; std::invalid_argument for the rules it cannot state.
void validate(const TrainConfig& c);

// The discriminator widths used for a target when none are given.
std::vector<int64_t> default_hidden(const Target& t);

// The gradient of sum_x p_w(x) reward(x) for the generator program `prog` (weights w,
// each driving one RY or RZ gate with scale 1) by the parameter-shift rule, every
// expectation estimated from `shots` seeded samples: all 2P shifted circuits in one
// batched sampling call (what the shots mode's generator step uses).
std::vector<double> parameter_shift_gradient(const Program& prog, const std::vector<double>& w,
                                             const std::vector<double>& reward, int64_t shots, uint64_t seed);

// Trains; writes <out>/report.json, history.json, checkpoint.pt and prints progress.
// Returns the report (schema in docs/qgan.md).
nlohmann::json train(const TrainConfig& c);

}  // namespace qfleet::qgan
