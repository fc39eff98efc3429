// Thread groups shared by the cuda translation units (the group contract of
// kernels/sv_group.hpp and kernels/dm_group.hpp: rank, size, sync, sum, atomic_add).
#pragma once

#include <cuda_runtime.h>

namespace qfleet::gpu {

template <class R>
struct BlockGroup {  // the whole block (blockDim.x a multiple of 32)
  int r, n;
  R* scratch;  // 32 entries of shared memory
  __device__ int rank() const { return r; }
  __device__ int size() const { return n; }
  __device__ void sync() const { __syncthreads(); }
  __device__ R sum(R v) const {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((r & 31) == 0) scratch[r >> 5] = v;
    __syncthreads();
    R t = 0;
    for (int w = 0; w < (n >> 5); ++w) t += scratch[w];  // fixed order: deterministic
    __syncthreads();
    return t;
  }
  __device__ void atomic_add(R* p, R v) const { atomicAdd(p, v); }
  // Parts (kernels/sv_group.hpp's block table): the warps, summed by shuffles.
  __device__ int n_parts() const { return n >> 5; }
  __device__ int part() const { return r >> 5; }
  __device__ R part_sum(R v) const {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
  }
  __device__ bool part_leader() const { return (r & 31) == 0; }
};

}  // namespace qfleet::gpu
