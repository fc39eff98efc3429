// The cpu device's instruction sets. Each is one translation unit, cpu/isa_<name>.cpp,
// compiled with its flags (CMakeLists.txt): it includes the three model kinds'
// kernels (sv_cpu_impl.hpp, dm_cpu_impl.hpp, open_cpu_impl.hpp) and defines its row
// with QFLEET_CPU_ISA_ROW, so adding an instruction set is one such file and one
// line in isa_table(). Everything crossing here is plain data, so the per-ISA code
// never instantiates a std:: template another ISA's object could emit.
#pragma once

#include <string>
#include <vector>

#include "cpu/dm_cpu.hpp"
#include "cpu/open_cpu.hpp"
#include "cpu/sv_cpu.hpp"

namespace qfleet::cpu {

struct CpuIsa {
  const char* name;           // "baseline", "avx2", "avx512"
  int lanes_f32, lanes_f64;   // samples per SIMD tile
  SvIsaKernels sv;
  DmIsaKernels dm;
  OpenIsaKernels open;
};

// ISAs compiled into this build that this machine runs, best first; those wider than
// QFLEET_ISA (when set) dropped.
const std::vector<const CpuIsa*>& isa_table();
// Index into isa_table() for a name ("auto" = QFLEET_ISA when set, else the best
// supported); throws qfleet::Error.
int select_isa(const std::string& name);

}  // namespace qfleet::cpu

// The row of the ISA this translation unit is compiled for (QFLEET_KERN_ISA; lanes
// from CMakeLists.txt), after the three kernel headers.
#define QFLEET_CPU_ISA_ROW(isa)                                                                      \
  namespace qfleet::cpu {                                                                            \
  extern const CpuIsa kIsa_##isa;                                                                    \
  const CpuIsa kIsa_##isa = {                                                                        \
      #isa,                                                                                          \
      QFLEET_LANES_F32,                                                                              \
      QFLEET_LANES_F64,                                                                              \
      {&isa::run<float, QFLEET_LANES_F32>, &isa::run<double, QFLEET_LANES_F64>, &isa::shared_reals,  \
       &isa::thread_reals},                                                                          \
      {&isa::dm::run<float, QFLEET_LANES_F32>, &isa::dm::run<double, QFLEET_LANES_F64>,              \
       &isa::dm::thread_reals, &isa::dm::shared_reals},                                              \
      {&isa::run_open<float>, &isa::run_open<double>},                                               \
  };                                                                                                 \
  }
