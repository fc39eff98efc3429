// qfleet-qgan (apps/qgan): statistics against hand-computed values, targets against
// independent integration, the PGM reader's errors, every circuit and every device
// lowering against the tests' dense reference simulator, short training runs
// (learning, bit-identical resume, shots, a noise model) and a small tournament.
// (scipy comparisons and the simulated likelihood-ratio test: tests/python/test_qgan.py.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "circuits.hpp"
#include "distributions.hpp"
#include "json_io.hpp"
#include "qfleet/device_lowering.hpp"
#include "qfleet/noise_model.hpp"
#include "qfleet/program.hpp"
#include "qgan.hpp"
#include "reference/statevector.hpp"
#include "suite.hpp"
#include "targets.hpp"
#include "tournament.hpp"
#include "../apps_common/settings_checks.hpp"

namespace fs = std::filesystem;
using namespace qfleet::qgan;
using qfleet::Circuit;
using qfleet::Gate;

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("qfleet_qgan_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// The circuit through the tests' dense reference simulator (shares no code with qfleet).
std::vector<double> reference_probs(const Circuit& c, const std::vector<double>& w = {}) {
  ref::Circuit r;
  r.n = c.n_qubits();
  for (const auto& op : c.operations()) r.add(std::string(qfleet::gate_info(op.gate).name), op.wires, op.params);
  for (const auto& m : c.measurements()) r.meas.push_back(ref::Meas{true, {}, m.wires});
  return ref::outputs(r, nullptr, w.data());
}

std::vector<double> engine_probs(const Circuit& c, const std::vector<double>& w = {}) {
  const qfleet::Program p = qfleet::compile(c);
  return p.forward(qfleet::BatchArgs<double>{1, {}, w});
}

qfleet::NoiseModel device(const std::string& name) {
  return read_noise_model_file(std::string(QFLEET_SOURCE_DIR) + "/apps/qgan/devices/" + name + ".json");
}

}  // namespace

// ---- statistics ------------------------------------------------------------------

// config.json and TrainConfig, tournament.json and TournamentConfig agree: every key bound to
// a field, the struct's defaults the schema's; a struct built in code is checked by the schema,
// plus the rules it cannot state.
TEST(QganSettings, TrainAndTournamentAreBoundToTheirSchemas) {
  using settings_checks::Edits;
  settings_checks::expect_bound(train_settings(), train_schema());
  settings_checks::expect_refused(Edits<TrainConfig>{
      {[](TrainConfig& c) { c.epochs = 0; }, "key 'epochs': expected an integer in [1, 1000000], got 0"},
      {[](TrainConfig& c) { c.device = "tpu"; }, "key 'device': expected one of"},
      {[](TrainConfig& c) { c.hidden = {64, 0}; }, "key 'hidden'"},
      {[](TrainConfig& c) { c.lr_g = 0; }, "learning rates (lr_g, lr_d) must be in (0, 10)"},
      {[](TrainConfig& c) { c.beta2 = 1; }, "beta1, beta2 must be in [0, 1)"},
      {[](TrainConfig& c) { c.hidden = std::vector<int64_t>(9, 8); }, "at most 8 hidden layers"}});
  settings_checks::expect_bound(tournament_settings(), tournament_schema());
  settings_checks::expect_refused(Edits<TournamentConfig>{
      {[](TournamentConfig& c) { c.qubits = 11; }, "key 'qubits': expected an integer in [1, 10], got 11"},
      {[](TournamentConfig& c) { c.resamples = 5; }, "key 'resamples'"},
      {[](TournamentConfig& c) { c.confidence = 1; }, "confidence must be in (0.5, 1)"},
      {[](TournamentConfig& c) { c.level = 0; }, "level must be in (0, 1)"}});
}

