// The circuits of qfleet-qgan: the generator ansatz and the tournament's benchmark
// circuits (GHZ, QFT, random layered). Each measures the probabilities of all its wires
// (wire 0 the most significant bit of the outcome).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qfleet/circuit.hpp"

namespace qfleet::qgan {

// The generator: Hadamard on every wire (the uniform distribution Zoufal et al. start
// from), then `reps` times [RY(w[r n + i]) on each wire i, CNOT(i, i+1) for i < n-1],
// then a last RY layer w[reps n + i]: (reps + 1) n weights, real amplitudes. (A CZ
// chain in place of the CNOTs cannot reach the 3-qubit log-normal: its best relative
// entropy is 7e-3 at reps = 2 against 1e-11 with CNOTs, by direct minimisation.)
struct GeneratorOptions {
  int qubits = 3;
  int reps = 2;
};
Circuit generator_circuit(const GeneratorOptions& o);
inline int generator_weights(const GeneratorOptions& o) { return (o.reps + 1) * o.qubits; }

// GHZ: H on wire 0, CNOT(i, i+1) down the chain; ideal outcomes 0...0 and 1...1.
Circuit ghz_circuit(int n);
// The QFT benchmark: the Fourier state of `value` (H and a phase 2 pi value / 2^(j+1) on
// wire j), then the inverse quantum Fourier transform (with its swaps): ideally the
// outcome `value` with certainty.
Circuit qft_circuit(int n, uint64_t value);
// Random layered: `layers` times [a random RX, RY or RZ with an angle uniform in
// [0, 2 pi) on every wire, CNOTs on (i, i+1) for i of the layer's parity]; from `seed`.
Circuit random_layered_circuit(int n, int layers, uint64_t seed);

// The weights of a generator bound as constants (the trained generator as a fixed
// circuit for the tournament).
Circuit bind_weights(const Circuit& c, const std::vector<double>& weights);

}  // namespace qfleet::qgan
