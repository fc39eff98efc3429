// Runs of consecutive diagonal gates marked for the circuit group body
// (kern::OpDesc::diag_first, diag_last; kernels/sv_group.hpp's group_diagonal_run).
#pragma once

#include <vector>

#include "kernels/sv_plan.hpp"
#include "qfleet/gates.hpp"

namespace qfleet::detail {

// Whether gate g, a gate with a parameter, has a diagonal block for every value of it
// (RZ, PhaseShift, CRZ, ControlledPhaseShift, IsingZZ). Constant gates are diagonal
// or not by their blocks.
bool gate_is_diagonal(Gate g);

// Marks every run of at least kern::kMinDiagRun consecutive ops with diagonal blocks
// (gate_is_diagonal(ops[k].gate), or its constant block at fixed_blocks + 2 * ops[k].fixed
// diagonal) outside the permutation runs (ops[k].run >= 0); returns how many.
int mark_diag_runs(std::vector<kern::OpDesc>& ops, const std::vector<double>& fixed_blocks);

}  // namespace qfleet::detail