// suite.json and SuiteConfig: every key bound (seed and threads to both stages), the
// default-constructed suite the schema's defaults.
TEST(QganSettings, TheSuiteIsBoundToItsSchema) {
  settings_checks::expect_bound(suite_settings(), suite_schema());
  const SuiteConfig c = qfleet::app::read_settings(
      suite_settings(), suite_schema().resolve(nlohmann::json::object(), "", {{"seed", 9}, {"threads", 3}}));
  EXPECT_EQ(c.qgan.seed, 9u);
  EXPECT_EQ(c.tournament.seed, 9u);
  EXPECT_EQ(c.qgan.threads, 3);
  EXPECT_EQ(c.tournament.threads, 3);
}

TEST(QganStats, HandComputedValues) {
  const Distribution p = {0.5, 0.5, 0.0}, q = {0.25, 0.25, 0.5};
  EXPECT_NEAR(kl_divergence(p, q), std::log(2.0), 1e-15);  // 2 * 0.5 ln(0.5 / 0.25)
  EXPECT_EQ(kl_divergence(q, p), kInfinity);              // q puts mass where p has none
  EXPECT_NEAR(total_variation(p, q), 0.5, 1e-15);
  EXPECT_NEAR(bhattacharyya(p, q), 2 * std::sqrt(0.125), 1e-15);
  // JS: m = (3/8, 3/8, 1/4); JS = 1/2 KL(p||m) + 1/2 KL(q||m)
  const double js = 0.5 * (std::log(0.5 / 0.375)) + 0.5 * (0.5 * std::log(0.25 / 0.375) + 0.5 * std::log(0.5 / 0.25));
  EXPECT_NEAR(js_distance(p, q), std::sqrt(js), 1e-15);
  EXPECT_EQ(js_distance(p, p), 0.0);
  // KS on a 2 x 2 grid: differences (+0.25, +0.25, -0.5, 0): F(0,0)=.25, F(0,1)=.5, F(1,0)=-.25, F(1,1)=0
  EXPECT_NEAR(ks_distance({0.5, 0.5, 0, 0}, {0.25, 0.25, 0.5, 0}, 2), 0.5, 1e-15);
  EXPECT_NEAR(ks_distance({0.5, 0.5, 0, 0}, {0.25, 0.25, 0.5, 0}, 1), 0.5, 1e-15);
}

TEST(QganStats, BadDistributionsAreClearErrors) {
  EXPECT_NE(error_of([] { kl_divergence({0.5, 0.6}, {0.5, 0.5}); }).find("sum to"), std::string::npos);
  EXPECT_NE(error_of([] { kl_divergence({0.5, NAN}, {0.5, 0.5}); }).find("not a probability"), std::string::npos);
  EXPECT_NE(error_of([] { kl_divergence({1.0}, {0.5, 0.5}); }).find("different outcomes"), std::string::npos);
  EXPECT_NE(error_of([] { ks_distance({0.5, 0.5, 0}, {0.5, 0.5, 0}, 2); }).find("rows"), std::string::npos);
  EXPECT_NE(error_of([] { shots_to_distinguish({0.5, 0.5}, {0.4, 0.6}, 1.5); }).find("confidence"), std::string::npos);
}

TEST(QganStats, ShotsToDistinguishAgainstASimulatedTest) {
  // The test itself, simulated: n shots from p (or q), decide by the log-likelihood ratio.
  const Distribution p = {0.30, 0.25, 0.25, 0.20}, q = {0.25, 0.25, 0.25, 0.25};
  const ShotsToDistinguish s = shots_to_distinguish(p, q, 0.95);
  ASSERT_TRUE(s.distinguishable);
  EXPECT_GE(s.bound, s.shots);
  std::mt19937_64 rng(7);
  auto error_rate = [&](const Distribution& truth, bool truth_is_p, int64_t n) {
    std::discrete_distribution<int> draw(truth.begin(), truth.end());
    int wrong = 0;
    const int trials = 4000;
    for (int t = 0; t < trials; ++t) {
      double llr = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int x = draw(rng);
        llr += std::log(p[std::size_t(x)] / q[std::size_t(x)]);
      }
      wrong += truth_is_p ? (llr <= 0) : (llr > 0);
    }
    return double(wrong) / trials;
  };
  const double at_n = std::max(error_rate(p, true, s.shots), error_rate(q, false, s.shots));
  const double at_half = std::max(error_rate(p, true, s.shots / 2), error_rate(q, false, s.shots / 2));
  EXPECT_LT(at_n, 0.05 + 0.015) << "n = " << s.shots;  // 4000 trials: sd ~0.0035
  EXPECT_GT(at_half, 0.05) << "half the shots should not be enough";
  EXPECT_LE(std::max(error_rate(p, true, s.bound), error_rate(q, false, s.bound)), 0.05);
}

