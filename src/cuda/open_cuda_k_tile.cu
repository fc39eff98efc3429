// The open-system kernel for a task per tile of 8 or 16 lanes (the tile8 and tile16
// shapes), in complex64 and complex128 (one translation unit per kernel kind: see
// open_cuda_kernels.cuh).
#include "cuda/open_cuda_kernels.cuh"

namespace qfleet::gpu::open_detail {
QFLEET_OPEN_TILE(, float)
QFLEET_OPEN_TILE(, double)
}  // namespace qfleet::gpu::open_detail
