// qfleet-qgan suite: the whole benchmark suite end to end - the qGAN on the 6-qubit
// 2-D Gaussian, the device tournament with the trained generator among its circuits,
// the figures - with a summary table (docs/qgan.md).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "classifier.hpp"
#include "common/settings.hpp"
#include "qgan.hpp"
#include "tournament.hpp"

namespace qfleet::qgan {

// Default-constructed: the suite's defaults (suite.json's): 1000 epochs on gaussian2d, the
// tournament on 6 qubits, the classifier on the generator (the command line gives it its
// schema's preset "suite", a short budget).
struct SuiteConfig {
  SuiteConfig();
  TrainConfig qgan;              // out is set to <out>/qgan
  TournamentConfig tournament;   // out: <out>/tournament; generator_report: the qGAN's report
  ClassifierConfig classifier;   // out: <out>/classifier; the tournament's devices; circuit: the qGAN's generator
  bool classify = true;          // run the classifier stage
  std::string out = "qgan-suite-out";
  bool figures = true;           // run `<python> -m qfleet.qgan.plot <out>` at the end
  std::string python = "python3";
  bool progress = true;
};

// suite.json, and its keys bound to the fields they set (suite_settings.cpp): seed and
// threads set both stages'.
const app::Schema& suite_schema();
const std::vector<app::Setting<SuiteConfig>>& suite_settings();

// Runs the four stages; writes <out>/summary.json; returns it.
nlohmann::json run_suite(const SuiteConfig& c);

}  // namespace qfleet::qgan