TEST(QganStats, DisjointAndIdenticalDistributions) {
  const auto same = shots_to_distinguish({0.5, 0.5}, {0.5, 0.5});
  EXPECT_FALSE(same.distinguishable);
  // One shot tells disjoint supports apart.
  const auto disjoint = shots_to_distinguish({1, 0}, {0, 1});
  EXPECT_TRUE(disjoint.distinguishable);
  EXPECT_EQ(disjoint.shots, 1);
  // GHZ against a noisy GHZ: any outcome outside {00, 11} is decisive; only an all-ideal
  // record can mislead: P_noisy(all n shots in {00,11}) * P(LLR <= 0 | ...).
  const Distribution ideal = {0.5, 0, 0, 0.5}, noisy = {0.45, 0.05, 0.05, 0.45};
  const auto g = shots_to_distinguish(noisy, ideal);
  const auto [a, b] = lr_test_error_rates(noisy, ideal, g.shots);
  EXPECT_LE(std::max(a, b), 0.05);
  EXPECT_EQ(b, 0.0);  // under the ideal device the noisy hypothesis never wins (ratio 0.9 < 1)
  EXPECT_NEAR(a, std::pow(0.9, double(g.shots)), 1e-12);  // mu = ln 0.9 < 0: wrong whenever nothing decisive appears
}

TEST(QganStats, BootstrapIntervalCoversTheTruthForLargeSamples) {
  std::mt19937_64 rng(3);
  const Distribution p = {0.4, 0.3, 0.2, 0.1}, q = {0.1, 0.2, 0.3, 0.4};
  std::discrete_distribution<uint64_t> dp(p.begin(), p.end()), dq(q.begin(), q.end());
  std::vector<uint64_t> a(20000), b(20000);
  for (auto& x : a) x = dp(rng);
  for (auto& x : b) x = dq(rng);
  const Estimate e = bootstrap(a, b, 4, total_variation, 200, 0.95, rng);
  EXPECT_LE(e.low, 0.4);
  EXPECT_GE(e.high, 0.4);
  EXPECT_LT(e.high - e.low, 0.03);
}

// ---- targets --------------------------------------------------------------------

TEST(QganTargets, LogNormalMassesMatchNumericalIntegration) {
  const Target t = make_target({"lognormal", 3, "", -1});
  ASSERT_EQ(t.probabilities.size(), 8u);
  // Midpoint rule on the density, 20000 points per bin, renormalised on [0, 3].
  std::vector<double> m(8, 0.0);
  double total = 0;
  for (int b = 0; b < 8; ++b) {
    for (int i = 0; i < 20000; ++i) {
      const double x = (b + (i + 0.5) / 20000) * 3.0 / 8;
      const double l = std::log(x) - 1;
      m[std::size_t(b)] += std::exp(-l * l / 2) / (x * std::sqrt(2 * M_PI)) * (3.0 / 8 / 20000);
    }
    total += m[std::size_t(b)];
  }
  for (int b = 0; b < 8; ++b) EXPECT_NEAR(t.probabilities[std::size_t(b)], m[std::size_t(b)] / total, 1e-6);
}

