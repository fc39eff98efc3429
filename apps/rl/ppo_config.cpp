// PpoConfig <-> JSON with checks (ppo.hpp; docs/rl.md lists the keys).
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
  app::read_if_present(j, "total_steps", c.total_steps);
  app::read_if_present(j, "rollout_steps", c.rollout_steps);
  app::read_if_present(j, "learning_rate", c.learning_rate);
  app::read_if_present(j, "anneal_lr", c.anneal_lr);
  app::read_if_present(j, "gamma", c.gamma);
  app::read_if_present(j, "gae_lambda", c.gae_lambda);
  app::read_if_present(j, "num_minibatches", c.num_minibatches);
  app::read_if_present(j, "update_epochs", c.update_epochs);
  app::read_if_present(j, "norm_adv", c.norm_adv);
  app::read_if_present(j, "clip_coef", c.clip_coef);
  app::read_if_present(j, "clip_vloss", c.clip_vloss);
  app::read_if_present(j, "ent_coef", c.ent_coef);
  app::read_if_present(j, "vf_coef", c.vf_coef);
  app::read_if_present(j, "max_grad_norm", c.max_grad_norm);
  app::read_if_present(j, "target_kl", c.target_kl);
  app::read_if_present(j, "hidden", c.hidden);
  app::read_if_present(j, "init_log_std", c.init_log_std);
  app::read_if_present(j, "device", c.device);
  app::read_if_present(j, "eval_every", c.eval_every);
  app::read_if_present(j, "validation_tasks", c.validation_tasks);
  app::read_if_present(j, "checkpoint_every", c.checkpoint_every);
  app::read_if_present(j, "seed", c.seed);
  app::read_if_present(j, "threads", c.threads);
  app::read_if_present(j, "output_dir", c.output_dir);
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
