// Declarations of the open-system kernels' launch and occupancy helpers
// (definitions: open_cuda_kernels.cuh; explicit instantiations: open_cuda_k_*.cu).
// Include after defining QFLEET_KERN_ISA as `cuda`.
#pragma once

#include <cstddef>

#include "cuda/open_cuda.hpp"
#include "kernels/complex.hpp"
#include "kernels/dense.hpp"

namespace qfleet::gpu::open_detail {

// A thread per task (grid stride over the batch); N is int or kern::FixedDim<n>.
template <class R, class N>
void launch_tasks(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                  int* status, void* stream);
template <class R, class N>
int tasks_blocks_per_sm(int threads);

// A block per task (kernels/group.hpp).
template <class R>
void launch_group(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                  int* status, void* stream);
template <class R>
int group_blocks_per_sm(int threads, std::size_t smem);

// A task per `tile` consecutive lanes of a warp (tile 8 or 16), blockDim.x / tile
// tasks per block.
template <class R>
void launch_tile(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                 int* status, void* stream);
template <class R>
int tile_blocks_per_sm(int threads, std::size_t smem);

// Instantiated once, elsewhere: every other translation unit only links to them.
#define QFLEET_OPEN_TASKS(EXTERN, R, N)                                                                       \
  EXTERN template void launch_tasks<R, N>(const kern::OpenView&, const kern::OpenTaskCall<R>&, const OpenLaunch&, \
                                          kern::Cx<R>*, int*, void*);                                          \
  EXTERN template int tasks_blocks_per_sm<R, N>(int);
#define QFLEET_OPEN_GROUP(EXTERN, R)                                                                          \
  EXTERN template void launch_group<R>(const kern::OpenView&, const kern::OpenTaskCall<R>&, const OpenLaunch&,    \
                                       kern::Cx<R>*, int*, void*);                                             \
  EXTERN template int group_blocks_per_sm<R>(int, std::size_t);

#define QFLEET_OPEN_TILE(EXTERN, R)                                                                           \
  EXTERN template void launch_tile<R>(const kern::OpenView&, const kern::OpenTaskCall<R>&, const OpenLaunch&,     \
                                      kern::Cx<R>*, int*, void*);                                              \
  EXTERN template int tile_blocks_per_sm<R>(int, std::size_t);

#define QFLEET_OPEN_ALL(EXTERN)                              \
  QFLEET_OPEN_TASKS(EXTERN, float, kern::FixedDim<4>)        \
  QFLEET_OPEN_TASKS(EXTERN, double, kern::FixedDim<4>)       \
  QFLEET_OPEN_TASKS(EXTERN, float, int)                      \
  QFLEET_OPEN_TASKS(EXTERN, double, int)                     \
  QFLEET_OPEN_GROUP(EXTERN, float)                           \
  QFLEET_OPEN_GROUP(EXTERN, double)                          \
  QFLEET_OPEN_TILE(EXTERN, float)                            \
  QFLEET_OPEN_TILE(EXTERN, double)

}  // namespace qfleet::gpu::open_detail