TEST(QganTargets, EveryTargetIsADistributionWithItsFeatures) {
  for (const std::string name : {"lognormal", "bimodal", "heavy_tailed", "gaussian2d"}) {
    const Target t = make_target({name, 0, "", -1});
    check_distribution(t.probabilities, name, 1e-12);
    EXPECT_EQ(int64_t(t.probabilities.size()), int64_t{1} << t.n_qubits);
    EXPECT_EQ(t.features.size(), t.probabilities.size() * std::size_t(t.n_features));
  }
  const Target g = make_target({"gaussian2d", 0, "", -1});
  EXPECT_EQ(g.rows, 8);
  // Symmetric under x <-> y (the correlation matrix is).
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_NEAR(g.probabilities[std::size_t(r * 8 + c)], g.probabilities[std::size_t(c * 8 + r)], 1e-15);
  EXPECT_NE(error_of([] { make_target({"lognromal", 0, "", -1}); }).find("unknown target"), std::string::npos);
  EXPECT_NE(error_of([] { make_target({"lognormal", 13, "", -1}); }).find("1 to 12"), std::string::npos);
  EXPECT_NE(error_of([] { make_target({"image", 0, "", -1}); }).find("python -m qfleet.qgan.image"), std::string::npos);
}

TEST(QganTargets, PgmReaderAndItsErrors) {
  const fs::path d = temp_dir("pgm");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(d / name, std::ios::binary) << bytes;
    return (d / name).string();
  };
  const std::string px = {char(0), char(51), char(102), char(255)};
  const Target t = make_target({"image", 0, write("ok.pgm", "P5\n# a comment\n2 2\n255\n" + px), -1});
  EXPECT_EQ(t.n_qubits, 2);
  EXPECT_NEAR(t.probabilities[3], 255.0 / (51 + 102 + 255), 1e-15);
  const GreyImage plain = read_pgm(write("plain.pgm", "P2 2 1 10 3 7\n"));
  EXPECT_NEAR(plain.pixels[1], 0.7, 1e-15);
  auto err = [&](const std::string& name, const std::string& bytes) {
    return error_of([&] { make_target({"image", 0, write(name, bytes), -1}); });
  };
  EXPECT_NE(err("magic.pgm", "P6\n2 2\n255\n" + px).find("not a PGM"), std::string::npos);
  EXPECT_NE(err("short.pgm", "P5\n2 2\n255\n" + px.substr(0, 3)).find("truncated"), std::string::npos);
  EXPECT_NE(err("extra.pgm", "P5\n2 2\n255\n" + px + "x").find("extra bytes"), std::string::npos);
  EXPECT_NE(err("maxval.pgm", "P5\n2 2\n0\n" + px).find("maximum value"), std::string::npos);
  EXPECT_NE(err("header.pgm", "P5\n2").find("header"), std::string::npos);
  EXPECT_NE(err("odd.pgm", "P5\n3 1\n255\nabc").find("2^a x 2^b"), std::string::npos);
  EXPECT_NE(err("black.pgm", std::string("P5\n2 1\n255\n") + char(0) + char(0)).find("all-black"), std::string::npos);
  EXPECT_NE(error_of([&] { read_pgm((d / "missing.pgm").string()); }).find("cannot open"), std::string::npos);
  fs::remove_all(d);
}

// ---- circuits and their lowering onto devices -------------------------------------

TEST(QganCircuits, AgainstTheDenseReference) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  for (int n : {1, 3, 5}) {
    const Circuit g = generator_circuit({n, 2});
    std::vector<double> w(std::size_t(g.n_weights()));
    for (double& v : w) v = u(rng);
    const auto a = engine_probs(g, w), b = reference_probs(g, w);
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  }
  const auto ghz = engine_probs(ghz_circuit(4));
  EXPECT_NEAR(ghz[0], 0.5, 1e-14);
  EXPECT_NEAR(ghz[15], 0.5, 1e-14);
  for (int n : {1, 4, 6}) {
    const uint64_t v = ((uint64_t{1} << n) - 1) / 3;
    EXPECT_NEAR(engine_probs(qft_circuit(n, v))[v], 1.0, 1e-12) << n;  // the inverse QFT returns the encoded value
    EXPECT_NEAR(reference_probs(qft_circuit(n, v))[v], 1.0, 1e-12) << n;
  }
  const Circuit r = random_layered_circuit(4, 3, 11);
  const auto a = engine_probs(r), b = reference_probs(r);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

