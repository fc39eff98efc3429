// The LibTorch adapter from C++: the ops through the dispatcher, autograd against
// central finite differences, the modules, a tiny training run, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "qfleet/torch.hpp"
#include "classifier.hpp"

namespace {

using qfleet::nn::CircuitProgram;
using qfleet::nn::OpenSystemProgram;

double sum_double(const torch::Tensor& t) { return t.sum().item<double>(); }

// Central differences of sum(w_out * f(x)) with respect to every entry of x.
template <class F>
torch::Tensor fd_grad(F f, torch::Tensor x, const torch::Tensor& w_out, double h = 1e-6) {
  torch::NoGradGuard g;
  auto grad = torch::zeros_like(x);
  auto xf = x.view(-1);
  auto gf = grad.view(-1);
  for (int64_t i = 0; i < xf.numel(); ++i) {
    const double v = xf[i].item<double>();
    xf[i] = v + h;
    const double up = sum_double(f(x) * w_out);
    xf[i] = v - h;
    const double dn = sum_double(f(x) * w_out);
    xf[i] = v;
    gf[i] = (up - dn) / (2 * h);
  }
  return grad;
}

TEST(TorchCircuit, ForwardMatchesTheEngineAndGradientsMatchFiniteDifferences) {
  const auto c = classifier(3, 2);
  qfleet::nn::QuantumLayer layer(c, qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 0, 11});
  const auto x = torch::rand({5, 3}, torch::kFloat64).requires_grad_();
  const auto y = layer->forward(x);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{5, 3}));

  // The same numbers as calling the engine directly.
  const auto prog = qfleet::compile(c);
  std::vector<double> direct(15);
  const auto xc = x.detach().contiguous();
  const auto wc = layer->weight.detach().contiguous();
  prog.forward<double>({5, {xc.data_ptr<double>(), 15}, {wc.data_ptr<double>(), std::size_t(wc.numel())}}, direct);
  for (int i = 0; i < 15; ++i) EXPECT_DOUBLE_EQ(y.view(-1)[i].item<double>(), direct[i]);

  const auto w_out = torch::rand({5, 3}, torch::kFloat64);
  (y * w_out).sum().backward();
  auto f_x = [&](const torch::Tensor& xx) { return layer->forward(xx); };
  const auto gx = fd_grad(f_x, x.detach().clone(), w_out);
  EXPECT_LT((x.grad() - gx).abs().max().item<double>(), 1e-8);
  auto w = layer->weight.detach().clone();
  auto f_w = [&](const torch::Tensor& ww) { return qfleet::nn::circuit_forward(layer->program(), x.detach(), ww); };
  const auto gw = fd_grad(f_w, w, w_out);
  EXPECT_LT((layer->weight.grad() - gw).abs().max().item<double>(), 1e-8);
}

TEST(TorchCircuit, PerSampleWeightsAndComplex64) {
  const auto c = classifier(2, 1);
  auto p64 = c10::make_intrusive<CircuitProgram>(c, qfleet::CompileOptions{qfleet::Precision::complex64});
  auto p128 = c10::make_intrusive<CircuitProgram>(c);
  const auto x = torch::rand({4, 2}, torch::kFloat64);
  const auto w = torch::rand({4, 6}, torch::kFloat64);  // per sample
  const auto y128 = qfleet::nn::circuit_forward(p128, x, w);
  const auto y64 = qfleet::nn::circuit_forward(p64, x.to(torch::kFloat32), w.to(torch::kFloat32));
  EXPECT_EQ(y64.scalar_type(), torch::kFloat32);
  EXPECT_LT((y64.to(torch::kFloat64) - y128).abs().max().item<double>(), 1e-5);
  // Row b with per-sample weights = the shared-weight call with weights[b].
  for (int b = 0; b < 4; ++b) {
    const auto yb = qfleet::nn::circuit_forward(p128, x.slice(0, b, b + 1), w[b]);
    EXPECT_LT((yb[0] - y128[b]).abs().max().item<double>(), 1e-15);
  }
}

