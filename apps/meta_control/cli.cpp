// The qfleet-meta command line, written once: the binary's main (main.cpp) and
// `python -m qfleet.meta_control` (through the torch extension, torch_ops.cpp)
// both call cli_main, so they take the same options and print the same text.
#include <CLI/CLI.hpp>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "common/cli_errors.hpp"
#include "common/output_folder.hpp"
#include "common/shell.hpp"
#include "experiments.hpp"
#include "meta_control.hpp"
#include "qfleet/files.hpp"
#include "qfleet/train.hpp"

namespace qfleet::meta {

namespace {

// The runtime's progress bar (qfleet/train.hpp) with the running validation fidelity.
class Bar : public Progress {
 public:
  void update(int64_t done, int64_t total, double val_after) override {
    char note[64];
    std::snprintf(note, sizeof note, "val F after adaptation %.5f", val_after);
    bar_.update(done, total, note);
  }
  void finish() override { bar_.finish(); }

 private:
  qfleet::train::ProgressBar bar_;
};

// `prog reproduce NAME`: the paper's experiments (experiments.hpp, docs/reproduction.md).
int reproduce_body(const std::string& prog, const std::vector<std::string>& args) {
  CLI::App app{prog + " reproduce: arXiv:2601.18973's experiments on this app (docs/reproduction.md)", prog + " reproduce"};
  std::string name, docs;
  ReproOptions o;
  std::string names;
  for (const auto& n : experiment_names()) names += n + ", ";
  app.add_option("experiment", name, names + "or all (every one, then <out>/reproduction.md)")->required();
  app.add_option("--out", o.out_dir, "output directory (default reproduction-out)");
  app.add_flag("--tiny", o.tiny, "a few seconds each: checks the outputs, not the paper's numbers");
  app.add_option("--seed", o.seed, "seeds the training, the task draws and the baselines (default 1)");
  app.add_option("--threads", o.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--docs", docs, "with all: also copy reproduction.md to this file (e.g. docs/reproduction.md)");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.add_option("--paper-checkpoint", o.paper_checkpoint,
                 "the paper's trained policy as JSON (python -m qfleet.meta_control.paper_checkpoint FILE.pt OUT.json): "
                 "gap-vs-k and out-of-distribution evaluate it too");
  bool print_config = false, overwrite = false;
  app.add_flag("--overwrite", overwrite,
               "replace the results of an earlier reproduction in --out (its trained policies in models/ are kept: "
               "a cache by configuration)");
  app.add_flag("--print-config", print_config, "print the settings as JSON and exit");
  if (const auto status = app::parse_command_line(app, prog + " reproduce", args)) return *status;
  return app::run_guarded(prog + " reproduce", [&] {
    if (name != "all") check_experiment(name);
    if (print_config) {
      const nlohmann::json settings = {{"experiment", name}, {"out", o.out_dir},     {"tiny", o.tiny},
                                       {"seed", o.seed},     {"threads", o.threads}, {"docs", docs},
                                       {"paper_checkpoint", o.paper_checkpoint}};
      std::printf("%s\n", settings.dump(2).c_str());
      return 0;
    }
    check_paper_file(o);  // (before the folder is claimed: a bad file replaces nothing)
    // A second reproduction into one folder replaced the first's results: refused unless --overwrite.
    app::RunClaim claim;
    claim.command = "qfleet-meta reproduce " + name;
    claim.config = {{"experiment", name}, {"tiny", o.tiny}, {"seed", o.seed}, {"paper_checkpoint", o.paper_checkpoint}};
    claim.files.results = experiment_results(name);
    claim.files.others = experiment_other_files(name);
    claim.overwrite = overwrite;
    claim.ways.resume.clear();  // (nothing to continue: the trained policies are reused by configuration anyway)
    const app::OutputFolder held(o.out_dir, claim);
    if (name == "all") {
      const auto r = reproduce_all(o);
      const std::string md = o.out_dir + "/reproduction.md";
      if (!docs.empty()) {
        write_file_atomic(docs, qfleet::read_file_bounded(md));
      }
      std::printf("reproduce all: %.1f min; %s%s%s\n", r["seconds"].get<double>() / 60, md.c_str(),
                  docs.empty() ? "" : ", ", docs.c_str());
    } else {
      const auto r = run_experiment(name, o);
      std::printf("%s", experiment_table(r).c_str());
    }
    std::printf("plots: python -m qfleet.meta_control.plot_reproduction %s\n", o.out_dir.c_str());
    return 0;
  });
}

int cli_body(const std::string& prog, const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "reproduce")
    return reproduce_body(prog, std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "reproduce-all") {  // another name for `reproduce all`
    std::vector<std::string> rest = {"all"};
    rest.insert(rest.end(), args.begin() + 1, args.end());
    return reproduce_body(prog, rest);
  }
  CLI::App app{prog + ": meta-learned robust quantum control on qfleet (docs/meta_control.md)", prog};
  const app::Shell shell(app, config_schema());
  app.footer("Subcommand: " + prog + " reproduce NAME|all [--help]: arXiv:2601.18973's experiments "
             "(docs/reproduction.md). ./scripts/main.sh runs " + prog + " --preset main.");
  int64_t stop_after = -1, nproc = 1;
  app.add_option("--stop-after", stop_after, "stop after this many iterations, with a checkpoint")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nproc", nproc,
                 "processes on this machine, each running its share of the meta-batch (or start under torchrun)")
      ->check(CLI::Range(1, 256));
  if (const auto status = app::parse_command_line(app, prog, args)) return *status;
  // The per-task policy weights are megabytes; keep freed blocks in the heap instead
  // of returning them to the kernel, so each step does not pay fresh page faults.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  return app::run_guarded(prog, [&] {
    if (const auto status = shell.answer_printing()) return *status;
    const auto cfg = make_config(shell.config());
    const auto dist = qfleet::train::dist_from_env();
    if (nproc > 1 && !dist) {  // the launcher: nproc ranks of this same command line
      if (nproc > max_processes(cfg))
        throw ConfigError("--nproc " + std::to_string(nproc) + ": a run with meta_batch = " +
                          std::to_string(cfg.meta_batch) + " takes at most " + std::to_string(max_processes(cfg)) +
                          " processes (min(meta_batch, 8))");
      std::fflush(stdout);
      std::fflush(stderr);
      std::string report;
      const int rc = qfleet::train::launch_local(static_cast<int>(nproc), &report);
      if (rc != 0) std::fprintf(stderr, "%s: error: %s", prog.c_str(), report.c_str());
      return rc;
    }
    const bool lead = !dist || dist->rank == 0;
    RunOptions opt;
    opt.resume = shell.resume();
    opt.overwrite = shell.overwrite();
    opt.holds_folder = true;
    std::optional<app::OutputFolder> held;  // (the ranks that do not write leave it to rank 0)
    if (lead) held.emplace(cfg.output_dir, output_claim(cfg, opt));
    const bool quiet = shell.quiet() || !lead;
    Bar bar;
    opt.stop_after = stop_after;
    opt.progress = quiet ? nullptr : &bar;
    opt.app = prog;
    if (!quiet)
      std::fprintf(stderr, "%s: %s on %s (%lld tasks x %lld inner steps, %lld iterations, %s solver, preset %s%s)\n",
                   prog.c_str(), cfg.algorithm.c_str(), cfg.system.c_str(), (long long)cfg.meta_batch, (long long)cfg.inner_steps,
                   (long long)cfg.iterations, cfg.solver.c_str(), cfg.preset.c_str(),
                   dist ? (", " + std::to_string(dist->world_size) + " processes").c_str() : "");
    const auto res = run(cfg, opt);
    if (!lead) return 0;
    if (!res.complete) {
      if (!quiet)
        std::printf("stopped after iteration %lld; checkpoint %s (continue with --resume)\n",
                    (long long)res.report["stopped_at_iteration"].get<int64_t>(),
                    res.report["checkpoint"].get<std::string>().c_str());
      return 0;
    }
    if (!quiet) {
      const auto& v = res.report["validation"];
      const auto& t = res.report["timings_s"];
      std::printf("validation (%zu held-out tasks, %s):\n", v["tasks"].size(),
                  cfg.fidelity == "average_gate" ? "average gate fidelity" : "state-transfer fidelity");
      std::printf("  meta policy, no adaptation      %.5f\n", v["mean_before"].get<double>());
      std::printf("  meta policy, %3lld %-4s steps    %.5f\n", (long long)cfg.adapt_steps,
                  cfg.adapt_optimizer == "adam" ? "Adam" : "SGD", v["mean_after"].get<double>());
      std::printf("  robust pulse (one for all)      %.5f\n", v["mean_robust"].get<double>());
      std::printf("  per-task GRAPE optimum          %.5f\n", v["mean_grape"].get<double>());
      std::printf("  optimality gap (mean / max)     %.5f / %.5f\n", v["mean_gap"].get<double>(),
                  v["max_gap"].get<double>());
      const auto& a = res.report["adaptation"];
      for (const char* regime : {"in_distribution", "out_of_distribution"}) {
        if (!a.contains(regime)) continue;
        const auto& g = a[regime];
        std::printf("%s: G_K = F_K - F_0 over K =", regime);
        const auto& gap = g["gap"];
        const std::size_t n = gap.size(), every = std::max<std::size_t>(1, (n - 1) / 5);
        for (std::size_t k = 0; k < n; k += every) std::printf(" %zu: %.5f", k, gap[k].get<double>());
        if ((n - 1) % every != 0) std::printf(" %zu: %.5f", n - 1, gap[n - 1].get<double>());
        std::printf("\n");
      }
      std::printf("conclusion: %s\n", res.report["conclusion"].get<std::string>().c_str());
      std::printf("training %.1f s (%.2f ms per iteration), baselines %.1f s; outputs in %s/\n",
                  t["training"].get<double>(), t["per_iteration_ms"].get<double>(),
                  t["robust_baseline"].get<double>() + t["grape"].get<double>(), cfg.output_dir.c_str());
      std::printf("plots: python -m qfleet.meta_control.plot %s\n", cfg.output_dir.c_str());
    }
    return 0;
  });
}

}  // namespace

std::unique_ptr<Progress> make_progress_bar() { return std::make_unique<Bar>(); }

int cli_main(const std::string& prog, const std::vector<std::string>& args) {
  const int rc = cli_body(prog, args);
  // Python's own streams sit on the same descriptors: hand over with nothing buffered.
  std::fflush(stdout);
  std::fflush(stderr);
  return rc;
}

}  // namespace qfleet::meta