// ---- training -------------------------------------------------------------------

TEST(QganTrain, LearnsTheLogNormalAndResumesBitForBit) {
  const fs::path d = temp_dir("train");
  TrainConfig c;
  c.epochs = 300;
  c.progress = false;
  c.threads = 2;
  c.out = (d / "full").string();
  const auto full = train(c);
  const double start = full["history"][0]["kl"].get<double>();
  EXPECT_LT(full["final"]["kl"].get<double>(), 0.1 * start) << "KL after 300 epochs vs the first";
  // The best KL is the least of the history (row e: going into epoch e, after e - 1
  // updates) and the final one: never above the final, and named by its updates.
  double least = full["final"]["kl"].get<double>();
  for (const auto& h : full["history"]) least = std::min(least, h["kl"].get<double>());
  EXPECT_EQ(full["final"]["best_kl"].get<double>(), least);
  const int64_t after = full["final"]["best_after_epochs"];
  EXPECT_TRUE(after == 300 ? least == full["final"]["kl"].get<double>()
                           : least == full["history"][std::size_t(after)]["kl"].get<double>()) << after;
  // 150 epochs, then --resume to 300: the same weights and history, bit for bit.
  c.out = (d / "split").string();
  c.epochs = 150;
  c.checkpoint_every = 50;
  train(c);
  c.epochs = 300;
  c.resume = true;
  const auto resumed = train(c);
  EXPECT_EQ(resumed["generator"]["weights"], full["generator"]["weights"]);
  EXPECT_EQ(resumed["history"].size(), 300u);
  EXPECT_EQ(resumed["history"][299]["kl"], full["history"][299]["kl"]);
  // A resume under another configuration is refused.
  c.lr_d = 0.02;
  EXPECT_NE(error_of([&] { train(c); }).find("configuration"), std::string::npos);
  fs::remove_all(d);
}

TEST(QganTrain, ShotsAndANoiseModel) {
  const fs::path d = temp_dir("shots");
  TrainConfig c;
  c.epochs = 200;
  c.shots = 2048;
  c.progress = false;
  c.threads = 2;
  c.out = (d / "shots").string();
  const auto r = train(c);
  EXPECT_LT(r["final"]["kl"].get<double>(), 0.5 * r["history"][0]["kl"].get<double>());
  TrainConfig n;
  n.epochs = 5;
  n.progress = false;
  n.noise_model = std::string(QFLEET_SOURCE_DIR) + "/apps/qgan/devices/fake_lagos.json";
  n.out = (d / "noisy").string();
  const auto rn = train(n);
  EXPECT_EQ(rn["generator"]["simulator"], "density_matrix");
  EXPECT_EQ(rn["generator"]["noise_model"], "fake_lagos");
  n.noise_model = (d / "missing.json").string();
  EXPECT_NE(error_of([&] { train(n); }).find("cannot open"), std::string::npos);
  fs::remove_all(d);
}

