// A compiled circuit flattened into one blob (kern::SvPlan): the form every
// executor reads. The cpu executor reads it in host memory; the cuda backend
// uploads the blob once at compile time and relocates the offsets to its copy.
#pragma once

#include <cstddef>
#include <vector>

#include "core/perm_runs.hpp"
#include "core/plan.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::detail {

// The arrays of a kern::SvPlan as the planner (compile.cpp) builds them.
struct SvPlanParts {
  std::vector<kern::OpDesc> ops;
  std::vector<kern::ParamDesc> params;      // every gate parameter, in op order
  std::vector<double> fixed_blocks;         // constant blocks, interleaved re, im
  std::vector<kern::TermDesc> terms;        // Pauli terms of every expval, flattened
  std::vector<int> term_begin;              // n_expvals + 1
  std::vector<int> probs_pos, probs_begin;  // bit positions of each probs block, its offsets
  std::vector<int> probs_out;               // output column of each probs block
  std::size_t mat_entries = 0, dmat_entries = 0;
  PermRuns perm;                            // fused runs of phased permutations (perm_runs.hpp)
  int n_diag_runs = 0;                      // runs of diagonal gates (diag_runs.hpp)
};

// Fills plan.blob, plan.offsets and plan.view from parts and plan.amp.
void pack_sv_plan(Plan& plan, const SvPlanParts& parts);
// The plan with its pointers relocated to a copy of the blob at base.
kern::SvPlan sv_view_at(const kern::SvPlan& offsets, const std::byte* base);

}  // namespace qfleet::detail
