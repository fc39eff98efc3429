// Runs the cuda backend's group bodies on the CPU (the circuit body of
// kernels/sv_group.hpp, and the open-system task of kernels/open_task.hpp with a
// kernels/group.hpp group): G std::threads with a barrier stand in for a warp
// (slice) or a thread block, so every CI run checks the exact code the GPU executes (its work split,
// barriers, group sums, padding members and atomic gradient sums), not a copy.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/plan.hpp"
#include "core/sv_pack.hpp"
#include "kernels/group.hpp"
#include "kernels/sv_group.hpp"
#include "kernels/sv_lanes.hpp"
#include "unit/harness.hpp"

namespace emu {

// A blocking barrier: groups have more threads than CI has cores, and a spinning
// one (std::barrier in libstdc++) would burn their time slices.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(m_);
    const std::uint64_t gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0;
  std::uint64_t gen_ = 0;
};

// Every member publishes v, then combines all of them in rank order (a fixed
// order, like the device's), so every member gets the same bits.
template <class T, class Op>
T reduce_in_order(Barrier* bar, std::vector<T>& slots, int r, int n, T v, Op op) {
  slots[r] = v;
  bar->arrive_and_wait();
  T t = slots[0];
  for (int i = 1; i < n; ++i) t = op(t, slots[i]);
  bar->arrive_and_wait();
  return t;
}

// G std::threads as a group: of kernels/sv_group.hpp (the circuit body) and of
// kernels/group.hpp (open-system tasks, expm, the LU solve; TaskGroup), with
// reductions in rank order, like the device's fixed order.
template <class R>
struct ThreadGroup {
  static constexpr bool kSolo = false;
  int r, n;
  Barrier* bar;
  std::vector<R>* slots;
  int rank() const { return r; }
  int size() const { return n; }
  void sync() const { bar->arrive_and_wait(); }
  R sum(R v) const {
    return reduce_in_order(bar, *slots, r, n, v, [](R a, R b) { return a + b; });
  }
  R max(R v) const {
    return reduce_in_order(bar, *slots, r, n, v, [](R a, R b) { return R(qfleet::kern::nan_max(a, b)); });
  }
  void atomic_add(R* p, R v) const { std::atomic_ref<R>(*p).fetch_add(v); }
  // Parts (kernels/sv_group.hpp's block table): every thread its own, summed in
  // rank order afterwards, as sum() does.
  int n_parts() const { return n; }
  int part() const { return r; }
  R part_sum(R v) const { return v; }
  bool part_leader() const { return true; }
};
using TaskGroup = ThreadGroup<double>;

// A warp of `warp` std::threads as lane groups of kernels/sv_lanes.hpp: circuits of
// W = 2^n consecutive lanes, shuffles through a slot per lane between two barriers,
// and the cross-circuit gradient sum in the device's butterfly order.
template <class R>
struct LaneThreads {
  int r, W, warp;
  Barrier* bar;
  std::vector<R>* slots;
  int lane() const { return r % W; }
  int width() const { return W; }
  R shfl_xor(R v, unsigned m) const {
    (*slots)[r] = v;
    bar->arrive_and_wait();
    const R o = (*slots)[r ^ int(m)];
    bar->arrive_and_wait();
    return o;
  }
  R shfl(R v, int j) const {  // lane j of this circuit's W lanes
    (*slots)[r] = v;
    bar->arrive_and_wait();
    const R o = (*slots)[r - r % W + j];
    bar->arrive_and_wait();
    return o;
  }
  void sync() const { bar->arrive_and_wait(); }
  void reduce_add(R* p, R v, bool contribute) const {
    v = contribute ? v : R(0);
    for (int m = W; m < warp; m <<= 1) v += shfl_xor(v, unsigned(m));
    if (r == 0) std::atomic_ref<R>(*p).fetch_add(v);
  }
};

// Starts `units` units of `members` std::threads each, every unit with its own
// barrier and reduction slots, runs body(unit, rank, barrier, slots) on each thread
// and joins them.
template <class R, class Body>
void run_units(int units, int members, Body body) {
  std::vector<std::unique_ptr<Barrier>> bars;
  std::vector<std::vector<R>> slots(static_cast<std::size_t>(units), std::vector<R>(static_cast<std::size_t>(members)));
  for (int u = 0; u < units; ++u) bars.push_back(std::make_unique<Barrier>(members));
  std::vector<std::thread> threads;
  for (int u = 0; u < units; ++u) {
    for (int r = 0; r < members; ++r) {
      threads.emplace_back([&, u, r] { body(u, r, bars[std::size_t(u)].get(), &slots[std::size_t(u)]); });
    }
  }
  for (auto& t : threads) t.join();
}

// Runs body(group) on `groups` groups of G threads each (group index gi, member
// group.rank()); every member's return value is collected as out[gi * G + rank].
template <class Body>
auto run_groups(int groups, int G, Body body) {
  using Ret = decltype(body(0, std::declval<const TaskGroup&>()));
  std::vector<Ret> out(std::size_t(groups) * G);
  run_units<double>(groups, G, [&](int gi, int r, Barrier* bar, std::vector<double>* slots) {
    out[std::size_t(gi) * G + r] = body(gi, TaskGroup{r, G, bar, slots});
  });
  return out;
}

