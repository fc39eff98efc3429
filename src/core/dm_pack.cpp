// Flattens a compiled density-matrix circuit into one blob (dm_compiled.hpp), the form
// a device backend uploads; like sv_pack.cpp for state-vector plans.
#include "core/blob.hpp"
#include "core/dm_compiled.hpp"

namespace qfleet::detail {

kern::DmPlan dm_view_at(const kern::DmPlan& offsets, const std::byte* base) {
  kern::DmPlan v = offsets;
  relocate_circuit_arrays(v, offsets, base);
  v.readout = offsets.readout != nullptr ? relocate(offsets.readout, base) : nullptr;
  v.amp_index = offsets.amp_index != nullptr ? relocate(offsets.amp_index, base) : nullptr;
  return v;
}

std::vector<int> cut_dm_segments(const kern::DmPlan& kp, int per) {
  std::vector<int> begin{0};
  int in_segment = 0;
  for (int k = 0; k < kp.n_ops; ++k) {
    if (kp.ops[k].slot < 0) continue;
    if (in_segment == per) {
      begin.push_back(k);
      in_segment = 0;
    }
    ++in_segment;
  }
  begin.push_back(kp.n_ops);
  return begin;
}

// GCC 12 inlines Blob's first resize into this function and then reports the 16-byte
// initial buffer as overrun (-Warray-bounds, a known false positive of its range
// analysis through std::vector::resize); the same code in sv_pack.cpp is not inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
void pack_dm_plan(DmCompiled& mp) {
  Blob blob;
  kern::DmPlan& o = mp.offsets;
  o = mp.view;
  o.ops = blob.add(mp.ops);
  o.params = blob.add(mp.params);
  o.fixed_blocks = blob.add(mp.fixed_blocks);
  o.terms = blob.add(mp.terms);
  o.term_begin = blob.add(mp.term_begin);
  o.probs_pos = blob.add(mp.probs_pos);
  o.probs_begin = blob.add(mp.probs_begin);
  o.probs_out = blob.add(mp.probs_out);
  o.readout = mp.readout.empty() ? nullptr : blob.add(mp.readout);
  o.amp_index = mp.amp_index.empty() ? nullptr : blob.add(mp.amp_index);
  o.perm_runs = blob.add(mp.perm.runs);
  o.perm_index = blob.add(mp.perm.index);
  o.perm_phase = blob.add(mp.perm.phase);
  mp.blob = blob.take();
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace qfleet::detail
