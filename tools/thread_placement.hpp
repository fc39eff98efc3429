// Where the CLI's OpenMP threads run: one per CPU, bound, for a big batch.
#pragma once

#include <nlohmann/json.hpp>

namespace qfleet::cli {

// Remembers the command line for run_again_with_threads_bound (call first in main()).
void remember_command_line(char** argv);

// When the user set none of OMP_PROC_BIND, OMP_PLACES and GOMP_CPU_AFFINITY, and the
// OpenMP team will have one thread per CPU this process may use (two or more), runs the
// program again (execv of /proc/self/exe, the same arguments) with OMP_PLACES one place
// per CPU (the current one first) and OMP_PROC_BIND=close, and does not return;
// otherwise, or if that fails, returns and the program goes on as it is. `qfleet eval`
// calls it for a problem file (a regular file, which the new start reads again) whose
// arrays come from .npy files, before reading them.
// Why, and the figures: tools/thread_placement.cpp; docs/cli.md "Threads".
void run_again_with_threads_bound();

// {"threads": OpenMP's default team size, "proc_bind": OMP_PROC_BIND's spelling of the
// binding in force, "places": the number of places} (`qfleet info`, `qfleet eval`).
nlohmann::json openmp_placement();

}  // namespace qfleet::cli
