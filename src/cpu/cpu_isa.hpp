// The cpu device's instruction sets. CMake compiles the kernels once per instruction
// set (qfleet_cpu_isa in CMakeLists.txt: an object library with the ISA's flags and
// QFLEET_KERN_ISA): each model kind's kernels in its own translation unit
// (isa_sv.cpp, isa_dm.cpp, isa_open.cpp, which define their part with
// QFLEET_CPU_ISA_PART) and the row tying them together (isa_row.cpp). Adding an
// instruction set is one qfleet_cpu_isa line and its place in isa_table(). Everything
// crossing here is plain data, so the per-ISA code never instantiates a std::
// template another ISA's object could emit.
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
  // Each kind's kernels, defined in its own translation unit (constant-initialised, so
  // the rows can point at them from another).
  const SvIsaKernels* sv;
  const DmIsaKernels* dm;
  const OpenIsaKernels* open;
};

// ISAs compiled into this build that this machine runs, best first; those wider than
// QFLEET_ISA (when set) dropped.
const std::vector<const CpuIsa*>& isa_table();
// Index into isa_table() for a name ("automatic" = QFLEET_ISA when set, else the best
// supported); throws qfleet::Error.
int select_isa(const std::string& name);

}  // namespace qfleet::cpu

// The names of this translation unit's ISA's parts (QFLEET_KERN_ISA, set by CMake).
#define QFLEET_CPU_ISA_CAT2(a, b) a##b
#define QFLEET_CPU_ISA_CAT(a, b) QFLEET_CPU_ISA_CAT2(a, b)
#define QFLEET_CPU_ISA_NAME(prefix) QFLEET_CPU_ISA_CAT(prefix, QFLEET_KERN_ISA)
#define QFLEET_CPU_ISA_STR2(x) #x
#define QFLEET_CPU_ISA_STR(x) QFLEET_CPU_ISA_STR2(x)

// Defines this ISA's part `Type kPrefix_<isa> = {...}` (after its kernel header).
#define QFLEET_CPU_ISA_PART(Type, prefix, ...)          \
  namespace qfleet::cpu {                               \
  extern const Type QFLEET_CPU_ISA_NAME(prefix);        \
  const Type QFLEET_CPU_ISA_NAME(prefix) = __VA_ARGS__; \
  }
