// Meta-control configuration: the schema and presets (config.json, embedded at
// build time), resolving a file + preset + overrides, and checking every key
// (meta_control.hpp; docs/meta_control.md lists the keys).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "meta_control.hpp"
#include "qfleet/names.hpp"
#include "qfleet/nearest_name.hpp"
#include "meta_control_config.hpp"  // generated: kConfigJson, the text of config.json

namespace qfleet::meta {

using nlohmann::json;


// ---- configuration ---------------------------------------------------------------

const json& schema() {
  static const json s = json::parse(kConfigJson);
  return s;
}

namespace {

[[noreturn]] void unknown_key(const std::string& key, const std::string& where) {
  std::vector<std::string> keys;
  for (const auto& [k, _] : schema()["keys"].items()) keys.push_back(k);
  const std::string best = nearest_name(key, keys, 4);
  std::string msg = "config: unknown key '" + key + "'" + where;
  if (!best.empty()) msg += " (did you mean '" + best + "'?)";
  msg += "; docs/meta_control.md lists the keys";
  throw ConfigError(msg);
}

std::string describe(const json& v) { return v.dump(); }

void check_value(const std::string& key, const json& spec, const json& v) {
  const std::string type = spec["type"];
  auto fail = [&](const std::string& expected) {
    throw ConfigError("config: key '" + key + "': expected " + expected + ", got " + describe(v));
  };
  const double lo = spec.value("min", -std::numeric_limits<double>::infinity());
  const double hi = spec.value("max", std::numeric_limits<double>::infinity());
  auto range_text = [&] {
    std::ostringstream o;
    o << "in [" << lo << ", " << hi << "]";
    if (spec.value("allow_zero", false)) o << " or 0";
    return o.str();
  };
  if (type == "string") {
    if (!v.is_string()) fail("a string");
    if (spec.contains("choices")) {
      const auto& ch = spec["choices"];
      if (std::find(ch.begin(), ch.end(), v) == ch.end()) fail("one of " + ch.dump());
    }
  } else if (type == "integer") {
    if (!v.is_number_integer()) fail("an integer " + range_text());
    const double x = v.is_number_unsigned() ? double(v.get<uint64_t>()) : double(v.get<int64_t>());
    if (x < lo || x > hi) fail("an integer " + range_text());
  } else if (type == "number") {
    if (!v.is_number()) fail("a number " + range_text());
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail("a finite number");
    if (!(x == 0 && spec.value("allow_zero", false)) && (x < lo || x > hi)) fail("a number " + range_text());
  } else if (type == "range") {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
      fail("[lo, hi], two numbers " + range_text());
    const double a = v[0].get<double>(), b = v[1].get<double>();
    if (!(a >= lo && b <= hi && a <= b)) fail("[lo, hi] with lo <= hi, both " + range_text());
  } else if (type == "boolean") {
    if (!v.is_boolean()) fail("true or false");
  } else if (type == "states") {
    if (!v.is_array()) fail("a list of state labels such as [\"0\", \"+\"]");
    for (const auto& s : v) {
      if (!s.is_string() || s.get<std::string>().empty() ||
          s.get<std::string>().find_first_not_of("01+-rl") != std::string::npos)
        fail("a list of state labels, one character per qubit from 0 1 + - r l");
    }
  }
}

json parse_override_value(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    return json(text);  // a bare word (or a number JSON cannot hold, 1e999) is a string
  }
}

// A preset's keys over `out`, after those of the preset it names as "base" ("about" is its text).
void apply_preset(const json& presets, const std::string& name, json& out, int depth) {
  const json& p = presets.at(name);
  if (p.contains("base")) {
    if (depth > 8 || !presets.contains(p["base"].get<std::string>()))
      throw ConfigError("config: preset '" + name + "' has a bad base");  // (a mistake in config.json itself)
    apply_preset(presets, p["base"], out, depth + 1);
  }
  for (const auto& [k, v] : p.items())
    if (k != "about" && k != "base") out[k] = v;
}

}  // namespace

json load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("config: cannot open " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json j = json::parse(ss.str());
    if (!j.is_object()) throw ConfigError("config: " + path + ": expected a JSON object of keys");
    return j;
  } catch (const json::parse_error& e) {
    throw ConfigError("config: " + path + " is not valid JSON: " + e.what());
  }
}

json resolve_config(const json& file, const std::string& preset, const std::vector<std::string>& overrides) {
  const json& keys = schema()["keys"];
  json out = json::object();
  for (const auto& [k, spec] : keys.items()) out[k] = spec["default"];
  if (!file.is_null() && !file.is_object()) throw ConfigError("config: expected a JSON object of keys");
  std::string name = preset;
  if (file.is_object() && file.contains("preset")) {
    if (!file["preset"].is_string()) throw ConfigError("config: key 'preset': expected a string");
    name = file["preset"].get<std::string>();
  }
  if (name.empty()) name = schema()["default_preset"].get<std::string>();
  const json& presets = schema()["presets"];
  if (!presets.contains(name)) {
    std::string names;
    for (const auto& [k, _] : presets.items()) names += (names.empty() ? "" : ", ") + k;
    throw ConfigError("config: unknown preset '" + name + "' (presets: " + names + ")");
  }
  apply_preset(presets, name, out, 0);
  const json given = file.is_null() ? json::object() : file;
  for (const auto& [k, v] : given.items()) {
    if (k == "preset") continue;
    if (!keys.contains(k)) unknown_key(k, " in the configuration file");
    check_value(k, keys[k], v);
    out[k] = v;
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("config: --set expects key=value, got '" + o + "'");
    const std::string k = o.substr(0, eq);
    if (!keys.contains(k)) unknown_key(k, " in --set");
    const json v = parse_override_value(o.substr(eq + 1));
    check_value(k, keys[k], v);
    out[k] = v;
  }
  for (const auto& [k, v] : out.items()) check_value(k, keys[k], v);
  out["preset"] = name;
  return out;
}

Config make_config(const json& r) {
  Config c;
  c.json = r;
  c.preset = r.value("preset", "");
  c.system = r["system"];
  c.algorithm = r["algorithm"];
  c.fidelity = r["fidelity"];
  c.solver = r["solver"];
  c.precision = r["precision"];
  c.device = r["device"];
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
  if (c.device == "cuda" && qfleet::cuda_device_count() == 0)
    throw ConfigError(
        "config: device = cuda: no CUDA device is visible to qfleet (no GPU or driver, CUDA_VISIBLE_DEVICES, or a "
        "build without the CUDA backend); use device = cpu or auto");
  return c;
}

}  // namespace qfleet::meta
