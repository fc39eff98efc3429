// The cuda backend's circuit bodies run on the CPU by std::threads (unit/group_emu.hpp),
// in every launch shape they take on a GPU, against the dense reference and finite
// differences:
//   - kernels/sv_group.hpp with one sample per group (warp, block and global shapes):
//     groups of 1..16 threads (powers of two, as the GPU uses, and 3 and 5, which
//     split the work unevenly) and a padding member that must write nothing;
//   - each of those, and the register body below, with the sample's gate blocks in
//     a block table the group fills first (kernels/sv_table.hpp), as every kernel
//     runs it where the table fits;
//   - the same body on interleaved tiles of 4 or 32 samples side by side (the
//     interleaved shape), each sample a group, the last tiles partly or wholly padding;
//   - runs of constant permutation gates fused into one gather (kern::PermRun), and
//     runs of diagonal gates applied amplitude by amplitude (OpDesc::diag_first);
//   - kernels/sv_lanes.hpp (the registers shape, n <= 5): one amplitude per lane,
//     shuffles through a slot per lane, warps of 2^n or 32 lanes (several circuits,
//     whose gradient sums cross circuits), two warps at once, padding circuits.
// Random circuits (templates, AmplitudeEmbedding, Pauli sums, probs; every gate in
// every shape is the backend matrix's, test_backend_matrix.cpp),
// shared and per-sample weights, complex64, the sampling probabilities. This is
// what CI checks of the GPU code on a machine without one.
#include <gtest/gtest.h>

#include <array>
#include <optional>

#include "core/diag_runs.hpp"
#include "core/plan.hpp"
#include "unit/group_emu.hpp"
#include "unit/harness.hpp"
#include "unit/vjp_bound.hpp"

namespace {

constexpr double kGradTol = 1e-6;
constexpr double kFloor = 1e-4;

qfleet::detail::Plan plan_of(const qfleet::Circuit& c, qfleet::Precision prec = qfleet::Precision::complex128) {
  qfleet::CompileOptions o;
  o.precision = prec;
  return qfleet::detail::build_plan(c, o);
}

// One emulated launch shape: groups of G threads, the register body on warps of
// `warp` lanes, or interleaved tiles of `tile` samples (G threads each).
struct Shape {
  std::string name;
  int G = 0, warp = 0, tile = 0;
  bool table = false;

  template <class R>
  emu::Runner<R> runner(const qfleet::detail::Plan& plan) const {
    emu::Runner<R> r{plan, G, warp};
    r.tile = tile;
    r.table = table;
    return r;
  }
};

// The shapes an n-qubit circuit can take: one-sample groups of each size in
// `groups`, the register body (n <= 5) on a warp of one circuit and on a 32-lane warp,
// interleaved tiles of 4 samples (and of 32, with `wide`), tile_g threads a sample;
// the groups and tiles with and without a block table.
std::vector<Shape> shapes(int n, std::initializer_list<int> groups, bool wide = false, int tile_g = 2) {
  std::vector<Shape> s;
  for (int G : groups) {
    s.push_back({"group of " + std::to_string(G), G, 0, 0});
    s.push_back({"group of " + std::to_string(G) + ", block table", G, 0, 0, true});
  }
  if (n <= qfleet::kern::kMaxLaneQubits) {
    s.push_back({"registers, warp of " + std::to_string(1 << n), 0, 1 << n, 0});
    s.push_back({"registers, warp of " + std::to_string(1 << n) + ", block table", 0, 1 << n, 0, true});
    if (n < qfleet::kern::kMaxLaneQubits) s.push_back({"registers, warp of 32, block table", 0, 32, 0, true});
  }
  s.push_back({"interleaved tile of 4 x " + std::to_string(tile_g), tile_g, 0, 4});
  s.push_back({"interleaved tile of 4 x " + std::to_string(tile_g) + ", block table", tile_g, 0, 4, true});
  if (wide) s.push_back({"interleaved tile of 32 x 2, block table", 2, 0, 32, true});
  return s;
}

// A random circuit of `items` items (every gate, templates, measurements) on twin t.
void random_items(ref::Twin& t, std::mt19937_64& rng, int items) {
  ref::RandomSpec spec;
  spec.items = items;
  ref::random_circuit(t, rng, spec);
}

std::string trace(int n, const ref::Batch& b, const Shape& s) {
  return "n=" + std::to_string(n) + " B=" + std::to_string(b.B) + " " + s.name +
         (b.per_sample ? ", per-sample weights" : ", shared weights");
}

// Forward outputs and final states in each shape against the dense reference.
void expect_forward_matches(const ref::Twin& t, const qfleet::detail::Plan& plan, const ref::Batch& b,
                            const std::vector<Shape>& in) {
  const std::vector<double> want = ref::ref_outputs(t.r, b);
  for (const Shape& s : in) {
    SCOPED_TRACE(trace(t.r.n, b, s));
    const auto run = s.runner<double>(plan);
    EXPECT_LT(ref::max_abs_diff(run.forward(b), want), 1e-10);
    EXPECT_LT(ref::max_state_err(run.states(b), t, b), 1e-10) << "states";
  }
}

// vjp (with the fused forward outputs) in each shape against finite differences of
// the dense reference.
void expect_vjp_matches(const ref::Twin& t, const qfleet::detail::Plan& plan, const ref::Batch& b,
                        const std::vector<Shape>& in, const std::string& label = "") {
  std::mt19937_64 rng(b.B * 7919 + std::size_t(t.r.n));
  const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
  const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
  const std::vector<double> outs = ref::ref_outputs(t.r, b);
  for (const Shape& s : in) {
    SCOPED_TRACE(label + trace(t.r.n, b, s));
    const auto got = s.runner<double>(plan).vjp(b, cot);
    EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << "input gradient";
    EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol) << "weight gradient";
    EXPECT_LT(ref::max_abs_diff(got.out, outs), 1e-10) << "fused forward outputs";
  }
}

