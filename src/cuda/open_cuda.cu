// The cuda open-system backend: kernels/open_task.hpp (the body the cpu executor
// runs) launched with a thread per task, or with a block per task (32 threads for
// the `warp` shape, 128-256 for `block`) whose members split the task's products,
// expm / Frechet and LU solves (kernels/group.hpp). Each task slot walks the batch
// with a grid stride and keeps its task's workspace (segment boundary states,
// generator, propagator, Frechet scratch) in shared memory when it fits, else in
// global memory sized for the resident slots; gradients of shared parameters are
// summed with atomics inside the kernel. The kernels themselves are compiled in
// open_cuda_k_*.cu (open_cuda_kernels.cuh); this file picks the shape and launches.
#define QFLEET_KERN_ISA cuda
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/open_cuda.hpp"
#include "cuda/open_cuda_kernels.hpp"
#include "kernels/open_run_task.hpp"

namespace qfleet::gpu {

namespace open_detail {
QFLEET_OPEN_ALL(extern)
}  // namespace open_detail

namespace {

using namespace open_detail;

int blocks_per_sm(int real_bytes, int n, int threads) {
  if (real_bytes == 4) {
    return n == 4 ? tasks_blocks_per_sm<float, kern::FixedDim<4>>(threads) : tasks_blocks_per_sm<float, int>(threads);
  }
  return n == 4 ? tasks_blocks_per_sm<double, kern::FixedDim<4>>(threads) : tasks_blocks_per_sm<double, int>(threads);
}

int group_blocks_per_sm_any(int real_bytes, int threads, std::size_t smem) {
  return real_bytes == 4 ? group_blocks_per_sm<float>(threads, smem) : group_blocks_per_sm<double>(threads, smem);
}

// Dynamic shared memory a group block may take: the device's opt-in limit less the
// kernel's static reduction scratch (32 doubles).
std::size_t group_smem_limit(const DeviceProps& dev) {
  return dev.smem_optin > 32 * sizeof(double) ? dev.smem_optin - 32 * sizeof(double) : 0;
}

}  // namespace

OpenLaunch open_launch_shape(const kern::OpenView& v, std::size_t batch, int real_bytes, int cap,
                             const DeviceProps& dev, OpenShape want) {
  OpenLaunch s;
  s.cap = cap;
  s.work_per_task = real_bytes == 4 ? kern::open_task_work<float>(v, cap) + kern::open_row_work<float>(v)
                                    : kern::open_task_work<double>(v, cap) + kern::open_row_work<double>(v);
  const std::size_t per = s.work_per_task * 2 * std::size_t(real_bytes);
  const std::size_t budget = dev.total_mem / 4;
  auto too_big = [&] {
    return Error("one open-system task needs " + std::to_string(per >> 20) + " MiB of GPU workspace, more than a "
                 "quarter of the device's memory; use device 'cpu'");
  };
  // Measured on an H100 (OpenShape/ rows, 2026-11-24, `git show 9b5cc1b:docs/benchmarks.md`; d-level open
  // ladder, B = 10^4, forward + gradient, complex64): warp beats thread 5.5x at n = 4 and
  // 7.9x at n = 9 (block ties there), block beats warp 1.4x at n = 16. The thread shape
  // is never the automatic choice; it stays pinnable.
  if (want == OpenShape::automatic) want = v.n <= 9 ? OpenShape::warp : OpenShape::block;
  s.shape = want;
  if (want != OpenShape::thread) {
    // A group per task: `per_block` tasks in a block (tiles), or one (warp, block).
    const bool tile = want == OpenShape::tile8 || want == OpenShape::tile16;
    s.threads = tile ? 128 : want == OpenShape::warp ? 32 : v.n >= 128 ? 256 : 128;
    s.group = want == OpenShape::tile8 ? 8 : want == OpenShape::tile16 ? 16 : s.threads;
    const std::size_t per_block = std::size_t(s.threads / s.group), slots = per * per_block;
    s.smem = slots <= (tile ? dev.smem_optin : group_smem_limit(dev)) ? slots : 0;
    const int fit = !tile               ? group_blocks_per_sm_any(real_bytes, s.threads, s.smem)
                    : real_bytes == 4   ? tile_blocks_per_sm<float>(s.threads, s.smem)
                                        : tile_blocks_per_sm<double>(s.threads, s.smem);
    const std::size_t resident = std::size_t(std::max(dev.sm_count, 1)) * std::size_t(std::max(fit, 1));
    std::size_t blocks = std::min((std::max<std::size_t>(batch, 1) + per_block - 1) / per_block, resident);
    if (s.smem == 0) {
      blocks = std::min(blocks, budget / std::max<std::size_t>(slots, 1));
      if (blocks < 1) {
        throw too_big();
      }
      s.work_bytes = blocks * slots;
    }
    s.blocks = blocks;
    return s;
  }
  const std::size_t resident = std::size_t(std::max(dev.sm_count, 1)) * 128 * blocks_per_sm(real_bytes, v.n, 128);
  std::size_t threads = std::min<std::size_t>(std::max<std::size_t>(batch, 1), resident);
  threads = std::min(threads, budget / std::max<std::size_t>(per, 1));
  if (threads < 1) {
    throw too_big();
  }
  s.threads = static_cast<int>(std::min<std::size_t>(128, (threads + 31) / 32 * 32));
  s.blocks = (threads + std::size_t(s.threads) - 1) / std::size_t(s.threads);
  s.work_bytes = s.blocks * std::size_t(s.threads) * per;
  return s;
}

template <class R>
void run_open_tasks(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, int* status,
                    void* stream) {
  if (c.adjoint) {
    const std::size_t n_amp = std::size_t(v.nseg) * v.nctrl;
    if (c.grad_amplitudes && !c.amplitudes_per_task) memset_async(c.grad_amplitudes, n_amp * sizeof(R), stream);
    if (c.grad_drift && !c.drift_per_task) memset_async(c.grad_drift, std::size_t(v.ndrift) * sizeof(R), stream);
    if (c.grad_rates && !c.rates_per_task) memset_async(c.grad_rates, std::size_t(v.nrate) * sizeof(R), stream);
    if (c.grad_durations && !c.durations_per_task) memset_async(c.grad_durations, std::size_t(v.nseg) * sizeof(R), stream);
  }
  // No global workspace when a group's is in shared memory (work_bytes 0).
  auto* work = s.work_bytes > 0 ? static_cast<kern::Cx<R>*>(malloc_async(s.work_bytes, stream)) : nullptr;
  if (s.shape == OpenShape::tile8 || s.shape == OpenShape::tile16) {
    launch_tile<R>(v, c, s, work, status, stream);
  } else if (s.shape != OpenShape::thread) {
    launch_group<R>(v, c, s, work, status, stream);
  } else if (v.n == 4) {  // only the open qubit gets fixed loop bounds: each instantiation
                          // of the whole body costs ~20 s of nvcc per architecture
    launch_tasks<R, kern::FixedDim<4>>(v, c, s, work, status, stream);
  } else {
    launch_tasks<R, int>(v, c, s, work, status, stream);
  }
  const cudaError_t e = cudaGetLastError();
  free_async(work, stream);
  check(e, "the open-system kernel launch");
}

template void run_open_tasks<float>(const kern::OpenView&, const kern::OpenTaskCall<float>&, const OpenLaunch&, int*,
                                    void*);
template void run_open_tasks<double>(const kern::OpenView&, const kern::OpenTaskCall<double>&, const OpenLaunch&,
                                     int*, void*);

}  // namespace qfleet::gpu
