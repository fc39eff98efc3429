// The cuda circuit backend: kernels/sv_lanes.hpp and kernels/sv_group.hpp (the
// bodies the cpu tests also run) launched with a group of threads per circuit.
// Only the launch shape and where the two states live are decided here:
//   registers (n <= 5): 2^n lanes of a warp per circuit, 32 / 2^n circuits per
//          warp, one amplitude of psi (and lam) per lane in registers, gates by
//          shuffles, each circuit's block table in shared memory, reduced weight
//          gradients summed across the warp's circuits before one atomic add;
//   warp   (2^n / 2 <= 32): a slice of a warp per circuit, several circuits per
//          block, states in shared memory, sync = __syncwarp, sums by shuffles;
//   block  (states fit in shared memory): a thread block per circuit, sync =
//          __syncthreads, sums by shuffles then one pass over per-warp partials;
//   interleaved (larger n, batch >= 32): a block of 32 x 8 threads per tile of 32
//          samples stored side by side in a global workspace (amplitude i of
//          the 32 samples in consecutive words), each sample's 8 threads
//          splitting the gates' amplitude groups: a warp reads one amplitude of
//          32 samples in one coalesced access;
//   global (larger n, small batches): a thread block per circuit with its states
//          in a global workspace sized for the resident blocks (grid-stride over
//          the batch).
// One launch runs every sample's forward, measurements and adjoint backward; the
// gate blocks are computed on the device from each sample's angles, once per sample
// into a block table in shared memory where it fits (every shape;
// kernels/sv_table.hpp), else by every thread at every gate; reduced weight
// gradients are summed with atomics inside the kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_groups.cuh"
#include "cuda/sv_cuda.hpp"
#include "kernels/sv_group.hpp"
#include "kernels/sv_lanes.hpp"
#include "kernels/sv_table.hpp"
#include "qfleet/error.hpp"

