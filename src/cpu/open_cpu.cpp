// Open-system execution on the cpu: holds the gradient rows, reports failures and
// broadcasts/reduces results. The per-task work is open_cpu_impl.hpp, compiled per
// instruction set (cpu_isa.hpp).
#include "cpu/open_cpu.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/cpu_isa.hpp"
#include "qfleet/error.hpp"

namespace qfleet::cpu {

namespace {

// One simulation stands for identical tasks: their cotangents summed into one row
// (`sums`), in task order.
template <class R>
const R* summed_rows(const R* cot, std::size_t batch, std::size_t per, std::vector<R>& sums) {
  if (!cot || batch == 1) return cot;
  sums.assign(per, R(0));
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < per; ++i) sums[i] += cot[b * per + i];
  return sums.data();
}

}  // namespace

template <class R>
void execute_open(const CpuIsa& isa, const detail::OpenPlan& plan, const OpenCall<R>& call) {
  const std::size_t B = call.batch;
  const int nseg = plan.sys.n_segments(), nctrl = plan.sys.n_controls();
  const std::size_t n_amp = std::size_t(nseg) * nctrl, n_drift = plan.a_drift.size(), n_rate = plan.a_rate.size();
  const bool identical = kern::identical_tasks(call);
  const std::size_t runs = identical ? 1 : B;
  OpenCall<R> c = call;
  thread_local std::vector<R> fid_sums, leak_sums, exp_sums, final_sums;
  if (identical && c.adjoint) {
    const std::size_t per_final =
        2 * ((!plan.closed && !plan.gate) ? std::size_t(plan.d) * plan.d : std::size_t(plan.n) * plan.c);
    c.cot_fidelity = summed_rows(c.cot_fidelity, B, 1, fid_sums);
    c.cot_leakage = summed_rows(c.cot_leakage, B, 1, leak_sums);
    c.cot_expvals = summed_rows(c.cot_expvals, B, std::size_t(nseg + 1) * plan.observables.size(), exp_sums);
    c.cot_final = summed_rows(c.cot_final, B, per_final, final_sums);
  }
  // Per-task gradient rows, reduced in task order afterwards when a parameter is shared.
  thread_local std::vector<R> rows;
  const std::size_t row = n_amp + n_drift + n_rate + std::size_t(nseg);
  if (c.adjoint && rows.size() < runs * row) rows.resize(runs * row);
  std::uint64_t computed = 0, reused = 0;
  const OpenIsaKernels& k = *isa.open;
  const kern::OpenView view = detail::open_call_view(plan.view, c);
  int failed;
  if constexpr (std::is_same_v<R, float>) {
    failed = k.run_f32(view, c, runs, rows.data(), plan.options.num_threads, &computed, &reused);
  } else {
    failed = k.run_f64(view, c, runs, rows.data(), plan.options.num_threads, &computed, &reused);
  }
  if (failed) {
    const SolverInfo& solver = solver_info(plan.options.solver);
    throw Error(solver.adaptive
                    ? std::string(solver.name) +
                          ": step size underflow (more than 10^6 steps in one segment); loosen rtol/atol"
                : plan.action
                    ? "the exact solver's action needs more than 10^6 Taylor steps in a segment (||dt A||_1 above "
                      "10^7, or not finite), or ran out of memory; shorten the segments"
                    : "open-system simulation failed (out of memory?)");
  }
  plan.computed += computed;
  plan.reused += reused;
  plan.calls += 1;

  if (identical && B > 1) {  // broadcast task 0's outputs
    if (c.fidelity) std::fill(c.fidelity + 1, c.fidelity + B, c.fidelity[0]);
    if (c.leakage) std::fill(c.leakage + 1, c.leakage + B, c.leakage[0]);
    if (c.expvals) {
      const std::size_t per = std::size_t(nseg + 1) * plan.observables.size();
      for (std::size_t b = 1; b < B; ++b) std::copy(c.expvals, c.expvals + per, c.expvals + b * per);
    }
    if (c.final_state) {
      const std::size_t per = 2 * ((!plan.closed && !plan.gate) ? std::size_t(plan.d) * plan.d : std::size_t(plan.n) * plan.c);  // reals
      for (std::size_t b = 1; b < B; ++b) std::copy(c.final_state, c.final_state + per, c.final_state + b * per);
    }
  }
  if (!c.adjoint) return;
  auto scatter = [&](R* out, bool per_task, std::size_t offset, std::size_t len) {
    if (!out || len == 0) return;
    if (per_task) {
      for (std::size_t b = 0; b < B; ++b) std::copy_n(rows.data() + b * row + offset, len, out + b * len);
    } else {
      std::fill(out, out + len, R(0));
      for (std::size_t b = 0; b < runs; ++b)
        for (std::size_t i = 0; i < len; ++i) out[i] += rows[b * row + offset + i];
    }
  };
  scatter(c.grad_amplitudes, c.amplitudes_per_task, 0, n_amp);
  scatter(c.grad_drift, c.drift_per_task, n_amp, n_drift);
  scatter(c.grad_rates, c.rates_per_task, n_amp + n_drift, n_rate);
  scatter(c.grad_durations, c.durations_per_task, n_amp + n_drift + n_rate, std::size_t(nseg));
}

template void execute_open<float>(const CpuIsa&, const detail::OpenPlan&, const OpenCall<float>&);
template void execute_open<double>(const CpuIsa&, const detail::OpenPlan&, const OpenCall<double>&);

}  // namespace qfleet::cpu
