// The open-system kernel for a thread per task with the open qubit's fixed loop
// bounds (generator order 4), in complex64 and complex128 (one translation unit
// per kernel kind: see open_cuda_kernels.cuh).
#include "cuda/open_cuda_kernels.cuh"

namespace qfleet::gpu::open_detail {
QFLEET_OPEN_TASKS(, float, kern::FixedDim<4>)
QFLEET_OPEN_TASKS(, double, kern::FixedDim<4>)
}  // namespace qfleet::gpu::open_detail
