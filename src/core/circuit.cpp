#include <algorithm>
#include <cmath>
#include <string>

#include "qfleet/circuit.hpp"
#include "qfleet/error.hpp"

namespace qfleet {

namespace {
constexpr int kMaxQubits = 62;  // basis indices are 64-bit; memory is checked at compile
constexpr long long kMaxIndex = 1LL << 24;  // inputs / weights per sample: keeps index arithmetic in int

// Checks that [first, first + count) is a valid range of input or weight indices.
void check_index_range(std::string_view what, long long first, long long count) {
  if (first < 0) throw Error(std::string(what) + ": index must be >= 0, got " + std::to_string(first));
  if (first + count > kMaxIndex) {
    throw Error(std::string(what) + ": indices up to " + std::to_string(first + count - 1) +
                " exceed the limit of " + std::to_string(kMaxIndex) + " inputs/weights");
  }
}

std::string wires_str(const std::vector<int>& w) {
  std::string s = "[";
  for (std::size_t i = 0; i < w.size(); ++i) s += (i ? ", " : "") + std::to_string(w[i]);
  return s + "]";
}

Gate rotation_gate(Rotation r) {
  switch (r) {
    case Rotation::X:
      return Gate::RX;
    case Rotation::Y:
      return Gate::RY;
    case Rotation::Z:
      return Gate::RZ;
  }
  throw Error("unknown rotation");
}
}  // namespace

Param Param::input(int i, double scale) {
  Param p;
  p.kind = Kind::Input;
  p.index = i;
  p.scale = scale;
  return p;
}

Param Param::weight(int j, double scale) {
  Param p = input(j, scale);
  p.kind = Kind::Weight;
  return p;
}

Circuit::Circuit(int n_qubits) : n_qubits_(n_qubits) {
  if (n_qubits < 1 || n_qubits > kMaxQubits) {
    throw Error("a circuit needs 1 to " + std::to_string(kMaxQubits) + " qubits, got " +
                std::to_string(n_qubits));
  }
}

void Circuit::check_wires(const std::vector<int>& wires, std::string_view what) const {
  for (std::size_t i = 0; i < wires.size(); ++i) {
    if (wires[i] < 0 || wires[i] >= n_qubits_) {
      throw Error(std::string(what) + ": wire " + std::to_string(wires[i]) + " out of range for " +
                  std::to_string(n_qubits_) + " qubits (wires are 0.." +
                  std::to_string(n_qubits_ - 1) + ")");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (wires[j] == wires[i]) {
        throw Error(std::string(what) + ": wire " + std::to_string(wires[i]) +
                    " repeated in " + wires_str(wires));
      }
    }
  }
}

void Circuit::note_param(const Param& p) {
  if (p.kind == Param::Kind::Input) n_inputs_ = std::max(n_inputs_, p.index + 1);
  if (p.kind == Param::Kind::Weight) n_weights_ = std::max(n_weights_, p.index + 1);
}

Circuit& Circuit::add(Gate gate, const std::vector<int>& wires, const std::vector<Param>& params) {
  const GateInfo& info = gate_info(gate);
  const std::string what(info.name);
  if (gate == Gate::QubitUnitary) {
    throw Error("QubitUnitary needs a matrix: use Circuit::qubit_unitary(wires, matrix)");
  }
  if (static_cast<int>(wires.size()) != info.wires) {
    throw Error(what + " acts on " + std::to_string(info.wires) + " wire(s), got " +
                std::to_string(wires.size()) + " " + wires_str(wires));
  }
  check_wires(wires, what);
  if (static_cast<int>(params.size()) != info.params) {
    throw Error(what + " takes " + std::to_string(info.params) + " parameter(s), got " +
                std::to_string(params.size()));
  }
  for (const Param& p : params) {
    if (p.kind == Param::Kind::Constant && !std::isfinite(p.value)) {
      throw Error(what + ": parameter must be finite, got " + std::to_string(p.value));
    }
    if (p.kind != Param::Kind::Constant) {
      check_index_range(what + (p.kind == Param::Kind::Input ? " input" : " weight"), p.index, 1);
      if (!std::isfinite(p.scale)) throw Error(what + ": parameter scale must be finite");
    }
  }
  for (const Param& p : params) note_param(p);
  ops_.push_back(Operation{gate, wires, params, {}, Channel::None, {}});
  return *this;
}

Circuit& Circuit::add(std::string_view gate, const std::vector<int>& wires,
                      const std::vector<Param>& params) {
  return add(gate_from_name(gate), wires, params);
}

Circuit& Circuit::qubit_unitary(const std::vector<int>& wires,
                                const std::vector<std::complex<double>>& matrix) {
  if (wires.size() != 1 && wires.size() != 2) {
    throw Error("QubitUnitary acts on 1 or 2 wires, got " + std::to_string(wires.size()));
  }
  check_wires(wires, "QubitUnitary");
  const std::size_t d = std::size_t{1} << wires.size();
  if (matrix.size() != d * d) {
    throw Error("QubitUnitary on " + std::to_string(wires.size()) + " wire(s) needs a " +
                std::to_string(d) + "x" + std::to_string(d) + " matrix (" + std::to_string(d * d) +
                " entries), got " + std::to_string(matrix.size()));
  }
  for (const auto& z : matrix) {
    if (!std::isfinite(z.real()) || !std::isfinite(z.imag())) {
      throw Error("QubitUnitary matrix has a non-finite entry");
    }
  }
  double worst = 0;  // max |(U^dag U - I)_{rc}|
  for (std::size_t r = 0; r < d; ++r) {
    for (std::size_t c = 0; c < d; ++c) {
      std::complex<double> s = 0;
      for (std::size_t k = 0; k < d; ++k) s += std::conj(matrix[k * d + r]) * matrix[k * d + c];
      worst = std::max(worst, std::abs(s - (r == c ? 1.0 : 0.0)));
    }
  }
  if (worst > 1e-8) {
    throw Error("QubitUnitary matrix is not unitary (max |U^dag U - I| = " + std::to_string(worst) +
                ")");
  }
  ops_.push_back(Operation{Gate::QubitUnitary, wires, {}, matrix, Channel::None, {}});
  return *this;
}

Circuit& Circuit::angle_embedding(const std::vector<int>& wires, Rotation rotation,
                                  int first_input) {
  check_wires(wires, "AngleEmbedding");
  check_index_range("AngleEmbedding first_input", first_input, static_cast<long long>(wires.size()));
  const Gate g = rotation_gate(rotation);
  for (std::size_t i = 0; i < wires.size(); ++i) {
    add(g, {wires[i]}, {Param::input(first_input + static_cast<int>(i))});
  }
  return *this;
}

Circuit& Circuit::amplitude_embedding(const std::vector<int>& wires, int n_features,
                                      int first_input, bool normalize,
                                      std::optional<double> pad_with) {
  check_wires(wires, "AmplitudeEmbedding");
  if (wires.empty()) throw Error("AmplitudeEmbedding needs at least one wire");
  if (!ops_.empty() || amp_) {
    throw Error("AmplitudeEmbedding prepares the state, so it must be the first operation");
  }
  if (wires.size() > 30) throw Error("AmplitudeEmbedding supports at most 30 wires");
  const long long cap = 1LL << wires.size();
  if (n_features < 1 || n_features > cap) {
    throw Error("AmplitudeEmbedding on " + std::to_string(wires.size()) + " wire(s) takes 1.." +
                std::to_string(cap) + " features, got " + std::to_string(n_features));
  }
  if (n_features < cap && !pad_with) {
    throw Error("AmplitudeEmbedding: " + std::to_string(n_features) + " features for " +
                std::to_string(cap) + " amplitudes; pass pad_with to pad");
  }
  if (pad_with && !std::isfinite(*pad_with)) throw Error("AmplitudeEmbedding: pad_with must be finite");
  check_index_range("AmplitudeEmbedding first_input", first_input, n_features);
  AmplitudeEmbeddingSpec s;
  s.wires = wires;
  s.first_input = first_input;
  s.n_features = n_features;
  s.normalize = normalize;
  s.has_pad = pad_with.has_value();
  s.pad_with = pad_with.value_or(0.0);
  amp_ = s;
  n_inputs_ = std::max(n_inputs_, first_input + n_features);
  return *this;
}

Circuit& Circuit::basic_entangler_layers(const std::vector<int>& wires, int layers,
                                         Rotation rotation, int first_weight) {
  check_wires(wires, "BasicEntanglerLayers");
  if (layers < 0) throw Error("BasicEntanglerLayers: layers must be >= 0");
  const int n = static_cast<int>(wires.size());
  check_index_range("BasicEntanglerLayers first_weight", first_weight, static_cast<long long>(layers) * n);
  const Gate g = rotation_gate(rotation);
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < n; ++i) add(g, {wires[i]}, {Param::weight(first_weight + l * n + i)});
    if (n == 2) {
      add(Gate::CNOT, {wires[0], wires[1]});
    } else if (n > 2) {
      for (int i = 0; i < n; ++i) add(Gate::CNOT, {wires[i], wires[(i + 1) % n]});
    }
  }
  return *this;
}

