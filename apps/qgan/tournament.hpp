// qfleet-qgan tournament: which quantum devices can be told apart, and by how much.
// N device models (noise-model JSON files - by default six converted from
// qiskit-ibm-runtime's bundled fake-backend calibrations - and a noiseless reference)
// run a suite of benchmark circuits (GHZ, QFT, random layered, a trained qGAN
// generator); for every pair of devices and every circuit: KL divergence both ways,
// Jensen-Shannon distance, total variation, the shots a likelihood-ratio test needs to
// tell them apart, and the same statistics from finite shots with bootstrap
// intervals; then a round-robin ranking by closeness to the noiseless reference
// (docs/qgan.md has the rules and the JSON).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/settings.hpp"
#include "qfleet/circuit.hpp"
#include "qfleet/noise_model.hpp"

namespace qfleet::qgan {

struct TournamentConfig {
  std::vector<std::string> device_files;  // noise-model JSON files; empty: the embedded default devices
  bool noiseless = true;                  // include the noiseless reference device
  int qubits = 6;                         // width of the GHZ, QFT and random circuits
  int random_circuits = 2, random_layers = 4;
  std::string generator_report;           // a qGAN report.json: its trained generator joins the circuits
  int64_t shots = 4096;                   // finite-shot estimates per device and circuit (0: none)
  int resamples = 200;                    // bootstrap resamples
  double confidence = 0.95;               // of the shots-to-distinguish test
  double level = 0.95;                    // of the bootstrap intervals
  uint64_t seed = 1;
  int threads = 0;
  std::string out = "tournament-out";
  bool progress = true;

  // What decides the results (not out/progress/threads/device).
  nlohmann::json to_json() const;
  // From a resolved configuration (tournament.json's keys, each checked by the schema).
  static TournamentConfig from_settings(const nlohmann::json& resolved);
};

// tournament.json's schema, and its keys bound to TournamentConfig's fields (tournament_settings.cpp).
const app::Schema& tournament_schema();
const std::vector<app::Setting<TournamentConfig>>& tournament_settings();

// app::ConfigError (a std::invalid_argument) naming the setting for anything the schema
// refuses; std::invalid_argument for the open intervals it cannot state.
void validate(const TournamentConfig& c);

struct TournamentDevice {
  std::string name, kind, source;  // kind: noiseless | noise_model
  std::optional<NoiseModel> model;
};
struct TournamentCircuit {
  std::string name, description;
  Circuit circuit{1};
};

// The devices and circuits a configuration names (files read, models validated).
std::vector<TournamentDevice> tournament_devices(const TournamentConfig& c);
std::vector<TournamentCircuit> tournament_circuits(const TournamentConfig& c);
// The embedded default devices' names (converted fake backends, apps/qgan/devices/).
std::vector<std::string> embedded_device_names();

// The exact outcome distribution of a circuit on a device (noiseless: state vector;
// else routed, translated and simulated as density matrices with readout errors), and
// `shots` seeded samples of it when shots > 0.
struct DeviceRun {
  std::vector<double> probabilities;
  std::vector<uint64_t> samples;
  nlohmann::json info;  // physical qubits, swaps, gate counts, simulator, seconds
};
DeviceRun run_on_device(const TournamentCircuit& circuit, const TournamentDevice& device, int64_t shots, uint64_t seed,
                        int threads);

// Runs everything; writes <out>/tournament.json; returns it (schema in docs/qgan.md).
nlohmann::json run_tournament(const TournamentConfig& c);

}  // namespace qfleet::qgan
