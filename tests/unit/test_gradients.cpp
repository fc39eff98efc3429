// Adjoint gradients (Program::vjp / jacobian) against finite differences of the
// dense reference simulator: every parametric gate and template, inputs and
// weights (shared over the batch and per sample), scaled parameters, the
// AmplitudeEmbedding features, probability cotangents and random circuits.
//
// Tolerance: ||g - g_ref|| <= 1e-6 (||g_ref|| + 1e-4). The 5-point differences in
// reference/statevector.hpp are accurate to ~1e-11 here, so anything above that is qfleet's.
#include <gtest/gtest.h>

#include "unit/harness.hpp"
#include "unit/vjp_bound.hpp"

namespace {

constexpr double kTol = 1e-6;
constexpr double kFloor = 1e-4;

// vjp on every ISA against one reference gradient.
void expect_vjp_matches(const ref::Twin& t, const ref::Batch& b, std::mt19937_64& rng, const std::string& what,
                        double tol = kTol) {
  const std::size_t K = static_cast<std::size_t>(t.r.n_outputs());
  const std::vector<double> cot = ref::uniform_vec(rng, b.B * K, -1, 1);
  const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
  for (const std::string& isa : qfleet::available_isas()) {
    qfleet::CompileOptions o;
    o.isa = isa;
    const qfleet::Program p = qfleet::compile(t.q, o);
    // One fused call, and the two calls of autograd (forward saving states, vjp_saved).
    for (const bool saved : {false, true}) {
      const auto got = saved ? ref::q_vjp_saved<double>(p, b, cot) : ref::q_vjp<double>(p, b, cot);
      const std::string how = saved ? " (saved states)" : "";
      EXPECT_LE(ref::rel_err(got.gi, want.gi, kFloor), tol)
          << what << ", isa " << isa << ", batch " << b.B << how << ": input gradient";
      EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), kFloor), tol)
          << what << ", isa " << isa << ", batch " << b.B << how << ": weight gradient ("
          << (b.per_sample ? "per sample" : "shared") << ")";
    }
  }
}

// Random single-qubit rotations on every wire, then a CNOT chain: an entangled
// complex state for the gate under test to act on.
void prepare(ref::Twin& t, std::mt19937_64& rng) {
  const int n = t.r.n;
  for (int w = 0; w < n; ++w) {
    t.add("RX", {w}, {ref::uniform(rng, -3, 3)});
    t.add("RY", {w}, {ref::uniform(rng, -3, 3)});
    t.add("RZ", {w}, {ref::uniform(rng, -3, 3)});
  }
  for (int w = 0; w + 1 < n; ++w) t.add("CNOT", {w, w + 1});
}

// Weighted Pauli sums with X, Y, Z and identity terms on every wire, plus probs.
void measure_all(ref::Twin& t, std::mt19937_64& rng) {
  const int n = t.r.n;
  std::vector<std::pair<double, ref::Word>> terms = {{0.3, ref::word({})}};
  for (int w = 0; w < n; ++w) terms.emplace_back(ref::uniform(rng, -2, 2), ref::word({{"XYZ"[w % 3], w}}));
  if (n > 1) terms.emplace_back(ref::uniform(rng, -2, 2), ref::word({{'Y', 0}, {'X', n - 1}}));
  t.expval(terms);
  for (int w = 0; w < n; ++w) t.expval(ref::word({{'Y', w}}));
  std::vector<int> pw = ref::random_wires(rng, n, std::min(n, 2));
  t.probs(pw);
}

enum class Mode { Inputs, SharedWeights, PerSampleWeights, Mixed, OneWeightEverywhere };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Inputs:
      return "inputs";
    case Mode::SharedWeights:
      return "shared weights";
    case Mode::PerSampleWeights:
      return "per-sample weights";
    case Mode::Mixed:
      return "input/weight/constant mix";
    default:
      return "one weight in every slot";
  }
}

