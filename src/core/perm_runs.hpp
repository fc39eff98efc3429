// Runs of constant phased-permutation gates fused for the group bodies
// (kern::PermRun), found for both circuit plans (compile.cpp, dm_compile.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/sv_plan.hpp"
#include "kernels/types.hpp"

namespace qfleet::detail {

// One op as the finder sees it: where it lands on the n-qubit basis and, for a constant
// gate, its block (row-major 2^kt x 2^kt, interleaved re, im); null for anything else
// (a gate with parameters, a channel), which ends a run.
struct PermCandidate {
  kern::GateSite site;
  const double* block = nullptr;
};

// The arrays behind CircuitPlan::perm_runs, perm_index and perm_phase.
struct PermRuns {
  std::vector<kern::PermRun> runs;
  std::vector<std::uint32_t> index;  // each run's src[dim], dst[dim]
  std::vector<double> phase;         // each phased run's phases, interleaved re, im
};

// Appends to out every run of at least kern::kMinPermRun consecutive ops whose blocks
// have one nonzero per column, on n <= kern::kMaxPermQubits qubits; returns each op's
// run index in out.runs (-1: none).
std::vector<int> find_perm_runs(int n, const std::vector<PermCandidate>& ops, PermRuns& out);

}  // namespace qfleet::detail
