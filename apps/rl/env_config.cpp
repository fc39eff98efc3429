// EnvConfig <-> JSON, every value checked by the app's schema (env_config.hpp;
// config.json's env.KEY keys, listed in docs/rl.md).
#include "env_config.hpp"

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
  app::read_if_present(j, "task", c.task);
  app::read_if_present(j, "num_envs", c.num_envs);
  app::read_if_present(j, "n_steps", c.n_steps);
  app::read_if_present(j, "gate_time", c.gate_time);
  app::read_if_present(j, "max_amplitude", c.max_amplitude);
  app::read_if_present(j, "levels", c.levels);
  app::read_if_present(j, "action", c.action);
  app::read_if_present(j, "clip_actions", c.clip_actions);
  app::read_if_present(j, "pulse_library", c.pulse_library);
  app::read_if_present(j, "observation", c.observation);
  app::read_if_present(j, "shots", c.shots);
  app::read_if_present(j, "observe_noise", c.observe_noise);
  app::read_if_present(j, "reward", c.reward);
  app::read_if_present(j, "noise", c.noise);
  app::read_if_present(j, "gamma_deph", c.gamma_deph);
  app::read_if_present(j, "gamma_relax", c.gamma_relax);
  app::read_if_present(j, "detuning", c.detuning);
  app::read_if_present(j, "seed", c.seed);
  app::read_if_present(j, "threads", c.threads);
  app::read_if_present(j, "device", c.device);
  return c;
}

void EnvConfig::set(const std::string& text) {
  auto [key, v] = schema().assignment("env." + text);
  json j = to_json();
  j[key.substr(4)] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
