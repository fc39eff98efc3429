// The cpu executor of open-system programs (src/core/open_plan.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/open_plan.hpp"

namespace qfleet::cpu {

template <class R>
struct OpenCall {
  std::size_t batch = 0;
  const R* amplitudes = nullptr;
  bool amplitudes_per_task = false;
  const R* drift = nullptr;
  bool drift_per_task = false;
  const R* rates = nullptr;
  bool rates_per_task = false;
  const std::complex<R>* initial = nullptr;  // per task: [B, d] (pure) or [B, d, d] (density)
  R* fidelity = nullptr;
  R* leakage = nullptr;
  R* expvals = nullptr;
  std::complex<R>* final_state = nullptr;
  const R* cot_fidelity = nullptr;
  const R* cot_leakage = nullptr;
  bool adjoint = false;
  R* grad_amplitudes = nullptr;
  R* grad_drift = nullptr;
  R* grad_rates = nullptr;
};

// Per-ISA entry points (open_cpu_<isa>.cpp): run `runs` tasks, return 0 or 1 on failure.
struct OpenIsaKernels {
  const char* name;
  int (*run_f32)(const detail::OpenPlan&, const OpenCall<float>&, std::size_t, bool, float*, std::uint64_t*,
                 std::uint64_t*);
  int (*run_f64)(const detail::OpenPlan&, const OpenCall<double>&, std::size_t, bool, double*, std::uint64_t*,
                 std::uint64_t*);
};

template <class R>
void execute_open(const detail::OpenPlan& plan, const OpenCall<R>& call);

}  // namespace qfleet::cpu
