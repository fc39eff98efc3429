// PpoConfig <-> JSON with checks (ppo.hpp; docs/rl.md lists the keys).
#include <type_traits>

#include "ppo.hpp"

namespace qfleet::rl {

using nlohmann::json;

json PpoConfig::to_json() const {
  return {{"env", env.to_json()}, {"total_steps", total_steps}, {"rollout_steps", rollout_steps},
          {"learning_rate", learning_rate}, {"anneal_lr", anneal_lr}, {"gamma", gamma}, {"gae_lambda", gae_lambda},
          {"num_minibatches", num_minibatches}, {"update_epochs", update_epochs}, {"norm_adv", norm_adv},
          {"clip_coef", clip_coef}, {"clip_vloss", clip_vloss}, {"ent_coef", ent_coef}, {"vf_coef", vf_coef},
          {"max_grad_norm", max_grad_norm}, {"target_kl", target_kl}, {"hidden", hidden},
          {"init_log_std", init_log_std}, {"device", device}, {"eval_every", eval_every},
          {"validation_tasks", validation_tasks}, {"checkpoint_every", checkpoint_every}, {"seed", seed},
          {"threads", threads}, {"output_dir", output_dir}};
}

PpoConfig PpoConfig::from_json(const json& j) {
  if (!j.is_object()) throw app::ConfigError("PPO configuration: expected a JSON object");
  PpoConfig c;
  for (const auto& [key, v] : j.items()) {
    if (key == "env") c.env = EnvConfig::from_json(v);
    else schema().check(key, v);
  }
  auto read = [&](const char* key, auto& field) {
    if (j.contains(key)) field = j[key].get<std::decay_t<decltype(field)>>();
  };
  read("total_steps", c.total_steps);
  read("rollout_steps", c.rollout_steps);
  read("learning_rate", c.learning_rate);
  read("anneal_lr", c.anneal_lr);
  read("gamma", c.gamma);
  read("gae_lambda", c.gae_lambda);
  read("num_minibatches", c.num_minibatches);
  read("update_epochs", c.update_epochs);
  read("norm_adv", c.norm_adv);
  read("clip_coef", c.clip_coef);
  read("clip_vloss", c.clip_vloss);
  read("ent_coef", c.ent_coef);
  read("vf_coef", c.vf_coef);
  read("max_grad_norm", c.max_grad_norm);
  read("target_kl", c.target_kl);
  read("hidden", c.hidden);
  read("init_log_std", c.init_log_std);
  read("device", c.device);
  read("eval_every", c.eval_every);
  read("validation_tasks", c.validation_tasks);
  read("checkpoint_every", c.checkpoint_every);
  read("seed", c.seed);
  read("threads", c.threads);
  read("output_dir", c.output_dir);
  return c;
}

void PpoConfig::set(const std::string& text) {
  if (text.rfind("env.", 0) == 0) {
    env.set(text.substr(4));
    return;
  }
  auto [key, v] = schema().assignment(text);
  json j = to_json();
  j[key] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
