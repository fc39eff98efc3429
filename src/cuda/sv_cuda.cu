// The cuda circuit backend: kernels/sv_group.hpp (the body the cpu tests also
// run) launched with a group of threads per circuit. Only the launch shape and
// where the two states live are decided here:
//   warp   (2^n / 2 <= 32): a slice of a warp per circuit, several circuits per
//          block, states in shared memory, sync = __syncwarp, sums by shuffles;
//   block  (states fit in shared memory): a thread block per circuit, sync =
//          __syncthreads, sums by shuffles then one pass over per-warp partials;
//   global (larger n): a thread block per circuit with its states in a global
//          workspace sized for the resident blocks (grid-stride over the batch).
// One launch runs every sample's forward, measurements and adjoint backward; the
// gate blocks are computed on the device from each sample's angles; reduced weight
// gradients are summed with atomics inside the kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/sv_cuda.hpp"
#include "kernels/sv_group.hpp"
#include "qfleet/error.hpp"

namespace qfleet::gpu {

namespace {

template <class R>
struct WarpGroup {  // `n` (a power of two <= 32) consecutive lanes of one warp
  int r, n;
  __device__ int rank() const { return r; }
  __device__ int size() const { return n; }
  __device__ void sync() const { __syncwarp(); }
  __device__ R sum(R v) const {
    for (int off = n / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;  // every lane adds the same pairs: the same bits in every lane
  }
  __device__ void atomic_add(R* p, R v) const { atomicAdd(p, v); }
};

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
};

template <class R>
__global__ void sv_warp_kernel(kern::SvPlan p, kern::SvCall<R> c, int G, std::size_t n_blocks) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = static_cast<int>(threadIdx.x);
  const int per_block = static_cast<int>(blockDim.x) / G;
  const std::size_t st = 2 * p.dim;
  const int ns = c.cotangents ? 2 : 1;
  R* base = reinterpret_cast<R*>(smem) + std::size_t(tid / G) * ns * st;
  WarpGroup<R> g{tid % G, G};
  for (std::size_t blk = blockIdx.x; blk < n_blocks; blk += gridDim.x) {
    const std::size_t b = blk * per_block + std::size_t(tid / G);
    const bool active = b < c.batch;
    kern::sv_group_run(p, c, active ? b : c.batch - 1, active, base, ns == 2 ? base + st : nullptr, g);
    __syncwarp();
  }
}

template <class R>
__global__ void sv_block_kernel(kern::SvPlan p, kern::SvCall<R> c, R* work) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ R scratch[32];
  const std::size_t st = 2 * p.dim;
  const int ns = c.cotangents ? 2 : 1;
  R* base = work != nullptr ? work + std::size_t(blockIdx.x) * ns * st : reinterpret_cast<R*>(smem);
  BlockGroup<R> g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), scratch};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    kern::sv_group_run(p, c, b, true, base, ns == 2 ? base + st : nullptr, g);
    __syncthreads();
  }
}

constexpr std::size_t kMaxGrid = 1u << 30;

template <class R>
void allow_smem() {
  // Opt in once per device and kernel to the device's full shared memory per block.
  static std::atomic<std::uint64_t> done{0};
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  const std::uint64_t bit = std::uint64_t{1} << (dev & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  int optin = 0;
  check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
  check(cudaFuncSetAttribute(sv_warp_kernel<R>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
        "cudaFuncSetAttribute");
  check(cudaFuncSetAttribute(sv_block_kernel<R>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
        "cudaFuncSetAttribute");
  done.fetch_or(bit, std::memory_order_acq_rel);
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

void set_device(int id) { check(cudaSetDevice(id), "cudaSetDevice"); }

DeviceProps device_props(int id) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, id), "cudaGetDeviceProperties");
  DeviceProps d;
  d.id = id;
  d.sm_count = p.multiProcessorCount;
  d.smem_optin = p.sharedMemPerBlockOptin;
  d.total_mem = p.totalGlobalMem;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  std::strncpy(d.name, p.name, sizeof d.name - 1);
  return d;
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::warp:
      return "warp";
    case Strategy::block:
      return "block";
    default:
      return "global";
  }
}

