// EnvConfig <-> JSON, every value checked by the app's schema (env_config.hpp;
// config.json's env.KEY keys, listed in docs/rl.md).
#include "env_config.hpp"

#include <type_traits>

#include "rl_config.hpp"  // generated: kConfigJson, the text of config.json

namespace qfleet::rl {

using nlohmann::json;

const app::Schema& schema() {
  static const app::Schema s(kConfigJson);
  return s;
}

json EnvConfig::to_json() const {
  return {{"task", task}, {"num_envs", num_envs}, {"n_steps", n_steps}, {"gate_time", gate_time},
          {"max_amplitude", max_amplitude}, {"levels", levels}, {"action", action}, {"clip_actions", clip_actions},
          {"pulse_library", pulse_library}, {"observation", observation}, {"shots", shots},
          {"observe_noise", observe_noise}, {"reward", reward}, {"noise", noise}, {"gamma_deph", gamma_deph},
          {"gamma_relax", gamma_relax}, {"detuning", detuning}, {"seed", seed}, {"threads", threads},
          {"device", device}};
}

EnvConfig EnvConfig::from_json(const json& j) {
  if (!j.is_object()) throw app::ConfigError("environment configuration: expected a JSON object");
  for (const auto& [key, v] : j.items()) schema().check("env." + key, v);
  EnvConfig c;
  auto read = [&](const char* key, auto& field) {
    if (j.contains(key)) field = j[key].get<std::decay_t<decltype(field)>>();
  };
  read("task", c.task);
  read("num_envs", c.num_envs);
  read("n_steps", c.n_steps);
  read("gate_time", c.gate_time);
  read("max_amplitude", c.max_amplitude);
  read("levels", c.levels);
  read("action", c.action);
  read("clip_actions", c.clip_actions);
  read("pulse_library", c.pulse_library);
  read("observation", c.observation);
  read("shots", c.shots);
  read("observe_noise", c.observe_noise);
  read("reward", c.reward);
  read("noise", c.noise);
  read("gamma_deph", c.gamma_deph);
  read("gamma_relax", c.gamma_relax);
  read("detuning", c.detuning);
  read("seed", c.seed);
  read("threads", c.threads);
  read("device", c.device);
  return c;
}

void EnvConfig::set(const std::string& text) {
  auto [key, v] = schema().assignment("env." + text);
  json j = to_json();
  j[key.substr(4)] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
