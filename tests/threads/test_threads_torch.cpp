// The torch operators and autograd from several threads at once: a circuit (state
// vector), a noisy circuit (density matrices) and an open system, each compiled once and
// shared by four threads, each thread running forward and backward (torch::autograd::grad)
// on its own batch; every result equals the same call made alone, bit for bit.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "qfleet/torch.hpp"
#include "threads/shared_calls.hpp"

namespace threads_tests {

namespace nn = qfleet::nn;

std::string example(const std::string& name) {
  std::ifstream f(std::string(QFLEET_SOURCE_DIR) + "/docs/examples/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// (outputs, the gradients w.r.t. each input) of one call; `call` builds the graph.
using Call = std::function<std::vector<torch::Tensor>(int)>;

// Four calls (k = 0..3) made alone, then from 4 threads x 5 rounds (shared_calls.hpp).
void expect_threads_match_serial(const Call& call, const std::string& what) {
  auto same = [](const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!torch::equal(a[i], b[i])) return false;
    return true;
  };
  expect_shared_calls_match_serial(4, call, same, 5, what);
}

std::vector<torch::Tensor> circuit_call(const c10::intrusive_ptr<nn::CircuitProgram>& p, int k) {
  const auto opt = torch::TensorOptions().dtype(torch::kFloat64);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + k);
  const torch::Tensor x = torch::rand({7 + 3 * k, p->n_inputs()}, gen, opt).requires_grad_();
  const torch::Tensor w = torch::rand({p->n_weights()}, gen, opt).requires_grad_();
  const torch::Tensor out = nn::circuit_forward(p, x, w);
  const auto g = torch::autograd::grad({out.sum()}, {x, w});
  return {out.detach(), g[0], g[1]};
}

TEST(Threads, CircuitOperatorsAndAutogradMatchSerialCalls) {
  torch::set_num_threads(1);
  const auto sv = c10::make_intrusive<nn::CircuitProgram>(example("circuit.json"));
  expect_threads_match_serial([&](int k) { return circuit_call(sv, k); }, "state vector");
  // A circuit with channels: density matrices.
  const std::string noisy = R"({"kind": "circuit", "qubits": 2,
    "ops": [{"gate": "RY", "wires": [0], "params": [{"input": 0}]},
            {"channel": "Depolarizing", "wires": [0], "params": [0.05]},
            {"gate": "RX", "wires": [1], "params": [{"weight": 0}]},
            {"gate": "CNOT", "wires": [0, 1]},
            {"channel": "AmplitudeDamping", "wires": [1], "params": [{"weight": 1, "scale": 0.1}]},
            {"gate": "RY", "wires": [1], "params": [{"weight": 2}]}],
    "observables": [[[0.5, "Z0 Z1"], [-0.8, "X1"]]]})";
  const auto dm = c10::make_intrusive<nn::CircuitProgram>(noisy);
  ASSERT_EQ(dm->program.simulator(), qfleet::Simulator::density_matrix);
  expect_threads_match_serial([&](int k) { return circuit_call(dm, k); }, "density matrix");
}

TEST(Threads, OpenSystemFidelityAndAutogradMatchSerialCalls) {
  torch::set_num_threads(1);
  const auto p = c10::make_intrusive<nn::OpenSystemProgram>(example("lindblad.json"));
  const auto opt = torch::TensorOptions().dtype(torch::kFloat64);
  expect_threads_match_serial(
      [&](int k) {
        auto gen = at::make_generator<at::CPUGeneratorImpl>(200 + k);
        const int64_t B = 3 + k;
        const torch::Tensor a = torch::rand({B, p->n_segments(), p->n_controls()}, gen, opt).requires_grad_();
        const torch::Tensor d = torch::rand({B, p->n_drift_terms()}, gen, opt).requires_grad_();
        const torch::Tensor g = (0.1 * torch::rand({B, p->n_jumps()}, gen, opt)).requires_grad_();
        const torch::Tensor f = nn::open_fidelity(p, a, d, g);
        const auto grads = torch::autograd::grad({f.sum()}, {a, d, g});
        return std::vector<torch::Tensor>{f.detach(), grads[0], grads[1], grads[2]};
      },
      "open system");
}

}  // namespace threads_tests
