// Circuit models: gates from the catalogue, PennyLane-compatible templates,
// per-sample inputs, trainable weights and measurements. A Circuit is plain data;
// qfleet::compile turns it into a Program that runs whole batches.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/channels.hpp"
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
  // A noise channel instead of a gate (then `gate` is unused): see channels.hpp.
  Channel channel = Channel::None;
  std::vector<std::vector<std::complex<double>>> kraus;  // Channel::Kraus: row-major 2^k x 2^k each
  bool is_channel() const { return channel != Channel::None; }
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
  // Purity: Tr(rho^2) of the whole register (density-matrix circuits).
  enum class Kind : std::uint8_t { Expval, Probs, Purity };
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

  // --- noise. A circuit with a channel, a readout error or a purity output is
  // simulated as density matrices (docs/noisy.md); gates and templates act on them
  // as rho -> U rho U^dag. Channel parameters are Params like gate parameters
  // (constants, inputs or weights); constants are range-checked here, inputs and
  // weights at each call. Every call throws qfleet::Error and leaves the circuit
  // unchanged on bad arguments.
  Circuit& channel(Channel channel, const std::vector<int>& wires, const std::vector<Param>& params = {});
  Circuit& channel(std::string_view name, const std::vector<int>& wires, const std::vector<Param>& params = {});
  // A general channel rho -> sum_k K_k rho K_k^dag on 1 or 2 wires (row-major
  // 2^k x 2^k operators), checked trace preserving: max |sum K^dag K - I| <= kKrausTolerance.
  Circuit& kraus(const std::vector<int>& wires, const std::vector<std::vector<std::complex<double>>>& operators);
  // Readout (assignment) error of one wire: the bit read is flipped 0 -> 1 with
  // probability p1_given_0 and 1 -> 0 with p0_given_1. It applies to every measured
  // output (expectation values, probabilities, samples), not to density_matrices().
  Circuit& readout_error(int wire, double p1_given_0, double p0_given_1);
  // The same as a column-stochastic matrix A[i][j] = P(read i | true j), row-major
  // {A00, A01, A10, A11}; a clear error when a column does not sum to 1 (to 1e-9) or
  // an entry is outside [0, 1].
  Circuit& readout_matrix(int wire, const std::array<double, 4>& matrix);

  // --- measurements, in output order within each kind: expectation values first,
  // then probabilities, then purities.
  Circuit& expval(const Observable& obs);
  Circuit& expval(std::string_view pauli_word);
  Circuit& probs(const std::vector<int>& wires);
  Circuit& purity();  // Tr(rho^2) of the register (makes the circuit a density-matrix one)

  int n_qubits() const { return n_qubits_; }
  int n_inputs() const { return n_inputs_; }    // 1 + largest input index used
  int n_weights() const { return n_weights_; }  // 1 + largest weight index used
  int n_outputs() const;                        // expvals + sum of 2^k over probs + purities
  const std::vector<Operation>& operations() const { return ops_; }
  const std::vector<Measurement>& measurements() const { return measurements_; }
  const std::optional<AmplitudeEmbeddingSpec>& amplitude_embedding_spec() const { return amp_; }
  // Readout matrices per wire (row-major, see readout_matrix); empty when none was set.
  const std::vector<std::array<double, 4>>& readout() const { return readout_; }
  // Whether compile() simulates density matrices: a channel, a readout error or a purity.
  bool is_noisy() const;

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
  std::vector<std::array<double, 4>> readout_;
};

}  // namespace qfleet
