// Layout, routing and basis translation onto a device (device_lowering.hpp).
#include "qfleet/device_lowering.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <stdexcept>

#include "qfleet/error.hpp"

namespace qfleet {

NoiseModel restrict_model(const NoiseModel& model, const std::vector<int>& qubits) {
  std::vector<int> local(std::size_t(model.n_qubits), -1);
  for (std::size_t j = 0; j < qubits.size(); ++j) {
    if (qubits[j] < 0 || qubits[j] >= model.n_qubits) throw Error("restrict_model: qubit out of range");
    local[std::size_t(qubits[j])] = int(j);
  }
  NoiseModel m = model;
  m.n_qubits = int(qubits.size());
  m.qubits.clear();
  for (int q : qubits) m.qubits.push_back(model.qubits[std::size_t(q)]);
  m.coupling_map.clear();
  for (auto [a, b] : model.coupling_map)
    if (local[std::size_t(a)] >= 0 && local[std::size_t(b)] >= 0) m.coupling_map.emplace_back(local[std::size_t(a)], local[std::size_t(b)]);
  m.gates.clear();
  for (const auto& g : model.gates) {
    auto ng = g;
    bool inside = true;
    for (int& w : ng.wires) {
      if (w < 0 || w >= model.n_qubits || local[std::size_t(w)] < 0) {
        inside = false;
        break;
      }
      w = local[std::size_t(w)];
    }
    if (inside) m.gates.push_back(ng);
  }
  return m;
}

namespace {

class Lowerer {
 public:
  Lowerer(const NoiseModel& m, int k) : basis_(m.basis_gates.begin(), m.basis_gates.end()), k_(k) {
    // Physical qubits: breadth-first from the lowest qubit whose component has k of them.
    const int n = m.n_qubits;
    std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
    all_to_all_ = m.coupling_map.empty();
    for (auto [a, b] : m.coupling_map) {
      adj[std::size_t(a)].push_back(b);
      adj[std::size_t(b)].push_back(a);
    }
    for (auto& a : adj) std::sort(a.begin(), a.end());
    for (int start = 0; start < n && int(physical_.size()) < k; ++start) {
      physical_.clear();
      if (all_to_all_) {
        for (int q = 0; q < k; ++q) physical_.push_back(q);
        break;
      }
      std::vector<bool> seen(std::size_t(n), false);
      std::deque<int> todo{start};
      seen[std::size_t(start)] = true;
      while (!todo.empty() && int(physical_.size()) < k) {
        const int q = todo.front();
        todo.pop_front();
        physical_.push_back(q);
        for (int r : adj[std::size_t(q)])
          if (!seen[std::size_t(r)]) seen[std::size_t(r)] = true, todo.push_back(r);
      }
    }
    if (int(physical_.size()) < k)
      throw Error("lower_to_device: the circuit has " + std::to_string(k) + " qubits; device " + m.name +
                                  " has no connected set of that many (" + std::to_string(n) + " qubits)");
    model_ = restrict_model(m, physical_);
    for (auto [a, b] : model_.coupling_map) directed_.insert({a, b});
    pos_.resize(std::size_t(k));
    for (int i = 0; i < k; ++i) pos_[std::size_t(i)] = i;
    out_ = Circuit(k);
  }

  void gate(const Operation& op) {
    if (op.is_channel()) throw Error("lower_to_device: the circuit already has channels");
    if (op.wires.size() == 1) return one(op.gate, pos_[std::size_t(op.wires[0])], op.params);
    if (op.wires.size() != 2)
      throw Error(std::string("lower_to_device: ") + std::string(gate_info(op.gate).name) +
                                  " acts on " + std::to_string(op.wires.size()) + " wires; only 1- and 2-qubit gates are routed");
    const int a = op.wires[0], b = op.wires[1];
    while (!adjacent(pos_[std::size_t(a)], pos_[std::size_t(b)])) {
      // Move a one step along a shortest path towards b.
      const int pa = pos_[std::size_t(a)], step = next_hop(pa, pos_[std::size_t(b)]);
      swap_physical(pa, step);
      for (int& p : pos_) p = p == pa ? step : (p == step ? pa : p);
      ++swaps_;
    }
    two(op.gate, pos_[std::size_t(a)], pos_[std::size_t(b)], op.params);
  }

