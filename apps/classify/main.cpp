// qfleet-classify: a hybrid CNN + quantum-circuit image classifier (docs/classify.md).
//
//   qfleet-classify                                   # the embedded default: small CNN + 4-qubit circuit, Fashion-MNIST
//   qfleet-classify --backbone resnet18 --epochs 5
//   qfleet-classify --layer classical                 # the ablation: what the circuit contributes
//   qfleet-classify --mode features --backbone-from classify-out/backbone.pt
//
// The command line itself is cli.cpp, shared with `python -m qfleet.classify`.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  // OpenMP threads that spin-wait after each parallel region (libgomp's default) starve
  // the other pool's threads when the cores are shared (torch's and the engine's parallel
  // regions alternate every layer; measured on the 2-core machine under load: 406 ms a
  // step against 12.6 ms with passive waiting). The runtime reads the policy once, when it
  // loads, before main: so set it and start again, unless the user chose one.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  return qfleet::classify::cli_main("qfleet-classify", std::vector<std::string>(argv + 1, argv + argc));
}
