// The cpu executor compiled for avx2 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx2
#include "cpu/statevector_cpu_impl.hpp"

namespace qfleet::cpu {

extern const IsaKernels kKernels_avx2;
const IsaKernels kKernels_avx2 = {
    "avx2",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &avx2::run<float, QFLEET_LANES_F32>,
    &avx2::run<double, QFLEET_LANES_F64>,
    &avx2::shared_reals,
    &avx2::thread_reals,
};

}  // namespace qfleet::cpu
