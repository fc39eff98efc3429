// The density-matrix executor compiled for avx512 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx512
#include "cpu/mixed_cpu_impl.hpp"

namespace qfleet::cpu {

extern const MixedIsaKernels kMixedKernels_avx512;
const MixedIsaKernels kMixedKernels_avx512 = {
    "avx512",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &avx512::mixed::run<float, QFLEET_LANES_F32>,
    &avx512::mixed::run<double, QFLEET_LANES_F64>,
    &avx512::mixed::thread_reals,
    &avx512::mixed::shared_reals,
};

}  // namespace qfleet::cpu
