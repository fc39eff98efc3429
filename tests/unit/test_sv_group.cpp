// The cuda backend's circuit body (kernels/sv_group.hpp), run on the CPU by a
// group of std::threads (unit/group_emu.hpp), against the dense reference: every
// gate, random circuits (templates, AmplitudeEmbedding, Pauli sums, probs), shared
// and per-sample weights, the adjoint gradients against finite differences, the
// sampling probabilities, groups of 1..16 threads (powers of two, as the GPU uses,
// and 3 and 5, which split the work unevenly), and a padding member that must
// write nothing. This is what CI checks of the GPU code on a machine without one.
#include <gtest/gtest.h>

#include "core/plan.hpp"
#include "unit/group_emu.hpp"
#include "unit/harness.hpp"

namespace {

constexpr double kGradTol = 1e-6;
constexpr double kFloor = 1e-4;

qfleet::detail::Plan plan_of(const qfleet::Circuit& c, qfleet::Precision prec = qfleet::Precision::complex128) {
  qfleet::CompileOptions o;
  o.precision = prec;
  return qfleet::detail::build_plan(c, o);
}

double max_state_err(const std::vector<std::complex<double>>& got, const ref::Twin& t, const ref::Batch& b) {
  const std::size_t dim = std::size_t{1} << t.r.n;
  double m = 0;
  for (std::size_t s = 0; s < b.B; ++s) {
    const ref::Vec want = ref::state(t.r, b.xrow(s), b.wrow(s));
    for (std::size_t i = 0; i < dim; ++i) m = std::max(m, std::abs(got[s * dim + i] - want[i]));
  }
  return m;
}

TEST(GroupBody, RandomCircuitsMatchTheReferenceForEveryGroupSize) {
  std::mt19937_64 rng(515);
  for (int n = 1; n <= 7; ++n) {
    for (int rep = 0; rep < 3; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        ref::RandomSpec spec;
        spec.items = 3 * n + 4;
        ref::random_circuit(t, rng, spec);
        const qfleet::detail::Plan plan = plan_of(t.q);
        const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::vector<double> want = ref::ref_outputs(t.r, b);
        for (int G : {1, 3, 8}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " rep=" + std::to_string(rep) + " G=" + std::to_string(G) +
                       (per_sample ? " per-sample weights" : " shared weights"));
          const emu::Runner<double> run{plan, G};
          EXPECT_LT(ref::max_abs_diff(run.forward(b), want), 1e-10);
          EXPECT_LT(max_state_err(run.states(b), t, b), 1e-10);
        }
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
        ref::RandomSpec spec;
        spec.items = 2 * n + 4;
        ref::random_circuit(t, rng, spec);
        const qfleet::detail::Plan plan = plan_of(t.q);
        const ref::Batch b = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::size_t K = static_cast<std::size_t>(t.r.n_outputs());
        const std::vector<double> cot = ref::uniform_vec(rng, b.B * K, -1, 1);
        const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
        const std::vector<double> outs = ref::ref_outputs(t.r, b);
        for (int G : {1, 5, 16}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " rep=" + std::to_string(rep) + " G=" + std::to_string(G) +
                       (per_sample ? " per-sample weights" : " shared weights"));
          const auto got = emu::Runner<double>{plan, G}.vjp(b, cot);
          EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << "input gradient";
          EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol) << "weight gradient";
          EXPECT_LT(ref::max_abs_diff(got.out, outs), 1e-10) << "fused forward outputs";
        }
      }
    }
  }
}

TEST(GroupBody, EveryGateForwardAndGradient) {
  std::mt19937_64 rng(717);
  for (const auto& g : qfleet::kGateTable) {
    const std::string name(g.name);
    for (int n : {3, 4}) {
      ref::Twin t(n);
      for (int w = 0; w < n; ++w) t.add("RY", {w}, {ref::uniform(rng, -3, 3)});
      for (int w = 0; w + 1 < n; ++w) t.add("CNOT", {w, w + 1});
      if (name == "QubitUnitary") {
        t.unitary(ref::random_wires(rng, n, 2), ref::random_unitary(2, rng));
      } else {
        std::vector<qfleet::Param> p;
        for (int j = 0; j < g.params; ++j) {
          p.push_back(j % 2 == 0 ? qfleet::Param::input(j, 0.7) : qfleet::Param::weight(j, -1.3));
        }
        t.add(name, ref::random_wires(rng, n, ref::gate_wires(name)), p);
      }
      t.expval({{0.5, ref::word({{'X', 0}})}, {-1.2, ref::word({{'Y', n - 1}, {'Z', 1}})}});
      t.probs(ref::random_wires(rng, n, 2));
      const qfleet::detail::Plan plan = plan_of(t.q);
      const ref::Batch b = ref::random_batch(rng, 2, t.r.n_inputs, t.r.n_weights, false);
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * t.r.n_outputs(), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      const auto got = emu::Runner<double>{plan, 4}.vjp(b, cot);
      EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 1e-10) << name << " n=" << n;
      EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << name << " n=" << n << ": input gradient";
      EXPECT_LE(ref::rel_err(got.gw, want.gw_shared, kFloor), kGradTol) << name << " n=" << n << ": weight gradient";
    }
  }
}

