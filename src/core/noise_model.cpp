// Device noise models to channels: Qiskit Aer's basic device model, rule by rule
// (include/qfleet/noise_model.hpp, docs/noisy.md).
#include "qfleet/noise_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "qfleet/error.hpp"

namespace qfleet {

namespace {

std::string wires_text(const std::vector<int>& w) {
  std::string s = "[";
  for (std::size_t i = 0; i < w.size(); ++i) s += (i ? ", " : "") + std::to_string(w[i]);
  return s + "]";
}

// A qubit's relaxation parameters for a gate of duration tg (ns): (pe, t1, t2, tg)
// with Aer's rules: unknown T1 -> infinite (a huge finite value keeps the channel's
// formulas finite), T2 truncated to 2 T1, unknown T2 -> 2 T1.
std::array<double, 4> relaxation_params(const NoiseModel& m, int q, double tg) {
  const NoiseModel::Qubit& qb = m.qubits[std::size_t(q)];
  const double t1 = qb.t1.value_or(1e300);
  const double t2 = std::min(qb.t2.value_or(2 * t1), 2 * t1);
  const double pe = qb.frequency ? excited_population(*qb.frequency, m.temperature_mk) : 0.0;
  return {pe, t1, t2, tg};
}

// Tr of the single-qubit thermal relaxation superoperator (channel_matrix.hpp's
// population/coherence form): p00 + p11 + 2 coherence.
double relaxation_trace(const std::array<double, 4>& p) {
  const double reset = 1 - std::exp(-p[3] / p[1]), e2 = std::exp(-p[3] / p[2]);
  return (1 - p[0] * reset) + (1 - (1 - p[0]) * reset) + 2 * e2;
}

}  // namespace

double excited_population(double frequency_hz, double temperature_mk) {
  if (temperature_mk == 0 || !std::isfinite(frequency_hz)) return 0;
  // h f / (k_B T) with h / k_B = 47.99243 mK / GHz (Aer's constant).
  const double pop = 1 / (1 + std::exp(47.99243e-9 * frequency_hz / std::abs(temperature_mk)));
  return temperature_mk < 0 ? 1 - pop : pop;
}

void NoiseModel::validate() const {
  const std::string who = name.empty() ? std::string("noise model") : "noise model '" + name + "'";
  if (n_qubits < 1) throw Error(who + ": qubits must be >= 1");
  if (qubits.size() != std::size_t(n_qubits)) {
    throw Error(who + ": has " + std::to_string(qubits.size()) + " qubit entries for " + std::to_string(n_qubits) +
                " qubits");
  }
  for (std::size_t q = 0; q < qubits.size(); ++q) {
    const Qubit& b = qubits[q];
    const std::string at = who + ", qubit " + std::to_string(q) + ": ";
    if (b.t1 && !(*b.t1 > 0)) throw Error(at + "t1 must be > 0 ns");
    if (b.t2 && !(*b.t2 > 0)) throw Error(at + "t2 must be > 0 ns");
    if (b.frequency && !(*b.frequency > 0)) throw Error(at + "frequency must be > 0 Hz");
    if (!(b.p1_given_0 >= 0 && b.p1_given_0 <= 1) || !(b.p0_given_1 >= 0 && b.p0_given_1 <= 1)) {
      throw Error(at + "readout error probabilities must be in [0, 1]");
    }
  }
  for (const auto& [a, b] : coupling_map) {
    if (a < 0 || b < 0 || a >= n_qubits || b >= n_qubits || a == b) {
      throw Error(who + ": coupling map edge [" + std::to_string(a) + ", " + std::to_string(b) + "] is not a pair of "
                  "distinct qubits in 0.." + std::to_string(n_qubits - 1));
    }
  }
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const GateNoise& g = gates[i];
    const std::string at = who + ", gates[" + std::to_string(i) + "] (" + std::string(gate_info(g.gate).name) + "): ";
    const int want = gate_info(g.gate).wires;
    if (want != 0 && int(g.wires.size()) != want) {
      throw Error(at + "acts on " + std::to_string(want) + " wire(s), got " + wires_text(g.wires));
    }
    for (int w : g.wires) {
      if (w < 0 || w >= n_qubits) throw Error(at + "wire " + std::to_string(w) + " out of range");
    }
    if (!(g.error >= 0 && g.error <= 1)) throw Error(at + "error must be in [0, 1]");
    if (!(g.duration >= 0) || !std::isfinite(g.duration)) throw Error(at + "duration must be finite and >= 0 ns");
  }
  if (!std::isfinite(temperature_mk)) throw Error(who + ": temperature must be finite");
}

