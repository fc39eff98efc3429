// Every app's command line on one pattern: the common flags, the same in each app,
//   --config FILE  --set key=value (repeat)  --print-config  --print-keys
//   --device  --threads  --seed  --out  --resume  --overwrite  --quiet  [--preset NAME]
// and one option per key of the app's schema (config.hpp), named after the key with
// dashes (`--d-steps` for d_steps, `--env-num-envs` for env.num_envs). The keys' values
// are applied in the order: the schema's defaults < the preset < the --config file <
// the key options (--device, --threads, --seed and --out among them) < --set. --help
// shows each key's value in a run without options: the default preset's where it sets
// the key ("INT=800 (preset fast)"), else the key's default.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/output_folder.hpp"

namespace qfleet::app {

class Shell {
 public:
  // Adds the flags to `cli` (an app or a subcommand). The schema must have the common
  // keys device, threads and seed, and "out" (or an alias naming the output key); and
  // outlive the Shell. `resume`: whether the command continues from a checkpoint.
  // --overwrite (excluding --resume) is every command's.
  Shell(CLI::App& cli, const Schema& schema, bool resume = true);

  // After parsing: the resolved configuration (ConfigError for a bad file, key or value).
  nlohmann::json config() const;
  // After parsing: prints the keys (--print-keys, Markdown) or the resolved
  // configuration (--print-config) and returns 0; nullopt when neither was asked.
  std::optional<int> answer_printing() const;

  bool resume() const { return resume_; }
  bool overwrite() const { return overwrite_; }
  bool quiet() const { return quiet_; }

  // After parsing: the command's claim on its output folder (output_folder.hpp) with the
  // resolved configuration, --resume and --overwrite; `command` names it in the folder's
  // record ("qfleet-qgan train", whichever entry point runs it).
  RunClaim claim(const std::string& command, OutputFiles files) const;

 private:
  const Schema& schema_;
  std::string config_file_, preset_;
  std::vector<std::string> sets_;
  std::map<std::string, std::vector<std::string>> texts_;  // key -> what its option was given
  bool print_config_ = false, print_keys_ = false, resume_ = false, overwrite_ = false, quiet_ = false;
  bool can_resume_ = true;
};

}  // namespace qfleet::app
