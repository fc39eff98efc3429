// qfleet-qgan classify: a neural network that tells which device produced a record of
// measurement outcomes, trained on records the engine draws from the tournament's
// devices (noise models simulated as density matrices) running one of its circuits,
// and measured against the Bayes limit those devices' exact distributions allow
// (bayes.hpp) - how far the classifier is from the best any classifier can do. Written
// once in C++ on LibTorch and qfleet::train; docs/qgan.md has the model, rules and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.hpp"
#include "tournament.hpp"

namespace qfleet::qgan {

struct ClassifierConfig {
  std::vector<std::string> device_files;  // noise-model JSON files; empty: the embedded default devices
  bool noiseless = false;                 // the noiseless reference as one more class
  std::string circuit = "random_1";       // a tournament circuit: ghz, qft, random_N, qgan_generator
  int qubits = 4;
  int random_layers = 4;
  std::string generator_report;           // for circuit = qgan_generator
  std::vector<int64_t> shots = {16, 64, 256};  // shots per record; one network per value
  int64_t train_records = 8000, test_records = 2000;  // per device
  int64_t bayes_records = 20000;          // per device, for a Monte Carlo Bayes limit
  std::vector<int64_t> hidden = {128, 128};
  int64_t epochs = 30, batch = 128;
  double lr = 1e-3;
  uint64_t seed = 1;
  int threads = 0;                        // the engine's, drawing the records (the network on a CPU: one)
  std::string device = "cpu";             // the network's: cpu | cuda | automatic (the records come from the CPU engine)
  bool save_records = false;              // write <out>/shots_<S>/records.pt (for a same-data comparison)
  std::string out = "classifier-out";
  bool resume = false, progress = true;

  // What decides the results (not out/progress/resume/threads/save_records).
  nlohmann::json to_json() const;
  // From a resolved configuration (classifier.json's keys, each checked by the schema).
  static ClassifierConfig from_settings(const nlohmann::json& resolved);
};

// classifier.json's schema, and its keys bound to ClassifierConfig's fields (classifier_settings.cpp).
const app::Schema& classifier_schema();
const std::vector<app::Setting<ClassifierConfig>>& classifier_settings();

// app::ConfigError (a std::invalid_argument) naming the setting for anything the schema
// refuses; std::invalid_argument for the rules it cannot state.
void validate(const ClassifierConfig& c);

// The devices' exact outcome distributions for the configured circuit, and seeded
// records drawn from them by the engine's sampler.
struct ClassifierData {
  std::vector<TournamentDevice> devices;
  TournamentCircuit circuit;
  std::vector<std::vector<double>> probabilities;  // [K][M]
  nlohmann::json device_runs;                      // per device: what run_on_device reports
  double seconds = 0;                              // simulating the distributions
};
ClassifierData classifier_distributions(const ClassifierConfig& c);

// `per_device` records of `shots` outcomes from each device, drawn by the engine's
// sampler (seeded by seed), as histograms [K * per_device, M] (int32, the counts) and
// labels [K * per_device] (int64: the device's index), device by device.
struct Records {
  torch::Tensor counts, labels;
};
Records draw_records(const ClassifierData& data, int64_t shots, int64_t per_device, uint64_t seed, int threads);

// The network over a record: its histogram as frequencies (counts / shots), then
// hidden Linear + ReLU layers, then one logit per device.
torch::nn::Sequential make_classifier(int64_t outcomes, const std::vector<int64_t>& hidden, int64_t devices);

// Trains one network per shot count, evaluates it, computes the Bayes limit beside it;
// writes <out>/classifier.json (and per shot count shots_<S>/: checkpoint.pt,
// history.json, train_log.jsonl); returns the report.
nlohmann::json run_classifier(const ClassifierConfig& c);

}  // namespace qfleet::qgan