LaunchShape launch_shape(const kern::SvPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                         const DeviceProps& dev) {
  LaunchShape s;
  const std::size_t state_bytes = 2 * std::size_t(real_bytes) * p.dim;
  const std::size_t per_circuit = state_bytes * (adjoint ? 2 : 1);
  const std::size_t half = std::max<std::size_t>(p.dim / 2, 1);
  if (half <= 32) {
    s.strategy = Strategy::warp;
    s.group = static_cast<int>(half);
    s.threads = 128;
    s.per_block = s.threads / s.group;
    s.smem = per_circuit * s.per_block;
    s.blocks = (batch + s.per_block - 1) / s.per_block;
  } else if (per_circuit <= dev.smem_optin) {
    s.strategy = Strategy::block;
    s.group = static_cast<int>(std::min<std::size_t>(half, 256));
    s.threads = s.group;
    s.smem = per_circuit;
    s.blocks = batch;
  } else {
    s.strategy = Strategy::global;
    s.group = 256;
    s.threads = 256;
    // Enough resident blocks to fill the device; each owns one sample's states at a time.
    s.blocks = std::min<std::size_t>(batch, std::size_t(std::max(dev.sm_count, 1)) * 8);
    s.work_bytes = s.blocks * per_circuit;
  }
  s.blocks = std::min(std::max<std::size_t>(s.blocks, 1), kMaxGrid);
  return s;
}

void* malloc_device(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(bytes, 16)), "cudaMalloc");
  return p;
}
void free_device(void* p) noexcept {
  if (p != nullptr) cudaFree(p);
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}
void* malloc_async(std::size_t bytes, void* stream) {
  void* p = nullptr;
  check(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 16), as_stream(stream)), "cudaMallocAsync");
  return p;
}
void free_async(void* p, void* stream) {
  if (p != nullptr) check(cudaFreeAsync(p, as_stream(stream)), "cudaFreeAsync");
}
void copy_async(void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes > 0) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), "cudaMemcpyAsync");
}
void memset_async(void* p, std::size_t bytes, void* stream) {
  if (bytes > 0) check(cudaMemsetAsync(p, 0, bytes, as_stream(stream)), "cudaMemsetAsync");
}
void stream_sync(void* stream) { check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize"); }

bool is_device_pointer(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

template <class R>
void run_circuits(const kern::SvPlan& p, const kern::SvCall<R>& c, const LaunchShape& s, void* stream) {
  const cudaStream_t st = as_stream(stream);
  allow_smem<R>();
  if (c.grad_weights != nullptr && c.reduce_weights && c.cotangents != nullptr) {
    memset_async(c.grad_weights, std::size_t(p.n_weights) * sizeof(R), stream);
  }
  if (s.strategy == Strategy::warp) {
    sv_warp_kernel<R><<<static_cast<unsigned>(s.blocks), s.threads, s.smem, st>>>(p, c, s.group,
                                                                                  (c.batch + s.per_block - 1) / s.per_block);
    check(cudaGetLastError(), "the warp circuit kernel launch");
  } else if (s.strategy == Strategy::block) {
    sv_block_kernel<R><<<static_cast<unsigned>(s.blocks), s.threads, s.smem, st>>>(p, c, nullptr);
    check(cudaGetLastError(), "the block circuit kernel launch");
  } else {
    R* work = static_cast<R*>(malloc_async(s.work_bytes, stream));
    sv_block_kernel<R><<<static_cast<unsigned>(s.blocks), s.threads, 0, st>>>(p, c, work);
    const cudaError_t e = cudaGetLastError();
    free_async(work, stream);
    check(e, "the global-memory circuit kernel launch");
  }
}

template void run_circuits<float>(const kern::SvPlan&, const kern::SvCall<float>&, const LaunchShape&, void*);
template void run_circuits<double>(const kern::SvPlan&, const kern::SvCall<double>&, const LaunchShape&, void*);

}  // namespace qfleet::gpu

// Kept for the library's cuda_device_count().
extern "C" int qfleet_cuda_device_count() { return qfleet::gpu::device_count(); }
