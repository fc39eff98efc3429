// The open-system kernels (kernels/open_task.hpp launched on the GPU) and their
// launch/occupancy helpers, instantiated in one small translation unit per
// kernel kind (open_cuda_k_*.cu) so nvcc compiles them in parallel: the six
// instantiations of the whole task body took 245 s of nvcc for sm_80 + sm_90 in
// one file (about 20 s each per architecture, `git show 28686d9:docs/benchmarks.md`). open_cuda.cu sees only the declarations (open_cuda_kernels.hpp).
#pragma once

#define QFLEET_KERN_ISA cuda
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/open_cuda_kernels.hpp"
#include "kernels/open_run_task.hpp"

namespace qfleet::gpu::open_detail {

struct AtomicAdd {
  template <class R>
  QFLEET_HD void operator()(R* p, R v) const {
#if defined(__CUDA_ARCH__)
    atomicAdd(p, v);
#else
    *p += v;
#endif
  }
};

// A thread block as a kernels/group.hpp group (blockDim.x a multiple of 32).
// Reductions: a butterfly of shuffles in each warp (every lane ends with the same
// bits), then the warps' partials in warp order: deterministic. Rank and size are
// the thread's special registers and the partials a static shared array, not fields:
// the task body keeps its group inside the task object, which nvcc holds in local
// memory, so fields were a local load at every loop over the group's entries (657
// such loads in the kernel, `scripts/ptxas_report.py --sass`).
struct BlockGroup {
  static constexpr bool kSolo = false;
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
  __device__ double combine(double v, bool is_max) const {
    __shared__ double partial[32];  // one per warp
    for (int off = 16; off > 0; off >>= 1) {
      const double o = __shfl_xor_sync(0xffffffffu, v, off);
      v = is_max ? kern::nan_max(v, o) : v + o;
    }
    const int n = size();
    if (n == 32) return v;
    if ((threadIdx.x & 31u) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    double t = partial[0];
    for (int w = 1; w < (n >> 5); ++w) t = is_max ? kern::nan_max(t, partial[w]) : t + partial[w];
    __syncthreads();
    return t;
  }
  __device__ double sum(double v) const { return combine(v, false); }
  __device__ double max(double v) const { return combine(v, true); }
};

// `n` consecutive lanes of a warp (n a power of two, at most 32) as a
// kernels/group.hpp group, so one warp runs 32 / n tasks. The lanes of a tile take
// the same path (the body's control flow depends only on the task's shared data);
// tiles of one warp may diverge, so every sync and shuffle names the tile's lanes
// alone. Reductions: a butterfly of shuffles (a + b on one lane, b + a on its
// partner: every lane ends with the same bits). The block is (n, tiles): rank, size and
// the tile's lanes come from special registers, not fields (BlockGroup says why).
struct TileGroup {
  static constexpr bool kSolo = false;
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ unsigned lanes() const {
    const unsigned n = blockDim.x;
    if (n == 32) return 0xffffffffu;
    const unsigned lane = (threadIdx.y * n + threadIdx.x) & 31u;  // the block's threads fill warps x-first
    return ((1u << n) - 1u) << (lane - threadIdx.x);
  }
  __device__ void sync() const { __syncwarp(lanes()); }
  __device__ double combine(double v, bool is_max) const {
    const unsigned mask = lanes();
    for (int off = size() >> 1; off > 0; off >>= 1) {
      const double o = __shfl_xor_sync(mask, v, off);
      v = is_max ? kern::nan_max(v, o) : v + o;
    }
    return v;
  }
  __device__ double sum(double v) const { return combine(v, false); }
  __device__ double max(double v) const { return combine(v, true); }
};

template <class R, class N>
__global__ void open_tasks_kernel(const __grid_constant__ kern::OpenView v,
                                  const __grid_constant__ kern::OpenTaskCall<R> c,
                                  kern::Cx<R>* work, std::size_t work_per, int cap, int* status) {
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  kern::Cx<R>* ws = work + tid * work_per;
  for (std::size_t b = tid; b < c.batch; b += stride) {
    const int st = kern::open_run_task<R, N>(v, c, b, ws, cap, AtomicAdd{});
    if (st != kern::kOpenOk && status != nullptr) atomicOr(status, 1 << st);
  }
}

// Registers capped at 168, the count nvcc chose before BlockGroup's rank and size became
// special registers: 12 one-warp tasks an SM (64 K / (168 x 32)). Uncapped, nvcc then took
// 177 (complex64) and 210 (complex128), 11 and 9 tasks an SM; capped, complex64 spills
// 8/16 bytes and complex128 88/88, and both keep 1181 and 1197 of the 1912 local loads
// they had (scripts/ptxas_report.py --sass, 2026-11-30). To time on a GPU against no cap.
// __maxnreg__ came with CUDA 12.4; older toolkits compile the kernel uncapped.
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4)
#define QFLEET_OPEN_GROUP_MAXNREG __maxnreg__(168)
#else
#define QFLEET_OPEN_GROUP_MAXNREG
#endif
template <class R>
__global__ void QFLEET_OPEN_GROUP_MAXNREG open_group_kernel(const __grid_constant__ kern::OpenView v,
                                                            const __grid_constant__ kern::OpenTaskCall<R> c,
                                                            kern::Cx<R>* work, std::size_t work_per, int cap,
                                                            int* status) {
  extern __shared__ __align__(16) unsigned char smem[];
  kern::Cx<R>* ws = work != nullptr ? work + std::size_t(blockIdx.x) * work_per : reinterpret_cast<kern::Cx<R>*>(smem);
  const BlockGroup g{};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    const int st = kern::open_run_task<R, int>(v, c, b, ws, cap, AtomicAdd{}, g);
    if (st != kern::kOpenOk && threadIdx.x == 0 && status != nullptr) atomicOr(status, 1 << st);
  }
}

