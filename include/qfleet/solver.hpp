// The open-system solvers: the enum, and one row per solver holding what the library
// needs to know of it outside its step and discrete adjoint (src/kernels/open_task.hpp):
// its name (JSON, CLI, PyTorch adapter: names.hpp's kSolverNames is built from these
// rows), its generator products per step (the cost model), and whether it takes a
// fixed step dt or error tolerances (the option checks and the JSON reader). A new
// solver is a row here plus its step in open_task.hpp. C++17 and plain data, so the
// CUDA translation units read the same enum the kernels compare against.
#pragma once

#include <cstdint>

namespace qfleet {

enum class Solver : std::uint8_t { exact, rk4, euler, dopri5, tsit5 };

struct SolverInfo {
  Solver id;
  const char* name;
  int stages;       // generator products per step (exact: 0, it exponentiates)
  bool fixed_step;  // takes dt: each segment in ceil(duration / dt) equal steps
  bool adaptive;    // takes rtol and atol: error-controlled steps
};

// In the enum's order.
inline constexpr SolverInfo kSolvers[] = {
    {Solver::exact, "exact", 0, false, false},
    {Solver::rk4, "rk4", 4, true, false},
    {Solver::euler, "euler", 1, true, false},
    {Solver::dopri5, "dopri5", 7, false, true},
    {Solver::tsit5, "tsit5", 7, false, true},
};

// Solver s's row. Host code only: the kernels compare against the enum's constants
// and never read this table at a run-time index (a device-side read of a host table
// is a trap; see kernels/gate_matrix.hpp).
constexpr const SolverInfo& solver_info(Solver s) { return kSolvers[static_cast<int>(s)]; }

}  // namespace qfleet
