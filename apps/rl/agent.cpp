// The actor-critic, its evaluation on fixed tasks, the validation tasks and the
// `qfleet eval` problems of its pulses (ppo.hpp, evaluation.hpp; docs/rl.md).
#include <cmath>
#include <numbers>

#include "evaluation.hpp"
#include "common/tensor_json.hpp"
#include "qfleet/json_lindblad.hpp"
#include "ppo.hpp"

namespace qfleet::rl {

using nlohmann::json;
using torch::Tensor;

namespace {
torch::nn::Linear layer(int64_t in, int64_t out, double gain) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard ng;
  torch::nn::init::orthogonal_(l->weight, gain);
  torch::nn::init::constant_(l->bias, 0.0);
  return l;
}
}  // namespace

AgentImpl::AgentImpl(int64_t obs_dim, int64_t n_out, bool is_discrete, int64_t hidden, double init_log_std)
    : discrete(is_discrete) {
  const double g = std::sqrt(2.0);
  critic = register_module("critic", torch::nn::Sequential(layer(obs_dim, hidden, g), torch::nn::Tanh(),
                                                           layer(hidden, hidden, g), torch::nn::Tanh(), layer(hidden, 1, 1.0)));
  actor = register_module("actor", torch::nn::Sequential(layer(obs_dim, hidden, g), torch::nn::Tanh(),
                                                         layer(hidden, hidden, g), torch::nn::Tanh(), layer(hidden, n_out, 0.01)));
  if (!discrete) log_std = register_parameter("log_std", torch::full({1, n_out}, init_log_std));
}

Tensor AgentImpl::value(const Tensor& obs) { return critic->forward(obs).squeeze(-1); }

std::tuple<Tensor, Tensor, Tensor, Tensor> AgentImpl::act(const Tensor& obs, const Tensor& action, at::Generator* gen) {
  const Tensor out = actor->forward(obs);
  Tensor a = action, logp, entropy;
  if (discrete) {
    const Tensor logits = out.log_softmax(-1);
    if (!a.defined()) a = torch::multinomial(logits.exp(), 1, true, gen ? std::optional<at::Generator>(*gen) : std::nullopt).squeeze(-1);
    logp = logits.gather(-1, a.to(torch::kLong).unsqueeze(-1)).squeeze(-1);
    entropy = -(logits.exp() * logits).sum(-1);
  } else {
    const Tensor ls = log_std.expand_as(out);
    const Tensor std = ls.exp();
    if (!a.defined())
      a = out + std * torch::randn(out.sizes(), gen ? std::optional<at::Generator>(*gen) : std::nullopt, out.options());
    const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
    logp = (-(a - out).pow(2) / (2 * std.pow(2)) - ls - half_log_2pi).sum(-1);
    entropy = (0.5 + half_log_2pi + ls).sum(-1);
  }
  return {a, logp, entropy, value(obs)};
}

Tensor AgentImpl::deterministic(const Tensor& obs) {
  const Tensor out = actor->forward(obs);
  return discrete ? out.argmax(-1) : out;
}

Tensor validation_tasks(const EnvConfig& env, int64_t count, uint64_t seed) {
  const TaskSpec t = make_task(env);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed + 2);  // the meta-control app's validation seed
  const Tensor u = torch::rand({count, int64_t(t.ranges.size())}, gen, torch::kFloat64);
  std::vector<Tensor> cols;
  for (std::size_t k = 0; k < t.ranges.size(); ++k)
    cols.push_back(t.ranges[k].first + (t.ranges[k].second - t.ranges[k].first) * u.select(1, int64_t(k)));
  return torch::stack(cols, 1);
}

json meta_config_json(const EnvConfig& env, int64_t validation, uint64_t seed) {
  const TaskSpec t = make_task(env);
  if (t.name != "qubit_x" && t.name != "cz")
    throw std::invalid_argument("task " + t.name + " has no meta-control counterpart (qubit_x and cz have)");
  return {{"system", t.name == "qubit_x" ? "qubit_x" : "two_qubit_cz_xx_zz"},
          {"controls", "half_pauli"},
          {"n_segments", t.n_steps},
          {"gate_time", t.gate_time},
          {"amplitude_clamp", t.max_amplitude},
          {"gamma_deph", {t.ranges[0].first, t.ranges[0].second}},
          {"gamma_relax", {t.ranges[1].first, t.ranges[1].second}},
          {"fidelity", "average_gate"},
          {"validation_tasks", validation},
          {"seed", seed}};
}

Evaluation evaluate(Agent& agent, const EnvConfig& env_cfg, const Tensor& tasks, const torch::Device& device) {
  EnvConfig c = env_cfg;
  c.num_envs = tasks.size(0);
  c.device = "cpu";
  if (c.observation == "measurements") c.seed = env_cfg.seed;  // shots are part of the observation
  VecEnv env(c);
  torch::NoGradGuard ng;
  Tensor obs = env.reset(c.seed, tasks);
  std::vector<Tensor> amps;
  Tensor final_f;
  for (int64_t s = 0; s < env.n_steps(); ++s) {
    const Tensor a = agent->deterministic(obs.to(device)).to(torch::kCPU);
    const Tensor action = env.discrete() ? a : a.clamp(-1, 1);
    amps.push_back(env.amplitudes(action));
    auto r = env.step(action);
    obs = r.obs;
    final_f = r.final_fidelity;
  }
  return {final_f, torch::stack(amps, 1)};
}

std::vector<json> eval_problems(const EnvConfig& env, const Tensor& amplitudes, const Tensor& tasks) {
  const TaskSpec t = make_task(env);
  using json_problem::matrix_json;
  using json_problem::vector_json;
  json base = {{"kind", "lindblad"}, {"dim", t.dim}, {"segment_duration", t.gate_time / double(t.n_steps)}};
  if (!t.h0.empty()) base["H0"] = matrix_json(t.h0);
  base["controls"] = json::array();
  for (const auto& h : t.controls) base["controls"].push_back(matrix_json(h));
  if (!t.drift_terms.empty()) {
    base["drift_terms"] = json::array();
    for (const auto& h : t.drift_terms) base["drift_terms"].push_back(matrix_json(h));
  }
  if (!t.jumps.empty()) {
    base["jumps"] = json::array();
    for (const auto& l : t.jumps) base["jumps"].push_back(matrix_json(l));
  }
  if (t.gate) {
    base["gate"] = true;
    base["target"] = {{"unitary", matrix_json(t.target_unitary)}};
  } else {
    base["psi0"] = vector_json(t.initial_state);
    base["target"] = {{"state", vector_json(t.target_state)}};
  }
  std::vector<json> out;
  const Tensor tk = tasks.to(torch::kFloat64).contiguous(), am = amplitudes.to(torch::kFloat64).contiguous();
  for (int64_t b = 0; b < tk.size(0); ++b) {
    json p = base;
    p["amplitudes"] = app::tensor_json(am[b]);
    if (!t.jumps.empty()) {
      json r = json::array();
      for (int idx : t.rate_param) r.push_back(tk[b][idx].item<double>());
      p["rates"] = r;
    }
    if (!t.drift_terms.empty()) {
      json c = json::array();
      for (int idx : t.drift_param) c.push_back(tk[b][idx].item<double>());
      p["drift_coeffs"] = c;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace qfleet::rl
