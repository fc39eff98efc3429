// The command line of qfleet-qgan and python -m qfleet.qgan (cli.hpp).
#include "cli.hpp"
#include "common/cli_errors.hpp"
#include "common/output_folder.hpp"
#include "common/shell.hpp"
#include "qgan_config.hpp"  // generated: the schemas config.json, tournament.json, classifier.json, suite.json

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>

#include "classifier.hpp"
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

SuiteConfig suite_config(const json& r, bool progress) {
  SuiteConfig c = app::read_settings(suite_settings(), r);
  const std::string circuit = c.classifier.circuit;
  c.classifier = ClassifierConfig::from_settings(classifier_schema().resolve(json::object(), "suite", {}));
  c.classifier.progress = progress;
  c.classifier.circuit = circuit;
  c.progress = progress;
  return c;
}

void print_train(const json& r) {
  const auto& f = r["final"];
  std::printf("target: %s\n", r["target"]["description"].get<std::string>().c_str());
  std::printf("generator: %d qubits, %d reps, %s%s\n", r["generator"]["n_qubits"].get<int>(), r["generator"]["reps"].get<int>(),
              r["generator"]["simulator"].get<std::string>().c_str(),
              r["generator"]["noise_model"].is_null() ? "" : (", noise model " + r["generator"]["noise_model"].get<std::string>()).c_str());
  std::printf("after %lld epochs: relative entropy KL(generated || target) %s, KL(target || generated) %s, KS %s "
              "(best KL %s, after %lld epochs)\n",
              static_cast<long long>(f["epochs"].get<int64_t>()), fmt_num(f["kl"]).c_str(), fmt_num(f["kl_reverse"]).c_str(),
              fmt_num(f["ks"]).c_str(), fmt_num(f["best_kl"]).c_str(), static_cast<long long>(f["best_after_epochs"].get<int64_t>()));
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

// What each command writes into its folder (app::OutputFolder's claim; the figures are
// python -m qfleet.qgan.plot's, which the suite runs).
app::OutputFiles train_files() {
  return {{"report.json", "history.json", "checkpoint.pt"}, {"train_log.jsonl", "qgan_distribution.png", "qgan_metrics.png"}};
}
app::OutputFiles tournament_files() { return {{"tournament.json"}, {"tournament_*.png"}}; }
app::OutputFiles classifier_files() {
  return {{"classifier.json", "shots_*/checkpoint.pt", "shots_*/history.json", "shots_*/records.pt"},
          {"shots_*/train_log.jsonl", "classifier_*.png"}};
}
app::OutputFiles suite_files() {
  app::OutputFiles f{{"summary.json"}, {}};
  return f.add(train_files().under("qgan")).add(tournament_files().under("tournament")).add(classifier_files().under("classifier"));
}

int train_main(const app::Shell& shell) {
  TrainConfig tc = TrainConfig::from_settings(shell.config());
  tc.resume = shell.resume();
  tc.progress = !shell.quiet();
  validate(tc);
  const app::OutputFolder held(tc.out, shell.claim("qfleet-qgan train", train_files()));
  print_train(train(tc));
  std::printf("outputs in %s/ (report.json, history.json, checkpoint.pt); figures: python -m qfleet.qgan.plot %s\n",
              tc.out.c_str(), tc.out.c_str());
  return 0;
}

int tournament_main(const app::Shell& shell) {
  TournamentConfig tt = TournamentConfig::from_settings(shell.config());
  tt.progress = !shell.quiet();
  validate(tt);
  const app::OutputFolder held(tt.out, shell.claim("qfleet-qgan tournament", tournament_files()));
  print_tournament(run_tournament(tt));
  std::printf("outputs in %s/tournament.json; figures: python -m qfleet.qgan.plot %s\n", tt.out.c_str(), tt.out.c_str());
  return 0;
}

void print_classifier(const json& r) {
  std::printf("which of %zu devices ran %s (%s outcomes; chance %.3f), from a record of N shots\n", r["devices"].size(),
              r["circuit"]["name"].get<std::string>().c_str(), fmt_num(r["outcomes"]).c_str(), r["chance"].get<double>());
  std::printf("%8s %18s %26s %12s %16s\n", "shots", "network accuracy", "Bayes limit", "of the limit", "train ms/epoch");
  for (const auto& x : r["results"]) {
    const auto& b = x["bayes"];
    const std::string limit = b["method"] == "exact" ? fmt_num(b["accuracy"]) + " (exact)"
                                                     : fmt_num(b["accuracy"]) + " +- " + fmt_num(b["error"]) + " (MC)";
    const json& ms = x["timing"]["train_ms_per_epoch"];  // null when the run resumed at its end
    std::printf("%8lld %10.4f +- %.4f %26s %11.1f%% %16s\n", static_cast<long long>(x["shots"].get<int64_t>()),
                x["accuracy"].get<double>(), x["accuracy_error"].get<double>(), limit.c_str(),
                100 * x["fraction_of_bayes"].get<double>(), ms.is_null() ? "-" : fmt_num(ms).c_str());
  }
}

int classify_main(const app::Shell& shell) {
  ClassifierConfig cc = ClassifierConfig::from_settings(shell.config());
  cc.resume = shell.resume();
  cc.progress = !shell.quiet();
  validate(cc);
  const app::OutputFolder held(cc.out, shell.claim("qfleet-qgan classify", classifier_files()));
  print_classifier(run_classifier(cc));
  std::printf("outputs in %s/classifier.json; figures: python -m qfleet.qgan.plot %s\n", cc.out.c_str(), cc.out.c_str());
  return 0;
}

void print_suite(const json& s, const SuiteConfig& sc) {
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
  std::string cl = "skipped";
  if (sc.classify) {
    std::string shots, shares;  // "16/64/256", "98/96/95"
    for (const auto& x : s["classifier"]["results"]) {
      shots += (shots.empty() ? "" : "/") + fmt_num(x["shots"]);
      shares += (shares.empty() ? "" : "/") + std::to_string(int(std::lround(100 * x["fraction_of_bayes"].get<double>())));
    }
    cl = "at " + shots + " shots: " + shares + "% of the Bayes limit";
  }
  std::printf("  %-12s %-58s %8.1f\n", "classifier", cl.c_str(), s["classifier"]["seconds"].get<double>());
  const int fs = s["figures"]["exit_status"].get<int>();
  std::printf("  %-12s %-58s %8.1f\n", "figures",
              !sc.figures ? "skipped" : fs == 0 ? "written" : ("failed (exit " + std::to_string(fs) + "): run " +
                                                              s["figures"]["command"].get<std::string>()).c_str(),
              s["figures"]["seconds"].get<double>());
  std::printf("  %-12s %-58s %8.1f\n", "total", "", s["seconds"].get<double>());
}

}  // namespace

