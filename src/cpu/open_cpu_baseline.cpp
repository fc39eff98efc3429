// The open-system executor compiled for baseline (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA baseline
#include "cpu/open_cpu_impl.hpp"

namespace qfleet::cpu {

extern const OpenIsaKernels kOpenKernels_baseline;
const OpenIsaKernels kOpenKernels_baseline = {"baseline", &baseline::run_open<float>, &baseline::run_open<double>};

}  // namespace qfleet::cpu
