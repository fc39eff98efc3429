// The cpu executor of open-system programs (src/core/open_plan.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/open_plan.hpp"
#include "kernels/open_view.hpp"

namespace qfleet::cpu {

// One batched call (the shared task body's call record; complex buffers are
// (re, im) pairs of R).
template <class R>
using OpenCall = kern::OpenTaskCall<R>;

// Every task identical (all parameters shared, no per-task initial state): one
// simulation stands for the whole batch (its cotangents summed, its outputs broadcast).
template <class R>
bool identical_tasks(const OpenCall<R>& c) {
  return !c.amplitudes_per_task && !c.drift_per_task && !c.rates_per_task && !c.initial;
}

// Per-ISA entry points (open_cpu_<isa>.cpp): run `runs` tasks, return 0 or 1 on failure.
struct OpenIsaKernels {
  const char* name;
  int (*run_f32)(const kern::OpenView&, const OpenCall<float>&, std::size_t, bool, float*, int, std::uint64_t*,
                 std::uint64_t*);
  int (*run_f64)(const kern::OpenView&, const OpenCall<double>&, std::size_t, bool, double*, int, std::uint64_t*,
                 std::uint64_t*);
};

template <class R>
void execute_open(const detail::OpenPlan& plan, const OpenCall<R>& call);

}  // namespace qfleet::cpu
