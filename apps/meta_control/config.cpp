// Meta-control configuration: the schema and presets (config.json, embedded at
// build time) read by the apps' common reader (apps/common/config.hpp), and the
// checks across keys that make a Config (meta_control.hpp; docs/meta_control.md
// lists the keys).
#include <string>
#include <utility>
#include <vector>

#include "meta_config.hpp"  // generated: kConfigJson, the text of config.json
#include "meta_control.hpp"
#include "qfleet/names.hpp"

namespace qfleet::meta {

using nlohmann::json;

const app::Schema& config_schema() {
  static const app::Schema s(kConfigJson);
  return s;
}

const json& schema() {
  static const json s = json::parse(kConfigJson);
  return s;
}

json load_config_file(const std::string& path) { return app::load_config_file(path); }

json resolve_config(const json& file, const std::string& preset, const std::vector<std::string>& overrides) {
  std::vector<std::pair<std::string, json>> sets;
  for (const auto& o : overrides) sets.push_back(config_schema().assignment(o));
  return config_schema().resolve(file, preset, sets);
}

namespace {

// The resolved keys as a Config (the schema checked each value).
Config read_keys(const json& r) {
  Config c;
  c.json = r;
  c.preset = r.value("preset", "");
  c.system = r["system"];
  c.algorithm = r["algorithm"];
  c.fidelity = r["fidelity"];
  c.solver = r["solver"];
  c.precision = r["precision"];
  c.device = r["device"];
  c.meta_step = r["meta_step"];
  c.output_dir = r["output_dir"];
  c.iterations = r["iterations"];
  c.meta_batch = r["meta_batch"];
  c.inner_steps = r["inner_steps"];
  c.hidden_width = r["hidden_width"];
  c.hidden_layers = r["hidden_layers"];
  c.n_segments = r["n_segments"];
  c.validation_tasks = r["validation_tasks"];
  c.validate_every = r["validate_every"];
  c.adapt_steps = r["adapt_steps"];
  c.robust_iterations = r["robust_iterations"];
  c.grape_iterations = r["grape_iterations"];
  c.checkpoint_every = r["checkpoint_every"];
  c.threads = r["threads"];
  c.seed = r["seed"];
  c.inner_lr = r["inner_lr"];
  c.meta_lr = r["meta_lr"];
  c.amplitude_scale = r["amplitude_scale"];
  c.gate_time = r["gate_time"];
  c.dt = r["dt"];
  c.robust_lr = r["robust_lr"];
  c.grape_lr = r["grape_lr"];
  c.deph_lo = r["gamma_deph"][0];
  c.deph_hi = r["gamma_deph"][1];
  c.relax_lo = r["gamma_relax"][0];
  c.relax_hi = r["gamma_relax"][1];
  c.input_states = r["input_states"].get<std::vector<std::string>>();
  c.controls = r["controls"];
  c.coupling = r["coupling"];
  c.layer_norm = r["layer_norm"];
  c.init = r["init"];
  c.init_gain = r["init_gain"];
  c.output_init_gain = r["output_init_gain"];
  c.features = r["features"];
  c.output = r["output"];
  c.amplitude_clamp = r["amplitude_clamp"];
  c.task_noise = r["task_noise"];
  c.correlation_spread = r["correlation_spread"];
  c.ood_factor = r["ood_factor"];
  c.ood_spread = r["ood_spread"];
  c.dt_rule = r["dt_rule"];
  c.renormalize_trace = r["renormalize_trace"];
  c.meta_optimizer = r["meta_optimizer"];
  c.weight_decay = r["weight_decay"];
  c.meta_lr_schedule = r["meta_lr_schedule"];
  c.meta_lr_min = r["meta_lr_min"];
  c.meta_grad_clip = r["meta_grad_clip"];
  c.inner_grad_clamp = r["inner_grad_clamp"];
  c.adapt_optimizer = r["adapt_optimizer"];
  c.adapt_lr = r["adapt_lr"];
  if (c.adapt_lr == 0) c.adapt_lr = c.inner_lr;
  c.adapt_grad_clip = r["adapt_grad_clip"];
  c.checkpoint_policy = r["checkpoint_policy"];
  c.select_every = r["select_every"];
  return c;
}

// Keys that decide each other: a system's own defaults and the combinations that
// cannot run together.
void resolve_and_check_combinations(Config& c) {
  const int qubits = c.system == "qubit_x" ? 1 : 2;
  if (c.n_segments == 0) c.n_segments = qubits == 1 ? 60 : 30;
  if (c.controls == "auto") c.controls = c.system == "two_qubit_cz_paper" ? "pauli" : "half_pauli";
  if (c.system == "two_qubit_cz_paper" && c.controls != "pauli")
    throw ConfigError("config: two_qubit_cz_paper's controls are X, Y and Z on each qubit (controls = pauli or auto)");
  if (c.task_noise == "per_qubit_correlated" && qubits != 2)
    throw ConfigError("config: task_noise = per_qubit_correlated needs a two-qubit system (system = " + c.system + ")");
  if (c.renormalize_trace && c.fidelity != "state_transfer")
    throw ConfigError("config: renormalize_trace divides a state-transfer fidelity by tr(rho(T)); set fidelity = state_transfer");
  if (c.output == "tanh" && c.amplitude_clamp > 0)
    throw ConfigError("config: output = tanh bounds the amplitudes by amplitude_scale already; set amplitude_clamp = 0");
  if (const auto solver = qfleet::value_in(qfleet::kSolverNames, c.solver)) {  // else the schema's error
    const bool fixed_step = qfleet::solver_info(*solver).fixed_step;
    if (fixed_step && c.dt == 0)
      throw ConfigError("config: solver '" + c.solver + "' needs a step: set dt (e.g. dt = 0.01)");
    if (!fixed_step && c.dt != 0)
      throw ConfigError("config: dt is the step of rk4/euler; solver '" + c.solver + "' takes none (set dt = 0)");
    if (!fixed_step && c.dt_rule != "ceil")
      throw ConfigError("config: dt_rule is the step rule of rk4/euler; solver '" + c.solver + "' takes none");
  }
  if (c.fidelity != "state_transfer" && !c.input_states.empty())
    throw ConfigError("config: input_states is used only with fidelity = state_transfer");
  for (const auto& s : c.input_states)
    if (static_cast<int>(s.size()) != qubits)
      throw ConfigError("config: input state '" + s + "' needs one label per qubit (" + std::to_string(qubits) +
                        " for " + c.system + ")");
}

// state_transfer without input_states: the system's own set.
void default_input_states(Config& c) {
  const int qubits = c.system == "qubit_x" ? 1 : 2;
  if (c.fidelity == "state_transfer" && c.input_states.empty()) {
    if (qubits == 1) {
      c.input_states = {"0", "1", "+", "-", "r", "l"};
    } else if (c.system == "two_qubit_cz_paper") {  // the original code's 12 states
      c.input_states = {"++", "+-", "-+", "--", "rr", "rl", "1+", "1-", "+1", "-1", "00", "11"};
    } else {
      for (char a : std::string("01+r"))
        for (char b : std::string("01+r")) c.input_states.push_back(std::string{a, b});
    }
  }
}

}  // namespace

Config make_config(const json& r) {
  Config c = read_keys(r);
  resolve_and_check_combinations(c);
  default_input_states(c);
  if (c.device == "cuda" && qfleet::cuda_device_count() == 0)
    throw ConfigError(
        "config: device = cuda: no CUDA device is visible to qfleet (no GPU or driver, CUDA_VISIBLE_DEVICES, or a "
        "build without the CUDA backend); use device = cpu or auto");
  return c;
}

}  // namespace qfleet::meta
