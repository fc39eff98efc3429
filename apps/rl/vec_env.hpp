// N quantum-control environments stepped together (docs/rl.md): each environment is one
// task of the configuration's distribution (its own noise rates and drift), each step
// applies one control segment to all N with one batched engine call, and an environment
// whose episode ends is reset in the same step (Gymnasium's SAME_STEP autoreset: the
// returned observation starts the next episode; the last one is in final_obs).
//
// C++ agents use this class directly on LibTorch tensors; Python reaches it as a
// Gymnasium VectorEnv (python/qfleet/rl, torch.classes.qfleet_rl.VecEnv).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "env_config.hpp"
#include "observe.hpp"
#include "qfleet/open_system.hpp"
#include "tasks.hpp"
#include "tensor_envs.hpp"

namespace qfleet::rl {

struct StepResult {
  torch::Tensor obs;             // float32 [N, obs_dim]: the next observation (a new episode's first where it ended)
  torch::Tensor reward;          // float32 [N]
  torch::Tensor terminated;      // bool [N]: the episode's last segment was applied
  torch::Tensor truncated;       // bool [N]: always false (episodes have a fixed length)
  torch::Tensor final_obs;       // float32 [N, obs_dim]: the ended episodes' last observations (zero elsewhere)
  torch::Tensor final_fidelity;  // float64 [N]: the ended episodes' fidelity (NaN elsewhere)
  torch::Tensor fidelity;        // float64 [N]: every environment's fidelity before any reset this step
};

class VecEnv {
 public:
  explicit VecEnv(const EnvConfig& config);

  const EnvConfig& config() const { return cfg_; }
  const TaskSpec& task() const { return task_; }
  int64_t num_envs() const { return n_; }
  int64_t obs_dim() const { return obs_dim_; }
  int64_t n_controls() const { return int64_t(task_.controls.size()); }
  int64_t n_actions() const { return int64_t(library_.size()); }  // discrete: the pulse library's size
  int64_t n_params() const { return int64_t(task_.ranges.size()); }
  int64_t n_steps() const { return task_.n_steps; }
  double segment_duration() const { return task_.gate_time / double(task_.n_steps); }
  bool discrete() const { return discrete_; }
  const std::vector<std::vector<double>>& pulse_library() const { return library_; }
  torch::Device device() const { return device_; }
  bool tensor_stepping() const { return tensors_ != nullptr; }  // stepped by TensorEnvs (config's stepping)
  TensorEnvs* tensor_envs() { return tensors_.get(); }           // (null: the host loop)
  std::string describe() const;  // one line: task, sizes, engine execution

  // Starts a new episode everywhere. seed: env i's stream restarts at seed + i. tasks
  // [N, n_params] (any device, float): these tasks instead of draws, kept by later
  // autoresets until a reset without them (evaluation on fixed tasks). Returns obs.
  torch::Tensor reset(std::optional<uint64_t> seed = std::nullopt, const torch::Tensor& tasks = {});
  // actions: continuous [N, n_ctrl] float (clipped to [-1, 1] unless clip_actions = false,
  // then out of range is an error), discrete [N] integer in [0, n_actions). NaN, infinities,
  // wrong shapes or dtypes: std::invalid_argument, and nothing changes.
  StepResult step(const torch::Tensor& actions);

  // The physical amplitudes [N, n_ctrl] (float64) the actions apply (the same checks).
  torch::Tensor amplitudes(const torch::Tensor& actions) const;
  torch::Tensor tasks() const;     // float64 [N, n_params], the current episodes' tasks
  torch::Tensor fidelity() const;  // float64 [N], now
  torch::Tensor elapsed() const;   // int64 [N], segments applied in the current episodes
  // The tensors above, StepResult's and reset's are on device() when stepped as tensors;
  // the host loop returns tasks, fidelities and elapsed on the CPU, the rest on device().

 private:
  void draw_task(int64_t i);
  void start_episode(int64_t i);
  void observe(int64_t i, float* out);
  // The fewest environments a thread is handed at once: about 32k complex multiply-adds of a
  // step's state update (two threads on 128 one-qubit environments cost more than they save).
  int64_t envs_per_chunk() const;
  void check_shape(const torch::Tensor& actions) const;
  std::vector<double> checked_amplitudes(const torch::Tensor& actions) const;
  void check_actions_as_tensors(const torch::Tensor& actions) const;

  EnvConfig cfg_;
  TaskSpec task_;
  Observer observer_;
  OpenProgram program_;  // one segment, propagating the step's channel (superoperator, or unitary when closed)
  torch::Device device_;
  int64_t n_, obs_dim_, d_, threads_;
  bool discrete_, closed_;
  std::vector<std::vector<double>> library_;
  std::vector<std::mt19937_64> rng_;
  std::vector<double> params_, fixed_tasks_;
  std::vector<double> rates_, drift_;  // engine arguments [N, n_jumps], [N, n_drift]
  std::vector<Cx> state_;              // per env: S [d^4] or vec(rho) [d^2]
  std::vector<Cx> step_out_, scratch_;
  std::vector<int64_t> t_;
  std::vector<double> fid_;
  std::unique_ptr<TensorEnvs> tensors_;  // set: every call goes there (no host state above is used)
};

}  // namespace qfleet::rl
