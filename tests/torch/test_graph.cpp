// Graph mode (qfleet/train_graph.hpp). On the CPU: the fallback and its reason, with
// the step's results unchanged. On a GPU (skipped without one): a hybrid model's
// training in graph mode against the same training run eagerly from the same seed,
// and a step that synchronises falling back with the reason.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <gtest/gtest.h>

#include <cmath>

#include "classifier.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/train_graph.hpp"

namespace {

namespace tr = qfleet::train;

TEST(TrainGraph, OnTheCpuTheStepRunsEagerlyAndSaysWhy) {
  auto x = torch::arange(4, torch::kFloat64);
  int calls = 0;
  tr::GraphStep step([&] {
    ++calls;
    return tr::Metrics{{"sum"}, {x.sum()}};
  }, torch::kCPU, {.warmup = 2, .log = false});
  for (int i = 0; i < 5; ++i) {
    x.add_(1);
    EXPECT_EQ(step().values[0].item<double>(), x.sum().item<double>());
  }
  EXPECT_EQ(calls, 5);
  EXPECT_FALSE(step.captured());
  EXPECT_NE(step.fallback_reason().find("needs a CUDA device"), std::string::npos) << step.fallback_reason();
  EXPECT_THROW(tr::GraphStep([] { return tr::Metrics{}; }, torch::kCPU, {.warmup = 0, .log = true}), std::invalid_argument);
  // Generators for graph mode are CUDA generators: a CPU one (or none) is refused, naming it.
  for (const at::Generator& gen : {at::make_generator<at::CPUGeneratorImpl>(1), at::Generator()}) {
    try {
      tr::GraphStep([] { return tr::Metrics{}; }, torch::kCPU, {.warmup = 1, .log = false, .generators = {gen}});
      ADD_FAILURE() << "no error for a generator that is not a CUDA one";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("must be CUDA generators"), std::string::npos) << e.what();
    }
  }
}

// libqfleet_torch's door to graph mode (train.hpp's captured_step): eager on the CPU, saying why.
TEST(TrainGraph, CapturedStepFromTheTorchLibraryRunsEagerlyOnTheCpu) {
  auto x = torch::arange(3, torch::kFloat64);
  auto step = tr::captured_step([&] { return tr::Metrics{{"sum"}, {x.sum()}}; }, torch::kCPU);
  x.add_(1);
  EXPECT_EQ((*step)().values[0].item<double>(), 6.0);
  EXPECT_FALSE(step->captured());
  EXPECT_NE(step->status().find("eager: graph mode needs a CUDA device"), std::string::npos) << step->status();
}

// A hybrid model trained with DeviceOptimizer on static inputs, `graph` or eagerly;
// `loader`: through captured_step (the library loaded at run time) with the learning rate
// on the device, on a cosine schedule set between replays.
std::vector<double> train_on_gpu(bool graph, int steps, bool loader = false) {
  const torch::Device dev(torch::kCUDA, 0);
  torch::manual_seed(4);
  auto pre = torch::nn::Linear(3, 3);
  pre->to(dev, torch::kFloat64);
  auto q = qfleet::nn::QuantumLayer(classifier(3, 2), qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 0, 3,
                                                                                       qfleet::Device::cuda});
  q->to(dev);
  std::vector<torch::Tensor> params = pre->parameters();
  params.push_back(q->weight);
  tr::DeviceOptimizer opt(params, {.kind = tr::OptimizerKind::adam, .lr = 0.05, .lr_on_device = loader});
  auto x = torch::zeros({16, 3}, torch::TensorOptions().dtype(torch::kFloat64).device(dev));
  auto gen = at::make_generator<at::CPUGeneratorImpl>(8);
  auto body = [&] {
    opt.zero_grad();
    const auto loss = (q(pre(x)) - 0.5).square().mean();
    loss.backward();
    opt.step();
    return tr::Metrics{{"loss"}, {loss.detach()}};
  };
  tr::GraphStep graphed(body, dev, {.warmup = 3, .log = true});
  const auto loaded = tr::captured_step(body, dev, 3);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    x.copy_(torch::rand({16, 3}, gen, torch::kFloat64));  // the data loader's copy into the static input
    if (loader) opt.set_lr(0.05 * (1 + std::cos(3.14159 * i / steps)) / 2);
    const auto m = !graph ? body() : loader ? (*loaded)() : graphed();
    losses.push_back(m.values[0].item<double>());
  }
  if (graph && !loader) {
    EXPECT_TRUE(graphed.captured()) << graphed.fallback_reason();
  }
  if (graph && loader) {
    EXPECT_TRUE(loaded->captured()) << loaded->status();
  }
  return losses;
}

