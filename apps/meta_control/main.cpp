// qfleet-meta: meta-learned robust quantum control (docs/meta_control.md).
//
//   qfleet-meta                          # the embedded default ("fast" preset)
//   qfleet-meta --preset paper           # the paper's setting: 1000 iterations, 32 tasks, 5 inner steps
//   qfleet-meta --config run.json --set algorithm=reptile --set iterations=500
//   qfleet-meta --resume                 # continue from <output_dir>/checkpoint.pt
//
// The command line itself is cli.cpp, shared with `python -m qfleet.meta_control`.
#include "cli.hpp"
#include "common/main.hpp"

int main(int argc, char** argv) {
  // (common/main.hpp: why; python/qfleet/meta_control/__main__.py passes the same)
  return qfleet::app::main(argc, argv, "qfleet-meta", qfleet::meta::cli_main, nullptr);
}