// The plan as the device holds it (packed into one blob and relocated, like the
// upload), with the call's reduced weight gradients zeroed (like the launch's memset).
struct DevicePlan {
  std::vector<std::byte> copy;
  qfleet::kern::SvPlan view;

  template <class R>
  DevicePlan(const qfleet::detail::Plan& plan, const qfleet::kern::SvCall<R>& call)
      : copy(plan.blob), view(qfleet::detail::sv_view_at(plan.offsets, copy.data())) {
    if (call.cotangents != nullptr && call.grad_weights != nullptr && call.reduce_weights) {
      for (int i = 0; i < plan.n_weights; ++i) call.grad_weights[i] = 0;
    }
  }
};

// A group's block table (kernels/sv_table.hpp) for tiles of L samples, or none;
// filled with junk the body must overwrite before it reads.
template <int L, class R>
std::vector<R> block_table(const qfleet::kern::SvPlan& p, const qfleet::kern::SvCall<R>& call, int G, bool table) {
  if (!table) return {};
  return std::vector<R>(qfleet::kern::sv_table_reals<L>(p, call.cotangents != nullptr, G), R(-7));
}

// Runs every sample of `call` with a group of G threads (with a block table or
// without), then one padding member (active = false) that must leave every output
// untouched.
template <class R>
void run(const qfleet::detail::Plan& plan, qfleet::kern::SvCall<R> call, int G, bool table = false) {
  const DevicePlan dp(plan, call);
  std::vector<R> psi(2 * plan.dim), lam(2 * plan.dim);
  std::vector<R> tab = block_table<1>(dp.view, call, G, table);
  run_units<R>(1, G, [&](int, int r, Barrier* bar, std::vector<R>* slots) {
    const ThreadGroup<R> g{r, G, bar, slots};
    for (std::size_t b = 0; b <= call.batch; ++b) {  // like the device's loop over a block's circuits
      const bool active = b < call.batch;
      qfleet::kern::sv_group_run(dp.view, call, active ? b : call.batch - 1, active, psi.data(), lam.data(), g, 0,
                                 table ? tab.data() : nullptr);
      g.sync();
    }
  });
}

// Runs every sample of `call` with the register body: warps of `warp` threads, each
// holding warp / 2^n circuits, two warps at once (their atomic sums race, as on a
// device), and enough warps that the last ones are partly or wholly padding.
template <class R>
void run_lanes(const qfleet::detail::Plan& plan, qfleet::kern::SvCall<R> call, int warp, bool table = false) {
  const DevicePlan dp(plan, call);
  const int W = 1 << plan.n;
  const std::size_t per_warp = std::size_t(warp / W);
  const std::size_t n_warps = (call.batch + per_warp - 1) / per_warp + 1;  // + one all-padding warp
  constexpr int kWarps = 2;
  // a block table per circuit of each warp (parts 0: the lanes sum by shuffles)
  std::vector<std::vector<R>> tabs;
  for (std::size_t t = 0; t < kWarps * per_warp; ++t) tabs.push_back(block_table<1>(dp.view, call, 0, table));
  run_units<R>(kWarps, warp, [&](int w, int r, Barrier* bar, std::vector<R>* slots) {
    const LaneThreads<R> g{r, W, warp, bar, slots};
    R* tab = table ? tabs[std::size_t(w) * per_warp + std::size_t(r / W)].data() : nullptr;
    for (std::size_t blk = std::size_t(w); blk < n_warps; blk += kWarps) {  // the device's grid stride
      const std::size_t b = blk * per_warp + std::size_t(r / W);
      const bool active = b < call.batch;
      qfleet::kern::sv_lanes_run(dp.view, call, active ? b : call.batch - 1, active, g, tab);
      g.sync();
    }
  });
}

// Runs every sample of `call` with the interleaved shape: tiles of L samples side by
// side in one buffer, each sample a group of G threads (its own barrier: the lanes'
// amplitudes are disjoint), every lane of a tile running the same plan, the last
// tile partly padding, and one more tile wholly padding.
template <int L, class R>
void run_interleaved(const qfleet::detail::Plan& plan, qfleet::kern::SvCall<R> call, int G, bool table = false) {
  const DevicePlan dp(plan, call);
  const std::size_t n_tiles = (call.batch + L - 1) / L + 1;
  std::vector<R> psi(2 * plan.dim * L, R(-7)), lam(2 * plan.dim * L, R(-7));  // junk the body must overwrite
  std::vector<R> tab = block_table<L>(dp.view, call, G, table);
  run_units<R>(L, G, [&](int l, int r, Barrier* bar, std::vector<R>* slots) {
    const ThreadGroup<R> g{r, G, bar, slots};
    for (std::size_t t = 0; t < n_tiles; ++t) {
      const std::size_t b = t * L + std::size_t(l);
      const bool active = b < call.batch;
      qfleet::kern::sv_group_run<L>(dp.view, call, active ? b : call.batch - 1, active, psi.data(),
                                    call.cotangents ? lam.data() : nullptr, g, l, table ? tab.data() : nullptr);
      g.sync();
    }
  });
}

