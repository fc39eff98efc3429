// The density-matrix executor compiled for avx2 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx2
#include "cpu/mixed_cpu_impl.hpp"

namespace qfleet::cpu {

extern const MixedIsaKernels kMixedKernels_avx2;
const MixedIsaKernels kMixedKernels_avx2 = {
    "avx2",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &avx2::mixed::run<float, QFLEET_LANES_F32>,
    &avx2::mixed::run<double, QFLEET_LANES_F64>,
    &avx2::mixed::thread_reals,
    &avx2::mixed::shared_reals,
};

}  // namespace qfleet::cpu
