// PpoConfig <-> JSON with checks (ppo.hpp; docs/rl.md lists the keys).
#include "ppo.hpp"

namespace qfleet::rl {

using nlohmann::json;

// The keys are the members' names (env: the environment's object, env_config.cpp).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PpoConfig, env, total_steps, rollout_steps, learning_rate, anneal_lr,
                                                gamma, gae_lambda, num_minibatches, update_epochs, norm_adv,
                                                clip_coef, clip_vloss, ent_coef, vf_coef, max_grad_norm, target_kl,
                                                hidden, init_log_std, device, rollout_mode, eval_every, validation_tasks,
                                                checkpoint_every, seed, threads, output_dir)

json PpoConfig::to_json() const { return json(*this); }

PpoConfig PpoConfig::from_json(const json& j) {
  if (!j.is_object()) throw app::ConfigError("PPO configuration: expected a JSON object");
  json given = json::object();
  for (const auto& [key, v] : j.items())
    given[key] = key == "env" ? EnvConfig::from_json(v).to_json() : schema().checked(key, v);
  return given.get<PpoConfig>();
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