TEST(Gradients, EveryParametricGateOnSeveralPlacementsMatchesFiniteDifferences) {
  std::mt19937_64 rng(4242);
  for (const auto& g : qfleet::kGateTable) {
    if (g.params == 0) continue;
    const std::string name(g.name);
    const std::vector<std::vector<int>> placements =
        g.wires == 1 ? std::vector<std::vector<int>>{{0}, {2}} : std::vector<std::vector<int>>{{0, 2}, {2, 0}, {1, 2}};
    for (const auto& wires : placements) {
      for (Mode mode : {Mode::Inputs, Mode::SharedWeights, Mode::PerSampleWeights, Mode::Mixed,
                        Mode::OneWeightEverywhere}) {
        for (std::size_t B : {std::size_t{1}, std::size_t{5}}) {
          ref::Twin t(3);
          prepare(t, rng);
          std::vector<qfleet::Param> p;
          for (int j = 0; j < g.params; ++j) {
            const double sc = ref::random_scale(rng);
            switch (mode) {
              case Mode::Inputs:
                p.push_back(qfleet::Param::input(j, sc));
                break;
              case Mode::Mixed:
                p.push_back(j == 0 ? qfleet::Param::input(0, sc)
                                   : j == 1 ? qfleet::Param::weight(0, sc) : qfleet::Param(0.4));
                break;
              case Mode::OneWeightEverywhere:
                p.push_back(qfleet::Param::weight(0, sc));
                break;
              default:
                p.push_back(qfleet::Param::weight(j, sc));
            }
          }
          t.add(name, wires, p);
          t.add("Hadamard", {1}).add("CRY", {2, 0}, {0.9}).add("ISWAP", {0, 1});
          measure_all(t, rng);
          const ref::Batch b =
              ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, mode == Mode::PerSampleWeights);
          expect_vjp_matches(t, b, rng, name + " on " + testing::PrintToString(wires) + " from " + mode_name(mode));
        }
      }
    }
  }
}

TEST(Gradients, AngleEmbeddingMatchesFiniteDifferences) {
  std::mt19937_64 rng(1);
  for (char r : {'X', 'Y', 'Z'}) {
    ref::Twin t(4);
    prepare(t, rng);
    t.angle_embedding({3, 1, 0}, r, /*first_input=*/2);
    t.add("CNOT", {3, 2}).add("RY", {2}, {qfleet::Param::input(0, 1.5)});
    measure_all(t, rng);
    for (std::size_t B : {std::size_t{1}, std::size_t{6}})
      expect_vjp_matches(t, ref::random_batch(rng, B, t.r.n_inputs, 0, false), rng,
                         std::string("AngleEmbedding R") + r);
  }
}

TEST(Gradients, BasicEntanglerLayersMatchesFiniteDifferences) {
  std::mt19937_64 rng(2);
  for (int k = 1; k <= 4; ++k) {
    for (char r : {'X', 'Y', 'Z'}) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(4);
        prepare(t, rng);
        t.basic_entangler(ref::random_wires(rng, 4, k), 2, r, /*first_weight=*/1);
        measure_all(t, rng);
        expect_vjp_matches(t, ref::random_batch(rng, 5, 0, t.r.n_weights, per_sample), rng,
                           "BasicEntanglerLayers on " + std::to_string(k) + " wires, R" + r);
      }
    }
  }
}

TEST(Gradients, StronglyEntanglingLayersMatchesFiniteDifferences) {
  std::mt19937_64 rng(3);
  for (int k = 1; k <= 4; ++k) {
    for (bool per_sample : {false, true}) {
      ref::Twin t(4);
      prepare(t, rng);
      const auto wires = ref::random_wires(rng, 4, k);
      t.strongly_entangling(wires, 3, /*first_weight=*/2);
      if (k > 1) t.strongly_entangling(wires, 2, 40, {k - 1, 1}, "CZ");  // custom ranges and imprimitive
      measure_all(t, rng);
      expect_vjp_matches(t, ref::random_batch(rng, 5, 0, t.r.n_weights, per_sample), rng,
                         "StronglyEntanglingLayers on " + testing::PrintToString(wires));
    }
  }
}

