// `qfleet demo`: registers the teacher-student demo's options with the CLI.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

#include "demo.hpp"

namespace qfleet::cli {

using Action = std::function<int()>;

void register_demo(CLI::App& app, Action& action) {
  auto o = std::make_shared<tools::DemoOptions>();
  CLI::App* sub = app.add_subcommand(
      "demo", "A demo (embedded defaults): train a quantum layer on batched adjoint gradients");
  sub->add_option("--qubits", o->qubits, "qubits of the layer")->check(CLI::Range(1, 16))->capture_default_str();
  sub->add_option("--layers", o->layers, "StronglyEntanglingLayers")->check(CLI::Range(1, 64))->capture_default_str();
  sub->add_option("--batch", o->batch, "minibatch size")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  sub->add_option("--dataset", o->dataset, "labelled samples")->check(CLI::Range(1, 1 << 22))->capture_default_str();
  sub->add_option("--steps", o->steps, "Adam steps")->check(CLI::Range(1, 1000000))->capture_default_str();
  sub->add_option("--lr", o->lr, "Adam learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--seed", o->seed, "random seed")->capture_default_str();
  sub->add_option("--threads", o->threads, "OpenMP threads (0 = default)")->check(CLI::Range(0, 4096))->capture_default_str();
  sub->add_option("--precision", o->precision, "complex64 or complex128")
      ->check(CLI::IsMember({"complex64", "complex128"}))
      ->capture_default_str();
  sub->callback([&action, o] { action = [o] { return tools::run_demo(*o); }; });
}

}  // namespace qfleet::cli
