// Runs a device-independent circuit on a device noise model (noise_model.hpp): picks
// connected physical qubits, routes two-qubit gates over the coupling map with SWAPs,
// and rewrites every gate into the device's basis (IBM's {rz, sx, x, cx} for the fake
// backends), so that apply_noise_model can attach the calibrated channels. What a
// transpiler does, kept simple and deterministic (no layout or gate-count
// optimisation: two devices compared under the same mapping see the same circuit).
// JSON: "lower_to_device": true beside "noise_model" (docs/noisy.md); Python:
// Circuit.noise_model(model, lower_to_device=True).
#pragma once

#include <string>
#include <vector>

#include "qfleet/circuit.hpp"
#include "qfleet/noise_model.hpp"

namespace qfleet {

struct LoweredCircuit {
  Circuit circuit{1};      // on model.n_qubits wires, in the basis; its probs are in logical order
  NoiseModel model;        // the device restricted to the chosen qubits, renumbered 0..k-1
  std::vector<int> physical;  // device qubit of each wire of `circuit`
  int swaps = 0;              // SWAPs the routing inserted
  int two_qubit_gates = 0;    // in the basis, after lowering
  int one_qubit_gates = 0;    // in the basis (virtual RZ included)
};

// The logical circuit (gates Identity, Hadamard, PauliX, RX, RY, RZ, PhaseShift, CNOT,
// CZ, ControlledPhaseShift, SWAP; parameters may be constants, inputs or weights;
// measurements: probabilities) on the device. Physical qubits: the first k reached by a
// breadth-first search of the coupling graph from the lowest-numbered qubit that
// reaches k. qfleet::Error naming the gate / the shortfall when the circuit
// has more qubits than the device (or than a connected part of it), a gate the basis
// cannot express, channels or readout errors already, or a measurement other than probs.
LoweredCircuit lower_to_device(const Circuit& logical, const NoiseModel& model);

// The model on the given device qubits only, renumbered in that order (gates and
// coupling edges that leave the set are dropped).
NoiseModel restrict_model(const NoiseModel& model, const std::vector<int>& qubits);

}  // namespace qfleet
