// qfleet-qgan suite: the whole benchmark suite end to end - the qGAN on the 6-qubit
// 2-D Gaussian, the device tournament with the trained generator among its circuits,
// the figures - with a summary table (docs/qgan.md).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "qgan.hpp"
#include "tournament.hpp"

namespace qfleet::qgan {

struct SuiteConfig {
  TrainConfig qgan;              // out is set to <out>/qgan
  TournamentConfig tournament;   // out: <out>/tournament; generator_report: the qGAN's report
  std::string out = "qgan-suite-out";
  bool figures = true;           // run `<python> -m qfleet.qgan.plot <out>` at the end
  std::string python = "python3";
  bool progress = true;
};

// The suite's defaults: 1000 epochs on gaussian2d; the tournament on 6 qubits.
SuiteConfig default_suite();

// Runs the three stages; writes <out>/summary.json; returns it.
nlohmann::json run_suite(const SuiteConfig& c);

}  // namespace qfleet::qgan
