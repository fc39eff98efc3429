// Groups of threads that run one open-system task together (kernels/open_task.hpp,
// kernels/expm.hpp, kernels/dense.hpp). A group G provides
//   static constexpr bool kSolo       true only for SoloGroup (one thread, no syncs)
//   int rank(), int size()            this member's place in the group
//   void sync()                       barrier over the group (memory visible after it)
//   double sum(double), max(double)   reductions over the group, returned to every
//                                     member in a fixed order (deterministic); max
//                                     keeps a NaN (nan_max)
// Conventions of the bodies that take one: every member calls them with the same
// arguments, so control flow depends only on the data the group shares, never on
// the rank; a member writes only the entries its rank owns (e = rank, rank + size,
// ...) or, for small scalar work, only rank 0 writes; every function that writes
// shared data ends with g.sync(), so its outputs are visible to the whole group.
//
// SoloGroup (the cpu executor and the GPU's thread-per-task launch) makes every
// split loop the plain loop and every sync a no-op; the cuda backend's warp and
// block groups live in src/cuda/open_cuda_kernels.cuh; the CPU tests run the same bodies
// with groups of std::threads (tests/unit/group_emu.hpp).
#pragma once

#include "kernels/hd.hpp"
#include "kernels/types.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// max that keeps a NaN from either side (a NaN error estimate must reject a step).
QFLEET_HD inline double nan_max(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

struct SoloGroup {
  static constexpr bool kSolo = true;
  QFLEET_HD static constexpr int rank() { return 0; }
  QFLEET_HD static constexpr int size() { return 1; }
  QFLEET_HD void sync() const {}
  QFLEET_HD double sum(double v) const { return v; }
  QFLEET_HD double max(double v) const { return v; }
};

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
