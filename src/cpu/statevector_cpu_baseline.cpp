// The cpu executor compiled for baseline (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA baseline
#include "cpu/statevector_cpu_impl.hpp"

namespace qfleet::cpu {

extern const IsaKernels kKernels_baseline;
const IsaKernels kKernels_baseline = {
    "baseline",
    QFLEET_LANES_F32,
    QFLEET_LANES_F64,
    &baseline::run<float, QFLEET_LANES_F32>,
    &baseline::run<double, QFLEET_LANES_F64>,
    &baseline::shared_reals,
    &baseline::thread_reals,
};

}  // namespace qfleet::cpu
