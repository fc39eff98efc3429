// The cpu executor of density-matrix circuits (kernels/dm_plan.hpp): picks the
// tile width, the checkpoint segments
// of the adjoint sweep and the workspace. The per-tile work is dm_cpu_impl.hpp,
// compiled per instruction set (cpu/isa_dm.cpp, cpu_isa.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dm_compiled.hpp"
#include "cpu/sv_cpu.hpp"
#include "kernels/dm_plan.hpp"

namespace qfleet::cpu {

template <class R>
struct DmExec {
  int lanes = 1;
  bool amplitude_parallel = false;  // one large density matrix's groups split across threads
  int threads = 1;
  R* work = nullptr;
  std::size_t work_per_thread = 0;  // reals
  kern::DmSegments segments;
};

// One instruction set's density-matrix kernels (a part of its cpu::CpuIsa row).
struct DmIsaKernels {
  void (*run_f32)(const kern::DmPlan&, const Call<float>&, const DmExec<float>&);
  void (*run_f64)(const kern::DmPlan&, const Call<double>&, const DmExec<double>&);
  // Per-thread scratch of a tile, in reals (the weight partials come on top).
  std::size_t (*thread_reals)(const kern::DmPlan&, int lanes, bool adjoint, const kern::DmSegments&);
  // The call's uniform blocks, shared by the threads, in reals.
  std::size_t (*shared_reals)(const kern::DmPlan&, int lanes, bool adjoint);
};

// Runs a call (the state-vector call record: outputs, cotangents, gradients, states =
// density matrices [batch, 4^n], extra_probs = sampling probabilities with readout).
template <class R>
void execute_dm(const CpuIsa& isa, const detail::Plan& plan, const Call<R>& call);

}  // namespace qfleet::cpu
