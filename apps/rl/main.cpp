// qfleet-rl: vectorized quantum-control environments and PPO (docs/rl.md).
//
//   qfleet-rl                        # PPO on the qubit X task (the embedded default, about a minute)
//   qfleet-rl bench-env --env num_envs=4096
//   qfleet-rl compare                # PPO beside per-task GRAPE and the meta-learned policy
//
// The command line itself is cli.cpp, shared with `python -m qfleet.rl`.
#include "cli.hpp"
#include "common/main.hpp"

int main(int argc, char** argv) {
  // (common/main.hpp: why; python/qfleet/rl/__main__.py passes the same)
  return qfleet::app::main(argc, argv, "qfleet-rl", qfleet::rl::cli_main, "passive");
}
