// qfleet-rl (apps/rl): the environments against an independent dense simulation (Eigen,
// tests/reference), their seeding, autoreset, rewards and errors; PPO on a small budget,
// its resume, and its pulses through `qfleet eval`'s library.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "evaluation.hpp"
#include "ppo.hpp"
#include "qfleet/json_problem.hpp"
#include "reference/lindblad.hpp"
#include "small_ppo.hpp"
#include "vec_env.hpp"

namespace {

using namespace qfleet::rl;
using ref::cd;
using ref::Mat;

Mat from(const qfleet::rl::Mat& m, int d) {
  Mat r(d, d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) r(i, j) = m[std::size_t(i * d + j)];
  return r;
}

// The reference channel of one episode: prod_t expm(L(u_t) dt), L from tests/reference.
Mat reference_channel(const TaskSpec& t, const std::vector<std::vector<double>>& amps, const std::vector<double>& params) {
  const int d = t.dim;
  Mat s = ref::eye(d * d);
  const double dt = t.gate_time / double(t.n_steps);
  for (const auto& u : amps) {
    Mat h = t.h0.empty() ? Mat::Zero(d, d) : from(t.h0, d);
    for (std::size_t m = 0; m < t.drift_terms.size(); ++m) h += params[std::size_t(t.drift_param[m])] * from(t.drift_terms[m], d);
    for (std::size_t k = 0; k < t.controls.size(); ++k) h += u[k] * from(t.controls[k], d);
    std::vector<Mat> jumps;
    std::vector<double> rates;
    for (std::size_t j = 0; j < t.jumps.size(); ++j) {
      jumps.push_back(from(t.jumps[j], d));
      rates.push_back(params[std::size_t(t.rate_param[j])]);
    }
    const Mat l = ref::liouvillian(h, jumps, rates) * dt;
    s = Mat(l.exp()) * s;
  }
  return s;
}

Mat apply_channel(const Mat& s, const Mat& x) {
  const auto d = x.rows();
  Eigen::VectorXcd v(d * d);
  for (Eigen::Index j = 0; j < d; ++j)
    for (Eigen::Index i = 0; i < d; ++i) v(j * d + i) = x(i, j);
  const Eigen::VectorXcd y = s * v;
  Mat out(d, d);
  for (Eigen::Index j = 0; j < d; ++j)
    for (Eigen::Index i = 0; i < d; ++i) out(i, j) = y(j * d + i);
  return out;
}

struct Episode {
  std::vector<std::vector<double>> amps;
  torch::Tensor last_obs, final_obs, final_fid, rewards;
};

Episode run_episode(VecEnv& env, const torch::Tensor& tasks, uint64_t seed, uint64_t action_seed) {
  env.reset(seed, tasks);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(action_seed);
  Episode e;
  std::vector<torch::Tensor> rew;
  for (int64_t s = 0; s < env.n_steps(); ++s) {
    const torch::Tensor a = torch::rand({env.num_envs(), env.n_controls()}, gen, torch::kFloat64) * 2 - 1;
    const torch::Tensor amp = env.amplitudes(a);
    std::vector<double> row(amp[0].data_ptr<double>(), amp[0].data_ptr<double>() + env.n_controls());
    e.amps.push_back(row);
    const StepResult r = env.step(a);
    rew.push_back(r.reward);
    e.final_obs = r.final_obs;
    e.final_fid = r.final_fidelity;
    e.last_obs = r.obs;
  }
  e.rewards = torch::stack(rew, 1);
  return e;
}

TEST(RlEnv, QubitXChannelFeaturesAndFidelityMatchTheDenseReference) {
  for (const char* kind : {"density", "expectations"}) {
    EnvConfig c;
    c.task = "qubit_x";
    c.num_envs = 1;
    c.observation = kind;
    c.n_steps = 12;
    VecEnv env(c);
    const torch::Tensor tasks = torch::tensor({{0.11, 0.07}}, torch::kFloat64);
    const Episode e = run_episode(env, tasks, 5, 9);
    const TaskSpec& t = env.task();
    const Mat s = reference_channel(t, e.amps, {0.11, 0.07});
    const Mat x = ref::pauli('X');
    const double f_ref = ref::avg_fidelity_weyl([&](const Mat& m) { return apply_channel(s, m); }, x, 2);
    EXPECT_NEAR(e.final_fid[0].item<double>(), f_ref, 1e-12);
    EXPECT_NEAR(e.rewards[0][11].item<double>(), f_ref, 1e-6);  // final reward (float32)
    EXPECT_EQ(e.rewards[0].slice(0, 0, 11).abs().sum().item<double>(), 0.0);
    const auto fo = e.final_obs[0];
    if (std::string(kind) == "density") {
      for (int k = 0; k < 16; ++k) {
        EXPECT_NEAR(fo[2 * k].item<double>(), s(k / 4, k % 4).real(), 1e-6);
        EXPECT_NEAR(fo[2 * k + 1].item<double>(), s(k / 4, k % 4).imag(), 1e-6);
      }
      EXPECT_NEAR(fo[32].item<double>(), 1.0, 0);  // time fraction at the end
    } else {
      const char names[] = {'I', 'X', 'Y', 'Z'};
      int o = 0;
      for (int i = 1; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const cd r = (ref::pauli(names[i]) * apply_channel(s, ref::pauli(names[j]))).trace() / 2.0;
          EXPECT_NEAR(fo[o++].item<double>(), r.real(), 1e-6) << i << j;
        }
      EXPECT_EQ(o + 1, env.obs_dim());
    }
    // After the episode, the autoreset started a new one: identity channel, time 0.
    EXPECT_EQ(e.last_obs[0][env.obs_dim() - 1].item<float>(), 0.0f);
    EXPECT_EQ(env.elapsed()[0].item<int64_t>(), 0);
  }
}

// qubit_x and cz under noise, whose GRAPE and meta-learned baselines `compare` takes from
// qfleet-meta (the systems are the library's, qfleet/control_systems.hpp): the
// environment's fidelity for random pulses and rates is the one `qfleet eval`'s Lindblad
// reader computes for the same pulses on the problem eval_problems writes.
TEST(RlEnv, QubitXAndCzFidelitiesAreQfleetEvals) {
  for (const char* name : {"qubit_x", "cz"}) {
    EnvConfig c;
    c.task = name;
    c.num_envs = 3;
    VecEnv env(c);
    const torch::Tensor tasks = torch::tensor({{0.11, 0.07}, {0.02, 0.01}, {0.15, 0.08}}, torch::kFloat64);
    env.reset(1, tasks);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
    std::vector<torch::Tensor> amps;
    torch::Tensor final_f;
    for (int64_t s = 0; s < env.n_steps(); ++s) {
      const torch::Tensor a = torch::rand({3, env.n_controls()}, gen, torch::kFloat64) * 2 - 1;
      amps.push_back(env.amplitudes(a));
      final_f = env.step(a).final_fidelity;
    }
    const auto problems = eval_problems(c, torch::stack(amps, 1), tasks);
    ASSERT_EQ(problems.size(), 3u);
    for (int64_t b = 0; b < 3; ++b) {
      const auto out = qfleet::json_problem::evaluate(problems[std::size_t(b)]);
      EXPECT_NEAR(out["fidelity"][0].get<double>(), final_f[b].item<double>(), 1e-12) << name << " task " << b;
    }
  }
}

TEST(RlEnv, ClosedCzIsTheProductOfUnitaries) {
  EnvConfig c;
  c.task = "cz";
  c.num_envs = 2;
  c.noise = "none";
  c.n_steps = 5;
  c.observation = "density";
  VecEnv env(c);
  const Episode e = run_episode(env, {}, 3, 4);
  const TaskSpec& t = env.task();
  Mat u = ref::eye(4);
  for (const auto& a : e.amps) {
    Mat h = Mat::Zero(4, 4);
    for (std::size_t k = 0; k < t.controls.size(); ++k) h += a[k] * from(t.controls[k], 4);
    u = ref::unitary_of(h, t.gate_time / t.n_steps) * u;
  }
  const Mat v = from(t.target_unitary, 4);
  const double f = (std::norm((v.adjoint() * u).trace()) + 4.0) / 20.0;  // (|tr V^dag U|^2 + d)/(d(d + 1))
  EXPECT_NEAR(e.final_fid[0].item<double>(), f, 1e-12);
}

TEST(RlEnv, LadderStateMatchesTheDenseReference) {
  EnvConfig c;
  c.task = "ladder";
  c.levels = 4;
  c.num_envs = 3;
  c.observation = "density";
  c.reward = "step";
  VecEnv env(c);
  const torch::Tensor tasks = torch::tensor({{0.03, 0.02, 0.3}, {0.01, 0.04, -0.2}, {0.0, 0.0, 0.0}}, torch::kFloat64);
  const Episode e = run_episode(env, tasks, 1, 2);
  const TaskSpec& t = env.task();
  // env 0's actions were recorded; the reference follows them with env 0's task.
  const Mat s = reference_channel(t, e.amps, {0.03, 0.02, 0.3});
  Mat rho0 = Mat::Zero(4, 4);
  rho0(0, 0) = 1;
  const Mat rho = apply_channel(s, rho0);
  EXPECT_NEAR(e.final_fid[0].item<double>(), rho(3, 3).real(), 1e-12);
  const auto fo = e.final_obs[0];
  int o = 0;
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(fo[o++].item<double>(), rho(k, k).real(), 1e-6);
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) {
      EXPECT_NEAR(fo[o++].item<double>(), rho(i, j).real(), 1e-6);
      EXPECT_NEAR(fo[o++].item<double>(), rho(i, j).imag(), 1e-6);
    }
  // Step rewards telescope to F_T - F_0 (F_0 = <3|0><0|3> = 0).
  EXPECT_NEAR(e.rewards[0].sum().item<double>(), rho(3, 3).real(), 1e-5);
}

