// Runs the open-system cuda backend's task body (kern::open_run_task) on the CPU in
// its two launch shapes: a task per std::thread (the `thread` shape) or a task per
// group of std::threads sharing its workspace (the `warp` and `block` shapes;
// unit/group_emu.hpp), over the host copy of the packed plan, with the backend's
// zeroed shared-gradient sums, atomic adds and step-store retries. Used by the
// open-system matrix (as its emulated rows) and by OpenGpuPaths.*.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/open_plan.hpp"
#include "kernels/open_run_task.hpp"
#include "unit/group_emu.hpp"
#include "unit/open_harness.hpp"

namespace emu {

// The plan as the device holds it: built, finished and packed like an upload.
inline std::unique_ptr<qfleet::detail::OpenPlan> packed_plan(const ref::Model& m,
                                                            const qfleet::OpenCompileOptions& o) {
  std::unique_ptr<qfleet::detail::OpenPlan> p(qfleet::detail::build_open_plan(ref::build(m), o));
  qfleet::detail::finish_open_plan(*p);
  qfleet::detail::pack_open_plan(*p);
  return p;
}

struct AtomicAdd {
  template <class R>
  void operator()(R* p, R v) const {
    std::atomic_ref<R>(*p).fetch_add(v);
  }
};

// Every task of a call run by `threads` std::threads the way GPU threads run them
// (grid stride, one workspace each, shared gradients zeroed first) or, with
// group > 0, by `threads` groups of `group` std::threads the way warps and blocks
// run them (a task per group, its workspace shared by the members); returns the
// OR of 1 << status over the tasks (checking that every member of a group saw the
// same status).
template <class R>
int run_like_gpu(const qfleet::detail::OpenPlan& p, const qfleet::kern::OpenTaskCall<R>& c, int threads, int cap,
                 int group = 0) {
  namespace kern = qfleet::kern;
  const kern::OpenView v = qfleet::detail::open_call_view(p.view, c);  // (as the staged call's)
  if (c.adjoint) {
    const std::size_t n_amp = std::size_t(v.nseg) * v.nctrl;
    if (c.grad_amplitudes && !c.amplitudes_per_task) std::fill_n(c.grad_amplitudes, n_amp, R(0));
    if (c.grad_drift && !c.drift_per_task) std::fill_n(c.grad_drift, v.ndrift, R(0));
    if (c.grad_rates && !c.rates_per_task) std::fill_n(c.grad_rates, v.nrate, R(0));
    if (c.grad_durations && !c.durations_per_task) std::fill_n(c.grad_durations, v.nseg, R(0));
  }
  const std::size_t per = kern::open_task_work<R>(v, cap) + kern::open_row_work<R>(v);
  if (group > 0) {
    std::vector<std::vector<kern::Cx<R>>> work(threads, std::vector<kern::Cx<R>>(per));
    // The group's sums in double in both precisions, like the device's (kernels/group.hpp).
    const std::vector<int> seen = run_groups(threads, group, [&](int gi, const TaskGroup& g) {
      int st = 0;
      for (std::size_t b = std::size_t(gi); b < c.batch; b += std::size_t(threads)) {
        const int s = kern::open_run_task<R, int>(v, c, b, work[gi].data(), cap, AtomicAdd{}, g);
        if (s != kern::kOpenOk) st |= 1 << s;
      }
      return st;
    });
    int status = 0;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i], seen[i - i % group]) << "members of one group disagree on the status";
      status |= seen[i];
    }
    return status;
  }
  std::atomic<int> status{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<kern::Cx<R>> work(per);
      for (std::size_t b = std::size_t(t); b < c.batch; b += std::size_t(threads)) {
        const int st = v.n == 4 ? kern::open_run_task<R, kern::FixedDim<4>>(v, c, b, work.data(), cap, AtomicAdd{})
                                : kern::open_run_task<R, int>(v, c, b, work.data(), cap, AtomicAdd{});
        if (st != kern::kOpenOk) status.fetch_or(1 << st);
      }
    });
  }
  for (auto& th : pool) th.join();
  return status.load();
}

// An emulated launch shape: `slots` threads (group 0) or groups of `group` threads.
struct OpenShape {
  const char* name;
  int slots, group;
};

// A vjp on the emulated shape, like the cuda backend's staged call: every output and
// gradient buffer the harness's qvjp fills, the dopri5/tsit5 step store grown 4x from
// 64 steps per segment while a task reports it full (a failure past 2^16 or on any
// other status).
template <class R>
ref::QOut<R> emulated_vjp(const qfleet::detail::OpenPlan& p, const OpenShape& shape, const ref::Model& m,
                          const ref::TaskBatch& b, const std::vector<double>& cot_f, const std::vector<double>& cot_l,
                          ref::Want w) {
  const ref::QArgs<R> a(b);
  ref::QOut<R> o;
  o.size(m, b.B, w);
  ref::gradient_buffers(o, a);
  const std::vector<R> cf(cot_f.begin(), cot_f.end()), cl(cot_l.begin(), cot_l.end());
  auto ptr = [](auto& v) { return v.empty() ? nullptr : v.data(); };
  qfleet::kern::OpenTaskCall<R> c;
  c.batch = b.B;
  c.amplitudes = ptr(a.amps);
  c.amplitudes_per_task = b.amp_pt;
  c.drift = ptr(a.drift);
  c.drift_per_task = b.drift_pt;
  c.rates = ptr(a.rates);
  c.rates_per_task = b.rates_pt;
  c.initial = a.initial.empty() ? nullptr : reinterpret_cast<const R*>(a.initial.data());
  c.fidelity = ptr(o.fid);
  c.leakage = ptr(o.leak);
  c.expvals = ptr(o.exp);
  c.final_state = o.fin.empty() ? nullptr : reinterpret_cast<R*>(o.fin.data());
  c.adjoint = true;
  c.cot_fidelity = cf.data();
  c.cot_leakage = cl.data();
  c.grad_amplitudes = ptr(o.g_amp);
  c.grad_drift = ptr(o.g_drift);
  c.grad_rates = ptr(o.g_rates);
  for (int cap = 64;; cap *= 4) {
    const int status = run_like_gpu<R>(p, c, shape.slots, cap, shape.group);
    if (status == 0) break;
    if (status != 1 << qfleet::kern::kOpenStepCapacity || cap >= 1 << 16) {
      ADD_FAILURE() << shape.name << ": task status bits " << status << " with a store of " << cap << " steps";
      break;
    }
  }
  return o;
}

}  // namespace emu
