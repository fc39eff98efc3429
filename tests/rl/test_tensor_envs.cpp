// qfleet-rl's tensor stepping (apps/rl/tensor_envs.hpp), the path a GPU runs, on CPU
// tensors: against the host loop (itself tested against the dense reference in
// test_rl.cpp) on the same tasks and actions, its draws, its measurement records and its
// refusals. The same path on CUDA tensors is tested against this one in
// tests/python/test_rl_cuda.py, where a GPU is present.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include <filesystem>

#include "ppo.hpp"
#include "small_ppo.hpp"
#include "qfleet/train.hpp"
#include "vec_env.hpp"

namespace {

using namespace qfleet::rl;

void expect_same(const torch::Tensor& a, const torch::Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const torch::Tensor x = a.cpu().to(torch::kFloat64), y = b.cpu().to(torch::kFloat64);
  ASSERT_TRUE(torch::equal(torch::isnan(x), torch::isnan(y))) << what;
  const double diff = torch::nan_to_num(x - y).abs().max().item<double>();
  EXPECT_LE(diff, tol) << what;
}

bool has_gpu() {
  for (const auto& d : qfleet::train::available_devices())  // (loads LibTorch's CUDA half where there is one)
    if (d.is_cuda()) return true;
  return false;
}

// Both paths on the same tasks (kept by the autoresets) and actions, through two episodes.
// `other`: the second environment's device (its stepping tensors), against the first's host loop
// (CPU) or, for "cuda", against tensors on the CPU.
void expect_paths_agree(EnvConfig c, const std::string& other = "cpu") {
  c.stepping = other == "cpu" ? "loop" : "tensors";
  VecEnv loop(c);
  c.stepping = "tensors";
  c.device = other;
  VecEnv tens(c);
  ASSERT_TRUE(tens.tensor_stepping());
  ASSERT_EQ(loop.tensor_stepping(), other != "cpu");
  const torch::Tensor tasks = loop.tasks();
  const std::string name = c.task + "/" + c.observation + "/" + c.action;
  expect_same(loop.reset(3, tasks), tens.reset(3, tasks.to(tens.device())), 1e-6, name + " reset obs");
  expect_same(loop.fidelity(), tens.fidelity(), 1e-13, name + " initial fidelity");
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  for (int64_t s = 0; s < 2 * loop.n_steps() + 1; ++s) {
    const torch::Tensor a = c.action == "discrete"
                                ? torch::randint(loop.n_actions(), {loop.num_envs()}, gen, torch::kInt64)
                                : torch::rand({loop.num_envs(), loop.n_controls()}, gen, torch::kFloat64) * 2.4 - 1.2;
    expect_same(loop.amplitudes(a), tens.amplitudes(a).cpu(), 0, name + " amplitudes");
    const StepResult x = loop.step(a), y = tens.step(a.to(tens.device()));
    const std::string at = name + " step " + std::to_string(s);
    expect_same(x.obs, y.obs, 1e-6, at + " obs");
    expect_same(x.reward, y.reward, 1e-6, at + " reward");
    expect_same(x.fidelity, y.fidelity, 1e-12, at + " fidelity");
    expect_same(x.final_obs, y.final_obs, 1e-6, at + " final_obs");
    expect_same(x.final_fidelity, y.final_fidelity, 1e-12, at + " final_fidelity");
    ASSERT_TRUE(torch::equal(x.terminated.cpu(), y.terminated.cpu())) << at;
    ASSERT_TRUE(torch::equal(x.truncated.cpu(), y.truncated.cpu())) << at;
    ASSERT_TRUE(torch::equal(loop.elapsed().cpu(), tens.elapsed().cpu())) << at;
    ASSERT_EQ(y.obs.device(), tens.device()) << at;
  }
  EXPECT_TRUE(torch::equal(loop.tasks().cpu(), tens.tasks().cpu())) << name;
}

// Every task, observation and action kind, against `other` (see expect_paths_agree).
void expect_all_agree(const std::string& other) {
  EnvConfig c;
  c.num_envs = 5;
  c.n_steps = 6;
  c.observe_noise = true;
  c.reward = "step";
  expect_paths_agree(c, other);  // qubit_x, open, expectations, continuous
  c.observation = "density";
  c.action = "discrete";
  c.reward = "final";
  expect_paths_agree(c, other);
  c.task = "cz";
  c.noise = "none";  // closed: the superoperator from the engine's unitary
  c.n_steps = 3;
  expect_paths_agree(c, other);
  c.observation = "expectations";
  c.noise = "distribution";
  expect_paths_agree(c, other);
  c.task = "ladder";  // a state task with a drift term
  c.levels = 4;
  c.action = "continuous";
  c.observation = "density";
  expect_paths_agree(c, other);
  c.observation = "expectations";
  c.noise = "none";
  expect_paths_agree(c, other);
}

TEST(RlTensorEnvs, MatchTheHostLoopOnEveryTaskObservationAndAction) { expect_all_agree("cpu"); }

TEST(RlTensorEnvs, OnAGpuMatchTheSameTensorsOnTheCpu) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine (scripts/gpu_check.sh)";
  expect_all_agree("cuda");
  // Draws from the GPU's generator: reproducible, in the ranges; shots sampled there.
  EnvConfig c;
  c.num_envs = 4096;
  c.device = "cuda";
  c.observation = "measurements";
  VecEnv a(c), b(c);
  EXPECT_EQ(a.tasks().device().type(), torch::kCUDA);
  EXPECT_TRUE(torch::equal(a.tasks(), b.tasks()));
  EXPECT_GE(a.tasks().select(1, 0).min().item<double>(), 0.02);
  EXPECT_LE(a.tasks().select(1, 0).max().item<double>(), 0.15);
  const torch::Tensor act = torch::zeros({4096, 2}, torch::TensorOptions().device(a.device()));
  EXPECT_TRUE(torch::equal(a.step(act).obs, b.step(act).obs));
  EXPECT_THROW(a.step(torch::full({4096, 2}, NAN, act.options())), std::invalid_argument);
  c.stepping = "loop";
  EXPECT_THROW(VecEnv{c}, std::invalid_argument);
}

