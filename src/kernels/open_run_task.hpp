// One task of a batched call as the cuda backend's thread or group runs it
// (kernels/open_task.hpp's task body, its cotangents read and its gradients written
// or summed); the cpu executor keeps deterministic per-task rows instead
// (src/cpu/open_cpu_impl.hpp). C++17, host and device (QFLEET_HD).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/open_task.hpp"
#include "kernels/open_view.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Extra workspace open_run_task needs beyond open_task_work: one gradient row.
template <class R>
QFLEET_HD inline std::size_t open_row_work(const OpenView& v) {
  const std::size_t row = std::size_t(v.nseg) * v.nctrl + v.ndrift + v.nrate + v.nseg;
  return (row * sizeof(R) + sizeof(Cx<R>) - 1) / sizeof(Cx<R>);
}

// One task of a batched call as a GPU thread runs it (the cpu executor keeps its own
// deterministic per-task rows instead): its cotangents, the task body, gradients of
// per-task parameters written in place and those of shared parameters added to the
// call's (zeroed) sums with add(dst, value) (an atomic add on the device). A task
// that fails gets NaN for its fidelity and leakage. work holds
// open_task_work(v, cap) + open_row_work(v) entries. With a group g, every member
// calls it with the same b and work, and rank 0 writes the results; every member
// returns the same status.
template <class R, class N, class Add, class G = SoloGroup>
QFLEET_HD int open_run_task(const OpenView& v, const OpenTaskCall<R>& c, std::size_t b, Cx<R>* work, int cap,
                            Add add, const G& g = G{}) {
  const R cf = c.cot_fidelity ? c.cot_fidelity[b] : R(0);
  const R cl = c.cot_leakage ? c.cot_leakage[b] : R(0);
  const std::size_t n_amp = std::size_t(v.nseg) * v.nctrl;
  R* row = reinterpret_cast<R*>(work + open_task_work<R>(v, cap));
  R* ga = nullptr;
  R* gd = nullptr;
  R* gr = nullptr;
  R* gt = nullptr;
  const std::size_t at_dur = n_amp + v.ndrift + v.nrate;
  if (c.adjoint) {
    if (c.grad_durations) gt = c.durations_per_task ? c.grad_durations + b * v.nseg : row + at_dur;
    if (c.grad_amplitudes) ga = c.amplitudes_per_task ? c.grad_amplitudes + b * n_amp : row;
    gd = c.drift_per_task ? (c.grad_drift ? c.grad_drift + b * v.ndrift : nullptr) : row + n_amp;
    gr = c.rates_per_task ? (c.grad_rates ? c.grad_rates + b * v.nrate : nullptr) : row + n_amp + v.ndrift;
  }
  std::uint64_t computed = 0, reused = 0;
  OpenTask<R, N, G> task(v, c, work, cap, g);
  const int status = task.run(b, b, cf, cl, ga, gd, gr, gt, computed, reused);
  if (g.rank() != 0) return status;
  if (status != kOpenOk) {
    const R nan = R(0) / R(0);
    if (c.fidelity) c.fidelity[b] = nan;
    if (c.leakage) c.leakage[b] = nan;
    return status;
  }
  if (c.adjoint) {
    if (!c.amplitudes_per_task && c.grad_amplitudes) {
      for (std::size_t i = 0; i < n_amp; ++i) add(c.grad_amplitudes + i, row[i]);
    }
    if (!c.drift_per_task && c.grad_drift) {
      for (int i = 0; i < v.ndrift; ++i) add(c.grad_drift + i, row[n_amp + i]);
    }
    if (!c.rates_per_task && c.grad_rates) {
      for (int i = 0; i < v.nrate; ++i) add(c.grad_rates + i, row[n_amp + v.ndrift + i]);
    }
    if (!c.durations_per_task && c.grad_durations) {
      for (int i = 0; i < v.nseg; ++i) add(c.grad_durations + i, row[at_dur + i]);
    }
  }
  return kOpenOk;
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
