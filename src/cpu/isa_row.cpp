// The cpu device's row of one instruction set: CMake compiles this file once per ISA
// (qfleet_cpu_isa in CMakeLists.txt) with its flags, QFLEET_KERN_ISA and lanes.
// Its three parts come from isa_sv.cpp, isa_dm.cpp and isa_open.cpp of the same ISA.
#include "cpu/cpu_isa.hpp"

namespace qfleet::cpu {

extern const SvIsaKernels QFLEET_CPU_ISA_NAME(kSv_);
extern const DmIsaKernels QFLEET_CPU_ISA_NAME(kDm_);
extern const OpenIsaKernels QFLEET_CPU_ISA_NAME(kOpen_);

extern const CpuIsa QFLEET_CPU_ISA_NAME(kIsa_);
const CpuIsa QFLEET_CPU_ISA_NAME(kIsa_) = {QFLEET_CPU_ISA_STR(QFLEET_KERN_ISA),
                                           QFLEET_LANES_F32,
                                           QFLEET_LANES_F64,
                                           &QFLEET_CPU_ISA_NAME(kSv_),
                                           &QFLEET_CPU_ISA_NAME(kDm_),
                                           &QFLEET_CPU_ISA_NAME(kOpen_)};

}  // namespace qfleet::cpu
