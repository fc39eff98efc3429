// The cuda open-system backend: kernels/open_task.hpp (the body the cpu executor
// runs) launched with a thread per task, or with a block per task (32 threads for
// the `warp` shape, 128-256 for `block`) whose members split the task's products,
// expm / Frechet and LU solves (kernels/group.hpp). Each task slot walks the batch
// with a grid stride and keeps its task's workspace (segment boundary states,
// generator, propagator, Frechet scratch) in shared memory when it fits, else in
// global memory sized for the resident slots; gradients of shared parameters are
// summed with atomics inside the kernel.
#define QFLEET_KERN_ISA cuda
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/open_cuda.hpp"
#include "kernels/open_task.hpp"

namespace qfleet::gpu {

namespace {

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
// bits), then the warps' partials in warp order: deterministic.
struct BlockGroup {
  static constexpr bool kSolo = false;
  int r, n;
  double* scratch;  // 32 doubles of shared memory
  __device__ int rank() const { return r; }
  __device__ int size() const { return n; }
  __device__ void sync() const { __syncthreads(); }
  __device__ double combine(double v, bool is_max) const {
    for (int off = 16; off > 0; off >>= 1) {
      const double o = __shfl_xor_sync(0xffffffffu, v, off);
      v = is_max ? kern::nan_max(v, o) : v + o;
    }
    if (n == 32) return v;
    if ((r & 31) == 0) scratch[r >> 5] = v;
    __syncthreads();
    double t = scratch[0];
    for (int w = 1; w < (n >> 5); ++w) t = is_max ? kern::nan_max(t, scratch[w]) : t + scratch[w];
    __syncthreads();
    return t;
  }
  __device__ double sum(double v) const { return combine(v, false); }
  __device__ double max(double v) const { return combine(v, true); }
};

template <class R, class N>
__global__ void open_tasks_kernel(kern::OpenView v, kern::OpenTaskCall<R> c, kern::Cx<R>* work,
                                  std::size_t work_per, int cap, int* status) {
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  kern::Cx<R>* ws = work + tid * work_per;
  for (std::size_t b = tid; b < c.batch; b += stride) {
    const int st = kern::open_run_task<R, N>(v, c, b, ws, cap, AtomicAdd{});
    if (st != kern::kOpenOk && status != nullptr) atomicOr(status, 1 << st);
  }
}

template <class R>
__global__ void open_group_kernel(kern::OpenView v, kern::OpenTaskCall<R> c, kern::Cx<R>* work,
                                  std::size_t work_per, int cap, int* status) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ double scratch[32];
  kern::Cx<R>* ws = work != nullptr ? work + std::size_t(blockIdx.x) * work_per : reinterpret_cast<kern::Cx<R>*>(smem);
  const BlockGroup g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), scratch};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    const int st = kern::open_run_task<R, int>(v, c, b, ws, cap, AtomicAdd{}, g);
    if (st != kern::kOpenOk && threadIdx.x == 0 && status != nullptr) atomicOr(status, 1 << st);
  }
}

template <class R, class N>
void launch(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
            int* status, cudaStream_t st) {
  open_tasks_kernel<R, N><<<static_cast<unsigned>(s.blocks), s.threads, 0, st>>>(v, c, work, s.work_per_task,
                                                                                  s.cap, status);
}

// Blocks of `threads` threads (with `smem` bytes of dynamic shared memory) one SM
// holds at once (register-bound for this body).
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t smem) {
  int nb = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, threads, smem),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return std::max(nb, 1);
}

int blocks_per_sm(int real_bytes, int n, int threads) {
  if (real_bytes == 4) {
    return n == 4 ? resident_blocks(open_tasks_kernel<float, kern::FixedDim<4>>, threads, 0)
                  : resident_blocks(open_tasks_kernel<float, int>, threads, 0);
  }
  return n == 4 ? resident_blocks(open_tasks_kernel<double, kern::FixedDim<4>>, threads, 0)
                : resident_blocks(open_tasks_kernel<double, int>, threads, 0);
}

int group_blocks_per_sm(int real_bytes, int threads, std::size_t smem) {
  return real_bytes == 4 ? resident_blocks(open_group_kernel<float>, threads, smem)
                         : resident_blocks(open_group_kernel<double>, threads, smem);
}

constexpr std::size_t kSmemDefault = 48 * 1024;  // dynamic shared memory without an opt-in

}  // namespace

const char* open_shape_name(OpenShape s) {
  switch (s) {
    case OpenShape::warp:
      return "warp";
    case OpenShape::block:
      return "block";
    case OpenShape::thread:
      return "thread";
    default:
      return "automatic";
  }
}

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
  if (want == OpenShape::automatic) want = v.n <= 4 ? OpenShape::thread : v.n <= 32 ? OpenShape::warp : OpenShape::block;
  s.shape = want;
  if (want != OpenShape::thread) {
    s.threads = s.group = want == OpenShape::warp ? 32 : v.n >= 128 ? 256 : 128;
    s.smem = per <= kSmemDefault ? per : 0;
    const std::size_t resident =
        std::size_t(std::max(dev.sm_count, 1)) * group_blocks_per_sm(real_bytes, s.threads, s.smem);
    std::size_t blocks = std::min<std::size_t>(std::max<std::size_t>(batch, 1), resident);
    if (s.smem == 0) {
      blocks = std::min(blocks, budget / std::max<std::size_t>(per, 1));
      if (blocks < 1) {
        throw too_big();
      }
      s.work_bytes = blocks * per;
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
  const cudaStream_t st = as_stream(stream);
  if (c.adjoint) {
    const std::size_t n_amp = std::size_t(v.nseg) * v.nctrl;
    if (c.grad_amplitudes && !c.amplitudes_per_task) memset_async(c.grad_amplitudes, n_amp * sizeof(R), stream);
    if (c.grad_drift && !c.drift_per_task) memset_async(c.grad_drift, std::size_t(v.ndrift) * sizeof(R), stream);
    if (c.grad_rates && !c.rates_per_task) memset_async(c.grad_rates, std::size_t(v.nrate) * sizeof(R), stream);
  }
  // No global workspace when a group's is in shared memory (work_bytes 0).
  auto* work = s.work_bytes > 0 ? static_cast<kern::Cx<R>*>(malloc_async(s.work_bytes, stream)) : nullptr;
  if (s.shape != OpenShape::thread) {
    open_group_kernel<R><<<static_cast<unsigned>(s.blocks), s.threads, s.smem, st>>>(v, c, work, s.work_per_task,
                                                                                    s.cap, status);
  } else if (v.n == 4) {  // only the open qubit gets fixed loop bounds: each instantiation
                          // of the whole body costs minutes of nvcc per architecture
    launch<R, kern::FixedDim<4>>(v, c, s, work, status, st);
  } else {
    launch<R, int>(v, c, s, work, status, st);
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
