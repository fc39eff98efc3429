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
// (qfleet-meta on the 2-core machine, report.json's timings_s.per_iteration_ms of
//   OMP_WAIT_POLICY=active|passive qfleet-meta --set iterations=150 --set grape_iterations=200
//     --set robust_iterations=100 --set validate_every=50 --quiet
// twice each, alternating: 25.1, 29.4 ms active; 43.2, 41.5 ms passive). The runtime reads the policy once, when it loads, before
// main: so set it and start again, unless the user chose one.
#pragma once

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

namespace qfleet::app {

using CliMain = int (*)(const std::string& prog, const std::vector<std::string>& args);

// `wait_policy`: OMP_WAIT_POLICY for the run unless the user set one (nullptr: the
// runtime's default).
inline int main(int argc, char** argv, const char* prog, CliMain cli_main, const char* wait_policy) {
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG and ends the run with
  // the writer's one line ("cannot write out/checkpoint.pt: File too large", status 1),
  // as a full disk does, instead of SIGXFSZ killing the process without a word. (Kept
  // across the execv below: an ignored signal stays ignored.)
  std::signal(SIGXFSZ, SIG_IGN);
  if (wait_policy != nullptr && std::getenv("OMP_WAIT_POLICY") == nullptr &&
      setenv("OMP_WAIT_POLICY", wait_policy, 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  return cli_main(prog, std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace qfleet::app
