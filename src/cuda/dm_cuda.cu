// Density-matrix circuits on cuda: one thread block per sample running the group body
// of kernels/dm_group.hpp (tested on the CPU with std::thread groups every run), its
// block table, rho and lambda in shared memory where they fit, the rest of its scratch
// in global memory. See dm_cuda.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_groups.cuh"
#include "cuda/dm_cuda.hpp"
#include "kernels/dm_group.hpp"
#include "qfleet/error.hpp"

namespace qfleet::gpu {

namespace {

// Where one block's scratch lies (kernels/dm_group.hpp): offsets in reals into the
// block's global scratch, each part rounded to 32 reals (256-byte alignment); the
// table, rho and lam (in that order: the table is read at every step) go to dynamic
// shared memory instead while they fit in `smem_budget` bytes (kGlobal: they do not).
constexpr std::size_t kGlobal = ~std::size_t{0};

struct ScratchLayout {
  std::size_t rho, lam, stored, ckpt, gslot, probs, table, total;
  std::size_t smem_table = kGlobal, smem_rho = kGlobal, smem_lam = kGlobal, smem_reals = 0;
};

ScratchLayout scratch_layout(const kern::DmPlan& p, bool adjoint, const kern::DmSegments& seg, int extra_k,
                             int real_bytes, std::size_t smem_budget) {
  auto round = [](std::size_t n) { return (n + 31) / 32 * 32; };
  const std::size_t st = 2 * p.dim2, smem_cap = smem_budget / std::size_t(real_bytes);
  ScratchLayout l{};
  std::size_t at = 0;
  // a part of n reals: in shared memory while it fits, else in the global scratch at `at`
  auto place = [&](std::size_t n, std::size_t& smem_off, std::size_t& global_off) {
    if (n > 0 && l.smem_reals + round(n) <= smem_cap) {
      smem_off = l.smem_reals;
      l.smem_reals += round(n);
      global_off = 0;
    } else {
      global_off = at;
      at += round(n);
    }
  };
  place(kern::dm_table_reals(p, adjoint), l.smem_table, l.table);
  place(st, l.smem_rho, l.rho);
  place(adjoint ? st : 0, l.smem_lam, l.lam);
  l.stored = at;
  at += adjoint ? round(st * std::size_t(seg.per_segment)) : 0;
  l.ckpt = at;
  at += adjoint && seg.count > 1 ? round(st * std::size_t(seg.count)) : 0;
  l.gslot = at;
  at += round(std::size_t(p.n_params) + 1);
  l.probs = at;
  at += round(std::size_t{2} << std::max(p.max_probs_k, extra_k));
  l.total = at;
  return l;
}

template <class R>
__device__ R* scratch_part(R* smem, std::size_t smem_off, R* global, std::size_t global_off) {
  return smem_off != kGlobal ? smem + smem_off : global + global_off;
}

template <class R>
__global__ void dm_block_kernel(const __grid_constant__ kern::DmPlan p, const __grid_constant__ kern::SvCall<R> c,
                                const __grid_constant__ kern::DmSegments seg, const ScratchLayout l, R* work) {
  extern __shared__ __align__(16) unsigned char dm_smem[];
  R* sh = reinterpret_cast<R*>(dm_smem);
  R* w = work + std::size_t(blockIdx.x) * l.total;
  const kern::DmGroupScratch s{scratch_part(sh, l.smem_rho, w, l.rho), scratch_part(sh, l.smem_lam, w, l.lam),
                               w + l.stored, w + l.ckpt, w + l.gslot, w + l.probs,
                               scratch_part(sh, l.smem_table, w, l.table)};
  const BlockGroup<R> g{};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    kern::dm_group_run(p, c, seg, b, s, g);
    __syncthreads();
  }
}

}  // namespace

DmLaunch dm_launch_shape(const kern::DmPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                         const kern::DmSegments& seg, int extra_k, const DeviceProps& dev, int threads) {
  DmLaunch s;
  // 48 KB less the group's sums: no opt-in, and four blocks fit an SM's shared memory
  s.smem_budget = std::min<std::size_t>(dev.smem_optin, 48 << 10) - 32 * std::size_t(real_bytes);
  const ScratchLayout l = scratch_layout(p, adjoint, seg, extra_k, real_bytes, s.smem_budget);
  s.per_block_reals = l.total;
  s.smem_bytes = l.smem_reals * std::size_t(real_bytes);
  const double per_block = double(l.total) * real_bytes;
  const double budget = 0.25 * double(dev.total_mem);
  if (per_block > budget) {
    throw Error("a " + std::to_string(p.n) + "-qubit density matrix's " + (adjoint ? "gradient" : "forward") +
                " needs " + std::to_string(std::size_t(per_block) >> 20) + " MiB of GPU scratch per sample, more "
                "than a quarter of " + dev.name + "'s memory; use device 'cpu'");
  }
  // A one-wire gate's side splits 4^n amplitudes into 4^n / 2 pairs: at most that many
  // threads (whole warps: BlockGroup's sums), 128 below 4^6 amplitudes, 256 from there
  // (MixedShape/ rows of bench_cuda time each pinned size beside it).
  s.threads = threads > 0       ? threads
              : p.dim2 >= 4096 ? 256
                               : int(std::clamp<std::uint64_t>(p.dim2 / 2, 32, 128));
  // As many blocks as the SMs hold at once, each looping over its share of the batch.
  const int per_sm = real_bytes == 4 ? resident_blocks(dm_block_kernel<float>, s.threads, s.smem_bytes)
                                     : resident_blocks(dm_block_kernel<double>, s.threads, s.smem_bytes);
  const std::size_t fit = std::max<std::size_t>(1, std::size_t(budget / per_block));
  s.blocks = std::min({batch, fit, std::size_t(std::max(1, dev.sm_count)) * std::size_t(per_sm)});
  s.work_bytes = std::size_t(per_block) * s.blocks + sizeof(int) * std::size_t(seg.count + 1) + 256;
  return s;
}

template <class R>
void run_dm(const kern::DmPlan& device_plan, const kern::SvCall<R>& call, const kern::DmSegments& seg,
               const DmLaunch& shape, void* stream) {
  if (call.batch == 0) return;
  if (call.cotangents != nullptr && call.grad_weights != nullptr && call.reduce_weights) {
    memset_async(call.grad_weights, sizeof(R) * std::size_t(device_plan.n_weights), stream);
  }
  const ScratchLayout l =
      scratch_layout(device_plan, call.cotangents != nullptr, seg, call.extra_k, int(sizeof(R)), shape.smem_budget);
  const std::size_t work_reals = l.total * shape.blocks;
  auto* work = static_cast<R*>(malloc_async(work_reals * sizeof(R) + sizeof(int) * std::size_t(seg.count + 1),
                                            stream));
  int* begin = reinterpret_cast<int*>(work + work_reals);
  copy_async(begin, seg.begin, sizeof(int) * std::size_t(seg.count + 1), stream);
  kern::DmSegments dseg = seg;
  dseg.begin = begin;
  dm_block_kernel<R><<<unsigned(shape.blocks), unsigned(shape.threads), l.smem_reals * sizeof(R), as_stream(stream)>>>(
      device_plan, call, dseg, l, work);
  check(cudaGetLastError(), "dm_block_kernel launch");
  free_async(work, stream);
}

template void run_dm<float>(const kern::DmPlan&, const kern::SvCall<float>&, const kern::DmSegments&,
                               const DmLaunch&, void*);
template void run_dm<double>(const kern::DmPlan&, const kern::SvCall<double>&, const kern::DmSegments&,
                                const DmLaunch&, void*);

}  // namespace qfleet::gpu