// PPO with its rollout resident on the GPU (environments, policy, buffers, GAE) learns the
// qubit task on the budget test_rl.cpp's RlPpo test gives the CPU.
TEST(RlTensorEnvs, PpoRollsOutOnAGpuAndLearns) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine (scripts/gpu_check.sh)";
  const auto dir = std::filesystem::temp_directory_path() / "qfleet_rl_ppo_gpu";
  std::filesystem::remove_all(dir);
  PpoConfig c = qfleet_test::small_ppo(dir.string());
  c.checkpoint_every = 0;
  c.device = "cuda";
  TrainOptions o;
  o.quiet = true;
  const auto r = train_ppo(c, o);
  EXPECT_EQ(r["devices"]["rollout"].get<std::string>().rfind("cuda", 0), 0u) << r["devices"].dump();
  EXPECT_NE(r["environment"].get<std::string>().find("tensors on cuda"), std::string::npos) << r["environment"];
  EXPECT_LT(r["curve"][0]["mean_final_fidelity"].get<double>(), 0.6);
  EXPECT_GT(r["validation"]["mean_fidelity"].get<double>(), 0.85);
  std::filesystem::remove_all(dir);
}

// The same on CPU tensors: the rollout step a GPU captures (PpoRun::rollout_step), run
// eagerly, learns as the host loop's run does (test_rl.cpp's RlPpo, the same budget).
TEST(RlTensorEnvs, PpoOnTheEnvironmentsAsCpuTensorsLearns) {
  const auto dir = std::filesystem::temp_directory_path() / "qfleet_rl_ppo_tensors_cpu";
  std::filesystem::remove_all(dir);
  PpoConfig c = qfleet_test::small_ppo(dir.string());
  c.checkpoint_every = 0;
  c.device = "cpu";
  c.env.stepping = "tensors";
  TrainOptions o;
  o.quiet = true;
  const auto r = train_ppo(c, o);
  EXPECT_NE(r["environment"].get<std::string>().find("tensors on cpu"), std::string::npos) << r["environment"];
  EXPECT_EQ(r["devices"]["rollout_mode"], "eager: rollout_mode = automatic on cpu");
  EXPECT_LT(r["curve"][0]["mean_final_fidelity"].get<double>(), 0.6);
  EXPECT_GT(r["validation"]["mean_fidelity"].get<double>(), 0.85);
  std::filesystem::remove_all(dir);
}