  LoweredCircuit finish(const Circuit& logical) {
    for (const Measurement& m : logical.measurements()) {
      if (m.kind != Measurement::Kind::Probs) throw Error("lower_to_device: only probabilities are measured here");
      std::vector<int> w;
      for (int q : m.wires) w.push_back(pos_[std::size_t(q)]);
      out_.probs(w);
    }
    LoweredCircuit r;
    r.circuit = out_;
    r.model = model_;
    r.physical = physical_;
    r.swaps = swaps_;
    r.two_qubit_gates = n2_;
    r.one_qubit_gates = n1_;
    return r;
  }

 private:
  bool in_basis(Gate g) const { return basis_.empty() || basis_.count(g) > 0; }
  void need(Gate g) const {
    if (!in_basis(g))
      throw Error(std::string("lower_to_device: the device's basis lacks ") + std::string(gate_info(g).name) +
                                  ", which the translation needs");
  }
  bool adjacent(int a, int b) const {
    return all_to_all_ || directed_.count({a, b}) > 0 || directed_.count({b, a}) > 0;
  }
  int next_hop(int from, int to) const {
    // Breadth-first distances to `to`; the lowest-numbered neighbour one step closer.
    std::vector<int> dist(std::size_t(k_), -1);
    std::deque<int> todo{to};
    dist[std::size_t(to)] = 0;
    while (!todo.empty()) {
      const int q = todo.front();
      todo.pop_front();
      for (int r = 0; r < k_; ++r)
        if (dist[std::size_t(r)] < 0 && adjacent(q, r)) dist[std::size_t(r)] = dist[std::size_t(q)] + 1, todo.push_back(r);
    }
    for (int r = 0; r < k_; ++r)
      if (adjacent(from, r) && dist[std::size_t(r)] == dist[std::size_t(from)] - 1) return r;
    throw std::logic_error("lower_to_device: no route");  // unreachable: the chosen qubits are connected
  }
  void emit(Gate g, std::vector<int> w, std::vector<Param> p = {}) {
    need(g);
    out_.add(g, w, p);
    (w.size() == 1 ? n1_ : n2_) += 1;
  }
  static Param scaled(const Param& p, double f) {
    Param q = p;
    if (p.kind == Param::Kind::Constant) q.value *= f;
    else q.scale *= f;
    return q;
  }
  // RY(t) = RZ(pi) SX RZ(t + pi) SX up to a global phase (U3(t, 0, 0) in the ZSX form
  // U3(t, f, l) = RZ(f + pi) SX RZ(t + pi) SX RZ(l)); tests check every rewrite against
  // the original circuit's probabilities.
  void ry(int w, const Param& t) {
    emit(Gate::SX, {w});
    emit(Gate::RZ, {w}, {Param(M_PI)});
    emit(Gate::RZ, {w}, {t});
    emit(Gate::SX, {w});
    emit(Gate::RZ, {w}, {Param(M_PI)});
  }
  void one(Gate g, int w, const std::vector<Param>& p) {
    if (g == Gate::Identity) return;
    if (in_basis(g)) return emit(g, {w}, p);
    switch (g) {
      case Gate::PhaseShift: return emit(Gate::RZ, {w}, p);  // equal up to a global phase
      case Gate::RY: return ry(w, p[0]);
      case Gate::RX:  // RX(t) = RZ(-pi/2) RY(t) RZ(pi/2)
        emit(Gate::RZ, {w}, {Param(M_PI / 2)});
        ry(w, p[0]);
        return emit(Gate::RZ, {w}, {Param(-M_PI / 2)});
      case Gate::Hadamard:  // H = RZ(pi/2) SX RZ(pi/2) up to a global phase
        emit(Gate::RZ, {w}, {Param(M_PI / 2)});
        emit(Gate::SX, {w});
        return emit(Gate::RZ, {w}, {Param(M_PI / 2)});
      case Gate::PauliX:
        emit(Gate::SX, {w});
        return emit(Gate::SX, {w});
      default:
        throw Error(std::string("lower_to_device: no translation of ") + std::string(gate_info(g).name) +
                                    " into the device's basis");
    }
  }
  void cnot(int c, int t) {
    if (in_basis(Gate::CNOT)) {
      if (all_to_all_ || directed_.count({c, t})) return emit(Gate::CNOT, {c, t});
      // Only the reverse direction is calibrated: Hadamards on both sides turn it round.
      one(Gate::Hadamard, c, {});
      one(Gate::Hadamard, t, {});
      emit(Gate::CNOT, {t, c});
      one(Gate::Hadamard, c, {});
      return one(Gate::Hadamard, t, {});
    }
    need(Gate::CZ);
    one(Gate::Hadamard, t, {});
    emit(Gate::CZ, directed_.count({t, c}) ? std::vector<int>{t, c} : std::vector<int>{c, t});
    one(Gate::Hadamard, t, {});
  }
  void swap_physical(int a, int b) {
    if (in_basis(Gate::SWAP)) return emit(Gate::SWAP, {a, b});
    cnot(a, b);
    cnot(b, a);
    cnot(a, b);
  }
  void two(Gate g, int a, int b, const std::vector<Param>& p) {
    if (in_basis(g) && (all_to_all_ || directed_.count({a, b}))) return emit(g, {a, b}, p);
    switch (g) {
      case Gate::CNOT: return cnot(a, b);
      case Gate::CZ:
        one(Gate::Hadamard, b, {});
        cnot(a, b);
        return one(Gate::Hadamard, b, {});
      case Gate::SWAP: return swap_physical(a, b);
      case Gate::ControlledPhaseShift:  // CP(l) = RZ(l/2)_a CX RZ(-l/2)_b CX RZ(l/2)_b, up to a global phase
        one(Gate::RZ, a, {scaled(p[0], 0.5)});
        cnot(a, b);
        one(Gate::RZ, b, {scaled(p[0], -0.5)});
        cnot(a, b);
        return one(Gate::RZ, b, {scaled(p[0], 0.5)});
      default:
        throw Error(std::string("lower_to_device: no translation of ") + std::string(gate_info(g).name) +
                                    " into the device's basis");
    }
  }

  std::set<Gate> basis_;
  int k_;
  bool all_to_all_ = false;
  std::vector<int> physical_;
  NoiseModel model_;
  std::set<std::pair<int, int>> directed_;
  std::vector<int> pos_;  // local wire of each logical qubit
  Circuit out_{1};
  int swaps_ = 0, n1_ = 0, n2_ = 0;
};

}  // namespace

LoweredCircuit lower_to_device(const Circuit& logical, const NoiseModel& model) {
  model.validate();
  if (!logical.readout().empty()) throw Error("lower_to_device: the circuit already has readout errors");
  if (logical.amplitude_embedding_spec()) throw Error("lower_to_device: amplitude embedding is not lowered");
  Lowerer l(model, logical.n_qubits());
  for (const Operation& op : logical.operations()) l.gate(op);
  LoweredCircuit r = l.finish(logical);
  if (logical.n_weights() > r.circuit.n_weights()) r.circuit.reserve_weights(logical.n_weights());
  if (logical.n_inputs() > r.circuit.n_inputs()) r.circuit.reserve_inputs(logical.n_inputs());
  return r;
}

}  // namespace qfleet