TEST(TrainGraph, GpuGraphStepsGiveTheEagerLosses) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine";
  const auto eager = train_on_gpu(false, 40), graph = train_on_gpu(true, 40);
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(eager[i], graph[i], 1e-12) << "step " << i;
}

TEST(TrainGraph, GpuCapturedStepLoadsGraphModeAndFollowsADeviceLearningRate) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine";
  const auto eager = train_on_gpu(false, 30, true), graph = train_on_gpu(true, 30, true);
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(eager[i], graph[i], 1e-12) << "step " << i;
}

// Draws from a CUDA generator of the step's own (not the device's default one), the
// step captured through captured_step (`loader`) or GraphStep, or eager: each replay
// gives the numbers the eager step draws next, and a seed set between replays restarts
// them as it restarts the eager draws.
std::vector<double> draws_on_gpu(int mode) {  // 0 eager, 1 GraphStep, 2 captured_step
  const torch::Device dev(torch::kCUDA, 0);
  auto gen = at::detail::getCUDAHooks().getNewGenerator(0);
  gen.set_current_seed(11);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(dev);
  auto out = torch::zeros({5}, opts);
  auto body = [&] {
    out.copy_(torch::rand({5}, gen, opts) + torch::randn({5}, gen, opts));
    return tr::Metrics{};
  };
  std::unique_ptr<tr::GraphStep> graphed;
  std::unique_ptr<tr::CapturedStep> loaded;
  if (mode == 1) graphed = std::make_unique<tr::GraphStep>(body, dev, tr::GraphOptions{.warmup = 2, .log = true, .generators = {gen}});
  if (mode == 2) loaded = tr::captured_step(body, dev, 2, {gen});
  std::vector<double> v;
  for (int i = 0; i < 9; ++i) {
    if (i == 6) gen.set_current_seed(11);
    if (mode == 0) body();
    if (mode == 1) (*graphed)();
    if (mode == 2) (*loaded)();
    for (int k = 0; k < 5; ++k) v.push_back(out[k].item<double>());
  }
  if (mode == 1) {
    EXPECT_TRUE(graphed->captured()) << graphed->fallback_reason();
  }
  if (mode == 2) {
    EXPECT_TRUE(loaded->captured()) << loaded->status();
  }
  return v;
}

TEST(TrainGraph, GpuReplaysDrawFromTheStepsOwnGeneratorAsEagerStepsDo) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine";
  const auto eager = draws_on_gpu(0);
  for (int mode : {1, 2}) {
    const auto graph = draws_on_gpu(mode);
    ASSERT_EQ(graph.size(), eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(eager[i], graph[i]) << "mode " << mode << ", draw " << i;
  }
  EXPECT_EQ(std::vector<double>(eager.begin(), eager.begin() + 5), std::vector<double>(eager.begin() + 30, eager.begin() + 35));
}

TEST(TrainGraph, GpuAStepThatSynchronisesFallsBackWithTheReason) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine";
  auto x = torch::ones({4}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  tr::GraphStep step([&] {
    const double host = x.sum().item<double>();  // a host sync: not capturable
    return tr::Metrics{{"v"}, {x.sum() + host}};
  }, torch::Device(torch::kCUDA, 0), {.warmup = 1, .log = false});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(step().values[0].item<double>(), 8.0);
  EXPECT_FALSE(step.captured());
  EXPECT_NE(step.fallback_reason().find("capture failed"), std::string::npos) << step.fallback_reason();
}

}  // namespace