// A batch's call to a body (inputs, weights; shared or per sample), and the body's
// forward, states and vjp on a ref::Batch through exec(call), like ref::q_forward /
// q_states / q_vjp: the framing of every emulated row (Runner here, DmRunner in
// unit/dm_group_emu.hpp).
template <class R>
qfleet::kern::SvCall<R> batch_call(const ref::Run<R>& run, const ref::Batch& b) {
  qfleet::kern::SvCall<R> c;
  c.batch = b.B;
  c.inputs = run.x.data();
  c.weights = run.w.data();
  c.weights_per_sample = b.per_sample && b.B > 1 && b.nw > 0 && run.w.size() == b.B * std::size_t(b.nw);
  return c;
}
template <class R, class Exec>
std::vector<double> body_forward(Exec exec, int n_outputs, const ref::Batch& b) {
  const ref::Run<R> run(b);
  std::vector<R> out(b.B * std::size_t(n_outputs), R(-99));
  auto c = batch_call(run, b);
  c.outputs = out.data();
  exec(c);
  return {out.begin(), out.end()};
}
// Each sample's state as `reals` interleaved reals (re, im).
template <class R, class Exec>
std::vector<std::complex<double>> body_states(Exec exec, std::size_t reals, const ref::Batch& b) {
  const ref::Run<R> run(b);
  std::vector<R> st(b.B * reals, R(-99));
  auto c = batch_call(run, b);
  c.states = st.data();
  exec(c);
  std::vector<std::complex<double>> out;
  for (std::size_t i = 0; i < st.size(); i += 2) out.emplace_back(st[i], st[i + 1]);
  return out;
}
// Gradients and the fused forward outputs (gw: [nw] shared or [B, nw] per sample).
template <class R, class Exec>
ref::QGrad<R> body_vjp(Exec exec, int n_outputs, const ref::Batch& b, const std::vector<double>& cot) {
  const ref::Run<R> run(b);
  const std::vector<R> ct(cot.begin(), cot.end());
  auto c = batch_call(run, b);
  std::vector<R> gi(b.B * std::size_t(b.ni), R(-99)), gw((c.weights_per_sample ? b.B : 1) * std::size_t(b.nw), R(-99));
  std::vector<R> out(b.B * std::size_t(n_outputs), R(-99));
  c.cotangents = ct.data();
  c.grad_inputs = b.ni ? gi.data() : nullptr;
  c.grad_weights = b.nw ? gw.data() : nullptr;
  c.reduce_weights = !c.weights_per_sample;
  c.outputs = out.data();
  exec(c);
  return ref::QGrad<R>{{gi.begin(), gi.end()}, {gw.begin(), gw.end()}, {out.begin(), out.end()}};
}

// The group body on a ref::Batch, like ref::q_forward / q_vjp / q_states.
template <class R>
struct Runner {
  const qfleet::detail::Plan& plan;
  int G;
  int warp = 0;  // > 0: the register body (kernels/sv_lanes.hpp) on warps of this many threads
  int tile = 0;  // 4 or 32: the interleaved shape, tiles of this many samples (G threads each)
  bool table = false;  // the group bodies with a block table (kernels/sv_table.hpp)

  void exec(const qfleet::kern::SvCall<R>& c) const {
    if (warp > 0) {
      run_lanes(plan, c, warp, table);
    } else if (tile == 4) {
      run_interleaved<4>(plan, c, G, table);
    } else if (tile == 32) {
      run_interleaved<32>(plan, c, G, table);
    } else {
      emu::run(plan, c, G, table);
    }
  }

  std::vector<double> forward(const ref::Batch& b) const {
    return body_forward<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, plan.n_outputs, b);
  }
  std::vector<std::complex<double>> states(const ref::Batch& b) const {
    return body_states<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, plan.dim * 2, b);
  }
  // Probabilities over `wires` (the sampling path's extra probabilities).
  std::vector<double> probs(const ref::Batch& b, const std::vector<int>& wires) const {
    const ref::Run<R> run(b);
    auto c = batch_call(run, b);
    c.extra_k = static_cast<int>(wires.size());
    for (int i = 0; i < c.extra_k; ++i) c.extra_pos[i] = c.extra_sorted[i] = plan.n - 1 - wires[i];
    std::sort(c.extra_sorted, c.extra_sorted + c.extra_k);
    std::vector<R> pr(b.B << c.extra_k, R(-99));
    c.extra_probs = pr.data();
    exec(c);
    return {pr.begin(), pr.end()};
  }
  ref::QGrad<R> vjp(const ref::Batch& b, const std::vector<double>& cot) const {
    return body_vjp<R>([this](const qfleet::kern::SvCall<R>& c) { exec(c); }, plan.n_outputs, b, cot);
  }
};

}  // namespace emu
