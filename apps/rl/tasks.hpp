// The quantum-control tasks of qfleet-rl's environments (docs/rl.md): each is a d-level
// open system with piecewise-constant controls, a per-task noise/drift distribution and a
// figure of merit. One environment step is one control segment.
//
//   qubit_x  one qubit, controls X/2 and Y/2, relaxation |0><1| (rate gamma_relax) and
//            dephasing sqrt(1/2) Z (rate gamma_deph), the X gate; the system and the rate
//            ranges are the library's, as qfleet-meta's (qfleet/control_systems.hpp)
//   cz       two qubits, controls X/2, Y/2 on each and XX/2, ZZ/2, the same noise on each
//            qubit, the CZ gate (the library's two_qubit_cz_xx_zz)
//   ladder   a d-level anharmonic ladder (a transmon in the drive's rotating frame:
//            H0 = (alpha/2) n(n - 1), alpha = -2 pi), a per-task detuning delta n, drives
//            (a + a^dag)/2 and i(a^dag - a)/2, relaxation a and dephasing n; prepare |d-1> from |0>
#pragma once

#include <complex>
#include <string>
#include <utility>
#include <vector>

#include "env_config.hpp"
#include "qfleet/open_system.hpp"

namespace qfleet::rl {

using Cx = std::complex<double>;
using Mat = std::vector<Cx>;  // row-major d x d

struct TaskSpec {
  std::string name;
  int dim = 2;
  int qubits = 0;    // > 0: a register of qubits (Pauli-string observations)
  bool gate = true;  // gate task (the channel is propagated) or state preparation
  Mat h0;            // fixed drift (empty: none)
  std::vector<Mat> controls;
  std::vector<std::string> control_names;
  std::vector<Mat> drift_terms;  // scaled by per-task coefficients
  std::vector<Mat> jumps;        // with per-task rates
  Mat target_unitary;            // gate tasks
  std::vector<Cx> initial_state, target_state;  // state tasks
  double gate_time = 1.0;
  int n_steps = 60;
  double max_amplitude = 0;
  // The task distribution: parameter k is uniform in ranges[k]; jump j's rate is
  // parameter rate_param[j], drift term m's coefficient is parameter drift_param[m].
  std::vector<std::string> param_names;
  std::vector<std::pair<double, double>> ranges;
  std::vector<int> rate_param, drift_param;
};

// The configuration's task with its overrides (n_steps, gate_time, max_amplitude, levels,
// the ranges, noise = none: no jump operators). std::invalid_argument naming the key.
TaskSpec make_task(const EnvConfig& cfg);

const std::vector<std::string>& task_names();

// One environment step as an open system: one segment of gate_time / n_steps whose
// channel is propagated (states and gates are then updated alike). with_target: the
// identity as target unitary, which the PyTorch ops ask for (its fidelity is not read).
OpenSystem step_system(const TaskSpec& t, bool with_target = false);

}  // namespace qfleet::rl
