// qfleet-classify: a hybrid CNN + quantum-circuit image classifier (docs/classify.md).
//
//   qfleet-classify                                   # the embedded default: small CNN + 4-qubit circuit, Fashion-MNIST
//   qfleet-classify --backbone resnet18 --epochs 5
//   qfleet-classify --layer classical                 # the ablation: what the circuit contributes
//   qfleet-classify --mode features --backbone-from classify-out/backbone.pt
//
// The command line itself is cli.cpp, shared with `python -m qfleet.classify`.
#include "cli.hpp"
#include "common/main.hpp"

int main(int argc, char** argv) {
  // (common/main.hpp: why; python/qfleet/classify/__main__.py passes the same)
  return qfleet::app::main(argc, argv, "qfleet-classify", qfleet::classify::cli_main, "passive");
}
