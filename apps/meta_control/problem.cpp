// Meta-control physics: the systems as engine programs, the task distribution and the
// policy's input features (meta_control.hpp; docs/meta_control.md, docs/reproduction.md).
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "cz_paper.hpp"
#include "meta_control.hpp"
#include "qfleet/json_lindblad.hpp"
#include "qfleet/names.hpp"

namespace qfleet::meta {

using nlohmann::json;
using torch::Tensor;

namespace {

using Cx = std::complex<double>;
using Mat = std::vector<Cx>;  // row-major

using json_problem::matrix_json;
using json_problem::vector_json;

std::vector<Cx> one_qubit_state(char c) {
  const double s = 1 / std::sqrt(2.0);
  switch (c) {
    case '0': return {1, 0};
    case '1': return {0, 1};
    case '+': return {s, s};
    case '-': return {s, -s};
    case 'r': return {s, Cx(0, s)};
    default: return {s, Cx(0, -s)};  // 'l'
  }
}

std::vector<Cx> product_state(const std::string& label) {
  std::vector<Cx> psi{1};
  for (char c : label) {
    const auto q = one_qubit_state(c);
    std::vector<Cx> next;
    for (auto a : psi)
      for (auto b : q) next.push_back(a * b);
    psi = next;
  }
  return psi;
}

std::vector<Cx> apply(const Mat& u, const std::vector<Cx>& psi) {
  const std::size_t d = psi.size();
  std::vector<Cx> out(d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) out[i] += u[i * d + j] * psi[j];
  return out;
}

// The segment's step for rk4/euler: dt_rule = floor takes max(1, floor(duration/dt)) equal
// steps as the original code's int(); the engine takes ceil(duration/dt) steps of the dt it is given.
double engine_dt(const Config& cfg, double segment) {
  if (cfg.dt_rule != "floor") return cfg.dt;
  const double steps = std::max(1.0, std::floor(segment / cfg.dt + 1e-9));
  return segment / steps;
}

}  // namespace

Problem::Problem(const Config& cfg)
    : qubits_(cfg.system == "qubit_x" ? 1 : 2),
      n_seg_(static_cast<int>(cfg.n_segments)),
      per_qubit_noise_(cfg.task_noise == "per_qubit_correlated"),
      renormalize_(cfg.renormalize_trace),
      seg_dt_(cfg.gate_time / double(cfg.n_segments)),
      dtype_(value_named(kPrecisionNames, cfg.precision, "precision") == Precision::complex64 ? torch::kFloat32
                                                                                           : torch::kFloat64) {
  // The system (the library's, shared with qfleet-rl, or the paper's CZ: cz_paper.hpp):
  // controls X, Y (scaled: X/2, Y/2 for half_pauli) per qubit, then the system's couplings;
  // per qubit the relaxation (rate gamma_relax) and dephasing sqrt(gamma_deph / 2) Z jumps.
  const control::QubitGateSystem sys = system_named(cfg.system, cfg.controls == "pauli" ? 1.0 : 0.5, cfg.coupling);
  json controls = json::array(), jumps = json::array();
  for (const auto& h : sys.controls) controls.push_back(matrix_json(h));
  for (const auto& l : sys.jumps) jumps.push_back(matrix_json(l));
  control_names_ = sys.control_names;
  n_ctrl_ = static_cast<int>(controls.size());
  const Mat& target = sys.target;
  json base = {{"kind", "lindblad"},
               {"dim", dim()},
               {"controls", controls},
               {"jumps", jumps},
               {"segment_duration", seg_dt_},
               {"n_segments", n_seg_},
               {"solver", cfg.solver},
               {"precision", cfg.precision},
               {"threads", cfg.threads}};
  if (!sys.drift.empty()) base["H0"] = matrix_json(sys.drift);  // the paper's always-on J Z1 Z2
  if (cfg.dt > 0) base["dt"] = engine_dt(cfg, seg_dt_);
  if (cfg.fidelity == "average_gate") {
    json m = base;
    m["gate"] = true;
    m["target"] = {{"unitary", matrix_json(target)}};
    models_.push_back(m);
  } else {
    for (const auto& label : cfg.input_states) {
      const auto psi = product_state(label);
      json m = base;
      m["psi0"] = vector_json(psi);
      m["target"] = {{"state", vector_json(apply(target, psi))}};
      models_.push_back(m);
    }
  }
  // device = cuda: the programs get a GPU copy and every call runs there (the tensors stay
  // on the CPU and are staged); models_ stay device-free (eval_problems reproduce them anywhere).
  auto compile = [&](json m) {
    if (cfg.device == "cuda") m["device"] = "cuda";
    return c10::make_intrusive<nn::OpenSystemProgram>(m.dump());
  };
  for (const auto& m : models_) {
    programs_.push_back(compile(m));
    if (!renormalize_) continue;
    std::vector<c10::intrusive_ptr<nn::OpenSystemProgram>> pops;
    for (int i = 0; i < dim(); ++i) {
      std::vector<Cx> e(std::size_t(dim()), 0);
      e[std::size_t(i)] = 1;
      json p = m;
      p["target"] = {{"state", vector_json(e)}};
      pops.push_back(compile(p));
    }
    population_programs_.push_back(std::move(pops));
  }
}

std::string Problem::fidelity_definition() const {
  if (programs_.size() == 1 && models_[0].contains("gate"))
    return "average gate fidelity of the simulated channel E against the target unitary V: "
           "F = (d F_pro + 1) / (d + 1), F_pro = Re tr(S_V^dag S_E) / d^2, S the superoperators (d = " +
           std::to_string(dim()) + ")";
  return "state-transfer fidelity: the mean over " + std::to_string(programs_.size()) +
         " input states psi of <V psi| rho_psi(T) |V psi>" + (renormalize_ ? " / tr rho_psi(T)" : "") +
         ", rho_psi(T) the simulated final density matrix";
}

Tensor Problem::jump_rates(const Tensor& noise) const {
  // per qubit: (relaxation, dephasing), the order of the jump operators above
  if (per_qubit_noise_)
    return torch::stack({noise.select(1, 1), noise.select(1, 0), noise.select(1, 3), noise.select(1, 2)}, 1);
  const Tensor pair = torch::stack({noise.select(1, 1), noise.select(1, 0)}, 1);
  return qubits_ == 1 ? pair : torch::cat({pair, pair}, 1);
}

Tensor Problem::fidelity(const Tensor& amplitudes, const Tensor& noise) const {
  const Tensor rates = jump_rates(noise);
  Tensor f;
  for (std::size_t i = 0; i < programs_.size(); ++i) {
    Tensor fp = nn::open_fidelity(programs_[i], amplitudes, Tensor(), rates);
    if (renormalize_) {  // tr rho(T) as the sum of the populations
      Tensor trace;
      for (const auto& p : population_programs_[i]) {
        const Tensor pop = nn::open_fidelity(p, amplitudes, Tensor(), rates);
        trace = trace.defined() ? trace + pop : pop;
      }
      fp = fp / trace;
    }
    f = f.defined() ? f + fp : fp;
  }
  return programs_.size() == 1 ? f : f / double(programs_.size());
}

std::vector<json> Problem::eval_problems(const Tensor& amplitudes, const Tensor& noise) const {
  std::vector<json> out;
  for (auto m : models_) {
    m.erase("n_segments");
    m["amplitudes"] = tensor_json(amplitudes);
    m["rates"] = tensor_json(jump_rates(noise));
    out.push_back(m);
  }
  return out;
}

// ---- tasks and features -----------------------------------------------------------------

Tensor sample_tasks(const Config& cfg, at::Generator& gen, int64_t n, torch::ScalarType dtype) {
  const bool per_qubit = cfg.task_noise == "per_qubit_correlated";
  const Tensor u = torch::rand({n, per_qubit ? 4 : 2}, gen, torch::TensorOptions().dtype(dtype));
  const Tensor deph = cfg.gamma_deph[0] + (cfg.gamma_deph[1] - cfg.gamma_deph[0]) * u.select(1, 0);
  const Tensor relax = cfg.gamma_relax[0] + (cfg.gamma_relax[1] - cfg.gamma_relax[0]) * u.select(1, 1);
  if (!per_qubit) return torch::stack({deph, relax}, 1);
  const double s = cfg.correlation_spread;
  return torch::stack({deph, relax, deph * (1 - s + 2 * s * u.select(1, 2)), relax * (1 - s + 2 * s * u.select(1, 3))},
                      1);
}

Tensor tasks_around(const Config& cfg, at::Generator& gen, int64_t n, double deph, double relax, double spread,
                    torch::ScalarType dtype) {
  const bool per_qubit = cfg.task_noise == "per_qubit_correlated";
  const Tensor u = torch::rand({n, per_qubit ? 4 : 2}, gen, torch::TensorOptions().dtype(dtype));
  const Tensor d = deph * (1 - spread + 2 * spread * u.select(1, 0));
  const Tensor r = relax * (1 - spread + 2 * spread * u.select(1, 1));
  if (!per_qubit) return torch::stack({d, r}, 1);
  const double s = cfg.correlation_spread;
  return torch::stack({d, r, d * (1 - s + 2 * s * u.select(1, 2)), r * (1 - s + 2 * s * u.select(1, 3))}, 1);
}

int64_t n_features(const Config& cfg) {
  const int64_t noise = cfg.task_noise == "per_qubit_correlated" ? 4 : 2;
  return cfg.features == "paper" && noise == 2 ? 3 : noise;
}

Tensor task_features(const Config& cfg, const Tensor& noise) {
  const bool per_qubit = noise.size(1) == 4;
  if (cfg.features == "paper") {  // the original code's normalisation (GammaNoiseParameters.to_array)
    if (per_qubit)
      return torch::stack({noise.select(1, 0) / 0.1, noise.select(1, 1) / 0.05, noise.select(1, 2) / 0.1,
                           noise.select(1, 3) / 0.05},
                          1);
    return torch::stack({noise.select(1, 0) / 0.1, noise.select(1, 1) / 0.05,
                         (noise.select(1, 0) + noise.select(1, 1)) / 0.15},
                        1);
  }
  // Each rate scaled to [-1, 1] over its training range (0 where a range is a point).
  auto z = [](const Tensor& g, double lo, double hi) {
    return hi > lo ? (g - lo) * (2.0 / (hi - lo)) - 1.0 : torch::zeros_like(g);
  };
  std::vector<Tensor> f;
  for (int64_t q = 0; q < noise.size(1) / 2; ++q) {
    f.push_back(z(noise.select(1, 2 * q), cfg.gamma_deph[0], cfg.gamma_deph[1]));
    f.push_back(z(noise.select(1, 2 * q + 1), cfg.gamma_relax[0], cfg.gamma_relax[1]));
  }
  return torch::stack(f, 1);
}

}  // namespace qfleet::meta
