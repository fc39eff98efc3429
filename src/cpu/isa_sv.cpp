// The state-vector kernels of one instruction set: CMake compiles this file once per ISA
// (qfleet_cpu_isa in CMakeLists.txt) with its flags, QFLEET_KERN_ISA and lanes.
#include "cpu/sv_cpu_impl.hpp"
#include "cpu/cpu_isa.hpp"

namespace isa = qfleet::cpu::QFLEET_KERN_ISA;
QFLEET_CPU_ISA_PART(SvIsaKernels, kSv_, {&isa::run<float, QFLEET_LANES_F32>, &isa::run<double, QFLEET_LANES_F64>,
                                         &isa::shared_reals, &isa::thread_reals})
