// The cuda backend's register body for small circuits (kernels/sv_lanes.hpp: one
// amplitude per lane, gates by shuffles), run on the CPU by warps of std::threads
// (unit/group_emu.hpp), against the dense reference and finite differences: every
// gate, random circuits with templates, amplitude
// embeddings, Pauli sums and probabilities, shared and per-sample weights, complex64,
// the sampling probabilities, warps holding one circuit or several (the cross-circuit
// gradient sum of reduce_add), and padding circuits that must write nothing. This is
// what CI checks of the `registers` launch shape on a machine without a GPU.
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

template <class R>
emu::Runner<R> lanes(const qfleet::detail::Plan& plan, int warp) {
  return emu::Runner<R>{plan, 0, warp};
}

// Warp widths to emulate for n qubits: one circuit per warp, and a 32-lane warp
// (several circuits for n < 5).
std::vector<int> warps_for(int n) {
  std::vector<int> w = {1 << n};
  if (n < 5) w.push_back(32);
  return w;
}

TEST(LanesBody, RandomCircuitsMatchTheReference) {
  std::mt19937_64 rng(1515);
  for (int n = 1; n <= qfleet::kern::kMaxLaneQubits; ++n) {
    for (int rep = 0; rep < 3; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        ref::RandomSpec spec;
        spec.items = 3 * n + 4;
        ref::random_circuit(t, rng, spec);
        const qfleet::detail::Plan plan = plan_of(t.q);
        const ref::Batch b = ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::vector<double> want = ref::ref_outputs(t.r, b);
        for (int warp : warps_for(n)) {
          SCOPED_TRACE("n=" + std::to_string(n) + " rep=" + std::to_string(rep) + " warp=" +
                       std::to_string(warp) + (per_sample ? " per-sample weights" : " shared weights"));
          const auto run = lanes<double>(plan, warp);
          EXPECT_LT(ref::max_abs_diff(run.forward(b), want), 1e-10);
          const auto st = run.states(b);
          double m = 0;
          for (std::size_t s = 0; s < b.B; ++s) {
            const ref::Vec v = ref::state(t.r, b.xrow(s), b.wrow(s));
            for (std::size_t i = 0; i < plan.dim; ++i) m = std::max(m, std::abs(st[s * plan.dim + i] - v[i]));
          }
          EXPECT_LT(m, 1e-10) << "states";
        }
      }
    }
  }
}

TEST(LanesBody, AdjointGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(1616);
  for (int n = 1; n <= qfleet::kern::kMaxLaneQubits; ++n) {
    for (int rep = 0; rep < 3; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        ref::RandomSpec spec;
        spec.items = 2 * n + 4;
        ref::random_circuit(t, rng, spec);
        const qfleet::detail::Plan plan = plan_of(t.q);
        // 19 samples: several warps of 32 / 2^n circuits, the last one partly padding.
        const ref::Batch b = ref::random_batch(rng, rep == 0 ? 19 : 3, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
        const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
        const std::vector<double> outs = ref::ref_outputs(t.r, b);
        for (int warp : warps_for(n)) {
          SCOPED_TRACE("n=" + std::to_string(n) + " rep=" + std::to_string(rep) + " B=" + std::to_string(b.B) +
                       " warp=" + std::to_string(warp) + (per_sample ? " per-sample weights" : " shared weights"));
          const auto got = lanes<double>(plan, warp).vjp(b, cot);
          EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << "input gradient";
          EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), kGradTol) << "weight gradient";
          EXPECT_LT(ref::max_abs_diff(got.out, outs), 1e-10) << "fused forward outputs";
        }
      }
    }
  }
}

TEST(LanesBody, EveryGateForwardAndGradient) {
  std::mt19937_64 rng(1717);
  for (const auto& g : qfleet::kGateTable) {
    const std::string name(g.name);
    for (int n : {3, 5}) {
      ref::Twin t(n);
      for (int w = 0; w < n; ++w) t.add("RY", {w}, {ref::uniform(rng, -3, 3)});
      for (int w = 0; w + 1 < n; ++w) t.add("CNOT", {w, w + 1});
      if (name == "QubitUnitary") {  // 1 and 2 target wires
        for (int k = 1; k <= 2; ++k) t.unitary(ref::random_wires(rng, n, k), ref::random_unitary(k, rng));
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
      const ref::Batch b = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, false);
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      const auto got = lanes<double>(plan, 32).vjp(b, cot);
      EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 1e-10) << name << " n=" << n;
      EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << name << " n=" << n << ": input gradient";
      EXPECT_LE(ref::rel_err(got.gw, want.gw_shared, kFloor), kGradTol) << name << " n=" << n << ": weight gradient";
    }
  }
}

TEST(LanesBody, AmplitudeEmbeddingGradients) {
  std::mt19937_64 rng(1818);
  for (int n = 1; n <= qfleet::kern::kMaxLaneQubits; ++n) {
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
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      const auto got = lanes<double>(plan, 32).vjp(b, cot);
      SCOPED_TRACE("n=" + std::to_string(n) + (normalize ? " normalize" : " unit features"));
      EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 1e-10);
      EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), kGradTol) << "input gradient";
      EXPECT_LE(ref::rel_err(got.gw, want.gw_shared, kFloor), kGradTol) << "weight gradient";
    }
  }
}

TEST(LanesBody, Complex64StaysWithinSinglePrecision) {
  std::mt19937_64 rng(1919);
  for (int n = 2; n <= qfleet::kern::kMaxLaneQubits; ++n) {
    ref::Twin t(n);
    ref::RandomSpec spec;
    spec.items = 3 * n;
    ref::random_circuit(t, rng, spec);
    const ref::Batch b = ref::random_batch(rng, 4, t.r.n_inputs, t.r.n_weights, n % 2 == 0);
    const std::vector<double> cot = ref::uniform_vec(rng, b.B * std::size_t(t.r.n_outputs()), -1, 1);
    const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
    const qfleet::detail::Plan plan = plan_of(t.q, qfleet::Precision::complex64);
    const auto got = lanes<float>(plan, 32).vjp(b, cot);
    EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 2e-5) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-2), 1e-4) << "n=" << n;
    EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), 1e-2), 1e-4) << "n=" << n;
  }
}

TEST(LanesBody, SamplingProbabilitiesMatchTheReference) {
  std::mt19937_64 rng(2020);
  for (int n = 1; n <= qfleet::kern::kMaxLaneQubits; ++n) {
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
      EXPECT_LT(ref::max_abs_diff(lanes<double>(plan, 32).probs(b, wires), want), 1e-12) << "n=" << n << " k=" << k;
    }
  }
}

}  // namespace