TEST(Gradients, AmplitudeEmbeddingFeaturesMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  struct AmpCase {
    std::vector<int> wires;
    int n_features;
    bool normalize;
    std::optional<double> pad;
  };
  const AmpCase cases[] = {
      {{0, 1, 2}, 8, true, {}},      // all wires, normalised
      {{2, 0}, 3, true, 0.25},       // subset, reversed order, padded
      {{1}, 1, true, -0.6},          // one feature and one pad value
      {{1, 2, 0}, 6, true, 0.0},     // padded with zeros
      {{0, 2}, 4, false, {}},        // not normalised: raw amplitudes
  };
  for (const AmpCase& ac : cases) {
    for (std::size_t B : {std::size_t{1}, std::size_t{5}}) {
      ref::Twin t(3);
      t.amplitude_embedding(ac.wires, ac.n_features, /*first_input=*/1, ac.normalize, ac.pad);
      t.add("RX", {0}, {qfleet::Param::input(0, 0.7)}).add("RY", {1}, {qfleet::Param::input(2, -1.2)});
      t.add("CRZ", {1, 2}, {qfleet::Param::weight(0)}).add("ISWAP", {2, 0}).add("U3", {1}, {0.3, -0.2, 1.1});
      measure_all(t, rng);
      ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, false);
      if (!ac.normalize) {  // a unit vector of features, as AmplitudeEmbedding then requires
        for (std::size_t s = 0; s < B; ++s) {
          double nrm = 0;
          for (int j = 0; j < ac.n_features; ++j) nrm += b.x[s * b.ni + 1 + j] * b.x[s * b.ni + 1 + j];
          for (int j = 0; j < ac.n_features; ++j) b.x[s * b.ni + 1 + j] /= std::sqrt(nrm);
        }
      }
      expect_vjp_matches(t, b, rng,
                         "AmplitudeEmbedding on " + testing::PrintToString(ac.wires) + " with " +
                             std::to_string(ac.n_features) + " features" + (ac.normalize ? ", normalize" : "") +
                             (ac.pad ? ", pad" : ""));
    }
  }
}

TEST(Gradients, ProbabilityCotangentsAlone) {
  std::mt19937_64 rng(6);
  for (int n = 1; n <= 4; ++n) {
    ref::Twin t(n);
    ref::RandomSpec s;
    s.items = 4 * n;
    s.measure = false;
    ref::random_circuit(t, rng, s);
    t.probs(ref::random_wires(rng, n, n));
    if (n > 1) t.probs({n - 1});
    expect_vjp_matches(t, ref::random_batch(rng, 5, t.r.n_inputs, t.r.n_weights, n % 2 == 0), rng,
                       "probs only, n=" + std::to_string(n));
  }
}

TEST(Gradients, RandomCircuitsOnEveryIsaAndBatchSizeMatchFiniteDifferences) {
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 5; ++n) {
    for (int rep = 0; rep < 5; ++rep) {
      for (bool per_sample : {false, true}) {
        ref::Twin t(n);
        ref::RandomSpec s;
        s.items = 3 * n + 3;
        ref::random_circuit(t, rng, s);
        for (std::size_t B : {std::size_t{1}, std::size_t{3}, std::size_t{9}}) {
          expect_vjp_matches(t, ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, per_sample), rng,
                             "random circuit n=" + std::to_string(n) + " rep " + std::to_string(rep));
        }
      }
    }
  }
}