// QuantumLayerOptions::device reaches the program: automatic is the cpu where no GPU
// is visible (the layer then gives the cpu layer's numbers), cuda is a clear error there.
TEST(TorchCircuit, LayerDeviceOption) {
  const auto c = classifier(2, 1);
  qfleet::nn::QuantumLayerOptions o{qfleet::Precision::complex128, 0, 5};
  qfleet::nn::QuantumLayer cpu(c, o);
  o.device = qfleet::Device::automatic;
  qfleet::nn::QuantumLayer automatic(c, o);
  EXPECT_EQ(automatic->program()->program.device(), qfleet::Device::automatic);
  const auto x = torch::rand({3, 2}, torch::kFloat64);
  EXPECT_LT((automatic->forward(x) - cpu->forward(x)).abs().max().item<double>(), 1e-13);
  if (qfleet::cuda_device_count() == 0) {
    o.device = qfleet::Device::cuda;
    try {
      qfleet::nn::QuantumLayer gpu(c, o);
      ADD_FAILURE() << "a cuda layer compiled without a GPU";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
  }
}

TEST(TorchCircuit, ATinyLayerLearnsAFunction) {
  // Learn y = cos(x) on one qubit: RX(x) then a trainable Rot; <Z> = cos(x) needs Rot ~ identity.
  qfleet::Circuit c(1);
  c.angle_embedding({0}).add("Rot", {0}, {qfleet::Param::weight(0), qfleet::Param::weight(1), qfleet::Param::weight(2)});
  c.expval("Z0");
  torch::manual_seed(0);
  qfleet::nn::QuantumLayer layer(c, qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 0, 3});
  torch::optim::Adam opt(layer->parameters(), torch::optim::AdamOptions(0.1));
  const auto x = torch::linspace(-2, 2, 32, torch::kFloat64).unsqueeze(1);
  const auto target = torch::cos(x);
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    const auto loss = (layer->forward(x) - target).pow(2).mean();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_GT(first, 1e-2);
  EXPECT_LT(last, 1e-4);  // from ~0.4: the layer fits cos(x)
}

qfleet::OpenSystem noisy_qubit(int n_seg) {
  const qfleet::ComplexMatrix hx = {0, 0.5, 0.5, 0}, hy = {0, qfleet::Complex(0, -0.5), qfleet::Complex(0, 0.5), 0},
                              lower = {0, 1, 0, 0}, z = {1, 0, 0, -1}, x = {0, 1, 1, 0};
  qfleet::OpenSystem s(2);
  s.drift_term(z).control(hx).control(hy).jump(lower).jump(z).segments(n_seg, 1.0).propagate_gate().target_unitary(x);
  return s;
}

TEST(TorchOpen, FidelityGradientsMatchFiniteDifferences) {
  qfleet::nn::OpenSystemLayer layer(noisy_qubit(6));
  const auto a = (torch::rand({3, 6, 2}, torch::kFloat64) * 4 - 2).requires_grad_();
  const auto r = (torch::rand({3, 2}, torch::kFloat64) * 0.1).requires_grad_();
  const auto c = (torch::rand({3, 1}, torch::kFloat64) * 0.2).requires_grad_();
  const auto f = layer->forward(a, r, c);
  ASSERT_EQ(f.sizes(), (std::vector<int64_t>{3}));
  EXPECT_TRUE((f <= 1).all().item<bool>());
  const auto w_out = torch::rand({3}, torch::kFloat64);
  (f * w_out).sum().backward();
  const auto ga = fd_grad([&](const torch::Tensor& t) { return layer->forward(t, r.detach(), c.detach()); },
                          a.detach().clone(), w_out);
  const auto gr = fd_grad([&](const torch::Tensor& t) { return layer->forward(a.detach(), t, c.detach()); },
                          r.detach().clone(), w_out);
  const auto gc = fd_grad([&](const torch::Tensor& t) { return layer->forward(a.detach(), r.detach(), t); },
                          c.detach().clone(), w_out);
  EXPECT_LT((a.grad() - ga).abs().max().item<double>(), 1e-8);
  EXPECT_LT((r.grad() - gr).abs().max().item<double>(), 1e-8);
  EXPECT_LT((c.grad() - gc).abs().max().item<double>(), 1e-8);
}