TEST(GroupBody, RandomCircuitsMatchTheReferenceInEveryShape) {
  std::mt19937_64 rng(515);
  for (int n = 1; n <= 7; ++n) {
    for (int rep = 0; rep < 3; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        random_items(t, rng, 3 * n + 4);
        const qfleet::detail::Plan plan = plan_of(t.q);
        const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, per_sample);
        expect_forward_matches(t, plan, b, shapes(n, {1, 3, 8}, rep == 0));
      }
    }
  }
}

TEST(GroupBody, AdjointGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(616);
  for (int n = 1; n <= 6; ++n) {
    for (int rep = 0; rep < 3; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        random_items(t, rng, 2 * n + 4);
        const qfleet::detail::Plan plan = plan_of(t.q);
        // 19 samples: several warps of 32 / 2^n circuits and tiles, the last ones partly padding.
        const ref::Batch b = ref::random_batch(rng, rep == 0 ? 19 : 3, t.r.n_inputs, t.r.n_weights, per_sample);
        expect_vjp_matches(t, plan, b, shapes(n, {1, 5, 16}, rep == 1));
      }
    }
  }
}

// Every gate in every emulated shape: BackendMatrix.* (test_backend_matrix.cpp).

// The block table changes where each gate's block comes from and when the parameter
// sums are taken, not one operation of either: the same bits as the per-gate blocks.
// Where the plan has runs of diagonal gates, the group shapes with a table apply them
// amplitude by amplitude (another split of each gradient's sum): there the results
// agree to rounding.
TEST(GroupBody, BlockTableGivesThePerGateBlocksBits) {
  std::mt19937_64 rng(2727);
  int same_bits = 0;
  for (int n = 1; n <= 6; ++n) {
    for (bool per_sample : {false, true}) {
      ref::Twin t(n);
      random_items(t, rng, 3 * n + 4);
      const qfleet::detail::Plan plan = plan_of(t.q);
      const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, per_sample);
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
      // (G, warp, tile): groups of 1 and 4, an interleaved tile, the register body
      std::vector<std::array<int, 3>> kinds = {{1, 0, 0}, {4, 0, 0}, {2, 0, 4}};
      if (n <= qfleet::kern::kMaxLaneQubits) kinds.push_back({0, 32, 0});
      for (const auto& [G, warp, tile] : kinds) {
        SCOPED_TRACE(trace(n, b, Shape{"G=" + std::to_string(G) + " warp=" + std::to_string(warp) +
                                           " tile=" + std::to_string(tile), G, warp, tile}));
        const auto plain = Shape{"", G, warp, tile}.runner<double>(plan).vjp(b, cot);
        const auto tab = Shape{"", G, warp, tile, true}.runner<double>(plan).vjp(b, cot);
        if (plan.view.n_diag_runs > 0 && warp == 0) {
          EXPECT_LT(ref::max_abs_diff(tab.out, plain.out), 1e-12);
          EXPECT_LT(ref::max_abs_diff(tab.gi, plain.gi), 1e-12);
          EXPECT_LT(ref::max_abs_diff(tab.gw, plain.gw), 1e-12);
          continue;
        }
        ++same_bits;
        EXPECT_EQ(tab.out, plain.out);
        EXPECT_EQ(tab.gi, plain.gi);
        if (!per_sample && (tile > 0 || warp > 0)) {
          // reduced weight gradients: lanes or warps add to them in a racing order
          EXPECT_LT(ref::max_abs_diff(tab.gw, plain.gw), 1e-12);
        } else {
          EXPECT_EQ(tab.gw, plain.gw);
        }
      }
    }
  }
  EXPECT_GE(same_bits, 20) << "circuits without diagonal runs, checked bit for bit";
}