TEST(QganTrain, ParameterShiftFromShotsMatchesTheAdjointGradient) {
  // The shots mode's generator gradient against the engine's exact vector-Jacobian product,
  // noiseless and on a device (the weights then drive RZ gates followed by channels).
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(-M_PI, M_PI), r(-1, 0);
  // 5 qubits: the CNOT chain needs SWAPs on the heavy-hex device, so its wires end permuted.
  const Circuit g = generator_circuit({5, 2});
  const qfleet::LoweredCircuit low = qfleet::lower_to_device(g, device("fake_lagos"));
  ASSERT_GT(low.swaps, 0);
  for (const auto& prog : {qfleet::compile(g), qfleet::compile(qfleet::apply_noise_model(low.circuit, low.model))}) {
    std::vector<double> w(std::size_t(prog.n_weights())), reward(std::size_t(prog.n_outputs()));
    for (double& v : w) v = u(rng);
    for (double& v : reward) v = r(rng);  // log D is negative
    std::vector<double> exact(w.size());
    prog.vjp(qfleet::BatchArgs<double>{1, {}, w}, std::span<const double>(reward),
             qfleet::Gradients<double>{{}, std::span<double>(exact)});
    const int64_t shots = int64_t{1} << 17;
    const auto est = parameter_shift_gradient(prog, w, reward, shots, 5);
    // Each expectation's standard deviation is at most max|reward| / sqrt(shots); the
    // difference of two, halved, at most 1 / sqrt(2 shots) = 0.002: allow 5 of them.
    for (std::size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(est[j], exact[j], 5 / std::sqrt(2.0 * double(shots))) << j;
  }
}

// ---- tournament ------------------------------------------------------------------

TEST(QganTournament, PairsAreSymmetricAndTheIdealDeviceIsExact) {
  const fs::path d = temp_dir("tournament");
  TournamentConfig c;
  c.qubits = 3;
  c.random_circuits = 1;
  c.shots = 512;
  c.resamples = 20;
  c.progress = false;
  c.out = d.string();
  const std::string dev = std::string(QFLEET_SOURCE_DIR) + "/apps/qgan/devices/";
  c.device_files = {dev + "fake_lagos.json", dev + "fake_perth.json"};
  const auto t = run_tournament(c);
  ASSERT_EQ(t["devices"].size(), 3u);
  ASSERT_EQ(t["circuits"].size(), 3u);
  EXPECT_EQ(t["pairs"].size(), 3u * 3u);
  const auto ghz = t["distributions"]["ghz"]["noiseless"].get<std::vector<double>>();
  EXPECT_NEAR(ghz[0], 0.5, 1e-14);
  EXPECT_NEAR(ghz[7], 0.5, 1e-14);
  for (const auto& p : t["pairs"]) {
    const auto a = t["distributions"][p["circuit"].get<std::string>()][p["a"].get<std::string>()].get<std::vector<double>>();
    const auto b = t["distributions"][p["circuit"].get<std::string>()][p["b"].get<std::string>()].get<std::vector<double>>();
    EXPECT_DOUBLE_EQ(js_distance(b, a), p["js_distance"].get<double>());
    EXPECT_DOUBLE_EQ(total_variation(b, a), p["total_variation"].get<double>());
    EXPECT_EQ(shots_to_distinguish(b, a).shots, p["shots_to_distinguish"]["shots"].get<int64_t>());
    EXPECT_EQ(from_number(p["kl_ab"], "kl_ab"), kl_divergence(a, b));
  }
  // Each device's shots sample its exact distribution, outcome for outcome (the routed
  // devices measure a permutation of their wires).
  for (const auto& circuit : tournament_circuits(c))
    for (const auto& dv : tournament_devices(c)) {
      const DeviceRun run = run_on_device(circuit, dv, 8192, 3, 2);
      EXPECT_LT(total_variation(histogram(run.samples, run.probabilities.size()), run.probabilities), 0.04)
          << circuit.name << " on " << dv.name;
    }
  const auto& m = t["matrix"]["js_distance"];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m[i][j], m[j][i]);
  EXPECT_EQ(t["ranking"].size(), 2u);
  // Bad devices: a gate outside the catalogue, a device too small.
  const std::string bad = (d / "bad.json").string();
  std::ofstream(bad) << R"({"kind": "noise_model", "name": "bad", "qubits": 2, "basis_gates": ["CNOT", "Frobnicate"]})";
  c.device_files = {bad};
  EXPECT_NE(error_of([&] { run_tournament(c); }).find("Frobnicate"), std::string::npos);
  c.device_files = {dev + "fake_lagos.json"};
  c.qubits = 8;
  EXPECT_NE(error_of([&] { run_tournament(c); }).find("qubits"), std::string::npos);
  fs::remove_all(d);
}
