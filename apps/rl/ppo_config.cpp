// PpoConfig <-> JSON with checks (ppo.hpp; docs/rl.md lists the keys).
#include <cmath>
#include <stdexcept>

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
  if (!j.is_object()) throw std::invalid_argument("PPO configuration: expected a JSON object");
  PpoConfig c;
  using config_value::boolean;
  using config_value::integer;
  const auto num = config_value::number;
  for (const auto& [k, v] : j.items()) {
    if (k == "env") c.env = EnvConfig::from_json(v);
    else if (k == "total_steps") c.total_steps = integer(v, k, 1, int64_t(1) << 50);
    else if (k == "rollout_steps") c.rollout_steps = integer(v, k, 0, 1000000);
    else if (k == "learning_rate") c.learning_rate = num(v, k, 0, 10);
    else if (k == "anneal_lr") c.anneal_lr = boolean(v, k);
    else if (k == "gamma") c.gamma = num(v, k, 0, 1);
    else if (k == "gae_lambda") c.gae_lambda = num(v, k, 0, 1);
    else if (k == "num_minibatches") c.num_minibatches = integer(v, k, 1, 1000000);
    else if (k == "update_epochs") c.update_epochs = integer(v, k, 1, 10000);
    else if (k == "norm_adv") c.norm_adv = boolean(v, k);
    else if (k == "clip_coef") c.clip_coef = num(v, k, 0, 10);
    else if (k == "clip_vloss") c.clip_vloss = boolean(v, k);
    else if (k == "ent_coef") c.ent_coef = num(v, k, 0, 10);
    else if (k == "vf_coef") c.vf_coef = num(v, k, 0, 100);
    else if (k == "max_grad_norm") c.max_grad_norm = num(v, k, 0, 1e6);
    else if (k == "target_kl") c.target_kl = num(v, k, 0, 100);
    else if (k == "hidden") c.hidden = integer(v, k, 1, 65536);
    else if (k == "init_log_std") c.init_log_std = num(v, k, -20, 5);
    else if (k == "device") {
      if (!v.is_string() || (v != "cpu" && v != "cuda" && v != "auto")) throw std::invalid_argument("device: expected cpu, cuda or auto");
      c.device = v.get<std::string>();
    } else if (k == "eval_every") c.eval_every = integer(v, k, 1, 1000000000);
    else if (k == "validation_tasks") c.validation_tasks = integer(v, k, 1, 1000000);
    else if (k == "checkpoint_every") c.checkpoint_every = integer(v, k, 0, 1000000000);
    else if (k == "seed") c.seed = uint64_t(integer(v, k, 0, (int64_t(1) << 53) - 1));
    else if (k == "threads") c.threads = integer(v, k, 0, 65536);
    else if (k == "output_dir") {
      if (!v.is_string() || v.get<std::string>().empty()) throw std::invalid_argument("output_dir: expected a path");
      c.output_dir = v.get<std::string>();
    } else {
      throw std::invalid_argument(k + ": unknown key (PPO keys: total_steps, rollout_steps, learning_rate, anneal_lr, gamma, "
                                      "gae_lambda, num_minibatches, update_epochs, norm_adv, clip_coef, clip_vloss, ent_coef, "
                                      "vf_coef, max_grad_norm, target_kl, hidden, init_log_std, device, eval_every, "
                                      "validation_tasks, checkpoint_every, seed, threads, output_dir; environment keys as env.KEY)");
    }
  }
  return c;
}

void PpoConfig::set(const std::string& text) {
  const auto [key, v] = config_value::assignment(text);
  if (key.rfind("env.", 0) == 0) {
    env.set(text.substr(4));
    return;
  }
  json j = to_json();
  j[key] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
