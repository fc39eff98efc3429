// The meta-control app's reproduction of arXiv:2601.18973 (docs/reproduction.md): the
// paper's CZ system against a dense Lindblad reference written here from the paper's
// definition, the original policy's pieces (features, orthogonal init, LayerNorm, bounds),
// the original integrator's options, the fits, and every experiment on a tiny budget
// (its output's schema and one physical fact each).
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../cli/run_cli.hpp"
#include "../reference/lindblad.hpp"
#include "experiments.hpp"
#include "fit.hpp"
#include "meta_control.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
namespace mc = qfleet::meta;

mc::Config config(const std::string& preset, const std::vector<std::string>& sets = {}) {
  return mc::make_config(mc::resolve_config(json::object(), preset, sets));
}

// The paper's CZ system from its definition (two_qubit_cz_maml_fast.py): H = J Z1 Z2 +
// sum_k u_k H_k with H_k = X1, Y1, X2, Y2, Z1, Z2; jumps Z_q at rate gamma_deph_q / 2 and
// sigma_m = [[0, 0], [1, 0]] on qubit q at rate gamma_relax_q; the mean over its 12 input
// states of <CZ psi| rho_psi(T) |CZ psi>.
double paper_cz_fidelity(const std::vector<double>& u, int n_seg, double T, double J, const std::vector<double>& g) {
  using namespace ref;
  const Mat I = eye(2);
  const Mat X = pauli('X'), Y = pauli('Y'), Z = pauli('Z');
  const Mat sm = ket_bra(2, 1, 0);
  const std::vector<Mat> H = {kron(X, I), kron(Y, I), kron(I, X), kron(I, Y), kron(Z, I), kron(I, Z)};
  const std::vector<Mat> L = {kron(Z, I), kron(sm, I), kron(I, Z), kron(I, sm)};
  const std::vector<double> rates = {g[0] / 2, g[1], g[2] / 2, g[3]};
  const double dt = T / n_seg;
  Mat S = eye(16);
  for (int s = 0; s < n_seg; ++s) {
    Mat h = J * kron(Z, Z);
    for (int k = 0; k < 6; ++k) h += u[std::size_t(s * 6 + k)] * H[std::size_t(k)];
    S = Mat((liouvillian(h, L, rates) * dt).exp()) * S;
  }
  const double r = 1 / std::sqrt(2.0);
  Vec k0(2), k1(2), kp(2), km(2), kpi(2), kmi(2);
  k0 << 1, 0;
  k1 << 0, 1;
  kp << r, r;
  km << r, -r;
  kpi << r, kI * r;
  kmi << r, -kI * r;
  auto two = [](const Vec& a, const Vec& b) {
    Vec v(4);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) v(2 * i + j) = a(i) * b(j);
    return v;
  };
  const std::vector<Vec> states = {two(kp, kp), two(kp, km), two(km, kp),  two(km, km),  two(kpi, kpi), two(kpi, kmi),
                                   two(k1, kp), two(k1, km), two(kp, k1),  two(km, k1),  two(k0, k0),   two(k1, k1)};
  const Mat CZ = Mat(Eigen::Vector4cd(1, 1, 1, -1).asDiagonal());
  double f = 0;
  for (const auto& psi : states) {
    const Vec target = CZ * psi;
    const Mat rho = unvec(S * vec(Mat(psi * psi.adjoint())), 4);
    f += (target.adjoint() * rho * target)(0, 0).real();
  }
  return f / 12;
}

TEST(Reproduction, PaperCzSystemMatchesItsDefinition) {
  const auto cfg = config("cz_paper", {"n_segments=4"});
  EXPECT_EQ(cfg.input_states.size(), 12u);
  const mc::Problem pr(cfg);
  ASSERT_EQ(pr.n_controls(), 6);
  ASSERT_EQ(pr.n_noise(), 4);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> amp(-3.1, 3.1), rate(0.001, 0.05);
  const int T = 2, n = 4 * 6;
  std::vector<double> u(std::size_t(T) * n), g(4 * T);
  for (auto& x : u) x = amp(rng);
  for (auto& x : g) x = rate(rng);
  const auto f = pr.fidelity(torch::tensor(u, torch::kFloat64).view({T, 4, 6}), torch::tensor(g, torch::kFloat64).view({T, 4}));
  for (int t = 0; t < T; ++t) {
    const std::vector<double> ut(u.begin() + t * n, u.begin() + (t + 1) * n), gt(g.begin() + 4 * t, g.begin() + 4 * t + 4);
    EXPECT_NEAR(f[t].item<double>(), paper_cz_fidelity(ut, 4, M_PI / 4, 2.0, gt), 1e-10);
  }
}

