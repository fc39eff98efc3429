// Why `qfleet eval` of .npy arrays binds its OpenMP threads (docs/cli.md "Threads").
//
// Such an eval is a fresh process whose first parallel region is one big forward
// pass. libgomp creates the worker threads in that region; Linux starts a new thread
// on its creator's CPU, and until the load balancer moves it (milliseconds) the worker
// and the primary thread, which spins at libgomp's start-up barrier, share one CPU.
// Bound by libgomp (OMP_PROC_BIND/OMP_PLACES), each thread starts on its own CPU.
// Measured on the 2-core development VM (2026-11-27):
// `qfleet eval` of a B = 32,768 forward with .npy arrays (`perf stat -r 40`): 17.5-18.5 ms
// unbound, 12.2-13.2 ms started bound, 13.8-14.1 ms running itself again bound; through
// bench/compare/cli_npy.py (six runs) 12.6-14.8 ms against 16.5-20.1 ms with OMP_PROC_BIND=false.
// Starting again costs ~1.5 ms, which is why only the .npy form, the big-batch one, does
// it (a 1-sample eval takes ~2-3 ms in all).
//
// libgomp reads those variables once, when it is loaded, before main() runs (and
// glibc hands it the environment the process started with, so setting them from a
// pre-init function does not work either): the program has to start again with them.
// It does so only when binding cannot crowd anyone: the user chose no placement and
// the team has one thread per CPU the process may use, which is where the threads
// would be anyway once balanced. OMP_PROC_BIND=false (or any placement of one's own)
// keeps the program as it is.
#include "thread_placement.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace qfleet::cli {

namespace {
char** command_line = nullptr;
}  // namespace

void remember_command_line(char** argv) { command_line = argv; }

void run_again_with_threads_bound() {
#if defined(_OPENMP) && defined(__linux__)
  if (command_line == nullptr) return;
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"})
    if (std::getenv(name) != nullptr) return;  // the user's placement (or a run again) wins
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int cpus = CPU_COUNT(&allowed);
  // omp_get_max_threads() starts no thread: it reads OMP_NUM_THREADS (or the CPU count).
  if (cpus < 2 || omp_get_max_threads() != cpus) return;
  // One place per CPU, the first the one this thread is on: libgomp binds the primary
  // thread to the first place when it starts, so side-by-side runs keep their primary
  // threads (which do the reading and writing) where the scheduler spread them.
  const int here = sched_getcpu();
  std::string places;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    const int cpu = (std::max(here, 0) + c) % CPU_SETSIZE;
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (!places.empty()) places.push_back(',');
    places.append("{").append(std::to_string(cpu)).append("}");
  }
  if (setenv("OMP_PLACES", places.c_str(), 1) != 0 || setenv("OMP_PROC_BIND", "close", 1) != 0) return;
  execv("/proc/self/exe", command_line);
  // Not run again (no /proc, say): go on unbound, as without this function.
  unsetenv("OMP_PLACES");
  unsetenv("OMP_PROC_BIND");
#endif
}

nlohmann::json openmp_placement() {
  nlohmann::json p = nlohmann::json::object();
#if defined(_OPENMP)
  p["threads"] = omp_get_max_threads();
  switch (omp_get_proc_bind()) {
    case omp_proc_bind_false: p["proc_bind"] = "false"; break;
    case omp_proc_bind_true: p["proc_bind"] = "true"; break;
    case omp_proc_bind_master: p["proc_bind"] = "primary"; break;
    case omp_proc_bind_close: p["proc_bind"] = "close"; break;
    case omp_proc_bind_spread: p["proc_bind"] = "spread"; break;
    default: p["proc_bind"] = "unknown";
  }
  p["places"] = omp_get_num_places();
#else
  p["threads"] = 1;
  p["proc_bind"] = "false";
  p["places"] = 0;
#endif
  return p;
}

}  // namespace qfleet::cli