TEST(GroupBody, Complex64StaysWithinSinglePrecision) {
  std::mt19937_64 rng(818);
  for (int n = 2; n <= 6; ++n) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n;
    ref::random_circuit(t, rng, spec);
    const ref::Batch b = ref::random_batch(rng, 4, t.r.n_inputs, t.r.n_weights, n % 2 == 0);
    const std::vector<double> cot = ref::uniform_vec(rng, b.B * t.r.n_outputs(), -1, 1);
    const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
    const qfleet::detail::Plan plan = plan_of(t.q, qfleet::Precision::complex64);
    const auto got = emu::Runner<float>{plan, 8}.vjp(b, cot);
    EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 2e-5) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-2), 1e-4) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), 1e-2), 1e-4) << "n=" << n;
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
      for (int G : {1, 16}) {  // 16: one outcome bit takes the group-sum path
        EXPECT_LT(ref::max_abs_diff(emu::Runner<double>{plan, G}.probs(b, wires), want), 1e-12)
            << "n=" << n << " k=" << k << " G=" << G;
      }
    }
  }
}

// The interleaved shape: the same body on tiles of 4 or 32 samples side by side
// (amplitude i of the tile's samples in consecutive words), each sample a group of
// threads, the last tiles partly and wholly padding.
TEST(GroupBody, InterleavedTilesMatchTheReference) {
  std::mt19937_64 rng(1020);
  for (int n = 1; n <= 7; ++n) {
    for (bool per_sample : {false, true}) {
      ref::Twin t(n);
      ref::RandomSpec spec;
      spec.items = 2 * n + 4;
      ref::random_circuit(t, rng, spec);
      const qfleet::detail::Plan plan = plan_of(t.q);
      const ref::Batch b = ref::random_batch(rng, n % 2 == 0 ? 9 : 3, t.r.n_inputs, t.r.n_weights, per_sample);
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      const std::vector<double> outs = ref::ref_outputs(t.r, b);
      for (const auto& [tile, G] : {std::pair{4, 1}, std::pair{4, 3}, std::pair{32, 2}}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " B=" + std::to_string(b.B) + " tile=" + std::to_string(tile) +
                     " G=" + std::to_string(G) + (per_sample ? " per-sample weights" : " shared weights"));
        emu::Runner<double> run{plan, G};
        run.tile = tile;
        EXPECT_LT(ref::max_abs_diff(run.forward(b), outs), 1e-10);
        EXPECT_LT(max_state_err(run.states(b), t, b), 1e-10);
        const auto got = run.vjp(b, cot);
        EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << "input gradient";
        EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol) << "weight gradient";
        EXPECT_LT(ref::max_abs_diff(got.out, outs), 1e-10) << "fused forward outputs";
      }
    }
  }
}

TEST(GroupBody, InterleavedComplex64AndSampling) {
  std::mt19937_64 rng(1121);
  for (int n = 2; n <= 6; ++n) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n;
    ref::random_circuit(t, rng, spec);
    const ref::Batch b = ref::random_batch(rng, 6, t.r.n_inputs, t.r.n_weights, false);
    const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
    const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
    emu::Runner<float> run{plan_of(t.q, qfleet::Precision::complex64), 2};
    run.tile = 4;
    const auto got = run.vjp(b, cot);
    EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 2e-5) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-2), 1e-4) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gw, want.gw_shared, 1e-2), 1e-4) << "n=" << n;
    const qfleet::detail::Plan plan = plan_of(t.q);
    emu::Runner<double> run64{plan, 16};  // 16 members: one outcome bit takes the group-sum path
    run64.tile = 4;
    for (int k = 1; k <= n; k += 2) {
      const std::vector<int> wires = ref::random_wires(rng, n, k);
      std::vector<double> pw;
      for (std::size_t s = 0; s < b.B; ++s) {
        const auto p = ref::probs(ref::state(t.r, b.xrow(s), b.wrow(s)), wires, n);
        pw.insert(pw.end(), p.begin(), p.end());
      }
      EXPECT_LT(ref::max_abs_diff(run64.probs(b, wires), pw), 1e-12) << "n=" << n << " k=" << k;
    }
  }
}

}  // namespace
