// The density-matrix executor compiled for baseline (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA baseline
#include "cpu/mixed_cpu_impl.hpp"

namespace qfleet::cpu {

extern const MixedIsaKernels kMixedKernels_baseline;
const MixedIsaKernels kMixedKernels_baseline = {
    "baseline",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &baseline::mixed::run<float, QFLEET_LANES_F32>,
    &baseline::mixed::run<double, QFLEET_LANES_F64>,
    &baseline::mixed::thread_reals,
    &baseline::mixed::shared_reals,
};

}  // namespace qfleet::cpu
