// qfleet::control from C++ (include/qfleet/control.hpp): projected Adam against libtorch's
// own Adam bit for bit, L-BFGS-B against a bounded problem's analytic minimiser, tasks
// stopping on their own, minimize() driving an open system's exact gradient, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "qfleet/control.hpp"
#include "qfleet/error.hpp"
#include "qfleet/torch.hpp"

namespace {

using torch::Tensor;
namespace control = qfleet::control;

TEST(Control, AdamIsLibtorchsAdamStepForStep) {
  const Tensor x0 = torch::tensor({{0.3, -0.2, 0.9}, {1.5, 0.1, -0.4}}, torch::kFloat64);
  const Tensor target = torch::tensor({1.0, 2.0, -3.0}, torch::kFloat64);
  auto cost = [&](const Tensor& x, const Tensor&) { return (x - target).pow(4).sum(1); };
  control::Options o;
  o.method = control::Method::adam;
  o.lr = 0.05;
  o.max_iterations = 40;
  o.keep_best = false;
  const auto r = control::minimize_autograd(cost, x0, o);
  Tensor p = x0.clone().requires_grad_(true);
  torch::optim::Adam ref({p}, torch::optim::AdamOptions(0.05));
  for (int i = 0; i < 40; ++i) {
    ref.zero_grad();
    cost(p, {}).sum().backward();
    ref.step();
  }
  EXPECT_TRUE(torch::equal(r.x, p.detach()));
  EXPECT_EQ(r.reasons[0], control::Reason::iterations);
  EXPECT_EQ(r.evaluations[1].item<int64_t>(), 41);
}

// min sum_i (x_i - c_i)^2 over a box: x* = clamp(c, lower, upper), per task.
TEST(Control, LbfgsbFindsTheClampedMinimiserOfEachTask) {
  const Tensor c = torch::tensor({{2.0, -3.0, 0.5}, {-0.2, 0.7, 9.0}}, torch::kFloat64);
  control::Options o;
  o.lower = torch::tensor({-1.0, -1.0, -1.0}, torch::kFloat64);
  o.upper = torch::tensor({1.0, 0.5, 1.0}, torch::kFloat64);
  const auto r = control::minimize_autograd(
      [&](const Tensor& x, const Tensor& tasks) { return (x - c.index_select(0, tasks)).square().sum(1); },
      torch::zeros({2, 3}, torch::kFloat64), o);
  EXPECT_TRUE(torch::allclose(r.x, torch::clamp(c, o.lower, o.upper), 0, 1e-12));
  for (auto why : r.reasons) EXPECT_EQ(why, control::Reason::gradient);
}

TEST(Control, TasksStopOnTheirOwnAndTheOthersGoOn) {
  // Task 0 starts at its minimum; task 1 does not: 0 stops after one evaluation (target).
  const Tensor x0 = torch::tensor({{1.0, 1.0}, {-1.2, 1.0}}, torch::kFloat64);
  control::Options o;
  o.target = 1e-12;
  o.max_evaluations = 500;
  const auto r = control::minimize_autograd(
      [](const Tensor& x, const Tensor&) {
        const Tensor a = x.select(1, 0), b = x.select(1, 1);
        return (1 - a).square() + 100 * (b - a.square()).square();
      },
      x0, o);
  EXPECT_EQ(r.evaluations[0].item<int64_t>(), 1);
  EXPECT_EQ(r.reasons[0], control::Reason::target);
  EXPECT_GT(r.evaluations[1].item<int64_t>(), 20);
  EXPECT_EQ(r.reasons[1], control::Reason::target);
  EXPECT_LE(r.cost[1].item<double>(), 1e-12);
}

TEST(Control, MinimizeDrivesAnOpenSystemsExactGradient) {
  // An X gate on a damped qubit: 1 - F from OpenSystemProgram's differentiable outputs.
  const std::string problem = R"({"kind": "lindblad", "dim": 2, "H0": [[0,0],[0,0]],
    "controls": [[[0,0.5],[0.5,0]], [[0,[0,-0.5]],[[0,0.5],0]]], "jumps": [[[0,1],[0,0]]],
    "n_segments": 12, "segment_duration": 0.2617993877991494, "gate": true,
    "target": {"unitary": [[0,1],[1,0]]}, "solver": "exact", "precision": "complex128", "threads": 0})";
  auto program = c10::make_intrusive<qfleet::nn::OpenSystemProgram>(problem);
  const Tensor rates = torch::full({1, 1}, 0.01, torch::kFloat64);
  control::Options o;
  o.lower = torch::tensor(-3.0, torch::kFloat64);
  o.upper = torch::tensor(3.0, torch::kFloat64);
  o.max_evaluations = 300;
  const auto r = control::minimize_autograd(
      [&](const Tensor& x, const Tensor&) {
        qfleet::nn::OpenInputs in;
        in.amplitudes = x.view({1, 12, 2});
        in.rates = rates;
        return 1 - qfleet::nn::open_outputs(program, in).fidelity;
      },
      torch::full({1, 24}, 0.1, torch::kFloat64), o);
  // Damping at rate 0.01 over the pi duration costs about gamma T / 3 of the fidelity.
  EXPECT_LT(r.cost[0].item<double>(), 0.02);
  EXPECT_LE(r.x.abs().max().item<double>(), 3.0);
}

TEST(Control, BadInputIsAOneLineError) {
  control::Options o;
  o.lower = torch::tensor(-1.0, torch::kFloat64);
  o.upper = torch::tensor(1.0, torch::kFloat64);
  const Tensor outside = torch::tensor({{0.0, 1.5}}, torch::kFloat64);
  try {
    control::Optimizer opt(outside, o);
    FAIL() << "no error";
  } catch (const qfleet::Error& e) {
    EXPECT_EQ(std::string(e.what()), "qfleet: control: the initial point is outside the bounds: x0[0, 1] = 1.5 > upper bound 1");
  }
  control::Options bad;
  bad.max_evaluations = 0;
  EXPECT_THROW(control::Optimizer(torch::zeros({1, 2}, torch::kFloat64), bad), qfleet::Error);
  EXPECT_THROW(control::Optimizer(torch::zeros({2}, torch::kFloat64), control::Options{}), qfleet::Error);
  control::Optimizer opt(torch::zeros({2, 2}, torch::kFloat64), control::Options{});
  EXPECT_THROW(opt.tell(torch::zeros({3}, torch::kFloat64), torch::zeros({3, 2}, torch::kFloat64)), qfleet::Error);
}

}  // namespace