TEST(RlEnv, SeedsMakeEnvironmentsReproducibleAndIndependentOfTheBatch) {
  EnvConfig c;
  c.num_envs = 4;
  c.observation = "measurements";
  c.seed = 17;
  VecEnv a(c), b(c);
  c.num_envs = 8;
  VecEnv wide(c);
  const torch::Tensor act4 = torch::full({4, 2}, 0.3), act8 = torch::full({8, 2}, 0.3);
  for (int s = 0; s < 70; ++s) {  // crosses an autoreset
    const auto ra = a.step(act4), rb = b.step(act4), rw = wide.step(act8);
    ASSERT_TRUE(torch::equal(ra.obs, rb.obs));
    ASSERT_TRUE(torch::equal(ra.obs, rw.obs.slice(0, 0, 4)));  // env i's stream is seed + i
  }
  EXPECT_TRUE(torch::equal(a.tasks(), wide.tasks().slice(0, 0, 4)));
  const auto o1 = a.reset(99), t1 = a.tasks();
  a.step(act4);
  const auto o2 = a.reset(99);
  EXPECT_TRUE(torch::equal(o1, o2));
  EXPECT_TRUE(torch::equal(t1, a.tasks()));
  // Different environments draw different tasks.
  EXPECT_NE(t1[0][0].item<double>(), t1[1][0].item<double>());
  // Tasks come from the meta-control distribution's ranges.
  const auto tk = wide.tasks();
  EXPECT_TRUE((tk.select(1, 0) >= 0.02).all().item<bool>() && (tk.select(1, 0) <= 0.15).all().item<bool>());
  EXPECT_TRUE((tk.select(1, 1) >= 0.01).all().item<bool>() && (tk.select(1, 1) <= 0.08).all().item<bool>());
}