TEST(Reproduction, OriginalPolicyPieces) {
  const auto cfg = config("original");
  const mc::Problem pr(cfg);
  const auto spec = mc::policy_spec(cfg, pr);
  EXPECT_EQ(spec.in, 3);
  EXPECT_EQ(spec.layers, 3);
  const torch::Tensor noise = torch::tensor({{0.05, 0.02}, {0.15, 0.08}}, torch::kFloat64);
  const auto feats = mc::task_features(cfg, noise);  // gamma_deph/0.1, gamma_relax/0.05, sum/0.15
  EXPECT_NEAR(feats[0][0].item<double>(), 0.5, 1e-15);
  EXPECT_NEAR(feats[0][1].item<double>(), 0.4, 1e-15);
  EXPECT_NEAR(feats[1][2].item<double>(), 0.23 / 0.15, 1e-15);
  // Orthogonal init: each torch-shaped weight W [out, in] has orthonormal rows or columns, times the gain.
  const mc::Policy policy(spec);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const auto theta = policy.init(gen, torch::kFloat64);
  const auto pieces = policy.split(theta);
  const torch::Tensor W0 = pieces[0].view({3, 128}).t();  // stored [in, out]
  EXPECT_TRUE(torch::allclose(W0.t().matmul(W0), 0.25 * torch::eye(3, torch::kFloat64), 0, 1e-12));
  const torch::Tensor W1 = pieces[2].view({128, 128});
  EXPECT_TRUE(torch::allclose(W1.matmul(W1.t()), 0.25 * torch::eye(128, torch::kFloat64), 0, 1e-12));
  EXPECT_EQ(pieces[1].abs().max().item<double>(), 0.0);  // zero biases
  // The clamp: amplitudes never leave +-10.
  const auto big = policy.forward(theta * 1000, feats);
  EXPECT_LE(big.abs().max().item<double>(), 10.0);
  // The CZ policy: LayerNorm (scale 1, shift 0 at init) and tanh-bounded amplitudes.
  const auto czc = config("cz_paper", {"hidden_width=16", "hidden_layers=2"});
  const mc::Problem czp(czc);
  const mc::Policy cz(mc::policy_spec(czc, czp));
  const auto ct = cz.init(gen, torch::kFloat64);
  const auto cf = mc::task_features(czc, torch::tensor({{0.005, 0.002, 0.006, 0.0021}}, torch::kFloat64));
  const auto out = cz.forward(ct * 50, cf);
  EXPECT_LE(out.abs().max().item<double>(), M_PI + 1e-12);
  // By hand: the first hidden layer's LayerNorm output has mean 0 and variance 1 before tanh.
  const auto p = cz.split(ct);
  const auto h = torch::addmm(p[1], cf, p[0].view({4, 16}));
  const auto z = (h - h.mean(1, true)) / torch::sqrt(h.var(1, false, true) + 1e-5);
  EXPECT_TRUE(torch::allclose(torch::layer_norm(h, {16}, {}, {}, 1e-5) * p[2] + p[3], z, 0, 1e-12));
}

TEST(Reproduction, OriginalIntegratorAgreesWithTheExactOne) {
  // RK4 at one step per 1/60 segment (the original's dt = 0.05 with its int() rule) against
  // the exact propagators; renormalising the trace changes nothing RK4 did not already keep.
  const auto exact = config("original"), rk4 = config("original_rk4"),
             rk4_plain = config("original_rk4", {"renormalize_trace=false"});
  const mc::Problem pe(exact), pr(rk4), pp(rk4_plain);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const auto u = (torch::rand({4, 60, 2}, gen, torch::kFloat64) * 2 - 1) * 8;
  const auto noise = torch::tensor({{0.02, 0.01}, {0.15, 0.08}, {1.05, 0.56}, {0.07, 0.03}}, torch::kFloat64);
  const auto fe = pe.fidelity(u, noise), fr = pr.fidelity(u, noise), fp = pp.fidelity(u, noise);
  // RK4's error per 1/60 step is O((h |L|)^5 / 120), h |L| <= 0.4 for |u| <= 8: measured 2.7e-5.
  EXPECT_LT((fe - fr).abs().max().item<double>(), 1e-4);
  EXPECT_LT((fr - fp).abs().max().item<double>(), 1e-13);
  EXPECT_NE(pr.fidelity_definition().find("/ tr rho_psi(T)"), std::string::npos);
}

