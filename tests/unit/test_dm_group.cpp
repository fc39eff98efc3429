// The density-matrix group body (kernels/dm_group.hpp: what a GPU thread block per
// sample runs) on the CPU with groups of std::threads (unit/group_emu.hpp), against
// the cpu executor: outputs, density matrices, sampling probabilities, input and
// weight gradients (shared weights summed by atomic adds, per-sample weights), with
// stored and with checkpointed states, in both precisions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/dm_compiled.hpp"
#include "core/plan.hpp"
#include "unit/dm_group_emu.hpp"

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

// One sample's rows from a group of `members` std::threads against the cpu executor.
template <class R>
void check(const qfleet::Circuit& circ, int members, int segment_cap) {
  SCOPED_TRACE("a group of " + std::to_string(members) + ", segments of " + std::to_string(segment_cap));
  qfleet::CompileOptions o;
  o.precision = std::is_same_v<R, float> ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
  const qfleet::Program prog = qfleet::compile(circ, o);
  qfleet::detail::Plan plan(circ);
  qfleet::detail::build_dm_plan(circ, o, plan);
  const qfleet::kern::DmPlan& dp = plan.dm->view;
  ref::Batch b;
  b.B = 5;
  b.ni = prog.n_inputs();
  b.nw = prog.n_weights();
  std::mt19937_64 rng(17);
  b.x = ref::uniform_vec(rng, b.B * std::size_t(b.ni), 0.1, 0.9);
  const std::vector<double> w = ref::uniform_vec(rng, b.B * std::size_t(b.nw), 0.1, 0.9);
  const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(dp.n_outputs), -1, 1);
  const double tol = std::is_same_v<R, float> ? 2e-5 : 1e-12;
  // The group body, one sample after another.
  const emu::DmRunner<R> group{dp, members, segment_cap};
  for (bool per_sample : {false, true}) {
    b.per_sample = per_sample;
    b.w.assign(w.begin(), w.begin() + std::ptrdiff_t(per_sample ? b.B * std::size_t(b.nw) : std::size_t(b.nw)));
    const ref::QGrad<R> want = ref::q_vjp<R>(prog, b, cot, true);
    const ref::QGrad<R> got = group.vjp(b, cot);
    for (std::size_t i = 0; i < want.out.size(); ++i) EXPECT_NEAR(got.out[i], want.out[i], tol) << "output " << i;
    for (std::size_t i = 0; i < want.gi.size(); ++i) EXPECT_NEAR(got.gi[i], want.gi[i], tol * 10) << "grad input " << i;
    for (std::size_t i = 0; i < want.gw.size(); ++i) EXPECT_NEAR(got.gw[i], want.gw[i], tol * 10) << "grad weight " << i;
    const ref::Run<R> run(b);
    std::vector<std::complex<R>> rho(b.B * dp.dim2);
    prog.density_matrices<R>(run.args(b.B), rho);
    const std::vector<std::complex<double>> grho = group.states(b);
    ASSERT_EQ(grho.size(), rho.size());
    for (std::size_t i = 0; i < rho.size(); ++i) {
      EXPECT_NEAR(grho[i].real(), rho[i].real(), tol);
      EXPECT_NEAR(grho[i].imag(), rho[i].imag(), tol);
    }
  }
}

TEST(DmGroupBody, MatchesTheCpuExecutor) {
  check<double>(noisy_circuit(), 3, 0);
  check<float>(noisy_circuit(), 3, 0);
}

TEST(DmGroupBody, CheckpointedSegmentsMatch) { check<double>(noisy_circuit(), 3, 2); }

// Runs of constant permutation gates (kern::PermRun): a CNOT ring, then Y, S, T, CZ,
// SWAP, Toffoli (phased), then CNOT, X, iSWAP, between parameterised gates and
// channels. The group applies each run fused where it holds the 4^3 entries in
// kDmPermPerMember rounds (8 and 16 threads) and gate by gate where not (3), with
// stored and with checkpointed states (segments of one parameterised op).
TEST(DmGroupBody, FusedPermutationRunsMatchTheCpuExecutor) {
  qfleet::Circuit circ(3);
  circ.add("RY", {0}, {Param::input(0)}).add("RX", {1}, {Param::weight(0)}).add("RY", {2}, {Param::input(1)});
  circ.add("CNOT", {0, 1}).add("CNOT", {1, 2}).add("CNOT", {2, 0});
  circ.channel("Depolarizing", {1}, {Param::weight(1, 0.1)});
  circ.add("PauliY", {0}).add("S", {1}).add("T", {2}).add("CZ", {0, 2}).add("SWAP", {1, 2}).add("Toffoli", {2, 0, 1});
  circ.add("Rot", {1}, {Param::weight(2), 0.3, Param::input(2)});
  circ.add("CNOT", {2, 1}).add("PauliX", {0}).add("ISWAP", {0, 1});
  circ.channel("AmplitudeDamping", {2}, {0.1});
  circ.expval("Z0 X2").expval("Y1").probs({1, 2}).purity();
  qfleet::detail::Plan plan(circ);
  qfleet::detail::build_dm_plan(circ, qfleet::CompileOptions{}, plan);
  const qfleet::kern::DmPlan& dp = plan.dm->view;
  ASSERT_EQ(dp.n_perm_runs, 3);
  const int first[3] = {3, 7, 14}, last[3] = {5, 12, 16};
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(dp.perm_runs[r].first, first[r]) << "run " << r;
    EXPECT_EQ(dp.perm_runs[r].last, last[r]) << "run " << r;
  }
  EXPECT_EQ(dp.perm_runs[0].phase, -1) << "a CNOT ring moves entries without phases";
  EXPECT_GE(dp.perm_runs[1].phase, 0);
  for (int members : {3, 8, 16}) {
    check<double>(circ, members, 0);
    check<double>(circ, members, 1);
  }
  check<float>(circ, 16, 0);
}

// More members than a step has work (a one-qubit matrix: 2 amplitude pairs, 4 entries):
// what a GPU block of 32 threads or more does at n <= 2, and any pinned block size
// (QFLEET_DM_CUDA_THREADS) beyond half the entries. The idle members must write nothing
// and still reach every barrier.
TEST(DmGroupBody, MoreMembersThanEntriesMatchTheCpuExecutor) {
  qfleet::Circuit circ(1);
  circ.add("RY", {0}, {Param::input(0)}).add("Rot", {0}, {Param::weight(0), 0.3, Param::weight(1)});
  circ.channel("Depolarizing", {0}, {Param::weight(2, 0.1)}).channel("AmplitudeDamping", {0}, {0.2});
  circ.add("RX", {0}, {Param::input(1)}).readout_error(0, 0.03, 0.06);
  circ.expval("Z0").expval("X0").probs({0}).purity();
  for (int members : {3, 6}) check<double>(circ, members, 0);
}

}  // namespace
