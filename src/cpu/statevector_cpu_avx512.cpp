// The cpu executor compiled for avx512 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx512
#include "cpu/statevector_cpu_impl.hpp"

namespace qfleet::cpu {

extern const IsaKernels kKernels_avx512;
const IsaKernels kKernels_avx512 = {
    "avx512",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &avx512::run<float, QFLEET_LANES_F32>,
    &avx512::run<double, QFLEET_LANES_F64>,
    &avx512::shared_reals,
    &avx512::thread_reals,
};

}  // namespace qfleet::cpu
