// The command line of qfleet-classify and python -m qfleet.classify (classify.hpp).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "classify.hpp"
#include "cli.hpp"
#include "common/cli_errors.hpp"
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

}  // namespace

int cli_main(const std::string& prog, const std::vector<std::string>& args) {
  Config c;
  bool quiet = false, print_config = false;
  CLI::App app{prog + ": a hybrid CNN + quantum-circuit image classifier on qfleet (docs/classify.md)", prog};
  app.add_option("--data", c.data, "folder of MNIST-style IDX files: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
      ->capture_default_str();
  app.add_option("--mode", c.mode, "end_to_end, or features (frozen backbone, its features cached)")->capture_default_str();
  app.add_option("--backbone", c.model.backbone, "small (2-conv CNN) or resnet18")->capture_default_str();
  app.add_option("--layer", c.model.layer, "quantum, or classical (the ablation: a Linear + tanh of the same width)")
      ->capture_default_str();
  app.add_option("--qubits", c.model.qubits, "qubits (the angles fed to the circuit)")->capture_default_str();
  app.add_option("--layers", c.model.layers, "entangling layers")->capture_default_str();
  app.add_option("--embedding", c.model.embedding, "AngleEmbedding's rotation: x, y or z")->capture_default_str();
  app.add_option("--entangler", c.model.entangler, "strong (StronglyEntanglingLayers) or basic")->capture_default_str();
  app.add_option("--measure", c.model.measure, "z (<Z_i> per wire) or probs (2^n probabilities)")->capture_default_str();
  app.add_option("--circuit", c.circuit_file, "a circuit JSON (docs/cli.md) instead of the built one");
  app.add_option("--head-inputs", c.model.head_inputs, "the head's width (0: the layer's outputs; else they must agree)")
      ->capture_default_str();
  app.add_option("--precision", c.model.precision, "the circuit's: complex128 or complex64")->capture_default_str();
  app.add_option("--backbone-from", c.backbone_from, "features mode: a backbone.pt written by an earlier run");
  app.add_option("--epochs", c.epochs, "epochs")->capture_default_str();
  app.add_option("--batch", c.batch, "batch size")->capture_default_str();
  app.add_option("--lr", c.lr, "Adam's learning rate")->capture_default_str();
  app.add_option("--train-subset", c.train_subset, "use the first N training images (0: all)")->capture_default_str();
  app.add_option("--test-subset", c.test_subset, "use the first N test images (0: all)")->capture_default_str();
  app.add_option("--seed", c.seed, "seed")->capture_default_str();
  app.add_option("--threads", c.threads, "CPU threads (0: all cores)")->capture_default_str();
  app.add_option("--device", c.device, "cpu, cuda or auto")->capture_default_str();
  app.add_option("--time-every", c.time_every, "steps between timed steps")->capture_default_str();
  app.add_option("--out", c.out, "output folder")->capture_default_str();
  app.add_option("--cache", c.cache, "features cache folder (default <out>/cache)");
  app.add_flag("--resume", c.resume, "continue from <out>/checkpoint.pt");
  app.add_flag("--quiet", quiet, "no progress bar");
  app.add_flag("--print-config", print_config, "print the configuration as JSON and exit");
  if (const auto status = app::parse_command_line(app, prog, args)) return *status;
  c.progress = !quiet;
  return app::run_guarded<DataError>(prog, [&] {
    validate(c);
    if (print_config) {
      std::printf("%s\n", c.to_json().dump(1).c_str());
      return 0;
    }
    print_summary(run(c));
    std::printf("outputs in %s/ (report.json, history.json, checkpoint.pt, backbone.pt); plots: python -m qfleet.classify.plot %s\n",
                c.out.c_str(), c.out.c_str());
    return 0;
  });
}

}  // namespace qfleet::classify
