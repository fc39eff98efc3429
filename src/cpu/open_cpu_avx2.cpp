// The open-system executor compiled for avx2 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx2
#include "cpu/open_cpu_impl.hpp"

namespace qfleet::cpu {

extern const OpenIsaKernels kOpenKernels_avx2;
const OpenIsaKernels kOpenKernels_avx2 = {"avx2", &avx2::run_open<float>, &avx2::run_open<double>};

}  // namespace qfleet::cpu
