// Thread groups shared by the cuda translation units (the group contract of
// kernels/sv_group.hpp and kernels/dm_group.hpp: rank, size, sync, sum, atomic_add).
#pragma once

#include <cuda_runtime.h>

namespace qfleet::gpu {

// The whole block (blockDim.x a multiple of 32). Rank and size are the thread's
// special registers and the warps' partials a static shared array, not fields: the
// kernel bodies take the group by reference into calls nvcc does not inline, so
// fields lived in local memory and every loop over the group's entries loaded them
// from there (`scripts/ptxas_report.py --sass`; docs/architecture.md).
template <class R>
struct BlockGroup {
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
  __device__ R sum(R v) const {
    __shared__ R partial[32];  // one per warp
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31u) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    R t = 0;
    for (int w = 0; w < n_parts(); ++w) t += partial[w];  // fixed order: deterministic
    __syncthreads();
    return t;
  }
  __device__ void atomic_add(R* p, R v) const { atomicAdd(p, v); }
  // Parts (kernels/sv_group.hpp's block table): the warps, summed by shuffles.
  __device__ int n_parts() const { return static_cast<int>(blockDim.x >> 5); }
  __device__ int part() const { return static_cast<int>(threadIdx.x >> 5); }
  __device__ R part_sum(R v) const {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
  }
  __device__ bool part_leader() const { return (threadIdx.x & 31u) == 0; }
};

}  // namespace qfleet::gpu
