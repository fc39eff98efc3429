// Device noise models: per-qubit T1, T2, frequency and readout errors, per-gate
// error rates and durations, basis gates and coupling map (the calibration data a
// device publishes), and the rule that turns them into channels after each gate -
// Qiskit Aer's basic device model (qiskit_aer.noise.device.basic_device_gate_errors),
// rule by rule in docs/noisy.md:
//   1. after a gate with calibration data on its wires: a depolarizing channel on
//      those wires whose parameter makes the gate's average gate infidelity (with the
//      relaxation below) equal its reported error, then
//   2. thermal relaxation on each of its wires for the gate's duration (T2 truncated
//      to 2 T1; excited population from the qubit frequency and the temperature);
//   3. readout (assignment) errors on every measured wire.
// JSON: docs/noisy.md; python -m qfleet.noise converts qiskit-ibm-runtime's fake
// backends' calibration snapshots.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qfleet/circuit.hpp"
#include "qfleet/program.hpp"

namespace qfleet {

struct NoiseModel {
  std::string name;
  int n_qubits = 0;
  std::vector<Gate> basis_gates;                // empty: any gate
  std::vector<std::pair<int, int>> coupling_map;  // directed edges; empty: all-to-all
  double temperature_mk = 0;                    // qubit temperature in mK (Aer's default 0)
  struct Qubit {
    std::optional<double> t1, t2;     // ns
    std::optional<double> frequency;  // Hz
    double p1_given_0 = 0, p0_given_1 = 0;  // readout: prob_meas1_prep0, prob_meas0_prep1
  };
  std::vector<Qubit> qubits;
  struct GateNoise {
    Gate gate = Gate::Identity;
    std::vector<int> wires;
    double error = 0;     // 1 - average gate fidelity
    double duration = 0;  // ns
  };
  std::vector<GateNoise> gates;
  // Aer's from_backend switches.
  bool gate_error = true, thermal_relaxation = true, readout_error = true;

  // Checks ranges and consistency; throws qfleet::Error naming the offending entry.
  void validate() const;
};

// The circuit with the model's channels inserted and its readout errors set.
// Throws qfleet::Error (naming the operation) when the circuit has more qubits than
// the device, a gate outside the basis, a two-qubit gate on an uncoupled pair, or
// already carries channels or readout errors.
Circuit apply_noise_model(const Circuit& circuit, const NoiseModel& model);

// compile(apply_noise_model(circuit, model), options): a density-matrix program.
Program compile(const Circuit& circuit, const NoiseModel& model, const CompileOptions& options = {});

// The excited-state population of a qubit of frequency f (Hz) at temperature T (mK):
// 1 / (1 + exp(h f / (k_B T))) (Aer's _excited_population); 0 at T = 0.
double excited_population(double frequency_hz, double temperature_mk);

}  // namespace qfleet
