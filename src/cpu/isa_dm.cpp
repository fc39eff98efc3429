// The density-matrix kernels of one instruction set: CMake compiles this file once per ISA
// (qfleet_cpu_isa in CMakeLists.txt) with its flags, QFLEET_KERN_ISA and lanes.
#include "cpu/dm_cpu_impl.hpp"
#include "cpu/cpu_isa.hpp"

namespace isa = qfleet::cpu::QFLEET_KERN_ISA;
QFLEET_CPU_ISA_PART(DmIsaKernels, kDm_, {&isa::dm::run<float, QFLEET_LANES_F32>, &isa::dm::run<double, QFLEET_LANES_F64>,
                                         &isa::dm::thread_reals, &isa::dm::shared_reals})
