// Circuit models: gates from the catalogue, PennyLane-compatible templates,
// per-sample inputs, trainable weights and measurements. A Circuit is plain data;
// qfleet::compile turns it into a Program that runs whole batches.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/gates.hpp"
#include "qfleet/observable.hpp"

namespace qfleet {

// Where a gate parameter comes from. The value used by the gate is
//   Constant: value
//   Input:    scale * X[b, index]          (per-sample input matrix X[B, n_inputs])
//   Weight:   scale * W[index] or W[b, index]  (shared or per-sample weights)
struct Param {
  enum class Kind : std::uint8_t { Constant, Input, Weight };
  Kind kind = Kind::Constant;
  int index = 0;
  double value = 0.0;  // Constant only
  double scale = 1.0;  // Input / Weight only

  Param() = default;
  Param(double v) : value(v) {}  // NOLINT(google-explicit-constructor): numbers read as constants
  static Param constant(double v) { return Param(v); }
  static Param input(int i, double scale = 1.0);
  static Param weight(int j, double scale = 1.0);
};

enum class Rotation : std::uint8_t { X, Y, Z };

struct Operation {
  Gate gate;
  std::vector<int> wires;
  std::vector<Param> params;
  std::vector<std::complex<double>> matrix;  // QubitUnitary only, row-major 2^k x 2^k
};

// Per-sample state preparation from inputs (PennyLane's AmplitudeEmbedding); only
// allowed as the first thing in a circuit.
struct AmplitudeEmbeddingSpec {
  std::vector<int> wires;
  int first_input = 0;
  int n_features = 0;
  bool normalize = false;
  bool has_pad = false;
  double pad_with = 0.0;
};

struct Measurement {
  enum class Kind : std::uint8_t { Expval, Probs };
  Kind kind;
  Observable observable;   // Expval
  std::vector<int> wires;  // Probs; first wire = most significant bit of the outcome index
};

class Circuit {
 public:
  explicit Circuit(int n_qubits);

  // --- gates. Every call validates its arguments and throws qfleet::Error
  // (leaving the circuit unchanged) on: unknown gate, wrong wire count, wire out
  // of range, repeated wire, wrong parameter count, non-finite constant,
  // negative input/weight index.
  Circuit& add(Gate gate, const std::vector<int>& wires, const std::vector<Param>& params = {});
  Circuit& add(std::string_view gate, const std::vector<int>& wires,
               const std::vector<Param>& params = {});
  // A fixed unitary on 1 or 2 wires (row-major 2^k x 2^k, checked unitary to 1e-8).
  Circuit& qubit_unitary(const std::vector<int>& wires,
                         const std::vector<std::complex<double>>& matrix);

  // --- templates (PennyLane semantics; each expands into catalogue gates).
  // AngleEmbedding: rotation(X[b, first_input + i]) on wires[i].
  Circuit& angle_embedding(const std::vector<int>& wires, Rotation rotation = Rotation::X,
                           int first_input = 0);
  // AmplitudeEmbedding: features X[b, first_input .. first_input+n_features) padded
  // with pad_with to 2^len(wires) and normalised if asked. Must come first.
  Circuit& amplitude_embedding(const std::vector<int>& wires, int n_features, int first_input = 0,
                               bool normalize = false, std::optional<double> pad_with = {});
  // BasicEntanglerLayers: weights W[first_weight + l * n + i] (shape [layers, n]).
  Circuit& basic_entangler_layers(const std::vector<int>& wires, int layers,
                                  Rotation rotation = Rotation::X, int first_weight = 0);
  // StronglyEntanglingLayers: weights shaped [layers, n, 3] row-major from
  // first_weight; ranges default to PennyLane's (l % (n-1)) + 1; imprimitive
  // defaults to CNOT (any 2-wire parameterless gate is accepted).
  Circuit& strongly_entangling_layers(const std::vector<int>& wires, int layers,
                                      int first_weight = 0, std::vector<int> ranges = {},
                                      Gate imprimitive = Gate::CNOT);

  // --- measurements, in output order.
  Circuit& expval(const Observable& obs);
  Circuit& expval(std::string_view pauli_word);
  Circuit& probs(const std::vector<int>& wires);

  int n_qubits() const { return n_qubits_; }
  int n_inputs() const { return n_inputs_; }    // 1 + largest input index used
  int n_weights() const { return n_weights_; }  // 1 + largest weight index used
  int n_outputs() const;                        // expvals + sum of 2^k over probs
  const std::vector<Operation>& operations() const { return ops_; }
  const std::vector<Measurement>& measurements() const { return measurements_; }
  const std::optional<AmplitudeEmbeddingSpec>& amplitude_embedding_spec() const { return amp_; }

  // Lets a user declare more inputs/weights than the gates read (unused columns).
  Circuit& reserve_inputs(int n);
  Circuit& reserve_weights(int n);

 private:
  void check_wires(const std::vector<int>& wires, std::string_view what) const;
  void note_param(const Param& p);

  int n_qubits_;
  int n_inputs_ = 0;
  int n_weights_ = 0;
  std::vector<Operation> ops_;
  std::vector<Measurement> measurements_;
  std::optional<AmplitudeEmbeddingSpec> amp_;
};

}  // namespace qfleet
