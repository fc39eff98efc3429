// The command line of qfleet-qgan and python -m qfleet.qgan (cli.hpp).
#include "cli.hpp"
#include "common/cli_errors.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "json_io.hpp"
#include "qfleet/error.hpp"
#include "qfleet/train.hpp"
#include "suite.hpp"

namespace qfleet::qgan {
namespace {
using json = nlohmann::json;

std::string fmt_num(const json& v) {
  if (v.is_number()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", v.get<double>());
    return b;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void add_train_options(CLI::App& a, TrainConfig& c) {
  a.add_option("--target", c.target.name, "lognormal, bimodal, heavy_tailed, gaussian2d or image")->capture_default_str();
  a.add_option("--qubits", c.target.qubits, "bins = 2^qubits for the 1-D targets (0: the target's default)")->capture_default_str();
  a.add_option("--image", c.target.image, "target image: a PGM file (python -m qfleet.qgan.image FILE.pgm writes one)");
  a.add_option("--fourier-features", c.target.fourier_features, "discriminator input frequencies (-1: the target's default)")
      ->capture_default_str();
  a.add_option("--reps", c.reps, "generator layers (-1: max(2, qubits - 2))")->capture_default_str();
  a.add_option("--epochs", c.epochs, "epochs (each: d-steps discriminator steps, one generator step)")->capture_default_str();
  a.add_option("--d-steps", c.d_steps, "discriminator steps per epoch")->capture_default_str();
  a.add_option("--lr-g", c.lr_g, "generator Adam learning rate")->capture_default_str();
  a.add_option("--lr-d", c.lr_d, "discriminator Adam learning rate")->capture_default_str();
  a.add_option("--beta1", c.beta1, "Adam beta1 (both)")->capture_default_str();
  a.add_option("--beta2", c.beta2, "Adam beta2 (both)")->capture_default_str();
  a.add_option("--hidden", c.hidden, "discriminator hidden widths (default: the target's)")->delimiter(',');
  a.add_option("--shots", c.shots, "0: exact probabilities; N: N-shot estimates and parameter-shift gradients")->capture_default_str();
  a.add_option("--noise-model", c.noise_model, "a device noise-model JSON (docs/noisy.md): train under its noise");
  a.add_option("--precision", c.precision, "complex128 or complex64")->capture_default_str();
  a.add_option("--seed", c.seed, "seed")->capture_default_str();
  a.add_option("--threads", c.threads, "CPU threads (0: all cores)")->capture_default_str();
  a.add_option("--device", c.device, "the discriminator's: cpu, cuda or auto")->capture_default_str();
  a.add_option("--checkpoint-every", c.checkpoint_every, "epochs between checkpoints")->capture_default_str();
  a.add_option("--out", c.out, "output folder")->capture_default_str();
  a.add_flag("--resume", c.resume, "continue from <out>/checkpoint.pt (--epochs N extends)");
}

void add_tournament_options(CLI::App& a, TournamentConfig& c) {
  a.add_option("--device", c.device_files, "a noise-model JSON file (repeat; default: the embedded fake backends)");
  a.add_flag("!--no-noiseless", c.noiseless, "leave out the noiseless reference device");
  a.add_option("--qubits", c.qubits, "width of the GHZ, QFT and random circuits")->capture_default_str();
  a.add_option("--random-circuits", c.random_circuits, "random layered circuits")->capture_default_str();
  a.add_option("--random-layers", c.random_layers, "layers of each random circuit")->capture_default_str();
  a.add_option("--generator", c.generator_report, "a qGAN report.json: its trained generator joins the circuits");
  a.add_option("--shots", c.shots, "shots per device and circuit for the finite-shot estimates (0: none)")->capture_default_str();
  a.add_option("--resamples", c.resamples, "bootstrap resamples")->capture_default_str();
  a.add_option("--confidence", c.confidence, "confidence of the shots-to-distinguish test")->capture_default_str();
  a.add_option("--level", c.level, "level of the bootstrap intervals")->capture_default_str();
  a.add_option("--seed", c.seed, "seed")->capture_default_str();
  a.add_option("--threads", c.threads, "CPU threads (0: all cores)")->capture_default_str();
  a.add_option("--out", c.out, "output folder")->capture_default_str();
}

void print_train(const json& r) {
  const auto& f = r["final"];
  std::printf("target: %s\n", r["target"]["description"].get<std::string>().c_str());
  std::printf("generator: %d qubits, %d reps, %s%s\n", r["generator"]["n_qubits"].get<int>(), r["generator"]["reps"].get<int>(),
              r["generator"]["simulator"].get<std::string>().c_str(),
              r["generator"]["noise_model"].is_null() ? "" : (", noise model " + r["generator"]["noise_model"].get<std::string>()).c_str());
  std::printf("after %lld epochs: relative entropy KL(generated || target) %s, KL(target || generated) %s, KS %s "
              "(best KL %s at epoch %lld)\n",
              static_cast<long long>(f["epochs"].get<int64_t>()), fmt_num(f["kl"]).c_str(), fmt_num(f["kl_reverse"]).c_str(),
              fmt_num(f["ks"]).c_str(), fmt_num(f["best_kl"]).c_str(), static_cast<long long>(f["best_epoch"].get<int64_t>()));
  std::printf("time: %.1f s (%.3f ms per epoch, of which the generator's engine calls %.3f ms)\n",
              r["timing"]["seconds"].get<double>(), r["timing"]["epoch_ms"].get<double>(),
              r["timing"]["generator_ms_per_epoch"].get<double>());
}

void print_tournament(const json& t) {
  std::printf("%zu devices x %zu circuits, %zu pairs (%.1f s)\n", t["devices"].size(), t["circuits"].size(), t["pairs"].size(),
              t["seconds"].get<double>());
  if (t["ranking"].is_array()) {
    std::printf("%-4s %-22s %5s %6s %5s %7s  %s\n", "rank", "device", "wins", "losses", "draws", "points", "mean JS to noiseless");
    for (const auto& r : t["ranking"])
      std::printf("%-4d %-22s %5d %6d %5d %7.1f  %.4f\n", r["rank"].get<int>(), r["device"].get<std::string>().c_str(),
                  r["wins"].get<int>(), r["losses"].get<int>(), r["draws"].get<int>(), r["points"].get<double>(),
                  r["mean_js_to_reference"].get<double>());
  }
}

}  // namespace

int cli_main(const std::string& prog, const std::vector<std::string>& args) {
  TrainConfig tc;
  TournamentConfig tt;
  SuiteConfig sc = default_suite();
  bool quiet = false, print_config = false, no_figures = false;
  CLI::App app{prog + ": a quantum GAN and a device-distinguishability tournament on qfleet (docs/qgan.md). "
                      "Without a subcommand: train (the 3-qubit log-normal).",
               prog};
  app.require_subcommand(0, 1);
  add_train_options(app, tc);  // the default subcommand's options
  CLI::App* train_cmd = app.add_subcommand("train", "train a qGAN");
  add_train_options(*train_cmd, tc);
  CLI::App* tour_cmd = app.add_subcommand("tournament", "compare devices' output distributions");
  add_tournament_options(*tour_cmd, tt);
  CLI::App* suite_cmd = app.add_subcommand("suite", "qGAN (gaussian2d, 1000 epochs) + tournament + figures, with a summary");
  suite_cmd->add_option("--out", sc.out, "output folder")->capture_default_str();
  suite_cmd->add_option("--epochs", sc.qgan.epochs, "qGAN epochs")->capture_default_str();
  suite_cmd->add_option("--target", sc.qgan.target.name, "qGAN target")->capture_default_str();
  suite_cmd->add_option("--seed", sc.qgan.seed, "seed (both stages)")->capture_default_str();
  suite_cmd->add_option("--threads", sc.qgan.threads, "CPU threads (0: all cores)")->capture_default_str();
  suite_cmd->add_option("--device", sc.tournament.device_files, "tournament devices (default: the embedded fake backends)");
  suite_cmd->add_option("--shots", sc.tournament.shots, "tournament shots per device and circuit")->capture_default_str();
  suite_cmd->add_option("--python", sc.python, "the Python that draws the figures")->capture_default_str();
  suite_cmd->add_flag("--no-figures", no_figures, "skip the figures");
  for (CLI::App* a : {&app, train_cmd, tour_cmd, suite_cmd}) {
    a->add_flag("--quiet", quiet, "no progress bar");
    a->add_flag("--print-config", print_config, "print the configuration as JSON and exit");
  }
  if (const auto status = app::parse_command_line(app, prog, args)) return *status;
  return app::run_guarded<TargetError>(prog, [&] {
    if (tour_cmd->parsed()) {
      tt.progress = !quiet;
      validate(tt);
      if (print_config) return std::printf("%s\n", tt.to_json().dump(1).c_str()), 0;
      print_tournament(run_tournament(tt));
      std::printf("outputs in %s/tournament.json; figures: python -m qfleet.qgan.plot %s\n", tt.out.c_str(), tt.out.c_str());
      return 0;
    }
    if (suite_cmd->parsed()) {
      sc.progress = !quiet;
      sc.figures = !no_figures;
      sc.tournament.seed = sc.qgan.seed;
      sc.tournament.threads = sc.qgan.threads;
      if (print_config) return std::printf("%s\n", json{{"qgan", sc.qgan.to_json()}, {"tournament", sc.tournament.to_json()}}.dump(1).c_str()), 0;
      const json s = run_suite(sc);
      std::printf("\nsuite summary (%s/summary.json)\n", sc.out.c_str());
      std::printf("  %-12s %-58s %8s\n", "stage", "result", "seconds");
      std::printf("  %-12s %-58s %8.1f\n", "qGAN",
                  (s["qgan"]["target"].get<std::string>() + ", " + fmt_num(s["qgan"]["epochs"]) + " epochs: KL " +
                   fmt_num(s["qgan"]["kl"]) + ", KS " + fmt_num(s["qgan"]["ks"]))
                      .c_str(),
                  s["qgan"]["seconds"].get<double>());
      std::printf("  %-12s %-58s %8.1f\n", "tournament",
                  (fmt_num(s["tournament"]["devices"]) + " devices x " + fmt_num(s["tournament"]["circuits"]) + " circuits, winner " +
                   (s["tournament"]["ranking"].is_array() ? s["tournament"]["ranking"][0]["device"].get<std::string>() : "-"))
                      .c_str(),
                  s["tournament"]["seconds"].get<double>());
      const int fs = s["figures"]["exit_status"].get<int>();
      std::printf("  %-12s %-58s %8.1f\n", "figures",
                  !sc.figures ? "skipped" : fs == 0 ? "written" : ("failed (exit " + std::to_string(fs) + "): run " +
                                                                  s["figures"]["command"].get<std::string>()).c_str(),
                  s["figures"]["seconds"].get<double>());
      std::printf("  %-12s %-58s %8.1f\n", "total", "", s["seconds"].get<double>());
      return 0;
    }
    tc.progress = !quiet;
    validate(tc);
    if (print_config) return std::printf("%s\n", tc.to_json().dump(1).c_str()), 0;
    print_train(train(tc));
    std::printf("outputs in %s/ (report.json, history.json, checkpoint.pt); figures: python -m qfleet.qgan.plot %s\n", tc.out.c_str(),
                tc.out.c_str());
    return 0;
  });
}

}  // namespace qfleet::qgan
