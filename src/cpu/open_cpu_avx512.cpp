// The open-system executor compiled for avx512 (flags set per file in CMakeLists.txt).
#define QFLEET_KERN_ISA avx512
#include "cpu/open_cpu_impl.hpp"

namespace qfleet::cpu {

extern const OpenIsaKernels kOpenKernels_avx512;
const OpenIsaKernels kOpenKernels_avx512 = {"avx512", &avx512::run_open<float>, &avx512::run_open<double>};

}  // namespace qfleet::cpu
