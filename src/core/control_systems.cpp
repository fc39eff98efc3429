// The shared qubit gate-control systems (qfleet/control_systems.hpp).
#include "qfleet/control_systems.hpp"

#include <algorithm>
#include <cmath>

#include "qfleet/error.hpp"
#include "qfleet/nearest_name.hpp"
#include "qfleet/operators.hpp"
#include "qfleet/structured_ops.hpp"

namespace qfleet::control {

namespace {

ComplexMatrix on_qubit(const ComplexMatrix& op, int q, int qubits) {
  return local_operator(op, {q}, std::vector<int>(std::size_t(qubits), 2));
}

}  // namespace

const std::vector<std::string>& qubit_gate_system_names() {
  static const std::vector<std::string> names = {"qubit_x", "two_qubit_cz_xx_zz"};
  return names;
}

QubitGateSystem qubit_gate_system(const std::string& name, const QubitSystemOptions& options) {
  const auto& names = qubit_gate_system_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    const std::string near = nearest_name(name, names, 4);
    throw Error("qubit_gate_system: unknown system \"" + name + "\"" +
                (near.empty() ? "" : " (did you mean \"" + near + "\"?)") +
                "; known: qubit_x, two_qubit_cz_xx_zz");
  }
  if (!std::isfinite(options.control_scale)) throw Error("qubit_gate_system: control_scale must be finite");
  QubitGateSystem s;
  s.name = name;
  s.qubits = name == "qubit_x" ? 1 : 2;
  for (int q = 0; q < s.qubits; ++q) {
    s.controls.push_back(ops::scaled(on_qubit(ops::kPauliX, q, s.qubits), options.control_scale));
    s.controls.push_back(ops::scaled(on_qubit(ops::kPauliY, q, s.qubits), options.control_scale));
    const std::string suffix = s.qubits == 1 ? "" : std::string(1, char('0' + q));
    s.control_names.push_back("x" + suffix);
    s.control_names.push_back("y" + suffix);
  }
  if (s.qubits == 2) {
    s.controls.push_back(pauli_operator({{0.5, "X0 X1"}}, 2));
    s.controls.push_back(pauli_operator({{0.5, "Z0 Z1"}}, 2));
    s.control_names.push_back("xx");
    s.control_names.push_back("zz");
  }
  for (int q = 0; q < s.qubits; ++q) {
    s.jumps.push_back(on_qubit(ops::kLower, q, s.qubits));
    s.jumps.push_back(ops::scaled(on_qubit(ops::kPauliZ, q, s.qubits), std::sqrt(0.5)));
  }
  if (s.qubits == 1) s.target = ops::kPauliX;
  else s.target = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1};
  return s;
}

}  // namespace qfleet::control