TEST(Reproduction, FitsRecoverKnownParameters) {
  std::vector<double> K, G, x, y;
  for (int k = 0; k <= 30; ++k) K.push_back(k), G.push_back(0.006 * (1 - std::exp(-0.19 * k)));
  const auto f = mc::fit_saturation(K, G);
  EXPECT_NEAR(f.c, 0.006, 1e-9);
  EXPECT_NEAR(f.beta, 0.19, 1e-6);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
  for (int i = 0; i < 10; ++i) x.push_back(i), y.push_back(2.5 * i - 1);
  const auto l = mc::fit_line(x, y);
  EXPECT_NEAR(l.slope, 2.5, 1e-12);
  EXPECT_NEAR(l.intercept, -1, 1e-12);
  EXPECT_THROW(mc::fit_line({1, 1}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(mc::fit_saturation({1, 2}, {0, NAN}), std::invalid_argument);
}

TEST(Reproduction, ConfigurationChecks) {
  auto expect_error = [](const std::string& preset, const std::vector<std::string>& sets, const std::string& needle) {
    try {
      config(preset, sets);
      ADD_FAILURE() << "no error (expected: " << needle << ")";
    } catch (const mc::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("fast", {"task_noise=\"per_qubit_correlated\""}, "needs a two-qubit system");
  expect_error("fast", {"renormalize_trace=true"}, "set fidelity = state_transfer");
  expect_error("cz_paper", {"amplitude_clamp=3"}, "output = tanh bounds the amplitudes");
  expect_error("cz_paper", {"controls=\"half_pauli\""}, "controls are X, Y and Z");
  expect_error("fast", {"dt_rule=\"floor\""}, "dt_rule is the step rule of rk4/euler");
  expect_error("fast", {"layer_norm=1"}, "key 'layer_norm': expected true or false");
}

// Every experiment on a tiny budget, from scratch: the outputs exist with their keys, and
// one physical fact each.
TEST(Reproduction, EveryExperimentOnATinyBudget) {
  mc::ReproOptions o;
  o.out_dir = qfleet_test::temp_path("_repro");
  fs::remove_all(o.out_dir);
  o.tiny = true;
  o.threads = 2;
  o.quiet = true;
  const json all = mc::reproduce_all(o)["experiments"];
  for (const auto& name : mc::experiment_names()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(fs::exists(o.out_dir + "/" + name + "/result.json"));
    EXPECT_TRUE(fs::exists(o.out_dir + "/" + name + "/table.md"));
    EXPECT_TRUE(all[name].contains("paper") && all[name]["paper"].contains("source"));
  }
  EXPECT_TRUE(fs::exists(o.out_dir + "/reproduction.md"));
  // gap-vs-k: G_0 = 0, and G_K never decreases for SGD with a small step (each step lowers the loss).
  for (const auto& m : all["gap-vs-k"]["ours"]["models"]) {
    const auto g = m["runs"]["sgd"]["curve"]["mean_gap"].get<std::vector<double>>();
    EXPECT_EQ(g[0], 0.0);
    for (std::size_t k = 1; k < g.size(); ++k) EXPECT_GE(g[k], g[k - 1] - 1e-12) << "K = " << k;
  }
  // gap-vs-variance: one point per scale, and the sampled variance grows with the width.
  const auto& v = all["gap-vs-variance"]["ours"];
  EXPECT_EQ(v["G"].size(), 3u);
  EXPECT_LT(v["variance"][0].get<double>(), v["variance"][2].get<double>());
  // out-of-distribution: every task lies outside the training box.
  EXPECT_TRUE(all["out-of-distribution"]["ours"]["all_tasks_outside_training_box"].get<bool>());
  // cz: fidelities are probabilities.
  for (const char* k : {"F_0", "F_5", "F_30"}) {
    const double f = all["cz"]["ours"][k];
    EXPECT_TRUE(f >= 0 && f <= 1) << k << " = " << f;
  }
  // lemmas: the sampled Lipschitz ratio never exceeds its supremum.
  EXPECT_LE(all["lemmas"]["ours"]["lipschitz"]["C_L"].get<double>(),
            all["lemmas"]["ours"]["lipschitz"]["C_L_sup"].get<double>() + 1e-12);
  // The models are cached: a second experiment reuses them.
  const json again = mc::run_experiment("gap-vs-k", o);
  EXPECT_TRUE(again["ours"]["models"][0]["model"]["cached"].get<bool>());
  EXPECT_THROW(mc::run_experiment("bogus", o), mc::ConfigError);
  fs::remove_all(o.out_dir);
}

}  // namespace