TEST(Gradients, SharedWeightGradientIsTheBatchSumOfPerSampleGradients) {
  std::mt19937_64 rng(8);
  ref::Twin t(4);
  ref::RandomSpec s;
  s.items = 16;
  ref::random_circuit(t, rng, s);
  const std::size_t B = 11;
  ref::Batch shared = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, false);
  ref::Batch tiled = shared;  // the same weights repeated on every row, as per-sample weights
  tiled.per_sample = true;
  tiled.w.clear();
  for (std::size_t b = 0; b < B; ++b) tiled.w.insert(tiled.w.end(), shared.w.begin(), shared.w.end());
  const std::vector<double> cot = ref::uniform_vec(rng, B * t.r.n_outputs(), -1, 1);
  const qfleet::Program p = qfleet::compile(t.q);
  const auto gs = ref::q_vjp<double>(p, shared, cot);
  const auto gp = ref::q_vjp<double>(p, tiled, cot);
  ASSERT_EQ(gs.gw.size(), std::size_t(t.r.n_weights));
  ASSERT_EQ(gp.gw.size(), B * t.r.n_weights);
  // One reference serves both: per-sample gradients, and their sum over the batch.
  const ref::RefGrad want = ref::ref_gradient(t.r, tiled, cot);
  EXPECT_LE(ref::rel_err(gp.gw, want.gw_ps, kFloor), kTol);
  EXPECT_LE(ref::rel_err(gs.gw, want.gw_shared, kFloor), kTol);
  EXPECT_LE(ref::rel_err(gs.gi, want.gi, kFloor), kTol);
  EXPECT_LE(ref::rel_err(gp.gi, want.gi, kFloor), kTol);
}

TEST(Gradients, FusedVjpOutputsEqualForward) {
  std::mt19937_64 rng(9);
  for (int n : {1, 3, 6}) {
    ref::Twin t(n);
    ref::random_circuit(t, rng, ref::RandomSpec{});
    for (const std::string& isa : qfleet::available_isas()) {
      qfleet::CompileOptions o;
      o.isa = isa;
      const qfleet::Program p = qfleet::compile(t.q, o);
      for (std::size_t B : ref::batch_sizes(p.lanes())) {
        // (its own generator: the batch sizes depend on the ISA's lanes)
        std::mt19937_64 brng = ref::case_rng("Gradients.FusedVjp", {std::uint64_t(n), B});
        const ref::Batch b = ref::random_batch(brng, B, t.r.n_inputs, t.r.n_weights, B % 2 == 1);
        const std::vector<double> cot = ref::uniform_vec(brng, B * t.r.n_outputs(), -1, 1);
        const auto fused = ref::q_vjp<double>(p, b, cot, /*fused=*/true);
        const auto fwd = ref::q_forward<double>(p, b);
        EXPECT_EQ(fused.out, fwd) << "n=" << n << " isa " << isa << " batch " << B;
        EXPECT_LT(ref::max_abs_diff(fwd, ref::ref_outputs(t.r, b)), 1e-10);
        // and the gradients do not change when the outputs are asked for
        const auto plain = ref::q_vjp<double>(p, b, cot);
        EXPECT_EQ(fused.gi, plain.gi);
        EXPECT_EQ(fused.gw, plain.gw);
      }
    }
  }
}

TEST(Gradients, JacobianMatchesFiniteDifferencesPerOutput) {
  std::mt19937_64 rng(10);
  for (int n : {1, 2, 4}) {
    for (bool per_sample : {false, true}) {
      ref::Twin t(n);
      ref::random_circuit(t, rng, ref::RandomSpec{});
      const std::size_t B = 4, K = t.r.n_outputs(), ni = t.r.n_inputs, nw = t.r.n_weights;
      const ref::Batch b = ref::random_batch(rng, B, ni, nw, per_sample);
      const qfleet::Program p = qfleet::compile(t.q);
      const ref::Run<double> run(b);
      std::vector<double> ji(B * K * ni, -5.0), jw(B * K * nw, -5.0);
      p.jacobian<double>(run.args(B), ji, jw);
      for (std::size_t k = 0; k < K; ++k) {
        std::vector<double> cot(B * K, 0.0);  // picks output k of every sample
        for (std::size_t s = 0; s < B; ++s) cot[s * K + k] = 1.0;
        const ref::RefGrad g = ref::ref_gradient(t.r, b, cot);
        std::vector<double> gi, gw;
        for (std::size_t s = 0; s < B; ++s) {
          gi.insert(gi.end(), ji.begin() + (s * K + k) * ni, ji.begin() + (s * K + k + 1) * ni);
          gw.insert(gw.end(), jw.begin() + (s * K + k) * nw, jw.begin() + (s * K + k + 1) * nw);
        }
        EXPECT_LE(ref::rel_err(gi, g.gi, kFloor), kTol) << "n=" << n << " output " << k;
        EXPECT_LE(ref::rel_err(gw, g.gw_ps, kFloor), kTol) << "n=" << n << " output " << k;
      }
    }
  }
}

