// The paper's experiments as commands (docs/reproduction.md): arXiv:2601.18973's adaptation
// gap G_K = L_0 - L_K against K, against the task distribution's variance, out of
// distribution, on its two-qubit CZ system, against GRAPE, and numerical checks of its
// lemmas. Each writes <out>/<name>/result.json (configuration, seeds, our figures beside the
// paper's) and table.md; `python -m qfleet.meta_control.plot_reproduction OUT` draws the PNGs.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qfleet::meta {

struct ReproOptions {
  std::string out_dir = "reproduction-out";
  bool tiny = false;  // seconds each (the tests' budget): checks the outputs, not the paper's numbers
  int64_t threads = 0;
  uint64_t seed = 1;
  bool quiet = false;  // no progress lines on stderr
  // The paper's own trained policy as a flat vector (python -m qfleet.meta_control.paper_checkpoint
  // converts its .pt): gap-vs-k and out-of-distribution evaluate it beside ours. "" = none.
  std::string paper_checkpoint;
};

// gap-vs-k, gap-vs-variance, out-of-distribution, cz, vs-grape, lemmas.
const std::vector<std::string>& experiment_names();

// ConfigError naming the experiments (and "all") unless `name` is one of them.
void check_experiment(const std::string& name);

// ConfigError naming --paper-checkpoint's file unless it is the JSON
// python -m qfleet.meta_control.paper_checkpoint writes of a policy of the original preset's
// shape (checked before the run claims its folder; nothing when there is none).
void check_paper_file(const ReproOptions& options);

// What `reproduce NAME` (or all) writes into its folder, as result files and the files
// written beside them (<out>/models/ is a cache by configuration, shared by the experiments,
// and is not a result).
std::vector<std::string> experiment_results(const std::string& name);
std::vector<std::string> experiment_other_files(const std::string& name);

// Runs one experiment (policies it needs are trained once into <out>/models/ and reused by
// the next experiment that asks for the same configuration). Throws ConfigError for an
// unknown name.
nlohmann::json run_experiment(const std::string& name, const ReproOptions& options);

// Every experiment, then <out>/reproduction.md (the tables, the paper's figures beside ours,
// the ablations that explain the differences, timings and the command).
nlohmann::json reproduce_all(const ReproOptions& options);

// The Markdown table of one experiment's result (also <out>/<name>/table.md).
std::string experiment_table(const nlohmann::json& result);

}  // namespace qfleet::meta
