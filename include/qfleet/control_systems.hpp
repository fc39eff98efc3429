// The qubit gate-control systems that pulse-optimisation studies on qfleet share: the
// meta-learned control of arXiv:2601.18973 (qfleet-meta, docs/meta_control.md) and the
// PPO environments (qfleet-rl, docs/rl.md) optimise pulses for the same systems under
// the same noise, so both build them here.
//
//   qubit_x             one qubit, controls X and Y scaled by control_scale, the X gate
//   two_qubit_cz_xx_zz  two qubits, X and Y on each (scaled), tunable couplings XX/2 and
//                       ZZ/2, the CZ gate
// (A system one study alone uses lives with it: arXiv:2601.18973's CZ system is the
// meta-control app's, apps/meta_control/cz_paper.hpp.)
//
// Noise, per qubit q: jumps[2q] is relaxation (|0><1|) at rate gamma_relax, jumps[2q + 1]
// dephasing sqrt(1/2) Z at rate gamma_deph, so that the Lindblad term gamma_deph/2 D[Z]
// dephases the coherences at rate gamma_deph.
#pragma once

#include <string>
#include <vector>

#include "qfleet/open_system.hpp"

namespace qfleet::control {

struct QubitGateSystem {
  std::string name;
  int qubits = 1;
  ComplexMatrix drift;  // the always-on Hamiltonian (empty: none)
  std::vector<ComplexMatrix> controls;
  std::vector<std::string> control_names;  // "x", "y" (one qubit); "x0", "y0", ..., "xx", "zz", "z0", "z1"
  std::vector<ComplexMatrix> jumps;        // per qubit: relaxation, dephasing (above)
  ComplexMatrix target;                    // the gate, row-major 2^qubits square
};

struct QubitSystemOptions {
  double control_scale = 0.5;  // 0.5: X/2, Y/2 (amplitude u rotates by u t); 1: X, Y
};

// Throws qfleet::Error for a name not listed above (naming the nearest) or a scale that
// is not finite.
QubitGateSystem qubit_gate_system(const std::string& name, const QubitSystemOptions& options = {});
const std::vector<std::string>& qubit_gate_system_names();

// The rate ranges of both studies' task distributions, per unit time (gate time 1).
struct RateRange {
  double lo, hi;
};
inline constexpr RateRange kDephasingRates{0.02, 0.15};
inline constexpr RateRange kRelaxationRates{0.01, 0.08};

}  // namespace qfleet::control
