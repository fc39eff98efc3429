// The cpu device's baseline row: every model kind's kernels compiled with its flags
// (CMakeLists.txt), registered in isa_table() (cpu_isa.cpp).
#define QFLEET_KERN_ISA baseline
#include "cpu/sv_cpu_impl.hpp"
#include "cpu/dm_cpu_impl.hpp"
#include "cpu/open_cpu_impl.hpp"
#include "cpu/cpu_isa.hpp"

QFLEET_CPU_ISA_ROW(baseline)
