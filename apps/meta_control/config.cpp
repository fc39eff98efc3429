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

const std::vector<app::Setting<Config>>& settings() {
  using app::setting;
  using C = Config;
  static const std::vector<app::Setting<Config>> table = {
      setting<C>("system", [](C& c) -> auto& { return c.system; }),
      setting<C>("controls", [](C& c) -> auto& { return c.controls; }),
      setting<C>("coupling", [](C& c) -> auto& { return c.coupling; }),
      setting<C>("algorithm", [](C& c) -> auto& { return c.algorithm; }),
      setting<C>("iterations", [](C& c) -> auto& { return c.iterations; }),
      setting<C>("meta_batch", [](C& c) -> auto& { return c.meta_batch; }),
      setting<C>("inner_steps", [](C& c) -> auto& { return c.inner_steps; }),
      setting<C>("inner_lr", [](C& c) -> auto& { return c.inner_lr; }),
      setting<C>("meta_lr", [](C& c) -> auto& { return c.meta_lr; }),
      setting<C>("meta_optimizer", [](C& c) -> auto& { return c.meta_optimizer; }),
      setting<C>("weight_decay", [](C& c) -> auto& { return c.weight_decay; }),
      setting<C>("meta_lr_schedule", [](C& c) -> auto& { return c.meta_lr_schedule; }),
      setting<C>("meta_step", [](C& c) -> auto& { return c.meta_step; }),
      setting<C>("meta_lr_min", [](C& c) -> auto& { return c.meta_lr_min; }),
      setting<C>("meta_grad_clip", [](C& c) -> auto& { return c.meta_grad_clip; }),
      setting<C>("inner_grad_clamp", [](C& c) -> auto& { return c.inner_grad_clamp; }),
      setting<C>("hidden_width", [](C& c) -> auto& { return c.hidden_width; }),
      setting<C>("hidden_layers", [](C& c) -> auto& { return c.hidden_layers; }),
      setting<C>("layer_norm", [](C& c) -> auto& { return c.layer_norm; }),
      setting<C>("init", [](C& c) -> auto& { return c.init; }),
      setting<C>("init_gain", [](C& c) -> auto& { return c.init_gain; }),
      setting<C>("output_init_gain", [](C& c) -> auto& { return c.output_init_gain; }),
      setting<C>("features", [](C& c) -> auto& { return c.features; }),
      setting<C>("amplitude_scale", [](C& c) -> auto& { return c.amplitude_scale; }),
      setting<C>("output", [](C& c) -> auto& { return c.output; }),
      setting<C>("amplitude_clamp", [](C& c) -> auto& { return c.amplitude_clamp; }),
      setting<C>("n_segments", [](C& c) -> auto& { return c.n_segments; }),
      setting<C>("gate_time", [](C& c) -> auto& { return c.gate_time; }),
      setting<C>("gamma_deph", [](C& c) -> auto& { return c.gamma_deph; }),
      setting<C>("gamma_relax", [](C& c) -> auto& { return c.gamma_relax; }),
      setting<C>("task_noise", [](C& c) -> auto& { return c.task_noise; }),
      setting<C>("correlation_spread", [](C& c) -> auto& { return c.correlation_spread; }),
      setting<C>("ood_factor", [](C& c) -> auto& { return c.ood_factor; }),
      setting<C>("ood_spread", [](C& c) -> auto& { return c.ood_spread; }),
      setting<C>("fidelity", [](C& c) -> auto& { return c.fidelity; }),
      setting<C>("input_states", [](C& c) -> auto& { return c.input_states; }),
      setting<C>("solver", [](C& c) -> auto& { return c.solver; }),
      setting<C>("dt", [](C& c) -> auto& { return c.dt; }),
      setting<C>("dt_rule", [](C& c) -> auto& { return c.dt_rule; }),
      setting<C>("renormalize_trace", [](C& c) -> auto& { return c.renormalize_trace; }),
      setting<C>("precision", [](C& c) -> auto& { return c.precision; }),
      setting<C>("validation_tasks", [](C& c) -> auto& { return c.validation_tasks; }),
      setting<C>("validate_every", [](C& c) -> auto& { return c.validate_every; }),
      setting<C>("adapt_steps", [](C& c) -> auto& { return c.adapt_steps; }),
      setting<C>("adapt_optimizer", [](C& c) -> auto& { return c.adapt_optimizer; }),
      setting<C>("adapt_lr", [](C& c) -> auto& { return c.adapt_lr; }),
      setting<C>("adapt_grad_clip", [](C& c) -> auto& { return c.adapt_grad_clip; }),
      setting<C>("robust_iterations", [](C& c) -> auto& { return c.robust_iterations; }),
      setting<C>("robust_lr", [](C& c) -> auto& { return c.robust_lr; }),
      setting<C>("grape_iterations", [](C& c) -> auto& { return c.grape_iterations; }),
      setting<C>("grape_lr", [](C& c) -> auto& { return c.grape_lr; }),
      setting<C>("seed", [](C& c) -> auto& { return c.seed; }),
      setting<C>("threads", [](C& c) -> auto& { return c.threads; }),
      setting<C>("device", [](C& c) -> auto& { return c.device; }),
      setting<C>("checkpoint_every", [](C& c) -> auto& { return c.checkpoint_every; }),
      setting<C>("checkpoint_policy", [](C& c) -> auto& { return c.checkpoint_policy; }),
      setting<C>("select_every", [](C& c) -> auto& { return c.select_every; }),
      setting<C>("output_dir", [](C& c) -> auto& { return c.output_dir; }),
  };
  return table;
}

namespace {

// Keys that decide each other: a system's own defaults and the combinations that
// cannot run together.
void resolve_and_check_combinations(Config& c) {
  const int qubits = c.system == "qubit_x" ? 1 : 2;
  if (c.n_segments == 0) c.n_segments = qubits == 1 ? 60 : 30;
  if (c.controls == "automatic") c.controls = c.system == "two_qubit_cz_paper" ? "pauli" : "half_pauli";
  if (c.system == "two_qubit_cz_paper" && c.controls != "pauli")
    throw ConfigError("config: two_qubit_cz_paper's controls are X, Y and Z on each qubit (controls = pauli or automatic)");
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
  Config c = app::read_settings(settings(), r);
  c.json = r;
  c.preset = r.value("preset", "");
  if (c.adapt_lr == 0) c.adapt_lr = c.inner_lr;
  resolve_and_check_combinations(c);
  default_input_states(c);
  if (c.device == "cuda" && qfleet::cuda_device_count() == 0)
    throw ConfigError(
        "config: device = cuda: no CUDA device is visible to qfleet (no GPU or driver, CUDA_VISIBLE_DEVICES, or a "
        "build without the CUDA backend); use device = cpu or automatic");
  return c;
}

}  // namespace qfleet::meta
