// Flattens a Plan for the group executor (see sv_pack.hpp).
#include "core/sv_pack.hpp"

#include <algorithm>
#include <string>

#include "core/blob.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

// The kernels name Param::Kind's values (kernels/sv_plan.hpp).
static_assert(kern::kParamConstant == int(Param::Kind::Constant) &&
              kern::kParamInput == int(Param::Kind::Input) &&
              kern::kParamWeight == int(Param::Kind::Weight));

kern::SvPlan PackedSvPlan::view_at(const std::byte* base) const {
  kern::SvPlan v = offsets;
  v.ops = relocate(offsets.ops, base);
  v.params = relocate(offsets.params, base);
  v.fixed_blocks = relocate(offsets.fixed_blocks, base);
  v.terms = relocate(offsets.terms, base);
  v.term_begin = relocate(offsets.term_begin, base);
  v.probs_pos = relocate(offsets.probs_pos, base);
  v.probs_sorted = relocate(offsets.probs_sorted, base);
  v.probs_begin = relocate(offsets.probs_begin, base);
  v.probs_out = relocate(offsets.probs_out, base);
  v.amp_index = relocate(offsets.amp_index, base);
  return v;
}

PackedSvPlan pack_sv_plan(const Plan& plan) {
  std::vector<kern::OpDesc> ops;
  for (const OpPlan& o : plan.ops) {
    kern::OpDesc d;
    d.gate = o.gate;
    d.site = o.site;
    d.n_params = o.n_params;
    d.first_param = o.first_param;
    d.fixed = o.fixed;
    if (o.site.kt < 1 || o.site.kt > kern::kMaxGroupTargets) {
      throw Error("internal: a block on " + std::to_string(o.site.kt) +
                  " target wires is not supported by the group executor");
    }
    if (o.site.kt > 1 && o.fixed < 0 && o.n_params > 1) {
      throw Error("internal: a multi-qubit block with several parameters is not supported by the group executor");
    }
    ops.push_back(d);
  }
  std::vector<kern::ParamDesc> params;
  for (const Param& q : plan.params) {
    params.push_back({static_cast<std::uint8_t>(q.kind), q.index, q.value, q.scale});
  }
  std::vector<kern::TermDesc> terms;
  for (const ExpvalTerm& t : plan.flat_terms) terms.push_back({t.coef, t.masks});
  std::vector<int> sorted = plan.flat_probs_pos;
  for (std::size_t q = 0; q + 1 < plan.probs_begin.size(); ++q) {
    std::sort(sorted.begin() + plan.probs_begin[q], sorted.begin() + plan.probs_begin[q + 1]);
  }

  Blob blob;
  PackedSvPlan out;
  kern::SvPlan& v = out.offsets;
  v.n = plan.n;
  v.dim = plan.dim;
  v.n_inputs = plan.n_inputs;
  v.n_weights = plan.n_weights;
  v.n_outputs = plan.n_outputs;
  v.n_expvals = plan.n_expvals;
  v.ops = blob.add(ops);
  v.n_ops = static_cast<int>(ops.size());
  v.params = blob.add(params);
  v.n_params = static_cast<int>(params.size());
  v.fixed_blocks = blob.add(reinterpret_cast<const double*>(plan.fixed_blocks.data()), 2 * plan.fixed_blocks.size());
  v.terms = blob.add(terms);
  v.term_begin = blob.add(plan.term_begin);
  v.probs_pos = blob.add(plan.flat_probs_pos);
  v.probs_sorted = blob.add(sorted);
  v.probs_begin = blob.add(plan.probs_begin);
  v.probs_out = blob.add(plan.probs_out);
  v.n_probs = static_cast<int>(plan.probs.size());
  v.amp = plan.amp.active;
  v.amp_first_input = plan.amp.first_input;
  v.amp_n_features = plan.amp.n_features;
  v.amp_len = static_cast<int>(plan.amp.index.size());
  v.amp_normalize = plan.amp.normalize;
  v.amp_pad = plan.amp.pad;
  v.amp_index = blob.add(plan.amp.index);
  out.blob = blob.take();
  return out;
}

}  // namespace qfleet::detail
