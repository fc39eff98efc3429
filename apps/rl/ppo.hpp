// PPO on the vector environments (docs/rl.md), the algorithm of CleanRL's
// ppo_continuous_action.py (and ppo.py for discrete actions; Huang et al., "The 37
// Implementation Details of PPO", ICLR blog track 2022): separate actor and critic MLPs
// (2 x 64 tanh) with orthogonal init (gain sqrt 2, actor head 0.01, critic head 1), a
// state-independent log-std, GAE, the clipped surrogate, the clipped value loss, the
// entropy bonus, per-minibatch advantage normalisation, minibatch epochs, global gradient
// clipping, Adam (eps 1e-5) with a linearly annealed learning rate.
//
// Written on qfleet::train: the runtime picks the rollout and update devices (timed, not
// assumed), its precision policy (BF16 autocast on GPUs of compute capability >= 8), its
// checkpoints with resume, its progress bar and metric meter, and its process group for
// multi-process rollouts (each process steps its share of the environments; gradients
// are summed through the group).
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "env_config.hpp"
#include "vec_env.hpp"

namespace qfleet::rl {

struct PpoConfig {
  EnvConfig env;                  // num_envs is the total over processes
  int64_t total_steps = 1000000;  // environment steps (all environments)
  int64_t rollout_steps = 0;      // steps per environment per rollout (0: one episode)
  double learning_rate = 3e-4;
  bool anneal_lr = true;
  double gamma = 0.99, gae_lambda = 0.95;
  int64_t num_minibatches = 32, update_epochs = 10;
  bool norm_adv = true;
  double clip_coef = 0.2;
  bool clip_vloss = true;
  double ent_coef = 0.0, vf_coef = 0.5, max_grad_norm = 0.5;
  double target_kl = 0;  // > 0: stop the epochs of an update when the approximate KL passes it
  int64_t hidden = 64;
  double init_log_std = 0.0;
  std::string device = "automatic";  // cpu | cuda | automatic: rollout and update devices each timed
  // eager | graph | automatic (graph on a GPU): with the environments stepped as tensors, each
  // rollout step (policy, environments, buffers) captured in a CUDA graph and replayed
  std::string rollout_mode = "automatic";
  int64_t eval_every = 10;      // rollouts between evaluations on the validation tasks
  int64_t validation_tasks = 20;
  int64_t checkpoint_every = 50;  // rollouts (0: only at the end)
  uint64_t seed = 1;
  int64_t threads = 0;
  std::string output_dir = "rl-out";

  nlohmann::json to_json() const;
  static PpoConfig from_json(const nlohmann::json& j);  // std::invalid_argument naming the key
  void set(const std::string& assignment);              // "key=value"; env keys as "env.key=value"
};

// The actor-critic of CleanRL: continuous (Gaussian, state-independent log-std) or discrete (categorical).
struct AgentImpl : torch::nn::Module {
  AgentImpl(int64_t obs_dim, int64_t n_out, bool discrete, int64_t hidden, double init_log_std);
  torch::Tensor value(const torch::Tensor& obs);
  // (action, log_prob, entropy, value); `action` given: its log-prob (no sampling).
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> act(const torch::Tensor& obs,
                                                                             const torch::Tensor& action,
                                                                             at::Generator* gen);
  torch::Tensor deterministic(const torch::Tensor& obs);  // the mean (continuous) or the mode (discrete)
  bool discrete;
  torch::nn::Sequential critic{nullptr}, actor{nullptr};
  torch::Tensor log_std;
};
TORCH_MODULE(Agent);

// Validation tasks [V, n_params]: uniform in the task's ranges from a generator seeded with
// seed + 2, which for qubit_x and cz (the meta-control app's ranges) is the draw `qfleet-meta`
// validates on with the same seed (tests/rl/test_rl.cpp checks it; compare checks each run).
torch::Tensor validation_tasks(const EnvConfig& env, int64_t count, uint64_t seed);

struct Evaluation {
  torch::Tensor fidelity;    // float64 [V]: the deterministic policy's final fidelity per task
  torch::Tensor amplitudes;  // float64 [V, n_steps, n_ctrl]: the pulses it applied
};
// The deterministic policy on the given tasks, one episode each.
Evaluation evaluate(Agent& agent, const EnvConfig& env, const torch::Tensor& tasks, const torch::Device& device);

struct TrainOptions {
  bool resume = false;
  bool progress = false;
  bool quiet = false;
  int64_t stop_after = -1;  // stop with a checkpoint after this many rollouts (tests)
  int nproc_rank = 0, nproc_world = 1;
};

// Trains; writes report.json, curve.csv, policy.pt, checkpoint.pt into output_dir. Returns the report.
nlohmann::json train_ppo(const PpoConfig& cfg, const TrainOptions& options);

}  // namespace qfleet::rl
