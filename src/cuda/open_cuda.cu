// The cuda open-system backend: kernels/open_task.hpp (the body the cpu executor
// runs) launched with a thread per task. Each thread walks the batch with a grid
// stride and keeps its task's workspace (segment boundary states, generator,
// propagator, Frechet scratch) in global memory sized for the resident threads;
// gradients of shared parameters are summed with atomics inside the kernel.
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

template <class R, class N>
void launch(const kern::OpenView& v, const kern::OpenTaskCall<R>& c, const OpenLaunch& s, kern::Cx<R>* work,
            int* status, cudaStream_t st) {
  open_tasks_kernel<R, N><<<static_cast<unsigned>(s.blocks), s.threads, 0, st>>>(v, c, work, s.work_per_thread,
                                                                                  s.cap, status);
}

// Blocks of `threads` threads one SM holds at once (register-bound for this body).
int blocks_per_sm(int real_bytes, int n, int threads) {
  int nb = 0;
  if (real_bytes == 4) {
    check(n == 4 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, open_tasks_kernel<float, kern::FixedDim<4>>, threads, 0)
                 : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, open_tasks_kernel<float, int>, threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  } else {
    check(n == 4 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, open_tasks_kernel<double, kern::FixedDim<4>>, threads, 0)
                 : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, open_tasks_kernel<double, int>, threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  }
  return std::max(nb, 1);
}

}  // namespace

OpenLaunch open_launch_shape(const kern::OpenView& v, std::size_t batch, int real_bytes, int cap,
                             const DeviceProps& dev) {
  OpenLaunch s;
  s.cap = cap;
  s.work_per_thread = real_bytes == 4 ? kern::open_task_work<float>(v, cap) + kern::open_row_work<float>(v)
                                      : kern::open_task_work<double>(v, cap) + kern::open_row_work<double>(v);
  const std::size_t per = s.work_per_thread * 2 * std::size_t(real_bytes);
  const std::size_t budget = dev.total_mem / 4;
  const std::size_t resident = std::size_t(std::max(dev.sm_count, 1)) * 128 * blocks_per_sm(real_bytes, v.n, 128);
  std::size_t threads = std::min<std::size_t>(std::max<std::size_t>(batch, 1), resident);
  threads = std::min(threads, budget / std::max<std::size_t>(per, 1));
  if (threads < 1) {
    throw Error("one open-system task needs " + std::to_string(per >> 20) + " MiB of GPU workspace, more than a "
                "quarter of the device's memory; use device 'cpu'");
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
  auto* work = static_cast<kern::Cx<R>*>(malloc_async(s.work_bytes, stream));
  // Only the target case (an open qubit, n = 4) gets fixed loop bounds on the GPU:
  // each instantiation of the whole body costs minutes of nvcc time per architecture.
  if (v.n == 4) {
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
