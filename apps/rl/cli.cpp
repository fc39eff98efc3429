// qfleet-rl's command line (cli.hpp; docs/rl.md):
//   train      PPO on a vector of environments (the default command, embedded default config)
//   bench-env  environment throughput with random actions (median of repeats)
//   compare    PPO beside the meta-control app's per-task GRAPE and meta-learned policy on
//              the same validation tasks, with the `qfleet eval` check of PPO's pulses
#include "cli.hpp"
#include "common/cli_errors.hpp"
#include "common/output_folder.hpp"
#include "common/shell.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "compare.hpp"
#include "ppo.hpp"
#include "qfleet/train.hpp"

namespace qfleet::rl {

using nlohmann::json;

namespace {

// The run's settings: config.json's keys (the embedded default run: the qubit X task
// under the meta-control noise distribution, long enough for PPO to come within 0.002
// of per-task GRAPE; docs/rl.md has the measurement) as the command line resolved them.
PpoConfig load(const app::Shell& shell) { return PpoConfig::from_json(app::nest(shell.config())); }

// What each command writes into its folder (app::OutputFolder's claim; the figures are
// python -m qfleet.rl.plot's).
app::OutputFiles train_files() {
  return {{"report.json", "checkpoint.pt", "curve.json", "policy.pt", "eval/task_*.json"},
          {"train_log.jsonl", "learning_curve.png", "phases.png"}};
}
// compare: compare.json, PPO's run (unless it reads another folder's) and meta/config.json;
// the qfleet-meta run in meta/ replaces its own files (compare.cpp runs it with --overwrite).
app::OutputFiles compare_files(bool ppo_elsewhere) {
  app::OutputFiles f{{"compare.json"}, {"meta/config.json"}};
  return ppo_elsewhere ? f : f.add(train_files());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int bench_env(const EnvConfig& ec, int64_t steps, int64_t repeats, bool as_json) {
  VecEnv env(ec);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(ec.seed + 11);
  std::vector<torch::Tensor> acts;  // on the environments' device: no copy inside the timing
  for (int k = 0; k < 16; ++k) {
    if (env.discrete()) acts.push_back(torch::randint(env.n_actions(), {ec.num_envs}, gen, torch::kLong).to(env.device()));
    else acts.push_back((torch::rand({ec.num_envs, env.n_controls()}, gen, torch::kFloat32) * 2 - 1).to(env.device()));
  }
  for (int k = 0; k < 3; ++k) env.step(acts[std::size_t(k)]);
  std::vector<double> per_step;
  for (int64_t r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < steps; ++k) env.step(acts[std::size_t(k % 16)]);
    (void)env.fidelity().sum().item<double>();  // waits for the device's queued steps
    per_step.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(steps));
  }
  const double m = median(per_step);
  const json out = {{"environment", env.describe()}, {"device", env.device().str()},
                    {"stepping", env.tensor_stepping() ? "tensors" : "loop"}, {"num_envs", ec.num_envs}, {"median_step_s", m},
                    {"env_steps_per_s", double(ec.num_envs) / m}, {"repeats", repeats}, {"steps", steps}};
  if (as_json) std::cout << out.dump() << "\n";
  else std::cout << env.describe() << "\n  median " << m * 1e3 << " ms per step, " << double(ec.num_envs) / m / 1e6
                 << " million env-steps/s (" << repeats << " repeats of " << steps << " steps)\n";
  return 0;
}

}  // namespace

int cli_main(const std::string& prog, const std::vector<std::string>& args_in) {
  CLI::App app{"qfleet-rl: vectorized quantum-control environments and PPO (docs/rl.md)", prog};
  app.require_subcommand(0, 1);
  int64_t stop_after = -1;
  int nproc = 1;
  auto add_run_opts = [&](CLI::App* s) {
    s->add_option("--stop-after", stop_after, "stop (with a checkpoint) after this many rollouts");
    s->add_option("--nproc", nproc, "processes (each steps num_envs / nproc environments)")->check(CLI::Range(1, 64));
  };
  const app::Shell default_shell(app, schema());  // no subcommand: train
  add_run_opts(&app);
  auto* train_cmd = app.add_subcommand("train", "PPO (the default)");
  const app::Shell train_shell(*train_cmd, schema());
  add_run_opts(train_cmd);
  auto* bench_cmd = app.add_subcommand("bench-env", "environment throughput with random actions");
  std::vector<std::string> env_sets;
  int64_t steps = 100, repeats = 5;
  bool as_json = false;
  bench_cmd->add_option("--env", env_sets, "key=value environment keys (default task qubit_x, num_envs 4096)");
  bench_cmd->add_option("--steps", steps, "steps per repeat")->check(CLI::Range(1, 100000000));
  bench_cmd->add_option("--repeats", repeats, "repeats (the median is reported)")->check(CLI::Range(1, 1000));
  bench_cmd->add_flag("--json", as_json, "one JSON line");
  bool bench_print = false;
  bench_cmd->add_flag("--print-config", bench_print, "print the environment and the repeats as JSON and exit");
  auto* cmp_cmd = app.add_subcommand("compare", "PPO beside per-task GRAPE and the meta-learned policy on the same tasks");
  const app::Shell compare_shell(*cmp_cmd, schema(), false);
  int64_t meta_iterations = 300;
  std::string ppo_dir;
  cmp_cmd->add_option("--meta-iterations", meta_iterations, "meta-training iterations")->check(CLI::Range(0, 10000000));
  cmp_cmd->add_option("--ppo", ppo_dir, "an existing PPO run's directory (else PPO is trained first)");
  if (const auto status = app::parse_command_line(app, prog, args_in)) return *status;
  const app::Shell& shell = cmp_cmd->parsed() ? compare_shell : train_cmd->parsed() ? train_shell : default_shell;
  return app::run_guarded(prog, [&] {
    if (bench_cmd->parsed()) {
      EnvConfig ec;
      ec.num_envs = 4096;
      for (const auto& s : env_sets) ec.set(s);
      if (bench_print) {
        std::cout << nlohmann::json{{"env", ec.to_json()}, {"steps", steps}, {"repeats", repeats}}.dump(2) << "\n";
        return 0;
      }
      return bench_env(ec, steps, repeats, as_json);
    }
    if (const auto status = shell.answer_printing()) return *status;
    const PpoConfig cfg = load(shell);
    if (nproc > 1 && !std::getenv("WORLD_SIZE")) {
      std::string report;
      const int rc = train::launch_local(nproc, &report);
      if (rc != 0) std::cerr << prog << ": " << report;
      return rc == 0 ? 0 : 1;
    }
    TrainOptions o;
    o.resume = shell.resume();
    o.progress = !shell.quiet();
    o.quiet = shell.quiet();
    o.stop_after = stop_after;
    if (auto d = train::dist_from_env()) {
      o.nproc_rank = d->rank;
      o.nproc_world = d->world_size;
    }
    std::optional<app::OutputFolder> held;  // (the ranks that do not write leave it to rank 0)
    if (o.nproc_rank == 0) {
      const bool compare = cmp_cmd->parsed();
      held.emplace(cfg.output_dir, shell.claim(compare ? "qfleet-rl compare" : "qfleet-rl train",
                                               compare ? compare_files(!ppo_dir.empty()) : train_files()));
    }
    if (cmp_cmd->parsed()) return compare_main(cfg, ppo_dir, meta_iterations, o) ? 0 : 1;
    train_ppo(cfg, o);
    return 0;
  });
}

}  // namespace qfleet::rl
