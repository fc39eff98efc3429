// Density-matrix circuits on cuda: one thread block per sample running the group body
// of kernels/dm_group.hpp (tested on the CPU with std::thread groups every run), its
// scratch in global memory. See dm_cuda.hpp.
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

// Reals of one block's scratch: rho, lam, stored states, checkpoints, slot gradients,
// probabilities (kernels/dm_group.hpp), each rounded to 32 reals (256-byte alignment).
struct ScratchLayout {
  std::size_t rho, lam, stored, ckpt, gslot, probs, total;
};

ScratchLayout scratch_layout(const kern::DmPlan& p, bool adjoint, const kern::DmSegments& seg, int extra_k) {
  auto round = [](std::size_t n) { return (n + 31) / 32 * 32; };
  const std::size_t st = 2 * p.dim2;
  ScratchLayout l{};
  std::size_t at = 0;
  l.rho = at;
  at += round(st);
  l.lam = at;
  at += adjoint ? round(st) : 0;
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
__global__ void dm_block_kernel(kern::DmPlan p, kern::SvCall<R> c, kern::DmSegments seg, ScratchLayout layout,
                                R* work) {
  __shared__ R scratch[32];
  R* w = work + std::size_t(blockIdx.x) * layout.total;
  const kern::DmGroupScratch s{w + layout.rho, w + layout.lam, w + layout.stored, w + layout.ckpt, w + layout.gslot,
                               w + layout.probs};
  BlockGroup<R> g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), scratch};
  for (std::size_t b = blockIdx.x; b < c.batch; b += gridDim.x) {
    kern::dm_group_run(p, c, seg, b, s, g);
    __syncthreads();
  }
}

}  // namespace

DmLaunch dm_launch_shape(const kern::DmPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                               const kern::DmSegments& seg, int extra_k, const DeviceProps& dev) {
  DmLaunch s;
  const ScratchLayout l = scratch_layout(p, adjoint, seg, extra_k);
  s.per_block_reals = l.total;
  const double per_block = double(l.total) * real_bytes;
  const double budget = 0.25 * double(dev.total_mem);
  if (per_block > budget) {
    throw Error("a " + std::to_string(p.n) + "-qubit density matrix's " + (adjoint ? "gradient" : "forward") +
                " needs " + std::to_string(std::size_t(per_block) >> 20) + " MiB of GPU scratch per sample, more "
                "than a quarter of " + dev.name + "'s memory; use device 'cpu'");
  }
  // Small registers use half a warp's lanes at most; 4^n amplitudes split over the block.
  s.threads = p.dim2 >= 4096 ? 256 : 128;
  const std::size_t fit = std::max<std::size_t>(1, std::size_t(budget / per_block));
  s.blocks = std::min({batch, fit, std::size_t(std::max(1, dev.sm_count)) * 4});
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
  const ScratchLayout l = scratch_layout(device_plan, call.cotangents != nullptr, seg, call.extra_k);
  const std::size_t work_reals = l.total * shape.blocks;
  auto* work = static_cast<R*>(malloc_async(work_reals * sizeof(R) + sizeof(int) * std::size_t(seg.count + 1),
                                            stream));
  int* begin = reinterpret_cast<int*>(work + work_reals);
  copy_async(begin, seg.begin, sizeof(int) * std::size_t(seg.count + 1), stream);
  kern::DmSegments dseg = seg;
  dseg.begin = begin;
  dm_block_kernel<R><<<unsigned(shape.blocks), unsigned(shape.threads), 0, as_stream(stream)>>>(
      device_plan, call, dseg, l, work);
  check(cudaGetLastError(), "dm_block_kernel launch");
  free_async(work, stream);
}

template void run_dm<float>(const kern::DmPlan&, const kern::SvCall<float>&, const kern::DmSegments&,
                               const DmLaunch&, void*);
template void run_dm<double>(const kern::DmPlan&, const kern::SvCall<double>&, const kern::DmSegments&,
                                const DmLaunch&, void*);

}  // namespace qfleet::gpu