// The backward reads a cotangent in whatever layout autograd hands it: the expanded
// (stride 0) one of `out.sum()`, a strided one, a contiguous one; the gradients are the
// finite differences of sum(cot * out) each time.
std::vector<torch::Tensor> cotangent_layouts(const std::vector<int64_t>& shape) {
  const auto dense = torch::rand(shape, torch::kFloat64) * 2 - 1;
  std::vector<int64_t> pairs = shape;
  pairs.push_back(2);
  auto strided = torch::empty(pairs, torch::kFloat64).select(-1, 0);  // every stride doubled
  strided.copy_(dense);
  return {torch::ones({}, torch::kFloat64).expand(shape), strided, dense};
}

TEST(TorchCircuit, CotangentsInAnyLayout) {
  qfleet::nn::QuantumLayer layer(classifier(3, 1), qfleet::nn::QuantumLayerOptions{qfleet::Precision::complex128, 0, 4});
  const auto x = torch::rand({4, 3}, torch::kFloat64).requires_grad_();
  for (const auto& cot : cotangent_layouts({4, 3})) {
    const auto y = layer->forward(x);
    const auto g = torch::autograd::grad({y}, {x, layer->weight}, {cot});
    const auto dense = cot.contiguous();
    const auto gx = fd_grad([&](const torch::Tensor& t) { return layer->forward(t); }, x.detach().clone(), dense);
    const auto gw = fd_grad([&](const torch::Tensor& t) { return qfleet::nn::circuit_forward(layer->program(), x.detach(), t); },
                            layer->weight.detach().clone(), dense);
    EXPECT_LT((g[0] - gx).abs().max().item<double>(), 1e-8) << "cotangent strides " << cot.strides();
    EXPECT_LT((g[1] - gw).abs().max().item<double>(), 1e-8) << "cotangent strides " << cot.strides();
  }
}

// Both ways the open layer's forward prepares its backward: per-task rows (every tensor
// per task) and the saved states (shared amplitudes).
TEST(TorchOpen, CotangentsInAnyLayout) {
  qfleet::nn::OpenSystemLayer layer(noisy_qubit(3));
  const auto r = (torch::rand({3, 2}, torch::kFloat64) * 0.1).requires_grad_();
  const auto c = (torch::rand({3, 1}, torch::kFloat64) * 0.2).requires_grad_();
  for (const auto& a : {(torch::rand({3, 3, 2}, torch::kFloat64) * 4 - 2).requires_grad_(),
                        (torch::rand({3, 2}, torch::kFloat64) * 4 - 2).requires_grad_()}) {
    for (const auto& cot : cotangent_layouts({3})) {
      const auto g = torch::autograd::grad({layer->forward(a, r, c)}, {a, r, c}, {cot});
      const auto dense = cot.contiguous();
      const auto ga = fd_grad([&](const torch::Tensor& t) { return layer->forward(t, r.detach(), c.detach()); },
                              a.detach().clone(), dense);
      const auto gr = fd_grad([&](const torch::Tensor& t) { return layer->forward(a.detach(), t, c.detach()); },
                              r.detach().clone(), dense);
      EXPECT_LT((g[0] - ga).abs().max().item<double>(), 1e-8) << a.sizes() << " cotangent strides " << cot.strides();
      EXPECT_LT((g[1] - gr).abs().max().item<double>(), 1e-8) << a.sizes() << " cotangent strides " << cot.strides();
    }
  }
}