// PPO's rollout steps captured in CUDA graphs (rollout_mode = graph: one graph inside an
// episode, one for its last step) against the same run eager on the GPU.
TEST(RlTensorEnvs, PpoRolloutStepsCapturedOnAGpuFollowTheEagerRun) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine (scripts/gpu_check.sh)";
  nlohmann::json runs[2];
  for (int graph = 0; graph < 2; ++graph) {
    const auto dir = std::filesystem::temp_directory_path() / ("qfleet_rl_ppo_graph" + std::to_string(graph));
    std::filesystem::remove_all(dir);
    PpoConfig c = qfleet_test::small_ppo(dir.string());
    c.checkpoint_every = 0;
    c.device = "cuda";
    c.rollout_mode = graph ? "graph" : "eager";
    TrainOptions o;
    o.quiet = true;
    runs[graph] = train_ppo(c, o);
    std::filesystem::remove_all(dir);
  }
  const std::string status = runs[1]["devices"]["rollout_mode"];
  EXPECT_EQ(status.find("eager"), std::string::npos) << status;
  EXPECT_NE(status.find("last step: captured"), std::string::npos) << status;
  ASSERT_EQ(runs[0]["curve"].size(), runs[1]["curve"].size());
  for (std::size_t k = 0; k < runs[0]["curve"].size(); ++k)
    EXPECT_NEAR(runs[0]["curve"][k]["mean_final_fidelity"].get<double>(),
                runs[1]["curve"][k]["mean_final_fidelity"].get<double>(), 1e-6) << "rollout " << k + 1;
  EXPECT_NEAR(runs[0]["validation"]["mean_fidelity"].get<double>(), runs[1]["validation"]["mean_fidelity"].get<double>(), 1e-6);
}

// The capturable step (advance + count) is step() without its check: the same results
// through two episodes with measurement draws and autoresets; an invalid action marks it
// and the step runs on (discrete actions clamped into the library).
TEST(RlTensorEnvs, AdvanceIsTheStepWithoutItsCheckAndMarksInvalidActions) {
  for (const char* action : {"continuous", "discrete"}) {
    EnvConfig c;
    c.num_envs = 16;
    c.n_steps = 3;
    c.stepping = "tensors";
    c.action = action;
    c.observation = "measurements";
    c.observe_noise = true;
    c.reward = "step";
    VecEnv a(c), b(c);
    TensorEnvs& adv = *b.tensor_envs();
    auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
    for (int64_t s = 0; s < 2 * c.n_steps + 1; ++s) {
      const bool last = (s + 1) % c.n_steps == 0;
      const torch::Tensor act = c.action == "discrete" ? torch::randint(a.n_actions(), {16}, gen, torch::kInt64)
                                                       : torch::rand({16, 2}, gen, torch::kFloat64) * 2 - 1;
      const StepResult x = a.step(act), y = adv.advance(act, last);
      adv.count(last);
      const std::string at = std::string(action) + " step " + std::to_string(s);
      for (auto [p, q, what] : {std::tuple{x.obs, y.obs, "obs"}, {x.reward, y.reward, "reward"},
                                {x.final_obs, y.final_obs, "final_obs"}, {x.final_fidelity, y.final_fidelity, "final_fidelity"},
                                {x.fidelity, y.fidelity, "fidelity"}, {x.terminated, y.terminated, "terminated"}})
        expect_same(p, q, 0, at + " " + what);
      EXPECT_TRUE(torch::equal(a.elapsed(), b.elapsed())) << at;
    }
    EXPECT_FALSE(adv.take_bad_actions());
    const torch::Tensor bad = c.action == "discrete" ? torch::tensor(std::vector<int64_t>(16, 99), torch::kInt64)
                                                     : torch::full({16, 2}, double(NAN), torch::kFloat64);
    EXPECT_NO_THROW(adv.advance(bad, false));
    EXPECT_TRUE(adv.take_bad_actions()) << action;
    EXPECT_FALSE(adv.take_bad_actions()) << action << ": the mark is cleared when read";
  }
}

