// The paper's CZ system (cz_paper.hpp).
#include "cz_paper.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "qfleet/operators.hpp"
#include "qfleet/structured_ops.hpp"

namespace qfleet::meta {

control::QubitGateSystem cz_paper_system(double control_scale, double coupling) {
  if (!std::isfinite(control_scale) || !std::isfinite(coupling))
    throw app::ConfigError(std::string(kCzPaperSystem) + ": the control scale and coupling must be finite");
  auto on = [](const ComplexMatrix& op, int q) { return local_operator(op, {q}, {2, 2}); };
  control::QubitGateSystem s;
  s.name = kCzPaperSystem;
  s.qubits = 2;
  for (int q = 0; q < 2; ++q) {
    s.controls.push_back(ops::scaled(on(ops::kPauliX, q), control_scale));
    s.controls.push_back(ops::scaled(on(ops::kPauliY, q), control_scale));
    s.control_names.push_back("x" + std::to_string(q));
    s.control_names.push_back("y" + std::to_string(q));
  }
  for (int q = 0; q < 2; ++q) {
    s.controls.push_back(on(ops::kPauliZ, q));
    s.control_names.push_back("z" + std::to_string(q));
  }
  s.drift = pauli_operator({{coupling, "Z0 Z1"}}, 2);
  for (int q = 0; q < 2; ++q) {
    s.jumps.push_back(on(ops::kRaise, q));
    s.jumps.push_back(ops::scaled(on(ops::kPauliZ, q), std::sqrt(0.5)));
  }
  s.target = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1};
  return s;
}

control::QubitGateSystem system_named(const std::string& name, double control_scale, double coupling) {
  if (name == kCzPaperSystem) return cz_paper_system(control_scale, coupling);
  return control::qubit_gate_system(name, {control_scale});
}

}  // namespace qfleet::meta
