// The meta-control app (apps/meta_control, docs/meta_control.md): configuration
// errors, its physics against a dense Lindblad reference written here, the MAML
// meta-gradient against finite differences of the MAML objective, a seeded
// training run, checkpoint/resume equivalence, and the exported pulses fed back
// through the real `qfleet eval`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../apps_common/settings_checks.hpp"
#include "../cli/run_cli.hpp"
#include "../reference/lindblad.hpp"
#include "meta_control.hpp"
#include "qfleet/names.hpp"

namespace {

using nlohmann::json;
using qfleet::meta::ConfigError;
namespace fs = std::filesystem;

qfleet::meta::Config config(const json& file, const std::vector<std::string>& sets = {}) {
  return qfleet::meta::make_config(qfleet::meta::resolve_config(file, "", sets));
}

void expect_config_error(const json& file, const std::vector<std::string>& sets, const std::string& needle) {
  try {
    config(file, sets);
    ADD_FAILURE() << "no error for " << file.dump() << " (expected: " << needle << ")";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

std::string fresh_dir(const std::string& name) {
  const std::string d = qfleet_test::temp_path("_" + name);
  fs::remove_all(d);
  return d;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The meta-parameters a run's checkpoint holds.
torch::Tensor theta_of(const std::string& dir) {
  return qfleet::train::read_checkpoint(dir + "/checkpoint.pt").tensors.at("theta");
}

// A small, quick configuration (the physics is the paper's; the policy is small).
json small(const std::string& out) {
  return {{"iterations", 12},   {"meta_batch", 6},       {"hidden_width", 16},      {"validation_tasks", 4},
          {"validate_every", 4}, {"robust_iterations", 10}, {"grape_iterations", 20}, {"checkpoint_every", 5},
          {"threads", 2},        {"meta_lr", 0.01},       {"output_dir", out}};
}

// ---- configuration -------------------------------------------------------------------

TEST(MetaConfig, PresetsAndDefaults) {
  const auto fast = config(json::object());
  EXPECT_EQ(fast.preset, "fast");
  EXPECT_EQ(fast.n_segments, 60);  // the system's own
  EXPECT_EQ(fast.solver, "exact");
  const auto paper = config({{"preset", "paper"}});
  EXPECT_EQ(paper.iterations, 1000);
  EXPECT_EQ(paper.meta_batch, 32);
  EXPECT_EQ(paper.inner_steps, 5);
  EXPECT_DOUBLE_EQ(paper.inner_lr, 0.01);
  EXPECT_DOUBLE_EQ(paper.meta_lr, 0.001);
  EXPECT_EQ(config({{"system", "two_qubit_cz_xx_zz"}}).n_segments, 30);
  // precedence: preset < file < --set
  const auto c = config({{"preset", "paper"}, {"iterations", 7}}, {"iterations=9", "algorithm=reptile"});
  EXPECT_EQ(c.iterations, 9);
  EXPECT_EQ(c.algorithm, "reptile");
  EXPECT_EQ(config({{"fidelity", "state_transfer"}}).input_states.size(), 6u);
  EXPECT_EQ(config({{"fidelity", "state_transfer"}, {"system", "two_qubit_cz_xx_zz"}}).input_states.size(), 16u);
  // every engine solver is a choice (the schema's list is kept equal to qfleet::kSolverNames)
  for (const auto& s : qfleet::kSolverNames) {
    const bool fixed = qfleet::solver_info(s.value).fixed_step;
    EXPECT_EQ(config({{"solver", std::string(s.name)}, {"dt", fixed ? 0.01 : 0.0}}).solver, s.name);
  }
}

// Declared once: every key of config.json bound to its field in the schema's order, and
// the struct's defaults the schema's (a key added to one and not the other fails here).
TEST(MetaConfig, EveryKeyIsBoundAndTheDefaultsAreTheSchemas) {
  settings_checks::expect_bound(qfleet::meta::settings(), qfleet::meta::config_schema());
}

TEST(MetaConfig, ClearErrors) {
  expect_config_error({{"iteratons", 5}}, {}, "unknown key 'iteratons' in the configuration file (did you mean 'iterations'?)");
  expect_config_error({}, {"inner_lr"}, "--set expects key=value");
  expect_config_error({}, {"bogus=1"}, "unknown key 'bogus' in --set");
  expect_config_error({{"iterations", -1}}, {}, "key 'iterations': expected an integer in [0, 10000000], got -1");
  expect_config_error({{"iterations", 2.5}}, {}, "key 'iterations': expected an integer");
  expect_config_error({{"inner_lr", "fast"}}, {}, "key 'inner_lr': expected a number");
  expect_config_error({}, {"meta_lr=-0.1"}, "key 'meta_lr': expected a number in [0, 10]");
  expect_config_error({{"algorithm", "maml2"}}, {}, "key 'algorithm': expected one of [\"fomaml\",\"maml\",\"reptile\"]");
  expect_config_error({{"gamma_deph", {0.2, 0.1}}}, {}, "key 'gamma_deph': expected [lo, hi] with lo <= hi");
  expect_config_error({{"gamma_relax", {-0.1, 0.1}}}, {}, "key 'gamma_relax'");
  expect_config_error({{"gamma_relax", 0.1}}, {}, "key 'gamma_relax': expected [lo, hi]");
  expect_config_error({{"preset", "slow"}}, {}, "unknown preset 'slow' (presets: accurate, cz_paper, fast, main, original, original_rk4, paper)");
  expect_config_error({{"solver", "rk4"}}, {}, "solver 'rk4' needs a step: set dt");
  expect_config_error({{"dt", 0.01}}, {}, "solver 'exact' takes none");
  expect_config_error({{"input_states", {"0"}}}, {}, "input_states is used only with fidelity = state_transfer");
  expect_config_error({{"fidelity", "state_transfer"}, {"input_states", {"0+"}}}, {}, "needs one label per qubit");
  expect_config_error({{"fidelity", "state_transfer"}, {"input_states", {"x"}}}, {}, "a list of non-empty strings of the characters 01+-rl");
  if (qfleet::cuda_device_count() == 0) expect_config_error({{"device", "cuda"}}, {}, "no CUDA device is visible");
  EXPECT_THROW(qfleet::meta::load_config_file("/nonexistent/run.json"), ConfigError);
  const std::string bad = qfleet_test::write_temp("{\"iterations\": 3,");
  try {
    qfleet::meta::load_config_file(bad);
    ADD_FAILURE() << "invalid JSON accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON: parse error"), std::string::npos) << e.what();
  }
}

// ---- physics against a dense reference ------------------------------------------------------

// The app's systems, written from their description: controls X/2, Y/2 per qubit
// (+ XX/2, ZZ/2), jumps sqrt(gamma_relax) |0><1| and sqrt(gamma_deph / 2) Z per qubit.
double reference_fidelity(const qfleet::meta::Config& cfg, const std::vector<double>& u, double deph,
                          double relax) {
  using namespace ref;
  const bool two = cfg.system == "two_qubit_cz_xx_zz";
  const Index d = two ? 4 : 2;
  auto on = [&](const Mat& m, int q) { return two ? (q == 0 ? kron(m, eye(2)) : kron(eye(2), m)) : m; };
  std::vector<Mat> ctrl, jumps;
  std::vector<double> rates;
  for (int q = 0; q < (two ? 2 : 1); ++q) {
    ctrl.push_back(0.5 * on(pauli('X'), q));
    ctrl.push_back(0.5 * on(pauli('Y'), q));
    jumps.push_back(on(ket_bra(2, 0, 1), q));
    rates.push_back(relax);
    jumps.push_back(on(pauli('Z'), q));
    rates.push_back(deph / 2);
  }
  if (two) {
    ctrl.push_back(0.5 * kron(pauli('X'), pauli('X')));
    ctrl.push_back(0.5 * kron(pauli('Z'), pauli('Z')));
  }
  const int nc = static_cast<int>(ctrl.size());
  const double dt = cfg.gate_time / double(cfg.n_segments);
  Mat S = eye(d * d);
  for (int s = 0; s < cfg.n_segments; ++s) {
    Mat h = Mat::Zero(d, d);
    for (int k = 0; k < nc; ++k) h += u[std::size_t(s * nc + k)] * ctrl[std::size_t(k)];
    S = Mat((liouvillian(h, jumps, rates) * dt).exp()) * S;
  }
  Mat V = two ? Mat(Eigen::Vector4cd(1, 1, 1, -1).asDiagonal()) : pauli('X');
  const Channel e = [&](const Mat& x) { return unvec(S * vec(x), d); };
  if (cfg.fidelity == "average_gate") return avg_fidelity_weyl(e, V, d);
  double f = 0;
  const double r = 1 / std::sqrt(2.0);
  for (const auto& label : cfg.input_states) {
    Vec psi = Vec::Ones(1);
    for (char c : label) {
      Vec q(2);
      if (c == '0') q << 1, 0;
      if (c == '1') q << 0, 1;
      if (c == '+') q << r, r;
      if (c == '-') q << r, -r;
      if (c == 'r') q << r, kI * r;
      if (c == 'l') q << r, -kI * r;
      Vec next(psi.size() * 2);
      for (Index i = 0; i < psi.size(); ++i) next.segment(2 * i, 2) = psi(i) * q;
      psi = next;
    }
    const Vec target = V * psi;
    f += (target.adjoint() * e(psi * psi.adjoint()) * target)(0, 0).real();
  }
  return f / double(cfg.input_states.size());
}

TEST(MetaPhysics, FidelityMatchesDenseReference) {
  for (const json& file : {json{{"n_segments", 7}},
                           json{{"n_segments", 5}, {"fidelity", "state_transfer"}},
                           json{{"system", "two_qubit_cz_xx_zz"}, {"n_segments", 4}},
                           json{{"system", "two_qubit_cz_xx_zz"}, {"n_segments", 3}, {"fidelity", "state_transfer"}},
                           json{{"n_segments", 6}, {"gate_time", 2.5}}}) {
    SCOPED_TRACE(file.dump());
    const auto cfg = config(file);
    const qfleet::meta::Problem pr(cfg);
    const int T = 3, n = pr.n_segments() * pr.n_controls();
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> amp(-4, 4), deph(0.02, 0.15), relax(0.01, 0.08);
    std::vector<double> u(std::size_t(T) * n), noise(2 * T);
    for (auto& x : u) x = amp(rng);
    for (int t = 0; t < T; ++t) noise[2 * t] = deph(rng), noise[2 * t + 1] = relax(rng);
    const auto f = pr.fidelity(torch::tensor(u, torch::kFloat64).view({T, pr.n_segments(), pr.n_controls()}),
                               torch::tensor(noise, torch::kFloat64).view({T, 2}));
    for (int t = 0; t < T; ++t) {
      const std::vector<double> ut(u.begin() + t * n, u.begin() + (t + 1) * n);
      EXPECT_NEAR(f[t].item<double>(), reference_fidelity(cfg, ut, noise[2 * t], noise[2 * t + 1]), 1e-10);
    }
  }
}

// ---- meta-gradients --------------------------------------------------------------------------

TEST(MetaGradient, MamlMatchesFiniteDifferencesOfTheMamlObjective) {
  // A large inner step makes the second-order term visible (FOMAML misses it).
  const json base = {{"hidden_width", 6}, {"hidden_layers", 1}, {"n_segments", 4}, {"inner_steps", 2},
                     {"inner_lr", 0.5},    {"amplitude_scale", 2.0}};
  json m = base, fo = base;
  m["algorithm"] = "maml";
  const auto cfg = config(m), cfg_fo = config(fo);
  const int64_t P = qfleet::meta::policy_size(cfg);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const torch::Tensor theta = torch::rand({P}, gen, torch::kFloat64) * 2 - 1;
  const torch::Tensor noise = torch::tensor({0.05, 0.02, 0.12, 0.07, 0.09, 0.03}, torch::kFloat64).view({3, 2});
  const torch::Tensor g = qfleet::meta::meta_gradient(cfg, theta, noise);
  const torch::Tensor g_fo = qfleet::meta::meta_gradient(cfg_fo, theta, noise);
  double worst = 0, fo_miss = 0;
  for (int k = 0; k < 4; ++k) {
    const torch::Tensor dir = torch::rand({P}, gen, torch::kFloat64) * 2 - 1;
    const double h = 1e-4;
    const double fd = (qfleet::meta::meta_objective(cfg, theta + h * dir, noise) -
                       qfleet::meta::meta_objective(cfg, theta - h * dir, noise)) / (2 * h);
    const double an = (g * dir).sum().item<double>();
    worst = std::max(worst, std::abs(an - fd) / std::max(1.0, std::abs(fd)));
    fo_miss = std::max(fo_miss, std::abs((g_fo * dir).sum().item<double>() - fd) / std::max(1.0, std::abs(fd)));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(fo_miss, 1e-3);  // the check can tell first from second order
}

TEST(MetaGradient, ReptileIsTheMeanDisplacement) {
  json r = {{"hidden_width", 4}, {"hidden_layers", 1}, {"n_segments", 3}, {"inner_steps", 1}, {"algorithm", "reptile"}};
  const auto cfg = config(r), fo = config({{"hidden_width", 4}, {"hidden_layers", 1}, {"n_segments", 3}, {"inner_steps", 0}});
  const int64_t P = qfleet::meta::policy_size(cfg);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  const torch::Tensor theta = torch::rand({P}, gen, torch::kFloat64) - 0.5;
  const torch::Tensor noise = torch::tensor({0.05, 0.02, 0.12, 0.07}, torch::kFloat64).view({2, 2});
  // one SGD step: theta - phi = lr * (mean gradient at theta) = lr * FOMAML with no inner steps
  const auto want = cfg.inner_lr * qfleet::meta::meta_gradient(fo, theta, noise);
  EXPECT_TRUE(torch::allclose(qfleet::meta::meta_gradient(cfg, theta, noise), want, 1e-9, 1e-12));
}

// ---- runs --------------------------------------------------------------------------------------

TEST(MetaRun, SeededTrainingRaisesValidationFidelity) {
  json c = small(fresh_dir("train"));
  c["iterations"] = 40;
  c["validate_every"] = 10;
  const auto res = qfleet::meta::run(config(c), {});
  ASSERT_TRUE(res.complete);
  const auto& curve = res.report["curve"];
  const double start = curve.front()["val_after"], end = curve.back()["val_after"];
  EXPECT_LT(start, 0.5);        // the random policy is far from an X gate
  EXPECT_GT(end, start + 0.4);  // the stated margin
  const auto& v = res.report["validation"];
  EXPECT_GE(v["mean_grape"].get<double>(), v["mean_after"].get<double>());  // GRAPE starts from the adapted pulse
  EXPECT_EQ(v["tasks"].size(), 4u);
}

TEST(MetaRun, ResumeGivesTheUninterruptedResult) {
  for (const std::string algo : {"fomaml", "maml", "reptile"}) {
    SCOPED_TRACE(algo);
    json a = small(fresh_dir("whole_" + algo)), b = small(fresh_dir("parts_" + algo));
    a["algorithm"] = b["algorithm"] = algo;
    if (algo == "maml") a["iterations"] = b["iterations"] = 6;
    const auto whole = qfleet::meta::run(config(a), {});
    qfleet::meta::RunOptions stop;
    stop.stop_after = algo == "maml" ? 3 : 7;
    const auto first = qfleet::meta::run(config(b), stop);
    EXPECT_FALSE(first.complete);
    qfleet::meta::RunOptions resume;
    resume.resume = true;
    const auto rest = qfleet::meta::run(config(b), resume);
    ASSERT_TRUE(rest.complete);
    EXPECT_EQ(whole.report["curve"], rest.report["curve"]);
    EXPECT_EQ(whole.report["validation"], rest.report["validation"]);
    EXPECT_TRUE(torch::equal(theta_of(a["output_dir"]), theta_of(b["output_dir"])));
  }
}

// meta_step = graph (the optimizer's state and a cosine learning rate on the device; captured
// on a GPU, eager here) follows torch::optim's run, and a checkpoint of either mode resumes in
// the other (the checkpoint holds torch::optim's state).
TEST(MetaRun, GraphStepFollowsTheEagerRunAndTheirCheckpointsInterchange) {
  auto cfg = [](const std::string& name) {
    json c = small(fresh_dir(name));
    c["meta_optimizer"] = "adamw";
    c["weight_decay"] = 1e-3;
    c["meta_lr_schedule"] = "cosine";
    c["meta_lr_min"] = 1e-4;
    return c;
  };
  const json e = cfg("eager_whole");
  const auto whole = qfleet::meta::run(config(e, {"meta_step=eager"}), {});
  EXPECT_EQ(whole.report["device"]["meta_step"], "eager");
  const torch::Tensor want = theta_of(e["output_dir"]);
  const json g = cfg("graph_whole");
  const auto graph = qfleet::meta::run(config(g, {"meta_step=graph"}), {});
  EXPECT_EQ(graph.report["device"]["meta_step"], "graph");
  EXPECT_NE(graph.report["device"]["graph"].get<std::string>().find("eager: graph mode needs a CUDA device"),
            std::string::npos);
  EXPECT_LT((theta_of(g["output_dir"]) - want).abs().max().item<double>(), 1e-9);
  for (const auto& [first, then] : {std::pair{"graph", "eager"}, std::pair{"eager", "graph"}}) {
    SCOPED_TRACE(std::string(first) + " then " + then);
    const json b = cfg(std::string("split_") + first);
    qfleet::meta::RunOptions stop;
    stop.stop_after = 7;
    EXPECT_FALSE(qfleet::meta::run(config(b, {std::string("meta_step=") + first}), stop).complete);
    qfleet::meta::RunOptions resume;
    resume.resume = true;
    ASSERT_TRUE(qfleet::meta::run(config(b, {std::string("meta_step=") + then}), resume).complete);
    EXPECT_LT((theta_of(b["output_dir"]) - want).abs().max().item<double>(), 1e-9);
  }
  // The comparison can fail: a run without the weight decay ends elsewhere.
  json w = cfg("graph_no_decay");
  w["weight_decay"] = 0.0;
  qfleet::meta::run(config(w, {"meta_step=graph"}), {});
  EXPECT_GT((theta_of(w["output_dir"]) - want).abs().max().item<double>(), 1e-7);
}

TEST(MetaRun, ResumeRejectsAChangedConfiguration) {
  json b = small(fresh_dir("changed"));
  qfleet::meta::RunOptions stop;
  stop.stop_after = 2;
  qfleet::meta::run(config(b), stop);
  b["inner_lr"] = 0.02;
  qfleet::meta::RunOptions resume;
  resume.resume = true;
  try {
    qfleet::meta::run(config(b), resume);
    ADD_FAILURE() << "resumed with a different inner_lr";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("inner_lr (checkpoint 0.01, now 0.02)"), std::string::npos) << e.what();
  }
  json none = small(fresh_dir("none"));
  EXPECT_THROW(qfleet::meta::run(config(none), resume), ConfigError);
}

TEST(MetaRun, ResumeRefusesADamagedOrOldCheckpoint) {
  // The checkpoint is train::save_checkpoint's file, with the SHA-1 of its content: a changed
  // parameter is refused with one line instead of resuming a different run (bytes flipped in
  // general: tests/torch/test_train_state.cpp); a JSON checkpoint of an older qfleet is named.
  json b = small(fresh_dir("edited"));
  qfleet::meta::RunOptions stop;
  stop.stop_after = 2;
  qfleet::meta::run(config(b), stop);
  const std::string dir = b["output_dir"], ck_path = dir + "/checkpoint.pt";
  std::string bytes;
  {
    std::ifstream in(ck_path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  qfleet::meta::RunOptions resume;
  resume.resume = true;
  auto refused = [&](const std::string& part) {
    try {
      qfleet::meta::run(config(b), resume);
      ADD_FAILURE() << "resumed from a checkpoint that should be refused (" << part << ")";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  const torch::Tensor theta = theta_of(dir).contiguous();
  const std::string raw(static_cast<const char*>(theta.data_ptr()), std::size_t(theta.numel() * theta.element_size()));
  const std::size_t at = bytes.find(raw);
  ASSERT_NE(at, std::string::npos) << "the parameters' bytes are not in the file";
  std::string edited = bytes;
  edited[at] = char(edited[at] ^ 1);  // the lowest bit of the first parameter
  std::ofstream(ck_path, std::ios::binary) << edited;
  refused("is damaged: its SHA-1");
  fs::remove(ck_path);
  std::ofstream(dir + "/checkpoint.json") << "{\"format\": \"qfleet-meta-checkpoint/2\"}";
  refused("written by an older qfleet (a JSON checkpoint");
  fs::remove(dir + "/checkpoint.json");
  std::ofstream(ck_path, std::ios::binary) << bytes;  // the undamaged file resumes
  EXPECT_TRUE(qfleet::meta::run(config(b), resume).complete);
}

// --nproc: the meta-batch split over processes gives one process's parameters (the
// per-task rows are gathered in task order and reduced as on one process), also when
// the two-process run is stopped and resumed.
TEST(MetaRun, TwoProcessesGiveTheOneProcessResult) {
  for (const std::string algo : {"fomaml", "reptile"}) {
    SCOPED_TRACE(algo);
    const std::string one = fresh_dir("one_" + algo), two = fresh_dir("two_" + algo), cut = fresh_dir("cut_" + algo);
    json c = small(one);
    c["algorithm"] = algo;
    c["threads"] = 1;
    const std::string cfg_path = qfleet_test::write_temp(c.dump());
    auto r = qfleet_test::run_program(QFLEET_META_PATH, {"--config", cfg_path, "--quiet"});
    ASSERT_EQ(r.status, 0) << r.err;
    r = qfleet_test::run_program(QFLEET_META_PATH, {"--config", cfg_path, "--quiet", "--nproc", "2", "--out", two});
    ASSERT_EQ(r.status, 0) << r.err;
    r = qfleet_test::run_program(QFLEET_META_PATH,
                                 {"--config", cfg_path, "--quiet", "--nproc", "2", "--out", cut, "--stop-after", "7"});
    ASSERT_EQ(r.status, 0) << r.err;
    r = qfleet_test::run_program(QFLEET_META_PATH, {"--config", cfg_path, "--quiet", "--nproc", "2", "--out", cut, "--resume"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json a = read_json(one + "/report.json"), b = read_json(two + "/report.json"), d = read_json(cut + "/report.json");
    EXPECT_EQ(b["training_run"]["processes"], 2);
    EXPECT_EQ(a["validation"], b["validation"]);
    EXPECT_EQ(a["curve"], b["curve"]);
    EXPECT_EQ(a["validation"], d["validation"]);
    EXPECT_TRUE(torch::equal(theta_of(one), theta_of(two)));
    EXPECT_TRUE(torch::equal(theta_of(one), theta_of(cut)));
  }
  const auto r = qfleet_test::run_program(QFLEET_META_PATH, {"--set", "meta_batch=2", "--nproc", "3", "--quiet"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--nproc 3: a run with meta_batch = 2 takes at most 2 processes"), std::string::npos) << r.err;
}

// The binaries end to end: qfleet-meta writes pulses, `qfleet eval` reproduces the report.
TEST(MetaRun, ExportedPulsesThroughQfleetEvalReproduceTheReport) {
  for (const json& extra : {json{{"algorithm", "fomaml"}},
                            json{{"fidelity", "state_transfer"}, {"system", "two_qubit_cz_xx_zz"}, {"iterations", 3}}}) {
    SCOPED_TRACE(extra.dump());
    const std::string out = fresh_dir("cli");
    json c = small(out);
    c.update(extra);
    const std::string cfg_path = qfleet_test::write_temp(c.dump());
    const auto r = qfleet_test::run_program(QFLEET_META_PATH, {"--config", cfg_path, "--quiet"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json report = read_json(out + "/report.json");
    const auto cfg = config(c);
    std::vector<double> mean(report["validation"]["tasks"].size(), 0.0);
    std::vector<std::string> files;
    if (cfg.fidelity == "average_gate") {
      files.push_back(out + "/eval/meta_adapted.json");
    } else {
      for (const auto& s : cfg.input_states) files.push_back(out + "/eval/meta_adapted_" + s + ".json");
    }
    for (const auto& f : files) {
      const auto e = qfleet_test::run_cli({"eval", f});
      ASSERT_EQ(e.status, 0) << e.err;
      const auto fid = json::parse(e.out)["fidelity"];
      ASSERT_EQ(fid.size(), mean.size());
      for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += fid[i].get<double>() / double(files.size());
    }
    for (std::size_t i = 0; i < mean.size(); ++i)
      EXPECT_NEAR(mean[i], report["validation"]["tasks"][i]["fidelity_after"].get<double>(), 1e-12);
    // the CSV holds every pulse: robust (shared) + 3 kinds per validation task, n_seg rows each
    std::ifstream csv(out + "/pulses.csv");
    std::size_t lines = 0;
    for (std::string line; std::getline(csv, line);) ++lines;
    EXPECT_EQ(lines, 1 + std::size_t(cfg.n_segments) * (1 + 3 * mean.size()));
  }
}

TEST(MetaRun, CommandLineErrorsAreClear) {
  auto r = qfleet_test::run_program(QFLEET_META_PATH, {"--set", "iteratons=5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("qfleet-meta: error: config: unknown key 'iteratons' in --set (did you mean 'iterations'?)"),
            std::string::npos)
      << r.err;
  r = qfleet_test::run_program(QFLEET_META_PATH, {"--config", "/nonexistent.json"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot open /nonexistent.json"), std::string::npos) << r.err;
  r = qfleet_test::run_program(QFLEET_META_PATH, {"--resume", "--out", fresh_dir("nothing")});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("resume: no checkpoint at"), std::string::npos) << r.err;
  r = qfleet_test::run_program(QFLEET_META_PATH, {"--stop-after", "-3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--stop-after"), std::string::npos) << r.err;
  r = qfleet_test::run_program(QFLEET_META_PATH, {"--preset", "paper", "--print-config"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(json::parse(r.out)["iterations"], 1000);
}

}  // namespace