TEST(RlEnv, BadActionsAreRefusedAndChangeNothing) {
  EnvConfig c;
  c.num_envs = 2;
  c.clip_actions = false;
  VecEnv env(c);
  env.step(torch::zeros({2, 2}));
  const auto f0 = env.fidelity(), t0 = env.elapsed();
  auto expect_error = [&](const torch::Tensor& a, const std::string& words) {
    try {
      env.step(a);
      FAIL() << "no error for " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_TRUE(torch::equal(env.fidelity(), f0));
    EXPECT_TRUE(torch::equal(env.elapsed(), t0));
  };
  expect_error(torch::tensor({{0.1, double(NAN)}, {0.0, 0.0}}), "not finite");
  expect_error(torch::zeros({2, 3}), "shape [num_envs, n_controls]");
  expect_error(torch::zeros({2, 2}, torch::kInt64), "floating point");
  expect_error(torch::tensor({{1.5, 0.0}, {0.0, 0.0}}), "outside [-1, 1]");
  c.clip_actions = true;
  VecEnv clip(c), ref_env(c);
  clip.step(torch::tensor({{1.5, -7.0}, {0.2, 0.0}}));
  ref_env.step(torch::tensor({{1.0, -1.0}, {0.2, 0.0}}));
  EXPECT_TRUE(torch::equal(clip.fidelity(), ref_env.fidelity()));
  c.action = "discrete";
  VecEnv disc(c);
  EXPECT_THROW(disc.step(torch::tensor({0, 9}, torch::kInt64)), std::invalid_argument);
  EXPECT_THROW(disc.step(torch::zeros({2}, torch::kFloat32)), std::invalid_argument);
  EXPECT_THROW(disc.step(torch::zeros({3}, torch::kInt64)), std::invalid_argument);
}

TEST(RlEnv, DiscreteActionsApplyTheirLibraryRow) {
  EnvConfig c;
  c.num_envs = 3;
  c.action = "discrete";
  VecEnv disc(c);
  EXPECT_EQ(disc.n_actions(), 9);  // zero, then +-1 and +-1/2 on each of 2 controls
  c.action = "continuous";
  VecEnv cont(c);
  const auto& lib = disc.pulse_library();
  for (int s = 0; s < 10; ++s) {
    const torch::Tensor idx = torch::tensor({s % 9, (s * 4) % 9, 8}, torch::kInt64);
    torch::Tensor a = torch::zeros({3, 2}, torch::kFloat64);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 2; ++k) a[i][k] = lib[std::size_t(idx[i].item<int64_t>())][std::size_t(k)];
    disc.step(idx);
    cont.step(a);
  }
  EXPECT_TRUE(torch::allclose(disc.fidelity(), cont.fidelity(), 0, 1e-15));
}

