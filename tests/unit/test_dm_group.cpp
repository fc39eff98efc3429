// The density-matrix group body (kernels/dm_group.hpp: what a GPU thread block per
// sample runs) on the CPU with groups of std::threads (unit/group_emu.hpp), against
// the cpu executor: outputs, density matrices, sampling probabilities, input and
// weight gradients (shared weights summed by atomic adds, per-sample weights), with
// stored and with checkpointed states, in both precisions.
#include <gtest/gtest.h>

#include <vector>

#include "core/dm_compiled.hpp"
#include "core/plan.hpp"
#include "kernels/dm_group.hpp"
#include "unit/group_emu.hpp"

namespace {

using qfleet::Param;

qfleet::Circuit noisy_circuit() {
  qfleet::Circuit c(3);
  c.add("RY", {0}, {Param::input(0)}).add("CNOT", {0, 2}).add("Rot", {1}, {Param::weight(0), 0.3, Param::weight(1)});
  c.channel("Depolarizing", {0}, {Param::weight(2, 0.1)}).channel("TwoQubitDepolarizing", {1, 2}, {0.05});
  c.kraus({2}, {{1, 0, 0, 0.8}, {0, 0.6, 0, 0}});
  c.add("CRX", {2, 1}, {Param::input(1)}).add("Toffoli", {0, 1, 2}).add("PauliX", {1});
  c.channel("ThermalRelaxation", {1}, {0.05, 40.0, Param::input(2, 30.0), 2.0});
  c.channel("GeneralizedAmplitudeDamping", {2}, {Param::weight(3, 0.2), 0.3});
  c.readout_error(0, 0.03, 0.06).readout_error(2, 0.1, 0.02);
  c.expval("Z0 X2").expval(qfleet::Observable::sum({{0.5, "Y1"}, {-1.0, "Z2"}})).probs({2, 0}).purity();
  return c;
}

template <class R>
void check(int segment_cap) {
  const qfleet::Circuit circ = noisy_circuit();
  qfleet::CompileOptions o;
  o.precision = std::is_same_v<R, float> ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::Program prog = qfleet::compile(circ, o);
  qfleet::detail::Plan plan(circ);
  qfleet::detail::build_dm_plan(circ, o, plan);
  const qfleet::kern::DmPlan& dp = plan.dm->view;
  const std::size_t B = 5, K = std::size_t(dp.n_outputs), ni = 3, nw = 4;
  std::mt19937_64 rng(17);
  std::vector<R> x, w, cot;
  for (std::size_t i = 0; i < B * ni; ++i) x.push_back(R(ref::uniform(rng, 0.1, 0.9)));
  for (std::size_t i = 0; i < B * nw; ++i) w.push_back(R(ref::uniform(rng, 0.1, 0.9)));
  for (std::size_t i = 0; i < B * K; ++i) cot.push_back(R(ref::uniform(rng, -1, 1)));
  const double tol = std::is_same_v<R, float> ? 2e-5 : 1e-12;
  for (bool per_sample : {false, true}) {
    const std::span<const R> ws(w.data(), per_sample ? B * nw : nw);
    const qfleet::BatchArgs<R> args{B, x, ws};
    std::vector<R> out(B * K), gi(B * ni), gw(ws.size());
    prog.vjp<R>(args, cot, qfleet::Gradients<R>{gi, gw}, out);
    std::vector<std::complex<R>> rho(B * 64);
    prog.density_matrices<R>(args, rho);
    // The group body, one sample after another, 3 threads per group.
    std::vector<R> gout(B * K, R(-9)), ggi(B * ni, R(-9)), ggw(ws.size(), R(0)), gst(B * 128, R(-9));
    qfleet::kern::SvCall<R> call;
    call.batch = B;
    call.inputs = x.data();
    call.weights = w.data();
    call.weights_per_sample = per_sample;
    call.outputs = gout.data();
    call.cotangents = cot.data();
    call.grad_inputs = ggi.data();
    call.grad_weights = ggw.data();
    call.reduce_weights = !per_sample;
    call.states = gst.data();
    std::vector<int> begin{0, dp.n_ops};
    qfleet::kern::DmSegments seg;
    seg.per_segment = dp.n_slots;
    if (segment_cap > 0) {  // segments of segment_cap parameterised ops
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
    const std::size_t st = 2 * dp.dim2;
    std::vector<R> rho_s(st), lam(st), stored(st * std::size_t(seg.per_segment)), ckpt(st * std::size_t(seg.count)),
        gslot(std::size_t(dp.n_params)), probs(16), table(qfleet::kern::dm_table_reals(dp, true));
    const qfleet::kern::DmGroupScratch scratch{rho_s.data(), lam.data(), stored.data(), ckpt.data(),
                                               gslot.data(), probs.data(), table.data()};
    emu::run_units<R>(1, 3, [&](int, int r, emu::Barrier* bar, std::vector<R>* slots) {
      const emu::ThreadGroup<R> g{r, 3, bar, slots};
      for (std::size_t b = 0; b < B; ++b) qfleet::kern::dm_group_run(dp, call, seg, b, scratch, g);
    });
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(gout[i], out[i], tol) << "output " << i;
    for (std::size_t i = 0; i < gi.size(); ++i) EXPECT_NEAR(ggi[i], gi[i], tol * 10) << "grad input " << i;
    for (std::size_t i = 0; i < gw.size(); ++i) EXPECT_NEAR(ggw[i], gw[i], tol * 10) << "grad weight " << i;
    for (std::size_t i = 0; i < rho.size(); ++i) {
      EXPECT_NEAR(gst[2 * i], rho[i].real(), tol);
      EXPECT_NEAR(gst[2 * i + 1], rho[i].imag(), tol);
    }
  }
}

TEST(DmGroupBody, MatchesTheCpuExecutor) {
  check<double>(0);
  check<float>(0);
}

TEST(DmGroupBody, CheckpointedSegmentsMatch) { check<double>(2); }

}  // namespace