TEST(RlTensorEnvs, DrawTasksInTheirRangesReproduciblyAndAfreshAtEachReset) {
  EnvConfig c;
  c.num_envs = 4096;
  c.n_steps = 2;
  c.seed = 5;
  c.stepping = "tensors";
  VecEnv a(c), b(c);
  EXPECT_TRUE(torch::equal(a.tasks(), b.tasks()));
  const torch::Tensor t0 = a.tasks().clone();
  // qubit_x's ranges (the meta-control distribution): gamma_deph [0.02, 0.15], gamma_relax [0.01, 0.08].
  for (auto [k, lo, hi] : {std::tuple{0, 0.02, 0.15}, std::tuple{1, 0.01, 0.08}}) {
    const torch::Tensor col = t0.select(1, k);
    EXPECT_GE(col.min().item<double>(), lo);
    EXPECT_LE(col.max().item<double>(), hi);
    // Uniform: mean (lo + hi)/2 within 6 standard errors, sd (hi - lo)/sqrt(12) per draw.
    EXPECT_NEAR(col.mean().item<double>(), (lo + hi) / 2, 6 * (hi - lo) / std::sqrt(12.0 * 4096));
  }
  const torch::Tensor zero = torch::zeros({4096, 2});
  for (int s = 0; s < 2; ++s) a.step(zero);  // the episode ends: every environment draws again
  EXPECT_FALSE(torch::equal(a.tasks(), t0));
  EXPECT_EQ(a.elapsed().max().item<int64_t>(), 0);
  a.reset(5);
  EXPECT_TRUE(torch::equal(a.tasks(), t0));
  a.reset(6);
  EXPECT_FALSE(torch::equal(a.tasks(), t0));
}

TEST(RlTensorEnvs, MeasurementRecordsAverageToTheExpectations) {
  for (const char* task : {"qubit_x", "ladder"}) {
    EnvConfig c;
    c.task = task;
    c.num_envs = 20000;
    c.shots = 50;
    c.stepping = "tensors";
    c.noise = "none";  // every environment in the same state: the records are i.i.d.
    c.observation = "measurements";
    VecEnv m(c);
    c.observation = "expectations";
    VecEnv e(c);
    const torch::Tensor a = torch::tensor({{0.4, -0.2}}).expand({c.num_envs, 2});
    for (int s = 0; s < 3; ++s) {
      m.step(a);
      e.step(a);
    }
    const torch::Tensor om = m.step(a).obs, oe = e.step(a).obs[0];
    const int64_t n = m.obs_dim() - 1;
    for (int64_t k = 0; k < n; ++k) {
      const double x = oe[k].item<double>(), mean = om.select(1, k).mean().item<double>();
      // A +-1 record of 50 shots has variance (1 - x^2)/50 (populations: p(1 - p)/50).
      const double var = std::string(task) == "ladder" && k < 3 ? x * (1 - x) / 50 : (1 - x * x) / 50;
      EXPECT_NEAR(mean, x, 6 * std::sqrt(std::max(var, 1e-12) / double(c.num_envs)) + 1e-6) << task << " " << k;
    }
    if (std::string(task) == "ladder") {  // populations: one multinomial record per environment
      expect_same(om.narrow(1, 0, 3).sum(1), torch::ones({c.num_envs}), 1e-6, "ladder populations");
    }
  }
}

TEST(RlTensorEnvs, RefuseBadActionsWithTheLoopsMessagesAndChangeNothing) {
  EnvConfig c;
  c.num_envs = 2;
  c.clip_actions = false;
  c.stepping = "tensors";
  VecEnv env(c);
  env.step(torch::zeros({2, 2}));
  const auto f0 = env.fidelity().clone(), t0 = env.elapsed().clone();
  auto expect_error = [&](VecEnv& e, const torch::Tensor& a, const std::string& words) {
    try {
      e.step(a);
      FAIL() << "no error for " << words;
    } catch (const std::invalid_argument& err) {
      EXPECT_NE(std::string(err.what()).find(words), std::string::npos) << err.what();
    }
  };
  expect_error(env, torch::tensor({{0.1, 0.0}, {0.0, double(INFINITY)}}), "action of environment 1 is not finite");
  expect_error(env, torch::zeros({2, 3}), "shape [num_envs, n_controls]");
  expect_error(env, torch::zeros({2, 2}, torch::kInt64), "floating point");
  expect_error(env, torch::tensor({{1.5, 0.0}, {0.0, 0.0}}), "outside [-1, 1]");
  EXPECT_TRUE(torch::equal(env.fidelity(), f0));
  EXPECT_TRUE(torch::equal(env.elapsed(), t0));
  c.action = "discrete";
  VecEnv disc(c);
  expect_error(disc, torch::tensor({0, 9}, torch::kInt64), "discrete action 9 of environment 1 is outside [0, 9)");
  expect_error(disc, torch::tensor({-1, 0}, torch::kInt64), "outside [0, 9)");
}

}  // namespace