Circuit apply_noise_model(const Circuit& circuit, const NoiseModel& m) {
  m.validate();
  const std::string who = m.name.empty() ? std::string("the noise model") : "device '" + m.name + "'";
  const int n = circuit.n_qubits();
  if (n > m.n_qubits) {
    throw Error("the circuit has " + std::to_string(n) + " qubits but " + who + " has " + std::to_string(m.n_qubits));
  }
  if (!circuit.readout().empty()) throw Error("the circuit already has readout errors; the noise model sets them");
  if (circuit.amplitude_embedding_spec()) throw Error("noise models do not take AmplitudeEmbedding circuits yet");
  Circuit out(n);
  out.reserve_inputs(circuit.n_inputs());
  out.reserve_weights(circuit.n_weights());
  const auto& ops = circuit.operations();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    const std::string at = "operation " + std::to_string(i) + " (" + std::string(gate_info(op.gate).name) + " on " +
                           wires_text(op.wires) + ")";
    if (op.is_channel()) throw Error(at + " is a channel: the noise model adds the channels");
    if (!m.basis_gates.empty() && std::find(m.basis_gates.begin(), m.basis_gates.end(), op.gate) == m.basis_gates.end()) {
      std::string basis;
      for (Gate g : m.basis_gates) basis += (basis.empty() ? "" : ", ") + std::string(gate_info(g).name);
      throw Error(at + ": not a basis gate of " + who + " (" + basis + "); write the circuit in those gates");
    }
    if (op.wires.size() == 2 && !m.coupling_map.empty()) {
      const std::pair<int, int> e{op.wires[0], op.wires[1]};
      if (std::find(m.coupling_map.begin(), m.coupling_map.end(), e) == m.coupling_map.end()) {
        throw Error(at + ": qubits " + wires_text(op.wires) + " are not coupled on " + who);
      }
    }
    if (op.gate == Gate::QubitUnitary) {
      out.qubit_unitary(op.wires, op.matrix);
    } else {
      out.add(op.gate, op.wires, op.params);
    }
    const auto g = std::find_if(m.gates.begin(), m.gates.end(), [&](const NoiseModel::GateNoise& x) {
      return x.gate == op.gate && x.wires == op.wires;
    });
    if (g == m.gates.end()) continue;  // no calibration data: noiseless (as Aer)
    const int k = static_cast<int>(op.wires.size());
    const bool relax = m.thermal_relaxation && g->duration > 0;
    // Rule 1: depolarizing so that the average gate infidelity (with the relaxation)
    // is the reported error: lam = d (e - r) / (d F_r - 1) (Aer's formula).
    double relax_fid = 1;
    if (relax) {
      double process = 1;  // process fidelity of the product of the wires' relaxations
      for (int w : op.wires) process *= relaxation_trace(relaxation_params(m, w, g->duration)) / 4;
      const double d = std::ldexp(1.0, k);
      relax_fid = (d * process + 1) / (d + 1);
    }
    if (m.gate_error && k <= 2 && g->error > 1 - relax_fid) {
      const double d = std::ldexp(1.0, k), d2 = d * d;
      const double e = std::min(g->error, d / (d + 1));
      const double lam = std::min(d * (e - (1 - relax_fid)) / (d * relax_fid - 1), d2 / (d2 - 1));
      const double p = lam * (d2 - 1) / d2;  // qfleet's p: probability of a non-identity Pauli
      out.channel(k == 1 ? Channel::Depolarizing : Channel::TwoQubitDepolarizing, op.wires, {std::min(p, 1.0)});
    }
    // Rule 2: thermal relaxation on each wire for the gate's duration.
    if (relax) {
      for (int w : op.wires) {
        const auto p = relaxation_params(m, w, g->duration);
        out.channel(Channel::ThermalRelaxation, {w}, {p[0], p[1], p[2], p[3]});
      }
    }
  }
  // Rule 3: readout errors.
  if (m.readout_error) {
    for (int q = 0; q < n; ++q) {
      const auto& b = m.qubits[std::size_t(q)];
      if (b.p1_given_0 != 0 || b.p0_given_1 != 0) out.readout_error(q, b.p1_given_0, b.p0_given_1);
    }
  }
  for (const Measurement& mm : circuit.measurements()) {
    if (mm.kind == Measurement::Kind::Expval) out.expval(mm.observable);
  }
  for (const Measurement& mm : circuit.measurements()) {
    if (mm.kind == Measurement::Kind::Probs) out.probs(mm.wires);
  }
  for (const Measurement& mm : circuit.measurements()) {
    if (mm.kind == Measurement::Kind::Purity) out.purity();
  }
  return out;
}

Program compile(const Circuit& circuit, const NoiseModel& model, const CompileOptions& options) {
  CompileOptions o = options;
  if (o.simulator == Simulator::statevector) {
    throw Error("a noise model needs the density-matrix simulator (simulator automatic or density_matrix)");
  }
  o.simulator = Simulator::density_matrix;
  return compile(apply_noise_model(circuit, model), o);
}

}  // namespace qfleet