// Runs of constant gates with one nonzero per column (kern::PermRun;
// ref::permutation_runs_circuit: a CNOT ring, then phased ones, then too short a run).
// The planner finds exactly the runs of three or more;
// every shape, fused where its group holds the state in kPermPerMember rounds (groups
// of 4 and 16, the interleaved tiles at n = 3, the register body) and gate by gate
// where not (1), matches the reference, forward and adjoint.
TEST(GroupBody, FusedPermutationRunsMatchTheReference) {
  std::mt19937_64 rng(4242);
  for (int n = 3; n <= 6; ++n) {
    ref::Twin t(n);
    ref::permutation_runs_circuit(t, n);
    const qfleet::detail::Plan plan = plan_of(t.q);
    const qfleet::kern::SvPlan& v = plan.view;
    ASSERT_EQ(v.n_perm_runs, 2) << "the ring and the phased run";
    EXPECT_EQ(v.perm_runs[0].first, n);
    EXPECT_EQ(v.perm_runs[0].last, 2 * n - 1);
    EXPECT_EQ(v.perm_runs[0].phase, -1) << "a CNOT ring moves amplitudes without phases";
    EXPECT_EQ(v.perm_runs[1].first, 2 * n + 1);
    EXPECT_EQ(v.perm_runs[1].last, 2 * n + 9);
    EXPECT_GE(v.perm_runs[1].phase, 0);
    for (int k = 0; k < v.n_ops; ++k) {
      const bool in_run = (k >= n && k <= 2 * n - 1) || (k >= v.perm_runs[1].first && k <= v.perm_runs[1].last);
      EXPECT_EQ(v.ops[k].run >= 0, in_run) << "op " << k;
    }
    for (bool per_sample : {false, true}) {
      const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, per_sample);
      expect_forward_matches(t, plan, b, shapes(n, {1, 4, 16}, n == 5));
      expect_vjp_matches(t, plan, b, shapes(n, {1, 4, 16}));
    }
  }
}

// Runs are fused only on circuits of at most kMaxPermQubits qubits (the maps take
// 24 bytes an amplitude).
TEST(GroupBody, NoPermutationRunsBeyondTheirQubitLimit) {
  for (int n : {qfleet::kern::kMaxPermQubits, qfleet::kern::kMaxPermQubits + 1}) {
    qfleet::Circuit c(n);
    for (int w = 0; w < n; ++w) c.add("CNOT", {w, (w + 1) % n});
    c.expval("Z0");
    EXPECT_EQ(plan_of(c).view.n_perm_runs, n <= qfleet::kern::kMaxPermQubits ? 1 : 0) << n << " qubits";
  }
}

// Runs of diagonal gates (ref::diagonal_runs_circuit): the planner marks exactly the
// two runs, and every shape matches the reference, forward and adjoint (the gradients
// of parameters inside the runs, one of them shared by a whole ring): the group shapes
// with a block table apply each run amplitude by amplitude with one barrier, those
// without one and the register body gate by gate.
TEST(GroupBody, DiagonalRunsMatchTheReference) {
  std::mt19937_64 rng(4545);
  for (int n = 3; n <= 6; ++n) {
    ref::Twin t(n);
    ref::diagonal_runs_circuit(t, n);
    const qfleet::detail::Plan plan = plan_of(t.q);
    const qfleet::kern::SvPlan& v = plan.view;
    EXPECT_EQ(v.n_diag_runs, 2);
    EXPECT_EQ(v.n_perm_runs, 0);
    for (int k = 0; k < v.n_ops; ++k) {
      const bool first = k >= n && k <= n + 9, ring = k >= n + 13 && k <= 2 * n + 12;
      EXPECT_EQ(v.ops[k].diag_first, first ? n : ring ? n + 13 : -1) << "op " << k;
      EXPECT_EQ(v.ops[k].diag_last, first ? n + 9 : ring ? 2 * n + 12 : -1) << "op " << k;
    }
    const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, n % 2 == 1);
    expect_forward_matches(t, plan, b, shapes(n, {1, 3, 16}, n == 4));
    expect_vjp_matches(t, plan, b, shapes(n, {1, 3, 16}, n == 4));
  }
}

