// Every app's main(): the thread policy, then the app's command line (cli.cpp). The
// Python entries (`python -m qfleet.<app>`) apply the same policy the same way
// (python/qfleet/_lib.py, run_app_main), so both run with the same OpenMP waiting.
//
// OpenMP threads that spin-wait after each parallel region (libgomp's default) starve
// the other pool's threads when the cores are shared: torch's and the engine's parallel
// regions alternate every layer (measured with qfleet-classify on the 2-core machine
// under load: 406 ms a step against 12.6 ms with passive waiting). The runtime reads
// the policy once, when it loads, before main: so set it and start again, unless the
// user chose one.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace qfleet::app {

using CliMain = int (*)(const std::string& prog, const std::vector<std::string>& args);

inline int main(int argc, char** argv, const char* prog, CliMain cli_main) {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && setenv("OMP_WAIT_POLICY", "passive", 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  return cli_main(prog, std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace qfleet::app
