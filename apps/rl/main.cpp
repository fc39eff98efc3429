// qfleet-rl: vectorized quantum-control environments and PPO (docs/rl.md).
//
//   qfleet-rl                        # PPO on the qubit X task (the embedded default, about a minute)
//   qfleet-rl bench-env --env num_envs=4096
//   qfleet-rl compare                # PPO beside per-task GRAPE and the meta-learned policy
//
// The command line itself is cli.cpp, shared with `python -m qfleet.rl`.
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
  return qfleet::rl::cli_main("qfleet-rl", std::vector<std::string>(argv + 1, argv + argc));
}