// The gates with a parameter the planner takes as diagonal (gate_is_diagonal) are
// exactly those whose block, at random angles, is diagonal.
TEST(GroupBody, DiagonalGatesAreTheDiagonalBlocks) {
  std::mt19937_64 rng(4646);
  for (const qfleet::GateInfo& info : qfleet::kGateTable) {
    if (info.params == 0) continue;  // constant blocks are read as data
    const int d = 1 << (info.wires - info.controls);
    double q[qfleet::kMaxGateParams];
    for (double& x : q) x = std::uniform_real_distribution<double>(0.1, 3.0)(rng);
    qfleet::kern::Cx<double> blk[64];
    qfleet::kern::gate_block<double>(info.id, q, blk);
    bool diagonal = true;
    for (int e = 0; e < d * d; ++e) diagonal &= e % (d + 1) == 0 || (blk[e].re == 0 && blk[e].im == 0);
    EXPECT_EQ(qfleet::detail::gate_is_diagonal(info.id), diagonal) << info.name;
    if (diagonal) {
      EXPECT_EQ(info.params, 1) << info.name << ": the runs' reverse step takes one derivative";
    }
  }
}

TEST(GroupBody, AmplitudeEmbeddingGradients) {
  std::mt19937_64 rng(1818);
  for (int n = 1; n <= 6; ++n) {
    for (bool normalize : {true, false}) {
      ref::Twin t(n);
      // normalize: fewer features than amplitudes, padded with 0.3, after one angle input.
      const int nf = normalize ? std::max(1, (1 << n) - 1) : (1 << n);
      const int first = normalize ? 1 : 0;
      std::vector<int> wires(static_cast<std::size_t>(n), 0);
      for (int w = 0; w < n; ++w) wires[std::size_t(w)] = n - 1 - w;  // reversed: a permuted embedding
      t.amplitude_embedding(wires, nf, first, normalize, normalize ? std::optional<double>(0.3) : std::nullopt);
      for (int w = 0; w < n; ++w) t.add("RX", {w}, {qfleet::Param::weight(w)});
      if (normalize) t.add("RY", {0}, {qfleet::Param::input(0)});
      t.expval({{0.7, ref::word({{'Z', 0}})}, {-0.4, ref::word({{'X', n - 1}})}});
      t.probs({0});
      const qfleet::detail::Plan plan = plan_of(t.q);
      ref::Batch b = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, false);
      if (!normalize) {  // the features must already be a unit vector
        for (std::size_t s = 0; s < b.B; ++s) {
          double nn = 0;
          for (int j = 0; j < nf; ++j) nn += b.x[s * nf + j] * b.x[s * nf + j];
          for (int j = 0; j < nf; ++j) b.x[s * nf + j] /= std::sqrt(nn);
        }
      }
      expect_vjp_matches(t, plan, b, shapes(n, {3}), normalize ? "normalize, " : "unit features, ");
    }
  }
}

TEST(GroupBody, Complex64StaysWithinSinglePrecision) {
  std::mt19937_64 rng(818);
  for (int n = 2; n <= 6; ++n) {
    ref::Twin t(n);
    random_items(t, rng, 3 * n);
    const ref::Batch b = ref::random_batch(rng, 4, t.r.n_inputs, t.r.n_weights, n % 2 == 0);
    const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
    const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
    const qfleet::detail::Plan plan = plan_of(t.q, qfleet::Precision::complex64);
    for (const Shape& s : shapes(n, {8})) {
      SCOPED_TRACE(trace(n, b, s));
      const auto got = s.runner<float>(plan).vjp(b, cot);
      EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 2e-5);
      const ref::VjpBound bound = ref::vjp_bound(t.r, b, cot, ref::unit_roundoff(/*c64=*/true));
      EXPECT_LE(ref::bound_ratio(got.gi, want.gi, bound.gi), 1.0) << "input gradient: error / bound";
      EXPECT_LE(ref::bound_ratio(got.gw, ref::ref_gw(want, b), bound.gw), 1.0) << "weight gradient: error / bound";
    }
  }
}

TEST(GroupBody, SamplingProbabilitiesMatchTheReference) {
  std::mt19937_64 rng(919);
  for (int n = 1; n <= 7; ++n) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.measure = false;
    ref::random_circuit(t, rng, spec);
    const qfleet::detail::Plan plan = plan_of(t.q);
    const ref::Batch b = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, false);
    for (int k = 1; k <= n; ++k) {
      const std::vector<int> wires = ref::random_wires(rng, n, k);
      std::vector<double> want;
      for (std::size_t s = 0; s < b.B; ++s) {
        const auto p = ref::probs(ref::state(t.r, b.xrow(s), b.wrow(s)), wires, n);
        want.insert(want.end(), p.begin(), p.end());
      }
      // 16 threads a sample: one outcome bit takes the group-sum path.
      for (const Shape& s : shapes(n, {1, 16}, false, 16)) {
        SCOPED_TRACE(trace(n, b, s) + " k=" + std::to_string(k));
        EXPECT_LT(ref::max_abs_diff(s.runner<double>(plan).probs(b, wires), want), 1e-12);
      }
    }
  }
}

}  // namespace