int cli_main(const std::string& prog, const std::vector<std::string>& args) {
  CLI::App app{prog + ": a quantum GAN and a device-distinguishability tournament on qfleet (docs/qgan.md). "
                      "Without a subcommand: train (the 3-qubit log-normal).",
               prog};
  app.require_subcommand(0, 1);
  const app::Shell default_shell(app, train_schema());  // no subcommand: train
  CLI::App* train_cmd = app.add_subcommand("train", "train a qGAN");
  const app::Shell train_shell(*train_cmd, train_schema());
  CLI::App* tour_cmd = app.add_subcommand("tournament", "compare devices' output distributions");
  const app::Shell tour_shell(*tour_cmd, tournament_schema(), false);
  CLI::App* class_cmd = app.add_subcommand("classify", "train a network to tell devices apart from shot records, beside the Bayes limit");
  const app::Shell class_shell(*class_cmd, classifier_schema());
  CLI::App* suite_cmd = app.add_subcommand("suite", "qGAN (gaussian2d, 1000 epochs) + tournament + device classifier + figures, with a summary");
  const app::Shell suite_shell(*suite_cmd, suite_schema(), false);
  if (const auto status = app::parse_command_line(app, prog, args)) return *status;
  const app::Shell& shell = tour_cmd->parsed()    ? tour_shell
                            : class_cmd->parsed() ? class_shell
                            : suite_cmd->parsed() ? suite_shell
                            : train_cmd->parsed() ? train_shell
                                                  : default_shell;
  return app::run_guarded<TargetError>(prog, [&] {
    if (const auto status = shell.answer_printing()) return *status;
    if (tour_cmd->parsed()) return tournament_main(shell);
    if (class_cmd->parsed()) return classify_main(shell);
    if (suite_cmd->parsed()) {
      const SuiteConfig sc = suite_config(shell.config(), !shell.quiet());
      const app::OutputFolder held(sc.out, shell.claim("qfleet-qgan suite", suite_files()));
      print_suite(run_suite(sc), sc);
      return 0;
    }
    return train_main(shell);
  });
}

}  // namespace qfleet::qgan