namespace qfleet::gpu {

namespace {

template <class R>
struct WarpGroup {  // `n` (a power of two <= 32) consecutive lanes of one warp
  static constexpr bool kWarpSync = true;  // kern::warp_synchronous
  int r, n;
  __device__ int rank() const { return r; }
  __device__ int size() const { return n; }
  __device__ void sync() const { __syncwarp(); }
  __device__ R sum(R v) const {
    for (int off = n / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;  // every lane adds the same pairs: the same bits in every lane
  }
  __device__ void atomic_add(R* p, R v) const { atomicAdd(p, v); }
  __device__ int n_parts() const { return 1; }  // the slice: one part
  __device__ int part() const { return 0; }
  __device__ R part_sum(R v) const { return sum(v); }
  __device__ bool part_leader() const { return r == 0; }
};

template <class R>
struct LaneGroup {  // 2^n consecutive lanes of a warp holding one circuit (kernels/sv_lanes.hpp)
  int l, W;
  __device__ int lane() const { return l; }
  __device__ int width() const { return W; }
  __device__ R shfl_xor(R v, unsigned m) const { return __shfl_xor_sync(0xffffffffu, v, static_cast<int>(m)); }
  __device__ R shfl(R v, int j) const { return __shfl_sync(0xffffffffu, v, j, W); }
  __device__ void sync() const { __syncwarp(); }
  __device__ void reduce_add(R* p, R v, bool contribute) const {
    v = contribute ? v : R(0);
    // Every lane of a circuit holds its total: a butterfly over the circuit index
    // bits sums the warp's circuits, then one lane adds the warp's share.
    for (int m = W; m < 32; m <<= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    if ((threadIdx.x & 31u) == 0) atomicAdd(p, v);
  }
};


// Shared memory: each circuit's states, then (table_reals > 0) each circuit's block table.
template <class R>
__global__ void sv_warp_kernel(const __grid_constant__ kern::SvPlan p, const __grid_constant__ kern::SvCall<R> c,
                               int G, std::size_t n_blocks, std::size_t table_reals) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = static_cast<int>(threadIdx.x);
  const int per_block = static_cast<int>(blockDim.x) / G;
  const std::size_t st = 2 * p.dim;
  const int ns = c.cotangents ? 2 : 1;
  R* base = reinterpret_cast<R*>(smem) + std::size_t(tid / G) * ns * st;
  R* tab = table_reals > 0 ? reinterpret_cast<R*>(smem) + std::size_t(per_block) * ns * st +
                                 std::size_t(tid / G) * table_reals
                           : nullptr;
  WarpGroup<R> g{tid % G, G};
  for (std::size_t blk = blockIdx.x; blk < n_blocks; blk += gridDim.x) {
    const std::size_t b = blk * per_block + std::size_t(tid / G);
    const bool active = b < c.batch;
    kern::sv_group_run(p, c, active ? b : c.batch - 1, active, base, ns == 2 ? base + st : nullptr, g, 0, tab);
    __syncwarp();
  }
}

// Blocks of 128 threads = 4 warps, 128 / 2^n circuits per block; every warp runs
// its circuits in lockstep (full-warp shuffles), padding circuits included.
// Shared memory (table_reals > 0): each circuit's block table.
template <class R>
__global__ void sv_lanes_kernel(const __grid_constant__ kern::SvPlan p, const __grid_constant__ kern::SvCall<R> c,
                                int W, std::size_t n_blocks, std::size_t table_reals) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = static_cast<int>(threadIdx.x);
  const int per_block = static_cast<int>(blockDim.x) / W;
  const LaneGroup<R> g{tid % W, W};
  R* tab = table_reals > 0 ? reinterpret_cast<R*>(smem) + std::size_t(tid / W) * table_reals : nullptr;
  for (std::size_t blk = blockIdx.x; blk < n_blocks; blk += gridDim.x) {
    const std::size_t b = blk * per_block + std::size_t(tid / W);
    const bool active = b < c.batch;
    kern::sv_lanes_run(p, c, active ? b : c.batch - 1, active, g, tab);
    if (tab != nullptr) g.sync();  // every lane done with the table before the next sample's
  }
}

constexpr int kTile = 32;    // samples per interleaved tile: the warp's lanes
constexpr int kMembers = 8;  // threads per sample in the interleaved shape

// The kMembers threads of a block that share threadIdx.x (one sample of a tile). Rank
// and size are special registers, the sums' slots a static shared array (BlockGroup,
// cuda_groups.cuh, says why).
template <class R>
struct TileGroup {
  __device__ int rank() const { return static_cast<int>(threadIdx.y); }
  __device__ int size() const { return static_cast<int>(blockDim.y); }
  __device__ void sync() const { __syncthreads(); }
  __device__ R sum(R v) const {
    __shared__ R slot[kMembers * kTile];
    slot[threadIdx.y * kTile + threadIdx.x] = v;
    __syncthreads();
    R t = 0;
    for (int w = 0; w < size(); ++w) t += slot[w * kTile + threadIdx.x];  // fixed order: deterministic
    __syncthreads();
    return t;
  }
  __device__ void atomic_add(R* p, R v) const { atomicAdd(p, v); }
  __device__ int n_parts() const { return size(); }  // members sit in different warps: each its own part
  __device__ int part() const { return rank(); }
  __device__ R part_sum(R v) const { return v; }
  __device__ bool part_leader() const { return true; }
};

// blockDim = (kTile, kMembers); each block owns one tile's psi (and lam) in `work`,
// and with `table` the tile's block table in dynamic shared memory.
template <class R>
__global__ void sv_interleaved_kernel(const __grid_constant__ kern::SvPlan p, const __grid_constant__ kern::SvCall<R> c,
                                      R* work, std::size_t n_tiles, bool table) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int l = static_cast<int>(threadIdx.x);
  const std::size_t tile = 2 * p.dim * kTile;
  const int ns = c.cotangents ? 2 : 1;
  R* psi = work + std::size_t(blockIdx.x) * ns * tile;
  const TileGroup<R> g{};
  for (std::size_t t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    const std::size_t b = t * kTile + std::size_t(l);
    const bool active = b < c.batch;
    kern::sv_group_run<kTile>(p, c, active ? b : c.batch - 1, active, psi, ns == 2 ? psi + tile : nullptr, g, l,
                              table ? reinterpret_cast<R*>(smem) : nullptr);
    __syncthreads();
  }
}

// Dynamic shared memory: the states (work == nullptr; else they are in work), then
// with `table` the block table.
template <class R>
__global__ void sv_block_kernel(const __grid_constant__ kern::SvPlan p, const __grid_constant__ kern::SvCall<R> c,
                                R* work, bool table) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::size_t st = 2 * p.dim;
  const int ns = c.cotangents ? 2 : 1;
  R* shared = reinterpret_cast<R*>(smem);
  R* base = work != nullptr ? work + std::size_t(blockIdx.x) * ns * st : shared;
  R* tab = !table ? nullptr : work != nullptr ? shared : shared + ns * st;
  const BlockGroup<R> g{};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    kern::sv_group_run(p, c, b, true, base, ns == 2 ? base + st : nullptr, g, 0, tab);
    __syncthreads();
  }
}

