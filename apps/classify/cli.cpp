// The command line of qfleet-classify and python -m qfleet.classify (classify.hpp).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "classify.hpp"
#include "cli.hpp"
#include "common/cli_errors.hpp"
#include "common/output_folder.hpp"
#include "common/shell.hpp"
#include "qfleet/train.hpp"

namespace qfleet::classify {
namespace {

void print_summary(const nlohmann::json& r) {
  std::printf("%s\n", r["model"]["description"].get<std::string>().c_str());
  std::printf("data: %s (%lld train, %lld test images)\n", r["data"]["dir"].get<std::string>().c_str(),
              static_cast<long long>(r["data"]["train"].get<int64_t>()), static_cast<long long>(r["data"]["test"].get<int64_t>()));
  for (const auto& e : r["epochs"])
    std::printf("epoch %lld: train accuracy %.4f, test accuracy %.4f (loss %.4f), %.1f s\n",
                static_cast<long long>(e["epoch"].get<int64_t>()), e["train_accuracy"].get<double>(),
                e["test_accuracy"].get<double>(), e["test_loss"].get<double>(), e["seconds"].get<double>());
  const auto& t = r["timing"];
  std::printf("step (batch %lld, mean of %lld timed steps): %.3f ms\n", static_cast<long long>(r["config"]["batch"].get<int64_t>()),
              static_cast<long long>(t["timed_steps"].get<int64_t>()), t["step_ms"].get<double>());
  for (const auto& [name, ms] : t["ms"].items())
    std::printf("  %-18s %9.3f ms  %5.1f%%%s\n", name.c_str(), ms.get<double>(), 100 * t["share"][name].get<double>(),
                name == "quantum_backward" ? "  (part of backward)" : "");
  std::printf("%s layer (forward + backward): %.3f ms, %.2f%% of the step\n",
              r["model"]["middle_layer"].get<std::string>().c_str(), t["quantum_layer_ms"].get<double>(),
              100 * t["quantum_layer_share"].get<double>());
  if (r.contains("test_accuracy"))
    std::printf("test accuracy %.4f after %zu epochs; %.1f s in all\n", r["test_accuracy"].get<double>(), r["epochs"].size(),
                r["seconds"].get<double>());
}

// What a run writes into its folder (app::OutputFolder's claim; the figures are python -m
// qfleet.classify.plot's). Not cache/: its features are keyed by what they were computed from.
app::OutputFiles output_files() {
  return {{"report.json", "history.json", "checkpoint.pt", "backbone.pt"},
          {"train_log.jsonl", "curves.png", "confusion.png", "per_class.png", "timing.png"}};
}

}  // namespace

int cli_main(const std::string& prog, const std::vector<std::string>& args) {
  CLI::App cli{prog + ": a hybrid CNN + quantum-circuit image classifier on qfleet (docs/classify.md)", prog};
  const app::Shell shell(cli, schema());
  if (const auto status = app::parse_command_line(cli, prog, args)) return *status;
  return app::run_guarded<DataError>(prog, [&] {
    if (const auto status = shell.answer_printing()) return *status;
    Config c = Config::from_settings(shell.config());
    c.resume = shell.resume();
    c.progress = !shell.quiet();
    validate(c);
    const app::OutputFolder held(c.out, shell.claim("qfleet-classify", output_files()));
    print_summary(run(c));
    std::printf("outputs in %s/ (report.json, history.json, checkpoint.pt, backbone.pt); plots: python -m qfleet.classify.plot %s\n",
                c.out.c_str(), c.out.c_str());
    return 0;
  });
}

}  // namespace qfleet::classify