TEST(Gradients, VjpSkipsGradientsThatAreNotAskedFor) {
  std::mt19937_64 rng(11);
  ref::Twin t(3);
  ref::random_circuit(t, rng, ref::RandomSpec{});
  t.q.reserve_inputs(t.r.n_inputs + 2).reserve_weights(t.r.n_weights + 3);  // unused columns
  const qfleet::Program p = qfleet::compile(t.q);
  const std::size_t B = 6, ni = p.n_inputs(), nw = p.n_weights();
  ASSERT_EQ(ni, std::size_t(t.r.n_inputs + 2));
  ASSERT_EQ(nw, std::size_t(t.r.n_weights + 3));
  const std::vector<double> x = ref::uniform_vec(rng, B * ni, -3, 3), w = ref::uniform_vec(rng, nw, -3, 3);
  const std::vector<double> cot = ref::uniform_vec(rng, B * p.n_outputs(), -1, 1);
  qfleet::BatchArgs<double> a{B, x, w};
  std::vector<double> gi(B * ni, 9.0), gw(nw, 9.0), gi2(B * ni, 9.0), gw2(nw, 9.0);
  p.vjp<double>(a, cot, {gi, gw});
  p.vjp<double>(a, cot, {gi2, {}});
  p.vjp<double>(a, cot, {{}, gw2});
  ref::Batch b;  // the same data for the reference, reserved columns included
  b.B = B;
  b.ni = static_cast<int>(ni);
  b.nw = static_cast<int>(nw);
  b.x = x;
  b.w = w;
  const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
  EXPECT_LE(ref::rel_err(gi, want.gi, kFloor), kTol);
  EXPECT_LE(ref::rel_err(gw, want.gw_shared, kFloor), kTol);
  EXPECT_EQ(gi, gi2);  // asking for one gradient gives the same numbers
  EXPECT_EQ(gw, gw2);
  for (std::size_t s = 0; s < B; ++s) {  // the reserved, unused columns get exactly zero
    EXPECT_EQ(gi[s * ni + ni - 1], 0.0);
    EXPECT_EQ(gi[s * ni + ni - 2], 0.0);
  }
  for (std::size_t j = nw - 3; j < nw; ++j) EXPECT_EQ(gw[j], 0.0);
}

TEST(Gradients, Complex64GradientsAgreeWithTheReference) {
  std::mt19937_64 rng(12);
  for (int n = 1; n <= 5; ++n) {
    ref::Twin t(n);
    ref::random_circuit(t, rng, ref::RandomSpec{});
    for (bool per_sample : {false, true}) {
      const ref::Batch b = ref::random_batch(rng, 9, t.r.n_inputs, t.r.n_weights, per_sample);
      const std::vector<double> cot = ref::uniform_vec(rng, b.B * t.r.n_outputs(), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      for (const std::string& isa : qfleet::available_isas()) {
        qfleet::CompileOptions o;
        o.isa = isa;
        o.precision = qfleet::Precision::complex64;
        const auto got = ref::q_vjp<float>(qfleet::compile(t.q, o), b, cot);
        // float rounding (6e-8) amplified by the circuit depth and the batch reduction.
        const ref::VjpBound bound = ref::vjp_bound(t.r, b, cot, ref::unit_roundoff(/*c64=*/true));
        EXPECT_LE(ref::bound_ratio(got.gi, want.gi, bound.gi), 1.0) << "n=" << n << " isa " << isa;
        EXPECT_LE(ref::bound_ratio(got.gw, ref::ref_gw(want, b), bound.gw), 1.0) << "n=" << n << " isa " << isa;
      }
    }
  }
}

}  // namespace
