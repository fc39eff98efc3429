// qfleet-qgan: a quantum GAN and a device-distinguishability tournament (docs/qgan.md).
//
//   qfleet-qgan                                  # the embedded default: the 3-qubit log-normal qGAN
//   qfleet-qgan train --target gaussian2d --epochs 1000
//   qfleet-qgan tournament --generator qgan-out/report.json
//   qfleet-qgan suite                            # qGAN + tournament + figures, summary table
//
// The command line itself is cli.cpp, shared with `python -m qfleet.qgan`.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  // Passive OpenMP waiting when torch's and the engine's parallel regions alternate
  // (apps/classify/main.cpp has the measurement); set before the runtime loads.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  return qfleet::qgan::cli_main("qfleet-qgan", std::vector<std::string>(argv + 1, argv + argc));
}