Circuit& Circuit::strongly_entangling_layers(const std::vector<int>& wires, int layers,
                                             int first_weight, std::vector<int> ranges,
                                             Gate imprimitive) {
  check_wires(wires, "StronglyEntanglingLayers");
  if (layers < 0) throw Error("StronglyEntanglingLayers: layers must be >= 0");
  const int n = static_cast<int>(wires.size());
  check_index_range("StronglyEntanglingLayers first_weight", first_weight, 3LL * layers * n);
  const GateInfo& imp = gate_info(imprimitive);
  if (imp.wires != 2 || imp.params != 0) {
    throw Error("StronglyEntanglingLayers: imprimitive must be a 2-wire gate without parameters, got " +
                std::string(imp.name));
  }
  if (ranges.empty()) {
    for (int l = 0; l < layers; ++l) ranges.push_back(n > 1 ? (l % (n - 1)) + 1 : 0);
  }
  if (static_cast<int>(ranges.size()) != layers) {
    throw Error("StronglyEntanglingLayers: ranges needs one entry per layer (" +
                std::to_string(layers) + "), got " + std::to_string(ranges.size()));
  }
  for (int r : ranges) {
    if (n > 1 && (r <= 0 || r >= n)) {
      throw Error("StronglyEntanglingLayers: each range must be in 1.." + std::to_string(n - 1) +
                  ", got " + std::to_string(r));
    }
  }
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < n; ++i) {
      const int w0 = first_weight + (l * n + i) * 3;
      add(Gate::Rot, {wires[i]}, {Param::weight(w0), Param::weight(w0 + 1), Param::weight(w0 + 2)});
    }
    if (n > 1) {
      for (int i = 0; i < n; ++i) add(imprimitive, {wires[i], wires[(i + ranges[l]) % n]});
    }
  }
  return *this;
}