// qfleet::nn::open_outputs from C++: a loss on the expectation values, the leakage and the
// final state, one backward, against central differences in the amplitudes, the rates and
// the segment durations.
TEST(TorchOpen, EveryOutputDifferentiableFromCpp) {
  const qfleet::ComplexMatrix hx = {0, 0.5, 0.5, 0}, lower = {0, 1, 0, 0}, z = {1, 0, 0, -1};
  qfleet::OpenSystem s(2);
  s.control(hx).drift_term(z).jump(lower).segments(3, 0.9).observable(z).computational_subspace({0});
  const auto p = c10::make_intrusive<OpenSystemProgram>(s);
  const auto c = torch::tensor({0.3}, torch::kFloat64);
  const auto w_exp = torch::rand({2, 4, 1}, torch::kFloat64), w_fin = torch::rand({2, 2, 2}, torch::kFloat64);
  auto loss_of = [&](const torch::Tensor& a, const torch::Tensor& r, const torch::Tensor& t) {
    const qfleet::nn::OpenOutputs o = qfleet::nn::open_outputs(p, {a, c, r, t, {}});
    EXPECT_FALSE(o.fidelity.defined());
    return (o.expvals * w_exp).sum() + o.leakage.sum() + (torch::real(o.final_state) * w_fin).sum();
  };
  const auto a = (torch::rand({2, 3, 1}, torch::kFloat64) * 2 - 1).requires_grad_();
  const auto r = torch::tensor({0.4}, torch::kFloat64).requires_grad_();
  const auto t = (torch::rand({2, 3}, torch::kFloat64) * 0.3 + 0.2).requires_grad_();
  loss_of(a, r, t).backward();
  const auto one = torch::ones({}, torch::kFloat64);
  const auto ga = fd_grad([&](const torch::Tensor& x) { return loss_of(x, r.detach(), t.detach()); }, a.detach().clone(), one);
  const auto gr = fd_grad([&](const torch::Tensor& x) { return loss_of(a.detach(), x, t.detach()); }, r.detach().clone(), one);
  const auto gt = fd_grad([&](const torch::Tensor& x) { return loss_of(a.detach(), r.detach(), x); }, t.detach().clone(), one);
  EXPECT_LT((a.grad() - ga).abs().max().item<double>(), 1e-8);
  EXPECT_LT((r.grad() - gr).abs().max().item<double>(), 1e-8);
  EXPECT_LT((t.grad() - gt).abs().max().item<double>(), 1e-8);
}

TEST(TorchErrors, BadInputGetsAClearError) {
  qfleet::nn::QuantumLayer layer(classifier(2, 1));
  auto msg = [](auto f) {
    try {
      f();
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg([&] { layer->forward(torch::rand({3, 2}, torch::kFloat32)); }).find("must be torch.float64"),
            std::string::npos);
  EXPECT_NE(msg([&] { layer->forward(torch::rand({3, 5}, torch::kFloat64)); }).find("reads 2 input column(s)"),
            std::string::npos);
  EXPECT_NE(msg([&] { layer->forward(torch::rand({3}, torch::kFloat64)); }).find("dimension"), std::string::npos);
  EXPECT_NE(msg([&] { layer->forward(torch::full({1, 2}, NAN, torch::kFloat64)); }).find("non-finite"), std::string::npos);
  qfleet::nn::OpenSystemLayer open(noisy_qubit(4));
  EXPECT_NE(msg([&] {
              open->forward(torch::rand({2, 4, 2}, torch::kFloat64), {}, torch::rand({2, 1}, torch::kFloat64));
            }).find("rates is required"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              open->forward(torch::rand({2, 4, 2}, torch::kFloat64), torch::rand({3, 2}, torch::kFloat64),
                            torch::rand({2, 1}, torch::kFloat64));
            }).find("must agree on the batch size"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              open->forward(torch::rand({2, 4, 2}, torch::kFloat64), -torch::rand({2, 2}, torch::kFloat64),
                            torch::rand({2, 1}, torch::kFloat64));
            }).find("rate"),
            std::string::npos);
  qfleet::OpenSystem no_target(2);
  no_target.control({0, 1, 1, 0}).segments(2, 1.0);
  EXPECT_NE(msg([&] { qfleet::nn::OpenSystemLayer bad(no_target); }).find("needs a target"), std::string::npos);
}

}  // namespace