constexpr std::size_t kMaxGrid = 1u << 30;

template <class R>
void allow_smem() {  // every circuit kernel may take the device's whole shared memory
  static std::atomic<std::uint64_t> warp_done{0}, block_done{0}, tile_done{0}, lanes_done{0};
  allow_full_smem(lanes_done, sv_lanes_kernel<R>);
  allow_full_smem(warp_done, sv_warp_kernel<R>);
  allow_full_smem(block_done, sv_block_kernel<R>, static_cast<int>(32 * sizeof(R)));
  allow_full_smem(tile_done, sv_interleaved_kernel<R>, static_cast<int>(kMembers * kTile * sizeof(R)));
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

LaunchShape launch_shape(const kern::SvPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                         const DeviceProps& dev, Strategy want) {
  LaunchShape s;
  const std::size_t state_bytes = 2 * std::size_t(real_bytes) * p.dim;
  const std::size_t per_circuit = state_bytes * (adjoint ? 2 : 1);
  const std::size_t half = std::max<std::size_t>(p.dim / 2, 1);
  // The block kernel's 32-entry reduction scratch is static shared memory: the
  // dynamic part may take the opt-in limit less that.
  const bool fits_registers = p.n <= kern::kMaxLaneQubits, fits_warp = half <= 32,
             fits_block = per_circuit + 32 * std::size_t(real_bytes) <= dev.smem_optin;
  // Interleaved tiles: one per SM at least within a quarter of the device memory.
  const std::size_t tile_bytes = per_circuit * kTile, budget = dev.total_mem / 4;
  const std::size_t sms = std::size_t(std::max(dev.sm_count, 1));
  // Measured on an H200 with block tables (Shape/ rows, 2026-11-28, `git show b4f0f6b:docs/benchmarks.md`;
  // the classifier layer, forward + adjoint, complex64): registers are the fastest at
  // n = 4 (B = 10^4: 373 us against 682-689 for warp, interleaved and block; B = 100:
  // 91 us, block 93); at n = 6 block is, or ties warp (B = 10^4: 1.07 ms against 1.14
  // interleaved, 1.22 warp), and at n = 10 (17.6 ms against 22.4 interleaved); where the
  // states outgrow shared memory (n = 14) global beats interleaved 36x at B = 100.
  if (want == Strategy::automatic) {
    want = fits_registers ? Strategy::registers : fits_block ? Strategy::block : Strategy::global;
  }
  auto refuse = [&](const char* why) {
    return Error(std::string("the '") + strategy_name(want) + "' circuit launch shape needs " + why +
                 "; this circuit has " +
                 std::to_string(p.n) + " qubits");
  };
  s.strategy = want;
  // A group's block table (kernels/sv_table.hpp), in bytes, for groups of `parts`
  // parts; taken wherever it fits beside what the shape already keeps in shared memory.
  const std::size_t rb = std::size_t(real_bytes), optin = dev.smem_optin;
  auto table_bytes = [&](bool tile, int parts) {
    return rb * (tile ? kern::sv_table_reals<kTile>(p, adjoint, parts) : kern::sv_table_reals<1>(p, adjoint, parts));
  };
  if (want == Strategy::registers) {
    if (!fits_registers) throw refuse("at most 5 qubits");
    s.group = 1 << p.n;
    s.threads = 128;
    s.per_block = s.threads / s.group;
    const std::size_t tb = table_bytes(false, 0);
    if (tb * std::size_t(s.per_block) <= optin) s.table = tb;
    s.smem = s.table * s.per_block;
    s.blocks = (batch + s.per_block - 1) / s.per_block;
  } else if (want == Strategy::warp) {
    if (!fits_warp) throw refuse("at most 6 qubits");
    s.group = static_cast<int>(half);
    s.threads = 128;
    s.per_block = s.threads / s.group;
    const std::size_t tb = table_bytes(false, 1);
    if ((per_circuit + tb) * std::size_t(s.per_block) <= optin) s.table = tb;
    s.smem = (per_circuit + s.table) * s.per_block;
    s.blocks = (batch + s.per_block - 1) / s.per_block;
  } else if (want == Strategy::block) {
    if (!fits_block) throw refuse("its states to fit in one block's shared memory");
    // Whole warps (BlockGroup's sums are full-warp shuffles): 32 threads at least,
    // only when pinned for a small circuit.
    s.group = static_cast<int>(std::clamp<std::size_t>(half, 32, 256));
    s.threads = s.group;
    const std::size_t tb = table_bytes(false, s.group / 32);
    if (per_circuit + tb + 32 * rb <= optin) s.table = tb;
    s.smem = per_circuit + s.table;
    s.blocks = batch;
  } else if (want == Strategy::interleaved) {
    if (tile_bytes > budget) throw refuse("a tile of 32 samples' states within a quarter of the device memory");
    const std::size_t tiles = (batch + kTile - 1) / kTile;
    s.group = kMembers;
    s.per_block = kTile;
    s.threads = kTile * kMembers;
    const std::size_t tb = table_bytes(true, kMembers);
    if (tb + kMembers * kTile * rb <= optin) s.table = s.smem = tb;
    s.blocks = std::min({tiles, sms, budget / tile_bytes});
    s.work_bytes = s.blocks * tile_bytes;
  } else {
    s.group = 256;
    s.threads = 256;
    const std::size_t tb = table_bytes(false, s.group / 32);
    if (tb + 32 * rb <= optin) s.table = s.smem = tb;
    // Enough resident blocks to fill the device; each owns one sample's states at a time.
    s.blocks = std::min<std::size_t>(batch, sms * 8);
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
  const unsigned grid = static_cast<unsigned>(s.blocks);
  if (s.strategy == Strategy::registers) {
    sv_lanes_kernel<R><<<grid, s.threads, s.smem, st>>>(p, c, s.group, (c.batch + s.per_block - 1) / s.per_block,
                                                        s.table / sizeof(R));
    check(cudaGetLastError(), "the register circuit kernel launch");
  } else if (s.strategy == Strategy::warp) {
    sv_warp_kernel<R><<<grid, s.threads, s.smem, st>>>(p, c, s.group, (c.batch + s.per_block - 1) / s.per_block,
                                                       s.table / sizeof(R));
    check(cudaGetLastError(), "the warp circuit kernel launch");
  } else if (s.strategy == Strategy::block) {
    sv_block_kernel<R><<<grid, s.threads, s.smem, st>>>(p, c, nullptr, s.table > 0);
    check(cudaGetLastError(), "the block circuit kernel launch");
  } else {  // interleaved and global: the states in a stream-ordered global workspace
    R* work = static_cast<R*>(malloc_async(s.work_bytes, stream));
    if (s.strategy == Strategy::interleaved) {
      sv_interleaved_kernel<R><<<grid, dim3(kTile, kMembers), s.smem, st>>>(p, c, work, (c.batch + kTile - 1) / kTile,
                                                                              s.table > 0);
    } else {
      sv_block_kernel<R><<<grid, s.threads, s.smem, st>>>(p, c, work, s.table > 0);
    }
    const cudaError_t e = cudaGetLastError();
    free_async(work, stream);
    check(e, s.strategy == Strategy::interleaved ? "the interleaved circuit kernel launch"
                                                 : "the global-memory circuit kernel launch");
  }
}

template void run_circuits<float>(const kern::SvPlan&, const kern::SvCall<float>&, const LaunchShape&, void*);
template void run_circuits<double>(const kern::SvPlan&, const kern::SvCall<double>&, const LaunchShape&, void*);

}  // namespace qfleet::gpu
