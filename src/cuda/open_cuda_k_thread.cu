// The open-system kernel for a thread per task, any generator order, in complex64
// and complex128 (one translation unit per kernel kind: see open_cuda_kernels.cuh).
#include "cuda/open_cuda_kernels.cuh"

namespace qfleet::gpu::open_detail {
QFLEET_OPEN_TASKS(, float, int)
QFLEET_OPEN_TASKS(, double, int)
}  // namespace qfleet::gpu::open_detail
