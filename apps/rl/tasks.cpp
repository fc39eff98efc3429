// The environments' tasks (tasks.hpp; docs/rl.md).
#include "tasks.hpp"

#include "qfleet/control_systems.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace qfleet::rl {

namespace {

std::pair<double, double> range_of(const std::vector<double>& given, std::pair<double, double> fallback,
                                   const char* key) {
  if (given.empty()) return fallback;
  if (given.size() != 2 || !(given[0] <= given[1]) || !std::isfinite(given[0]) || !std::isfinite(given[1]))
    throw std::invalid_argument(std::string(key) + ": expected [lo, hi] with lo <= hi, both finite");
  return {given[0], given[1]};
}

// The library's qubit gate system (shared with qfleet-meta) under the studies' noise:
// per qubit relaxation (rate gamma_relax, parameter 1) and dephasing (gamma_deph, 0).
TaskSpec qubit_task(const EnvConfig& cfg, const char* task, const char* system, int n_steps) {
  const control::QubitGateSystem sys = control::qubit_gate_system(system);
  TaskSpec t;
  t.name = task;
  t.qubits = sys.qubits;
  t.dim = 1 << sys.qubits;
  t.controls = sys.controls;
  t.control_names = sys.control_names;
  t.target_unitary = sys.target;
  t.gate_time = 1.0;
  t.n_steps = n_steps;
  t.max_amplitude = 2 * std::numbers::pi;
  t.param_names = {"gamma_deph", "gamma_relax"};
  t.ranges = {range_of(cfg.gamma_deph, {control::kDephasingRates.lo, control::kDephasingRates.hi}, "gamma_deph"),
              range_of(cfg.gamma_relax, {control::kRelaxationRates.lo, control::kRelaxationRates.hi}, "gamma_relax")};
  for (const auto& r : t.ranges)
    if (r.first < 0) throw std::invalid_argument("gamma_deph, gamma_relax: rates must be >= 0");
  if (cfg.noise == "none") return t;
  t.jumps = sys.jumps;
  for (int q = 0; q < sys.qubits; ++q) {
    t.rate_param.push_back(1);
    t.rate_param.push_back(0);
  }
  return t;
}

TaskSpec ladder(const EnvConfig& cfg) {
  if (cfg.levels < 2 || cfg.levels > 16) throw std::invalid_argument("levels: expected 2..16, got " + std::to_string(cfg.levels));
  const int d = static_cast<int>(cfg.levels);
  TaskSpec t;
  t.name = "ladder";
  t.dim = d;
  t.gate = false;
  const double alpha = -2 * std::numbers::pi;
  Mat a(std::size_t(d) * d), n(std::size_t(d) * d);
  t.h0.assign(std::size_t(d) * d, 0);
  for (int k = 0; k < d; ++k) {
    n[std::size_t(k) * d + k] = k;
    t.h0[std::size_t(k) * d + k] = alpha / 2 * k * (k - 1);
    if (k + 1 < d) a[std::size_t(k) * d + k + 1] = std::sqrt(double(k + 1));
  }
  Mat xq(a.size()), yq(a.size());
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      const Cx aij = a[std::size_t(i) * d + j], aji = a[std::size_t(j) * d + i];  // a^dag_ij = conj(a_ji)
      xq[std::size_t(i) * d + j] = 0.5 * (aij + std::conj(aji));
      yq[std::size_t(i) * d + j] = Cx(0, 0.5) * (std::conj(aji) - aij);
    }
  t.controls = {xq, yq};
  t.control_names = {"x", "y"};
  t.drift_terms = {n};
  t.initial_state.assign(std::size_t(d), 0);
  t.initial_state[0] = 1;
  t.target_state.assign(std::size_t(d), 0);
  t.target_state[std::size_t(d) - 1] = 1;
  t.gate_time = 0.5 * (d - 1);
  t.n_steps = 20 * (d - 1);
  t.max_amplitude = 4 * std::numbers::pi;
  t.param_names = {"gamma_deph", "gamma_relax", "detuning"};
  t.ranges = {range_of(cfg.gamma_deph, {0.01, 0.05}, "gamma_deph"), range_of(cfg.gamma_relax, {0.01, 0.05}, "gamma_relax"),
              range_of(cfg.detuning, {-0.5, 0.5}, "detuning")};
  if (t.ranges[0].first < 0 || t.ranges[1].first < 0) throw std::invalid_argument("gamma_deph, gamma_relax: rates must be >= 0");
  t.drift_param = {2};
  if (cfg.noise != "none") {
    t.jumps = {a, n};
    t.rate_param = {1, 0};
  }
  return t;
}

}  // namespace

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = {"qubit_x", "cz", "ladder"};
  return names;
}

TaskSpec make_task(const EnvConfig& cfg) {
  TaskSpec t;
  if (cfg.task == "qubit_x") t = qubit_task(cfg, "qubit_x", "qubit_x", 60);
  else if (cfg.task == "cz") t = qubit_task(cfg, "cz", "two_qubit_cz_xx_zz", 30);
  else if (cfg.task == "ladder") t = ladder(cfg);
  else throw std::invalid_argument("task: unknown '" + cfg.task + "', expected qubit_x, cz or ladder");
  if (cfg.n_steps > 0) t.n_steps = static_cast<int>(cfg.n_steps);
  if (cfg.gate_time > 0) t.gate_time = cfg.gate_time;
  if (cfg.max_amplitude > 0) t.max_amplitude = cfg.max_amplitude;
  return t;
}

OpenSystem step_system(const TaskSpec& t, bool with_target) {
  OpenSystem s(t.dim);
  if (!t.h0.empty()) s.drift(t.h0);
  for (const auto& h : t.drift_terms) s.drift_term(h);
  for (const auto& h : t.controls) s.control(h);
  for (const auto& l : t.jumps) s.jump(l);
  s.segments(1, t.gate_time / double(t.n_steps));
  s.propagate_gate();
  if (with_target) {
    ComplexMatrix one(std::size_t(t.dim) * t.dim, 0.0);
    for (int k = 0; k < t.dim; ++k) one[std::size_t(k) * t.dim + k] = 1;
    s.target_unitary(one);
  }
  return s;
}

}  // namespace qfleet::rl
