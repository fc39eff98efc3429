// The open-system kernel for a block per task (the warp and block shapes), in
// complex64 and complex128 (one translation unit per kernel kind: see
// open_cuda_kernels.cuh).
#include "cuda/open_cuda_kernels.cuh"

namespace qfleet::gpu::open_detail {
QFLEET_OPEN_GROUP(, float)
QFLEET_OPEN_GROUP(, double)
}  // namespace qfleet::gpu::open_detail
