// Error checking and stream casts shared by the .cu translation units (never
// included by the C++20 library, which sees only the seams sv_cuda.hpp / open_cuda.hpp).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "qfleet/error.hpp"

namespace qfleet::gpu {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear sticky-free errors so later calls start clean
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
  }
}

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// Opts `kernel` in to the current device's whole dynamic shared memory per block,
// less `reserved` bytes (its static shared memory), once per device: `done` is the
// kernel's own word of per-device flags.
template <class Kernel>
void allow_full_smem(std::atomic<std::uint64_t>& done, Kernel kernel, int reserved = 0) {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  const std::uint64_t bit = std::uint64_t{1} << (dev & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  int optin = 0;
  check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - reserved),
        "cudaFuncSetAttribute");
  done.fetch_or(bit, std::memory_order_acq_rel);
}

// Blocks of `threads` threads (with `smem` bytes of dynamic shared memory) one SM
// holds at once (registers, shared memory and the SM's limits), at least 1.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t smem) {
  int nb = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, threads, smem),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return std::max(nb, 1);
}

}  // namespace qfleet::gpu
