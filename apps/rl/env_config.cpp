// EnvConfig <-> JSON with checks (env_config.hpp; the keys are documented in docs/rl.md).
#include "env_config.hpp"

#include <cmath>
#include <stdexcept>

namespace qfleet::rl {

using nlohmann::json;

namespace {
[[noreturn]] void bad(const std::string& key, const std::string& why) { throw std::invalid_argument(key + ": " + why); }
}  // namespace

namespace config_value {

int64_t integer(const json& v, const std::string& key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    bad(key, "expected an integer");
  const double x = v.get<double>();
  if (x < double(lo) || x > double(hi)) bad(key, "expected " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + v.dump());
  return v.get<int64_t>();
}

double number(const json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number()) bad(key, "expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) bad(key, "expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return x;
}

bool boolean(const json& v, const std::string& key) {
  if (!v.is_boolean()) throw std::invalid_argument(key + ": expected true or false");
  return v.get<bool>();
}

std::pair<std::string, json> assignment(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw std::invalid_argument("expected key=value, got '" + text + "'");
  json v = json::parse(text.substr(eq + 1), nullptr, false);
  if (v.is_discarded()) v = text.substr(eq + 1);
  return {text.substr(0, eq), v};
}

}  // namespace config_value

using config_value::boolean;
using config_value::integer;
using config_value::number;

namespace {

std::string choice(const json& v, const std::string& key, std::initializer_list<const char*> choices) {
  if (!v.is_string()) bad(key, "expected a string");
  const auto s = v.get<std::string>();
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += list.empty() ? c : std::string(", ") + c;
  }
  bad(key, "unknown '" + s + "', expected one of " + list);
}

std::vector<double> range(const json& v, const std::string& key) {
  if (!v.is_array() || (!v.empty() && v.size() != 2)) bad(key, "expected [lo, hi] (or [] for the task's own)");
  std::vector<double> r;
  for (const auto& x : v) r.push_back(number(x, key, -1e6, 1e6));
  if (r.size() == 2 && r[0] > r[1]) bad(key, "lo > hi");
  return r;
}

}  // namespace

json EnvConfig::to_json() const {
  return {{"task", task}, {"num_envs", num_envs}, {"n_steps", n_steps}, {"gate_time", gate_time},
          {"max_amplitude", max_amplitude}, {"levels", levels}, {"action", action}, {"clip_actions", clip_actions},
          {"pulse_library", pulse_library}, {"observation", observation}, {"shots", shots},
          {"observe_noise", observe_noise}, {"reward", reward}, {"noise", noise}, {"gamma_deph", gamma_deph},
          {"gamma_relax", gamma_relax}, {"detuning", detuning}, {"seed", seed}, {"threads", threads}, {"device", device}};
}

EnvConfig EnvConfig::from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("environment configuration: expected a JSON object");
  EnvConfig c;
  for (const auto& [key, v] : j.items()) {
    if (key == "task") c.task = choice(v, key, {"qubit_x", "cz", "ladder"});
    else if (key == "num_envs") c.num_envs = integer(v, key, 1, int64_t(1) << 24);
    else if (key == "n_steps") c.n_steps = integer(v, key, 0, 100000);
    else if (key == "gate_time") c.gate_time = number(v, key, 0, 1e6);
    else if (key == "max_amplitude") c.max_amplitude = number(v, key, 0, 1e6);
    else if (key == "levels") c.levels = integer(v, key, 2, 16);
    else if (key == "action") c.action = choice(v, key, {"continuous", "discrete"});
    else if (key == "clip_actions") c.clip_actions = boolean(v, key);
    else if (key == "pulse_library") {
      if (!v.is_array()) bad(key, "expected a list of rows of n_ctrl numbers in [-1, 1]");
      c.pulse_library.clear();
      for (const auto& row : v) {
        if (!row.is_array() || row.empty()) bad(key, "expected a list of rows of n_ctrl numbers in [-1, 1]");
        std::vector<double> r;
        for (const auto& x : row) r.push_back(number(x, key, -1, 1));
        c.pulse_library.push_back(r);
      }
    } else if (key == "observation") c.observation = choice(v, key, {"expectations", "density", "measurements"});
    else if (key == "shots") c.shots = integer(v, key, 1, int64_t(1) << 30);
    else if (key == "observe_noise") c.observe_noise = boolean(v, key);
    else if (key == "reward") c.reward = choice(v, key, {"final", "step"});
    else if (key == "noise") c.noise = choice(v, key, {"distribution", "none"});
    else if (key == "gamma_deph") c.gamma_deph = range(v, key);
    else if (key == "gamma_relax") c.gamma_relax = range(v, key);
    else if (key == "detuning") c.detuning = range(v, key);
    else if (key == "seed") c.seed = static_cast<uint64_t>(integer(v, key, 0, (int64_t(1) << 53) - 1));
    else if (key == "threads") c.threads = integer(v, key, 0, 65536);
    else if (key == "device") c.device = choice(v, key, {"cpu", "cuda", "auto"});
    else
      bad(key, "unknown key (expected task, num_envs, n_steps, gate_time, max_amplitude, levels, action, clip_actions, "
               "pulse_library, observation, shots, observe_noise, reward, noise, gamma_deph, gamma_relax, detuning, seed, "
               "threads, device)");
  }
  return c;
}

void EnvConfig::set(const std::string& text) {
  const auto [key, v] = config_value::assignment(text);
  json j = to_json();
  j[key] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
