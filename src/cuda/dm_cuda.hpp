// The cuda seam of density-matrix circuits (C++17, like sv_cuda.hpp): a thread block
// per sample runs kernels/dm_group.hpp's body, each block's table of gate and channel
// blocks, rho and lambda in shared memory while they fit, the stored and checkpointed
// states in global memory. Throws qfleet::Error with the
// CUDA error's text on failure.
#pragma once

#include <cstddef>

#include "cuda/sv_cuda.hpp"
#include "kernels/dm_plan.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::gpu {

struct DmLaunch {
  int threads = 128;                 // per block (whole warps: BlockGroup's sums)
  std::size_t blocks = 1;            // concurrent samples (a grid-stride loop covers the batch)
  std::size_t per_block_reals = 0;   // global scratch of one block
  std::size_t smem_budget = 0;       // shared memory a block may take (bytes)
  std::size_t smem_bytes = 0;        // what it takes: its block table, rho and lambda while they fit
  std::size_t work_bytes = 0;        // all blocks' scratch + the segment table
};

// Blocks: the batch, capped so the scratch stays within a quarter of the device memory
// and at the blocks the SMs hold at once. Throws when one sample's scratch does not fit.
// threads: the block size (32, 64, 128 or 256: QFLEET_DM_CUDA_THREADS, for benchmarks and
// tests on a GPU), or 0 for the automatic choice from the matrix size.
DmLaunch dm_launch_shape(const kern::DmPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                         const kern::DmSegments& seg, int extra_k, const DeviceProps& dev, int threads = 0);

// The block size named by a QFLEET_DM_CUDA_THREADS value (32, 64, 128, 256; 0 for
// "automatic"); anything else throws qfleet::Error naming them (launch_names.cpp).
int parse_dm_threads(const char* name);

// Enqueues one call on `stream` (device pointers; reduced weight gradients zeroed
// here). seg.begin is a host array: it is copied into the call's workspace.
template <class R>
void run_dm(const kern::DmPlan& device_plan, const kern::SvCall<R>& call, const kern::DmSegments& seg,
               const DmLaunch& shape, void* stream);

}  // namespace qfleet::gpu
