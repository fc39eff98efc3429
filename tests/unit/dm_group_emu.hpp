// The density-matrix group body (kernels/dm_group.hpp: what a GPU thread block per
// sample runs) on a ref::Batch, on a group of std::threads (unit/group_emu.hpp), like
// ref::q_forward / q_vjp: the emulated cuda row of DmMatrix.* and DmGroupBody.*.
#pragma once

#include <complex>
#include <limits>
#include <vector>

#include "core/dm_compiled.hpp"
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
    if (c.cotangents != nullptr && segment_cap > 0) {  // (the cuda backend's cut)
      begin = qfleet::detail::cut_dm_segments(dp, segment_cap);
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

  std::vector<double> forward(const ref::Batch& b) const {
    return body_forward<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, dp.n_outputs, b);
  }
  // Each sample's density matrix, row-major entries.
  std::vector<std::complex<double>> states(const ref::Batch& b) const {
    return body_states<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, 2 * dp.dim2, b);
  }
  ref::QGrad<R> vjp(const ref::Batch& b, const std::vector<double>& cot) const {
    return body_vjp<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, dp.n_outputs, b, cot);
  }
};

}  // namespace emu
