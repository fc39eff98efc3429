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

// One instruction set's open-system kernels (a part of its cpu::CpuIsa row): run
// `runs` tasks, return 0 or 1 on failure.
struct OpenIsaKernels {
  int (*run_f32)(const kern::OpenView&, const OpenCall<float>&, std::size_t, float*, int, std::uint64_t*,
                 std::uint64_t*);
  int (*run_f64)(const kern::OpenView&, const OpenCall<double>&, std::size_t, double*, int, std::uint64_t*,
                 std::uint64_t*);
};

struct CpuIsa;  // cpu_isa.hpp

template <class R>
void execute_open(const CpuIsa& isa, const detail::OpenPlan& plan, const OpenCall<R>& call);

}  // namespace qfleet::cpu
