// A detail::Plan flattened into one blob for the group executor
// (kernels/sv_group.hpp): the cuda backend uploads the blob once at compile time;
// the cpu-side tests of the shared body read it in host memory.
#pragma once

#include <cstddef>
#include <vector>

#include "core/plan.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::detail {

struct PackedSvPlan {
  std::vector<std::byte> blob;  // every array, 16-byte aligned
  kern::SvPlan offsets;         // pointers hold byte offsets into blob
  // The plan with its pointers relocated to a copy of blob at base.
  kern::SvPlan view_at(const std::byte* base) const;
};

PackedSvPlan pack_sv_plan(const Plan& plan);

}  // namespace qfleet::detail
