// The tests' independent dense reference, read from a "kind": "circuit" problem's
// JSON (docs/cli.md): a thin reader that builds the reference's own Circuit
// (statevector.hpp) from the problem, so the CLI contract tests check qfleet's JSON
// path against the same state-vector reference as the unit tests. It shares no code
// with qfleet's JSON reader or kernels: only nlohmann::json to read the problem, and
// qfleet::Param as the plain description of a parameter's source.
#pragma once

#include <cctype>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "statevector.hpp"

namespace ref::circuit_json {

using nlohmann::json;

struct Sample {
  std::vector<double> x;  // inputs row
  std::vector<double> w;  // weights (this sample's)
};

// qfleet's documented short aliases, then the catalogue's own names.
inline std::string gate_name(const std::string& name) {
  if (name == "H") return "Hadamard";
  if (name == "CX") return "CNOT";
  if (name == "X" || name == "Y" || name == "Z") return "Pauli" + name;
  if (name == "I") return "Identity";
  return name;
}

// A number is a constant; {"input": i} / {"weight": j} with an optional "scale".
inline qfleet::Param param(const json& p) {
  if (p.is_number()) return qfleet::Param(p.get<double>());
  const double scale = p.value("scale", 1.0);
  if (p.contains("input")) return qfleet::Param::input(p["input"].get<int>(), scale);
  return qfleet::Param::weight(p["weight"].get<int>(), scale);
}

// A template's "rotation": "X" or "RX" (and Y, Z); the default is X.
inline char rotation(const json& op) {
  const std::string r = op.value("rotation", std::string("X"));
  return r.back();
}

// [[c, "X0 Z1"], ...] -> weighted Pauli words (a letter without a wire is the identity).
inline std::vector<std::pair<double, Word>> observable(const json& obs) {
  std::vector<std::pair<double, Word>> terms;
  for (const json& term : obs) {
    const std::string text = term[1].get<std::string>();
    Word w;
    for (std::size_t i = 0; i < text.size();) {
      if (text[i] == ' ') {
        ++i;
        continue;
      }
      const char letter = text[i++];
      std::size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j > i) w.f.emplace_back(letter, std::stoi(text.substr(i, j - i)));
      i = j;
    }
    terms.emplace_back(term[0].get<double>(), w);
  }
  return terms;
}

inline void add_op(Circuit& c, const json& op) {
  const std::vector<int> wires = op["wires"].get<std::vector<int>>();
  if (op.contains("gate")) {
    const std::string g = gate_name(op["gate"].get<std::string>());
    if (g == "QubitUnitary") {
      const auto d = static_cast<Index>(op["matrix"].size());
      Mat u(d, d);
      for (Index r = 0; r < d; ++r)
        for (Index col = 0; col < d; ++col) {
          const json& z = op["matrix"][static_cast<std::size_t>(r)][static_cast<std::size_t>(col)];
          u(r, col) = cd(z[0].get<double>(), z[1].get<double>());
        }
      c.ops.push_back(Op{g, wires, {}, u});
      return;
    }
    std::vector<qfleet::Param> p;
    for (const json& q : op.value("params", json::array())) p.push_back(param(q));
    c.add(g, wires, p);
    return;
  }
  const std::string t = op["template"].get<std::string>();
  if (t == "AngleEmbedding") {
    angle_embedding(c, wires, rotation(op), op.value("first_input", 0));
  } else if (t == "AmplitudeEmbedding") {
    if (!c.ops.empty() || c.amp) throw std::runtime_error("reference: AmplitudeEmbedding must come first");
    const int cap = 1 << wires.size();
    c.amp = AmpEmb{wires, op.value("first_input", 0), op.value("n_features", cap), op.value("normalize", false),
                   op.value("pad_with", 0.0)};
  } else if (t == "BasicEntanglerLayers") {
    basic_entangler(c, wires, op["layers"].get<int>(), rotation(op), op.value("first_weight", 0));
  } else if (t == "StronglyEntanglingLayers") {
    strongly_entangling(c, wires, op["layers"].get<int>(), op.value("first_weight", 0),
                        op.value("ranges", std::vector<int>{}), gate_name(op.value("imprimitive", std::string("CNOT"))));
  } else {
    throw std::runtime_error("reference: template not modelled: " + t);
  }
}

// The problem's circuit: its ops, then its observables and probs (one list or a list of lists).
inline Circuit circuit(const json& problem) {
  Circuit c;
  c.n = problem["qubits"].get<int>();
  for (const json& op : problem.value("ops", json::array())) add_op(c, op);
  for (const json& obs : problem.value("observables", json::array())) c.meas.push_back(Meas{false, observable(obs), {}});
  if (problem.contains("probs")) {
    const json& pr = problem["probs"];
    if (pr[0].is_array()) {
      for (const json& l : pr) c.meas.push_back(Meas{true, {}, l.get<std::vector<int>>()});
    } else {
      c.meas.push_back(Meas{true, {}, pr.get<std::vector<int>>()});
    }
  }
  return c;
}

// The samples of a problem: inputs rows, shared or per-sample weights.
inline std::vector<Sample> samples(const json& problem) {
  std::vector<Sample> out;
  const json inputs = problem.value("inputs", json::array());
  const json weights = problem.value("weights", json::array());
  const bool per_sample = !weights.empty() && weights[0].is_array();
  std::size_t batch = 1;
  if (!inputs.empty()) {
    batch = inputs.size();
  } else if (per_sample) {
    batch = weights.size();
  }
  for (std::size_t b = 0; b < batch; ++b) {
    Sample s;
    if (!inputs.empty()) s.x = inputs[b].get<std::vector<double>>();
    s.w = per_sample ? weights[b].get<std::vector<double>>() : weights.get<std::vector<double>>();
    out.push_back(s);
  }
  return out;
}

inline Vec final_state(const json& problem, const Sample& s) { return state(circuit(problem), s.x.data(), s.w.data()); }

// All outputs of one sample in the contract's order: each observable, then each
// probs measurement's entries.
inline std::vector<double> outputs(const json& problem, const Sample& s) {
  return ref::outputs(circuit(problem), s.x.data(), s.w.data());
}

// d outputs / d x_i and d outputs / d w_j of one sample: jac_x[k][i], jac_w[k][j].
inline void jacobians(const json& problem, const Sample& s, std::vector<std::vector<double>>& jac_x,
                      std::vector<std::vector<double>>& jac_w) {
  jacobian(circuit(problem), s.x, s.w, jac_x, jac_w);
}

}  // namespace ref::circuit_json
