// Every app's main(): the app's OpenMP wait policy, then its command line (cli.cpp).
// The Python entries (`python -m qfleet.<app>`) apply the same policy the same way
// (python/qfleet/_lib.py, run_app_main, given the same value in each __main__.py), so
// binary and Python run alike.
//
// Why a policy per app: OpenMP threads that spin-wait after each parallel region
// (libgomp's default) starve the other pool's threads when the cores are shared and
// torch's and the engine's parallel regions alternate every layer (qfleet-classify on
// the 2-core machine under load: 406 ms a step against 12.6 ms with passive waiting);
// where the regions are short and follow each other closely, spinning wins
// (qfleet-meta, 150 iterations of the fast preset on 2 cores: 25-29 ms an iteration
// active, 41-43 ms passive). The runtime reads the policy once, when it loads, before
// main: so set it and start again, unless the user chose one.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace qfleet::app {

using CliMain = int (*)(const std::string& prog, const std::vector<std::string>& args);

// `wait_policy`: OMP_WAIT_POLICY for the run unless the user set one (nullptr: the
// runtime's default).
inline int main(int argc, char** argv, const char* prog, CliMain cli_main, const char* wait_policy) {
  if (wait_policy != nullptr && std::getenv("OMP_WAIT_POLICY") == nullptr &&
      setenv("OMP_WAIT_POLICY", wait_policy, 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  return cli_main(prog, std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace qfleet::app
