// The compiled form of a density-matrix circuit (kernels/dm_plan.hpp's DmPlan and
// the arrays it points into), built once by build_dm_plan (dm_compile.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/perm_runs.hpp"
#include "kernels/dm_plan.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

struct DmCompiled {
  DmCompiled() = default;
  DmCompiled(DmCompiled&&) = default;
  DmCompiled(const DmCompiled&) = delete;
  DmCompiled& operator=(const DmCompiled&) = delete;
  std::vector<kern::DmOp> ops;
  std::vector<kern::ParamDesc> params;
  std::vector<double> fixed_blocks;
  std::vector<kern::TermDesc> terms;
  std::vector<int> term_begin, probs_pos, probs_begin, probs_out;
  std::vector<double> readout;  // [n][4] or empty
  std::vector<std::uint64_t> amp_index;
  PermRuns perm;  // fused runs of constant permutation gates (perm_runs.hpp)
  // Channels whose parameters come from inputs or weights: checked at each call.
  std::vector<int> checked_channels;  // op indices
  std::vector<std::string> op_names;  // "Depolarizing on wires [0] (operation 3)", for errors
  double flops_forward = 0, flops_adjoint = 0;  // real flops per sample
  double state_bytes = 0;  // one density matrix in the program's precision
  kern::DmPlan view;  // points into the vectors above (they move with the plan)
  // The same plan as one relocatable blob (core/blob.hpp), for a device upload:
  // `offsets` holds byte offsets into `blob` until dm_view_at relocates them.
  std::vector<std::byte> blob;
  kern::DmPlan offsets;
};

// Op indices where the checkpoint segments of an adjoint sweep begin (and n_ops at the
// end): segments of at most `per` parameterised ops (kern::DmSegments).
std::vector<int> cut_dm_segments(const kern::DmPlan& plan, int per);

// Packs mp.view's arrays into mp.blob / mp.offsets (dm_pack.cpp).
void pack_dm_plan(DmCompiled& mp);
// The plan with its pointers relocated to a copy of the blob at base.
kern::DmPlan dm_view_at(const kern::DmPlan& offsets, const std::byte* base);

struct Plan;
// Fills plan's density-matrix part (plan.dm) and its sizes (n, n_outputs, ...).
void build_dm_plan(const Circuit& circuit, const CompileOptions& options, Plan& plan);

// Throws qfleet::Error when a channel parameter read from the call's inputs or
// weights is out of its range (dm_program.cpp); values are already finite.
template <class R>
void check_channel_args(const Plan& p, const BatchArgs<R>& a, bool per_sample_weights);

// "" when channel ch accepts parameters p, else what is wrong ("p = 1.5 is outside [0, 1]").
std::string channel_params_error(Channel ch, const double* p);

}  // namespace qfleet::detail
