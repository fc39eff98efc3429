// The cpu executor of state-vector circuits. Its kernels (sv_cpu_impl.hpp) are
// compiled once per instruction set (cpu/isa_sv.cpp, cpu_isa.hpp) and picked at
// run time; they read the packed plan (kern::SvPlan) and its call record like the
// cuda bodies do. Everything crossing here is plain data so the
// per-ISA code never instantiates a std:: template another ISA's object could emit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "kernels/sv_plan.hpp"

namespace qfleet::cpu {

// One batched call: the packed plan's call record, read by every executor.
template <class R>
using Call = kern::SvCall<R>;

// How execute() runs a call: tile width (the ISA's lanes, or 1), whether kernels
// split one state's amplitudes across threads, and the workspace.
template <class R>
struct Exec {
  int lanes = 1;
  bool amplitude_parallel = false;
  int threads = 1;
  R* work = nullptr;  // scratch from shared_reals + thread_reals
  std::size_t work_per_thread = 0;
};

// One instruction set's state-vector kernels (a part of its cpu::CpuIsa row).
struct SvIsaKernels {
  void (*run_f32)(const kern::SvPlan&, const Call<float>&, const Exec<float>&);
  void (*run_f64)(const kern::SvPlan&, const Call<double>&, const Exec<double>&);
  // Scratch the run needs: shared part + per-thread part, in reals.
  std::size_t (*shared_reals)(const kern::SvPlan&, int lanes, bool adjoint);
  std::size_t (*thread_reals)(const kern::SvPlan&, int lanes, bool adjoint);
};

struct CpuIsa;  // cpu_isa.hpp

// Runs a call on the plan's packed form with the kernels of `isa`, choosing tile
// width, threading and workspace.
template <class R>
void execute(const CpuIsa& isa, const detail::Plan& plan, const Call<R>& call);

}  // namespace qfleet::cpu
