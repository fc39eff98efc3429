// qfleet-qgan: a quantum GAN and a device-distinguishability tournament (docs/qgan.md).
//
//   qfleet-qgan                                  # the embedded default: the 3-qubit log-normal qGAN
//   qfleet-qgan train --target gaussian2d --epochs 1000
//   qfleet-qgan tournament --generator qgan-out/report.json
//   qfleet-qgan suite                            # qGAN + tournament + figures, summary table
//
// The command line itself is cli.cpp, shared with `python -m qfleet.qgan`.
#include "cli.hpp"
#include "common/main.hpp"

int main(int argc, char** argv) {
  // (common/main.hpp: why; python/qfleet/qgan/__main__.py passes the same)
  return qfleet::app::main(argc, argv, "qfleet-qgan", qfleet::qgan::cli_main, "passive");
}
