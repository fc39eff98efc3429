// The open-system kernels of one instruction set: CMake compiles this file once per ISA
// (qfleet_cpu_isa in CMakeLists.txt) with its flags, QFLEET_KERN_ISA and lanes.
#include "cpu/open_cpu_impl.hpp"
#include "cpu/cpu_isa.hpp"

namespace isa = qfleet::cpu::QFLEET_KERN_ISA;
QFLEET_CPU_ISA_PART(OpenIsaKernels, kOpen_, {&isa::run_open<float>, &isa::run_open<double>})