// Blocks of (tile, tasks) threads: task slot blockIdx.x * blockDim.y + threadIdx.y, its
// lanes threadIdx.x; its workspace in shared memory (the block's slots one after another)
// or, with `work`, in global memory.
template <class R>
__global__ void open_tile_kernel(const __grid_constant__ kern::OpenView v,
                                 const __grid_constant__ kern::OpenTaskCall<R> c,
                                 kern::Cx<R>* work, std::size_t work_per, int cap, int* status) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::size_t slot = std::size_t(blockIdx.x) * blockDim.y + threadIdx.y;
  kern::Cx<R>* ws = work != nullptr ? work + slot * work_per
                                    : reinterpret_cast<kern::Cx<R>*>(smem) + std::size_t(threadIdx.y) * work_per;
  const TileGroup g{};
  for (std::size_t b = slot; b < c.batch; b += std::size_t(gridDim.x) * blockDim.y) {
    const int st = kern::open_run_task<R, int>(v, c, b, ws, cap, AtomicAdd{}, g);
    if (st != kern::kOpenOk && threadIdx.x == 0 && status != nullptr) atomicOr(status, 1 << st);
  }
}

template <class R, class N>
void launch_tasks(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                  int* status, void* stream) {
  open_tasks_kernel<R, N><<<static_cast<unsigned>(s.blocks), s.threads, 0, as_stream(stream)>>>(
      v, c, work, s.work_per_task, s.cap, status);
}

template <class R, class N>
int tasks_blocks_per_sm(int threads) {
  return resident_blocks(open_tasks_kernel<R, N>, threads, 0);
}

// Opts the group kernel in, once per device, to the device's whole shared memory
// per block, so workspaces above the default 48 KiB stay in shared memory too
// (open_launch_shape decides which fit).
template <class R>
void allow_group_smem() {
  static std::atomic<std::uint64_t> done{0};
  allow_full_smem(done, open_group_kernel<R>, static_cast<int>(sizeof(double) * 32));
}

template <class R>
void launch_group(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                  int* status, void* stream) {
  allow_group_smem<R>();
  open_group_kernel<R><<<static_cast<unsigned>(s.blocks), s.threads, s.smem, as_stream(stream)>>>(
      v, c, work, s.work_per_task, s.cap, status);
}

template <class R>
int group_blocks_per_sm(int threads, std::size_t smem) {
  allow_group_smem<R>();
  return resident_blocks(open_group_kernel<R>, threads, smem);
}

template <class R>
void allow_tile_smem() {
  static std::atomic<std::uint64_t> done{0};
  allow_full_smem(done, open_tile_kernel<R>, 0);
}

template <class R>
void launch_tile(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
                 int* status, void* stream) {
  allow_tile_smem<R>();
  const dim3 block(static_cast<unsigned>(s.group), static_cast<unsigned>(s.threads / s.group));
  open_tile_kernel<R><<<static_cast<unsigned>(s.blocks), block, s.smem, as_stream(stream)>>>(
      v, c, work, s.work_per_task, s.cap, status);
}

template <class R>
int tile_blocks_per_sm(int threads, std::size_t smem) {
  allow_tile_smem<R>();
  return resident_blocks(open_tile_kernel<R>, threads, smem);
}

}  // namespace qfleet::gpu::open_detail
