// The density-matrix group body (kernels/dm_group.hpp: what a GPU thread block per
// sample runs) on a ref::Batch, on a group of std::threads (unit/group_emu.hpp), like
// ref::q_forward / q_vjp: the emulated cuda row of DmMatrix.* and DmGroupBody.*.
#pragma once

#include <complex>
#include <limits>
#include <vector>

#include "kernels/dm_group.hpp"
#include "unit/group_emu.hpp"
#include "unit/harness.hpp"

namespace emu {

template <class R>
struct DmRunner {
  const qfleet::kern::DmPlan& dp;
  int G = 3;            // threads per group
  int segment_cap = 0;  // > 0: the adjoint recomputes segments of this many parameterised ops

  // The body over the call's samples, one after another, with the scratch a launch
  // gives a block (the table filled with NaN: an entry the body reads before it writes
  // shows in the results); reduced weight gradients zeroed first, like the launch.
  void exec(const qfleet::kern::SvCall<R>& c) const {
    std::vector<int> begin{0, dp.n_ops};
    qfleet::kern::DmSegments seg;
    seg.per_segment = dp.n_slots;
    if (c.cotangents != nullptr && segment_cap > 0) {
      begin = {0};
      int in = 0;
      for (int k = 0; k < dp.n_ops; ++k) {
        if (dp.ops[k].slot < 0) continue;
        if (in == segment_cap) {
          begin.push_back(k);
          in = 0;
        }
        ++in;
      }
      begin.push_back(dp.n_ops);
      seg.per_segment = segment_cap;
    }
    seg.count = int(begin.size()) - 1;
    seg.begin = begin.data();
    if (c.cotangents != nullptr && c.grad_weights != nullptr && c.reduce_weights) {
      for (int i = 0; i < dp.n_weights; ++i) c.grad_weights[i] = 0;
    }
    const std::size_t st = 2 * dp.dim2;
    const bool adjoint = c.cotangents != nullptr;
    std::vector<R> rho(st), lam(st), stored(st * std::size_t(seg.per_segment)), ckpt(st * std::size_t(seg.count)),
        gslot(std::size_t(dp.n_params) + 1), probs(std::size_t{2} << std::max(dp.max_probs_k, c.extra_k)),
        table(qfleet::kern::dm_table_reals(dp, adjoint), std::numeric_limits<R>::quiet_NaN());
    const qfleet::kern::DmGroupScratch scratch{rho.data(),   lam.data(),   stored.data(), ckpt.data(),
                                               gslot.data(), probs.data(), table.data()};
    run_units<R>(1, G, [&](int, int r, Barrier* bar, std::vector<R>* slots) {
      const ThreadGroup<R> g{r, G, bar, slots};
      for (std::size_t b = 0; b < c.batch; ++b) qfleet::kern::dm_group_run(dp, c, seg, b, scratch, g);
    });
  }

  qfleet::kern::SvCall<R> call(const ref::Run<R>& run, const ref::Batch& b) const {
    qfleet::kern::SvCall<R> c;
    c.batch = b.B;
    c.inputs = run.x.data();
    c.weights = run.w.data();
    c.weights_per_sample = b.per_sample && b.B > 1 && b.nw > 0 && run.w.size() == b.B * std::size_t(b.nw);
    return c;
  }
  std::vector<double> forward(const ref::Batch& b) const {
    const ref::Run<R> run(b);
    std::vector<R> out(b.B * std::size_t(dp.n_outputs), R(-99));
    auto c = call(run, b);
    c.outputs = out.data();
    exec(c);
    return {out.begin(), out.end()};
  }
  // Each sample's density matrix, row-major entries.
  std::vector<std::complex<double>> states(const ref::Batch& b) const {
    const ref::Run<R> run(b);
    std::vector<R> st(b.B * 2 * dp.dim2, R(-99));
    auto c = call(run, b);
    c.states = st.data();
    exec(c);
    std::vector<std::complex<double>> out;
    for (std::size_t i = 0; i < st.size(); i += 2) out.emplace_back(st[i], st[i + 1]);
    return out;
  }
  // Gradients and the fused forward outputs (gw: [nw] shared or [B, nw] per sample).
  ref::QGrad<R> vjp(const ref::Batch& b, const std::vector<double>& cot) const {
    const ref::Run<R> run(b);
    const std::vector<R> ct(cot.begin(), cot.end());
    auto c = call(run, b);
    std::vector<R> gi(b.B * std::size_t(b.ni), R(-99)), gw((c.weights_per_sample ? b.B : 1) * std::size_t(b.nw), R(-99));
    std::vector<R> out(b.B * std::size_t(dp.n_outputs), R(-99));
    c.cotangents = ct.data();
    c.grad_inputs = b.ni ? gi.data() : nullptr;
    c.grad_weights = b.nw ? gw.data() : nullptr;
    c.reduce_weights = !c.weights_per_sample;
    c.outputs = out.data();
    exec(c);
    return ref::QGrad<R>{{gi.begin(), gi.end()}, {gw.begin(), gw.end()}, {out.begin(), out.end()}};
  }
};

}  // namespace emu
