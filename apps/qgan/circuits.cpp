// The generator ansatz and the benchmark circuits (circuits.hpp).
#include "circuits.hpp"

#include <cmath>
#include <random>
#include <stdexcept>

namespace qfleet::qgan {

namespace {
std::vector<int> all_wires(int n) {
  std::vector<int> w(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) w[std::size_t(i)] = i;
  return w;
}
void check_qubits(int n, const char* what) {
  if (n < 1 || n > 12) throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " qubits (1 to 12)");
}
}  // namespace

Circuit generator_circuit(const GeneratorOptions& o) {
  check_qubits(o.qubits, "generator");
  if (o.reps < 0 || o.reps > 64) throw std::invalid_argument("generator reps = " + std::to_string(o.reps) + ": 0 to 64");
  const int n = o.qubits;
  Circuit c(n);
  for (int i = 0; i < n; ++i) c.add(Gate::Hadamard, {i});
  for (int r = 0; r <= o.reps; ++r) {
    for (int i = 0; i < n; ++i) c.add(Gate::RY, {i}, {Param::weight(r * n + i)});
    if (r < o.reps)
      for (int i = 0; i + 1 < n; ++i) c.add(Gate::CNOT, {i, i + 1});
  }
  c.probs(all_wires(n));
  return c;
}

Circuit ghz_circuit(int n) {
  check_qubits(n, "ghz");
  Circuit c(n);
  c.add(Gate::Hadamard, {0});
  for (int i = 0; i + 1 < n; ++i) c.add(Gate::CNOT, {i, i + 1});
  c.probs(all_wires(n));
  return c;
}

Circuit qft_circuit(int n, uint64_t value) {
  check_qubits(n, "qft");
  if (value >> n) throw std::invalid_argument("qft: value " + std::to_string(value) + " needs more than " + std::to_string(n) + " qubits");
  Circuit c(n);
  // The QFT of |value> (Nielsen & Chuang 5.1, with the final swaps): wire j carries the
  // phase 2 pi value / 2^(j+1).
  for (int j = 0; j < n; ++j) {
    c.add(Gate::Hadamard, {j});
    c.add(Gate::PhaseShift, {j}, {2 * M_PI * double(value) / std::ldexp(1.0, j + 1)});
  }
  // The inverse QFT: the swaps, then the controlled phases and Hadamards in reverse.
  for (int j = 0; j < n / 2; ++j) c.add(Gate::SWAP, {j, n - 1 - j});
  for (int j = n - 1; j >= 0; --j) {
    for (int k = n - 1; k > j; --k)
      c.add(Gate::ControlledPhaseShift, {k, j}, {-2 * M_PI / std::ldexp(1.0, k - j + 1)});
    c.add(Gate::Hadamard, {j});
  }
  c.probs(all_wires(n));
  return c;
}

Circuit random_layered_circuit(int n, int layers, uint64_t seed) {
  check_qubits(n, "random");
  if (layers < 1 || layers > 1000) throw std::invalid_argument("random: layers = " + std::to_string(layers) + ": 1 to 1000");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> angle(0, 2 * M_PI);
  std::uniform_int_distribution<int> axis(0, 2);
  const Gate rotations[] = {Gate::RX, Gate::RY, Gate::RZ};
  Circuit c(n);
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < n; ++i) {
      const Gate g = rotations[axis(rng)];
      c.add(g, {i}, {angle(rng)});
    }
    for (int i = l % 2; i + 1 < n; i += 2) c.add(Gate::CNOT, {i, i + 1});
  }
  c.probs(all_wires(n));
  return c;
}

Circuit bind_weights(const Circuit& c, const std::vector<double>& weights) {
  if (int(weights.size()) < c.n_weights())
    throw std::invalid_argument("bind_weights: " + std::to_string(weights.size()) + " weights for a circuit that reads " +
                                std::to_string(c.n_weights()));
  if (c.n_inputs() > 0) throw std::invalid_argument("bind_weights: the circuit reads inputs");
  Circuit out(c.n_qubits());
  for (const Operation& op : c.operations()) {
    if (op.is_channel()) throw std::invalid_argument("bind_weights: the circuit has channels");
    if (op.gate == Gate::QubitUnitary) {
      out.qubit_unitary(op.wires, op.matrix);
      continue;
    }
    std::vector<Param> ps;
    for (const Param& p : op.params)
      ps.push_back(p.kind == Param::Kind::Weight ? Param(p.scale * weights[std::size_t(p.index)]) : p);
    out.add(op.gate, op.wires, ps);
  }
  for (const Measurement& m : c.measurements()) {
    if (m.kind != Measurement::Kind::Probs) throw std::invalid_argument("bind_weights: only probabilities are measured here");
    out.probs(m.wires);
  }
  return out;
}

}  // namespace qfleet::qgan
