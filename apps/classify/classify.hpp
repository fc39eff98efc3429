// qfleet-classify: a hybrid CNN + quantum-circuit image classifier trained on real data
// (Fashion-MNIST from Debian's dataset-fashion-mnist by default), written once in C++
// on LibTorch and qfleet::train; `qfleet-classify` and `python -m qfleet.classify` run
// this code (docs/classify.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "data.hpp"
#include "common/settings.hpp"
#include "model.hpp"

namespace qfleet::classify {

struct Config {
  std::string data = kFashionMnistDir;  // a folder of MNIST-style IDX files
  std::string mode = "end_to_end";  // end_to_end | features (backbone frozen, its features cached)
  ModelOptions model;
  std::string circuit_file;         // --circuit: read into model.circuit_json
  std::string backbone_from;        // features mode: a backbone.pt of an earlier run ("" = random init, frozen)
  int64_t epochs = 5, batch = 64;  // the embedded default: 5 epochs of Fashion-MNIST (about 45 s on 2 cores)
  double lr = 1e-3;
  int64_t train_subset = 0, test_subset = 0;  // first N of each split (0 = all)
  uint64_t seed = 1;
  int threads = 0;                  // 0 = all cores
  std::string device = "cpu";       // cpu | cuda | automatic
  int64_t time_every = 1;           // steps between timed steps (component breakdown)
  std::string out = "classify-out";
  std::string cache;                // features cache folder ("" = <out>/cache)
  bool resume = false, progress = true;

  // Everything that decides the results (not out/progress/resume/threads/time_every/cache),
  // for the report and the checkpoint's configuration hash.
  nlohmann::json to_json() const;
  // From a resolved configuration (config.json's keys, each checked by the schema).
  static Config from_settings(const nlohmann::json& resolved);
};

// config.json's schema, and its keys bound to Config's fields (settings.cpp).
const app::Schema& schema();
const std::vector<app::Setting<Config>>& settings();

// Throws app::ConfigError (a std::invalid_argument) naming the setting for anything the
// schema refuses, std::invalid_argument for the rules it cannot state.
void validate(const Config& c);

// Trains and evaluates; writes <out>/report.json, history.json, checkpoint.pt,
// backbone.pt, and prints a summary. Returns the report.
nlohmann::json run(const Config& c);

}  // namespace qfleet::classify
