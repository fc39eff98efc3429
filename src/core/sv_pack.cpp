// Flattens a compiled circuit into one blob (see sv_pack.hpp).
#include "core/sv_pack.hpp"

#include <algorithm>

#include "core/blob.hpp"

namespace qfleet::detail {

// The kernels name Param::Kind's values (kernels/sv_plan.hpp).
static_assert(kern::kParamConstant == int(Param::Kind::Constant) &&
              kern::kParamInput == int(Param::Kind::Input) &&
              kern::kParamWeight == int(Param::Kind::Weight));

kern::SvPlan sv_view_at(const kern::SvPlan& offsets, const std::byte* base) {
  kern::SvPlan v = offsets;
  relocate_circuit_arrays(v, offsets, base);
  v.probs_sorted = relocate(offsets.probs_sorted, base);
  v.amp_index = relocate(offsets.amp_index, base);
  return v;
}

void pack_sv_plan(Plan& plan, const SvPlanParts& parts) {
  std::vector<int> sorted = parts.probs_pos;  // the group bodies walk the unmeasured bits in order
  for (std::size_t q = 0; q + 1 < parts.probs_begin.size(); ++q) {
    std::sort(sorted.begin() + parts.probs_begin[q], sorted.begin() + parts.probs_begin[q + 1]);
  }
  Blob blob;
  kern::SvPlan& v = plan.offsets;
  v = kern::SvPlan{};
  v.n = plan.n;
  v.dim = plan.dim;
  v.n_inputs = plan.n_inputs;
  v.n_weights = plan.n_weights;
  v.n_outputs = plan.n_outputs;
  v.n_expvals = plan.n_expvals;
  v.ops = blob.add(parts.ops);
  v.n_ops = static_cast<int>(parts.ops.size());
  v.params = blob.add(parts.params);
  v.n_params = static_cast<int>(parts.params.size());
  v.fixed_blocks = blob.add(parts.fixed_blocks);
  v.terms = blob.add(parts.terms);
  v.term_begin = blob.add(parts.term_begin);
  v.probs_pos = blob.add(parts.probs_pos);
  v.probs_sorted = blob.add(sorted);
  v.probs_begin = blob.add(parts.probs_begin);
  v.probs_out = blob.add(parts.probs_out);
  v.n_probs = static_cast<int>(parts.probs_out.size());
  v.amp = plan.amp.active;
  v.amp_first_input = plan.amp.first_input;
  v.amp_n_features = plan.amp.n_features;
  v.amp_len = static_cast<int>(plan.amp.index.size());
  v.amp_normalize = plan.amp.normalize;
  v.amp_pad = plan.amp.pad;
  v.amp_index = blob.add(plan.amp.index);
  v.mat_entries = parts.mat_entries;
  v.dmat_entries = parts.dmat_entries;
  v.perm_runs = blob.add(parts.perm.runs);
  v.n_perm_runs = static_cast<int>(parts.perm.runs.size());
  v.perm_index = blob.add(parts.perm.index);
  v.perm_phase = blob.add(parts.perm.phase);
  v.n_diag_runs = parts.n_diag_runs;
  plan.blob = blob.take();
  plan.view = sv_view_at(plan.offsets, plan.blob.data());
}

}  // namespace qfleet::detail