Circuit& Circuit::expval(const Observable& obs) {
  if (obs.terms.empty()) throw Error("an observable needs at least one term");
  for (const auto& [c, w] : obs.terms) {
    if (!std::isfinite(c)) throw Error("observable coefficient must be finite");
    if (w.max_wire() >= n_qubits_) {
      throw Error("observable '" + w.str() + "' names wire " + std::to_string(w.max_wire()) +
                  " but the circuit has " + std::to_string(n_qubits_) + " qubits");
    }
  }
  measurements_.push_back(Measurement{Measurement::Kind::Expval, obs, {}});
  return *this;
}

Circuit& Circuit::expval(std::string_view pauli_word) { return expval(Observable::word(pauli_word)); }

Circuit& Circuit::probs(const std::vector<int>& wires) {
  check_wires(wires, "probs");
  if (wires.empty()) throw Error("probs needs at least one wire");
  if (wires.size() > 30) throw Error("probs supports at most 30 wires (2^30 outcomes)");
  measurements_.push_back(Measurement{Measurement::Kind::Probs, {}, wires});
  return *this;
}

int Circuit::n_outputs() const {
  long long k = 0;
  for (const auto& m : measurements_) {
    k += m.kind == Measurement::Kind::Probs ? (1LL << m.wires.size()) : 1;
  }
  return static_cast<int>(std::min<long long>(k, 1LL << 30));
}

Circuit& Circuit::reserve_inputs(int n) {
  if (n < 0) throw Error("reserve_inputs: n must be >= 0");
  check_index_range("reserve_inputs", 0, n);
  n_inputs_ = std::max(n_inputs_, n);
  return *this;
}

Circuit& Circuit::reserve_weights(int n) {
  if (n < 0) throw Error("reserve_weights: n must be >= 0");
  check_index_range("reserve_weights", 0, n);
  n_weights_ = std::max(n_weights_, n);
  return *this;
}

}  // namespace qfleet