TEST(RlEnv, MeasurementRecordsAverageToTheExpectations) {
  EnvConfig c;
  c.num_envs = 1;
  c.shots = 4000000;
  c.observation = "measurements";
  VecEnv m(c);
  c.observation = "expectations";
  VecEnv e(c);
  const torch::Tensor a = torch::tensor({{0.4, -0.2}});
  for (int s = 0; s < 20; ++s) {
    m.step(a);
    e.step(a);
  }
  const auto om = m.step(a).obs[0], oe = e.step(a).obs[0];
  for (int k = 0; k < 12; ++k) {
    const double x = oe[k].item<double>(), sigma = std::sqrt(std::max(1e-12, 1 - x * x) / 4e6);
    EXPECT_NEAR(om[k].item<double>(), x, 6 * sigma + 1e-6) << k;
  }
  c.task = "ladder";
  c.observation = "measurements";
  VecEnv lm(c);
  const auto o = lm.step(torch::tensor({{0.5, 0.1}})).obs[0];
  double pop = 0;
  for (int k = 0; k < 3; ++k) pop += o[k].item<double>();
  EXPECT_NEAR(pop, 1.0, 1e-6);  // populations: one multinomial record
}

TEST(RlEnv, ConfigurationErrorsNameTheKey) {
  auto msg = [](const std::string& text) {
    try {
      EnvConfig::from_json(nlohmann::json::parse(text));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg(R"({"task": "pendulum"})").find("task"), std::string::npos);
  EXPECT_NE(msg(R"({"num_envs": 0})").find("num_envs"), std::string::npos);
  EXPECT_NE(msg(R"({"gamma_deph": [0.2, 0.1]})").find("gamma_deph"), std::string::npos);
  EXPECT_NE(msg(R"({"observation": "pixels"})").find("observation"), std::string::npos);
  EXPECT_NE(msg(R"({"bogus": 1})").find("unknown key"), std::string::npos);
  EnvConfig c;
  c.pulse_library = {{0.5}};
  EXPECT_THROW(VecEnv{c}, std::invalid_argument);  // rows need n_ctrl = 2 values
  c = EnvConfig{};
  VecEnv env(c);
  EXPECT_THROW(env.reset(std::nullopt, torch::ones({3, 2})), std::invalid_argument);
  EXPECT_THROW(env.reset(std::nullopt, -torch::ones({16, 2})), std::invalid_argument);
}

PpoConfig tiny(const std::string& dir) { return qfleet_test::small_ppo(dir); }

TEST(RlPpo, ImprovesTheFidelityOnASmallBudgetAndResumesBitForBit) {
  const auto dir = std::filesystem::temp_directory_path() / "qfleet_rl_ppo_test";
  std::filesystem::remove_all(dir);
  TrainOptions o;
  o.quiet = true;
  const auto full = train_ppo(tiny((dir / "full").string()), o);
  const double first = full["curve"][0]["mean_final_fidelity"], last = full["validation"]["mean_fidelity"];
  // A random policy's pulses give F ~ 0.4; 12 rollouts of 32 episodes reach > 0.85 (measured 0.93).
  EXPECT_LT(first, 0.6);
  EXPECT_GT(last, 0.85);
  EXPECT_GT(last - first, 0.3);
  o.stop_after = 5;
  train_ppo(tiny((dir / "split").string()), o);
  o.stop_after = -1;
  o.resume = true;
  const auto resumed = train_ppo(tiny((dir / "split").string()), o);
  EXPECT_EQ(resumed["validation"]["mean_fidelity"].get<double>(), last);
  EXPECT_EQ(resumed["curve"].size(), full["curve"].size());
  // The pulses through `qfleet eval`'s library give the environment's fidelity.
  for (int b = 0; b < 8; ++b) {
    std::ifstream in(dir / "full" / "eval" / ("task_" + std::to_string(b) + ".json"));
    const auto out = qfleet::json_problem::evaluate(nlohmann::json::parse(in));
    EXPECT_NEAR(out["fidelity"][0].get<double>(), full["validation"]["tasks"][b]["fidelity"].get<double>(), 1e-10);
  }
  // A resume with another configuration is refused.
  auto other = tiny((dir / "split").string());
  other.learning_rate = 5e-4;
  EXPECT_ANY_THROW(train_ppo(other, o));
  std::filesystem::remove_all(dir);
}

TEST(RlPpo, DiscreteActionsLearnToo) {
  const auto dir = std::filesystem::temp_directory_path() / "qfleet_rl_ppo_discrete";
  std::filesystem::remove_all(dir);
  auto c = tiny(dir.string());
  c.env.action = "discrete";
  c.env.n_steps = 20;
  c.total_steps = 32 * 20 * 20;
  c.eval_every = 20;
  c.checkpoint_every = 0;
  TrainOptions o;
  o.quiet = true;
  const auto r = train_ppo(c, o);
  EXPECT_GT(r["validation"]["mean_fidelity"].get<double>() - r["curve"][0]["mean_final_fidelity"].get<double>(), 0.2);
  std::filesystem::remove_all(dir);
}

}  // namespace
