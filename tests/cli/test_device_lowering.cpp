// Device lowering (qfleet/device_lowering.hpp) against the dense reference: every
// rewrite (layout, SWAP routing, basis translation) keeps the distribution; the JSON
// key "lower_to_device" gives what the C++ API gives; bad inputs are clear errors.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/device_lowering.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/program.hpp"
#include "reference/statevector.hpp"
#include "unit/expect_error.hpp"

namespace device_lowering_test {  // (named: the unity build shares a file with other tests)

using qfleet::Circuit;
using qfleet::Gate;
using nlohmann::json;

json device_json(const std::string& name) {
  std::ifstream in(std::string(QFLEET_SOURCE_DIR) + "/apps/qgan/devices/" + name + ".json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

qfleet::NoiseModel device(const std::string& name) {
  return qfleet::json_problem::parse_noise_model(device_json(name));
}

std::vector<double> reference_probs(const Circuit& c, const std::vector<double>& w) {
  ref::Circuit r;
  r.n = c.n_qubits();
  for (const auto& op : c.operations()) r.add(std::string(qfleet::gate_info(op.gate).name), op.wires, op.params);
  for (const auto& m : c.measurements()) r.meas.push_back(ref::Meas{true, {}, m.wires});
  return ref::outputs(r, nullptr, w.data());
}

std::vector<double> engine_probs(const Circuit& c, const std::vector<double>& w) {
  return qfleet::compile(c).forward(qfleet::BatchArgs<double>{1, {}, w});
}

// Layers of random rotations and brickwork CNOTs on n wires (far-apart pairs too, so
// that routing is needed on a heavy-hex device).
Circuit layered(int n, int layers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  Circuit c(n);
  for (int l = 0; l < layers; ++l) {
    for (int q = 0; q < n; ++q) c.add(Gate::RX, {q}, {u(rng)}).add(Gate::RZ, {q}, {u(rng)});
    for (int q = l % 2; q + 1 < n; q += 2) c.add(Gate::CNOT, {q, (q + 1 + l) % n == q ? q + 1 : (q + 1 + l) % n});
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) all[std::size_t(q)] = q;
  c.probs(all);
  return c;
}

// The device with only one direction of each coupling calibrated.
qfleet::NoiseModel one_way(qfleet::NoiseModel m) {
  m.coupling_map = {{1, 0}, {2, 1}, {3, 1}, {5, 3}, {5, 4}, {6, 5}};
  m.gates.erase(std::remove_if(m.gates.begin(), m.gates.end(),
                               [&](const auto& g) {
                                 return g.wires.size() == 2 &&
                                        std::find(m.coupling_map.begin(), m.coupling_map.end(),
                                                  std::pair<int, int>(g.wires[0], g.wires[1])) == m.coupling_map.end();
                               }),
                m.gates.end());
  return m;
}

TEST(DeviceLowering, EveryRewriteKeepsTheDistribution) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  for (const auto& model : {device("fake_nairobi"), one_way(device("fake_nairobi"))}) {
    Circuit ghz(6);
    ghz.add(Gate::Hadamard, {0});
    for (int q = 0; q + 1 < 6; ++q) ghz.add(Gate::CNOT, {q, q + 1});
    ghz.probs({0, 1, 2, 3, 4, 5});
    Circuit mixed(4);  // every gate the lowering knows, far-apart wires, weights
    mixed.add(Gate::Hadamard, {0}).add(Gate::RX, {3}, {0.3}).add(Gate::RY, {1}, {qfleet::Param::weight(0)})
        .add(Gate::RZ, {2}, {qfleet::Param::weight(1, -2.0)}).add(Gate::PhaseShift, {0}, {0.7}).add(Gate::PauliX, {2})
        .add(Gate::CZ, {0, 3}).add(Gate::ControlledPhaseShift, {3, 1}, {qfleet::Param::weight(2, 0.5)})
        .add(Gate::SWAP, {0, 2}).add(Gate::CNOT, {3, 0}).add(Gate::Identity, {1}).probs({0, 1, 2, 3}).probs({2});
    for (const Circuit& c : {ghz, layered(6, 4, 3), layered(7, 3, 5), mixed}) {
      std::vector<double> w(std::size_t(c.n_weights()));
      for (double& v : w) v = u(rng);
      const qfleet::LoweredCircuit low = qfleet::lower_to_device(c, model);
      for (const auto& op : low.circuit.operations())
        EXPECT_TRUE(op.gate == Gate::RZ || op.gate == Gate::SX || op.gate == Gate::PauliX || op.gate == Gate::CNOT);
      const auto a = engine_probs(low.circuit, w), b = reference_probs(c, w);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
      EXPECT_NO_THROW(qfleet::compile(low.circuit, low.model));  // every gate calibrated, every pair coupled
    }
  }
}

TEST(DeviceLowering, TheJsonKeyGivesTheApisProgram) {
  // GHZ on 3 qubits with a CNOT between wires the device does not couple: the JSON
  // problem's noisy outputs equal compile(apply_noise_model(lowered)) of the C++ API,
  // and without noise the lowered problem gives the logical distribution.
  const json ops = json::array({{{"gate", "Hadamard"}, {"wires", {0}}},
                                {{"gate", "CNOT"}, {"wires", {0, 2}}},
                                {{"gate", "CNOT"}, {"wires", {2, 1}}}});
  json doc = {{"kind", "circuit"}, {"qubits", 3}, {"ops", ops}, {"probs", {0, 1, 2}},
              {"noise_model", device_json("fake_lagos")}, {"lower_to_device", true}};
  const auto p = qfleet::json_problem::parse_circuit_problem(doc);
  const auto json_out = qfleet::json_problem::evaluate(p);
  Circuit c(3);
  c.add(Gate::Hadamard, {0}).add(Gate::CNOT, {0, 2}).add(Gate::CNOT, {2, 1}).probs({0, 1, 2});
  const auto low = qfleet::lower_to_device(c, device("fake_lagos"));
  const auto api =
      qfleet::compile(qfleet::apply_noise_model(low.circuit, low.model)).forward(qfleet::BatchArgs<double>{1, {}, {}});
  const auto got = json_out.at("probs").get<std::vector<std::vector<double>>>().at(0);
  ASSERT_EQ(got.size(), api.size());
  for (std::size_t i = 0; i < api.size(); ++i) EXPECT_NEAR(got[i], api[i], 1e-12);
  EXPECT_GT(got[1] + got[2] + got[4], 1e-4);  // the device's noise reaches states GHZ never has
  // The model's three noise parts off: the logical circuit's distribution.
  for (const char* part : {"gate_error", "thermal_relaxation", "readout_error"}) doc["noise_model"][part] = false;
  const auto quiet = qfleet::json_problem::evaluate(qfleet::json_problem::parse_circuit_problem(doc));
  const auto ideal = reference_probs(c, {});
  const auto q = quiet.at("probs").get<std::vector<std::vector<double>>>().at(0);
  for (std::size_t i = 0; i < ideal.size(); ++i) EXPECT_NEAR(q[i], ideal[i], 1e-12);
}

TEST(DeviceLowering, ErrorsNameTheProblem) {
  Circuit big(8);
  big.add(Gate::Hadamard, {0}).probs({0});
  EXPECT_QFLEET_ERROR(qfleet::lower_to_device(big, device("fake_nairobi")), "lower_to_device", "no connected set");
  Circuit tof(3);
  tof.add(Gate::Toffoli, {0, 1, 2}).probs({0, 1, 2});
  EXPECT_QFLEET_ERROR(qfleet::lower_to_device(tof, device("fake_nairobi")), "Toffoli");
  qfleet::NoiseModel no_sx = device("fake_nairobi");
  no_sx.basis_gates = {Gate::RZ, Gate::CNOT};
  no_sx.gates.erase(std::remove_if(no_sx.gates.begin(), no_sx.gates.end(),
                                   [](const auto& g) {
                                     return g.gate == Gate::SX || g.gate == Gate::PauliX || g.gate == Gate::Identity;
                                   }),
                    no_sx.gates.end());
  Circuit h(2);
  h.add(Gate::Hadamard, {0}).probs({0, 1});
  EXPECT_QFLEET_ERROR(qfleet::lower_to_device(h, no_sx), "lacks SX");
  // Through JSON: the error names the key, as every reader error does.
  json doc = {{"kind", "circuit"}, {"qubits", 1}, {"ops", json::array()}, {"probs", {0}}, {"lower_to_device", true}};
  EXPECT_QFLEET_ERROR(qfleet::json_problem::parse_circuit_problem(doc), "lower_to_device", "give the device as");
  doc = {{"kind", "circuit"}, {"qubits", 8}, {"ops", json::array()}, {"probs", {0}},
         {"noise_model", device_json("fake_nairobi")}, {"lower_to_device", true}};
  EXPECT_QFLEET_ERROR(qfleet::json_problem::parse_circuit_problem(doc), "lower_to_device", "no connected set");
}

}  // namespace device_lowering_test
