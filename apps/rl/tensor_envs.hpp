// The environments of a VecEnv held as tensors on one device and stepped by tensor
// operations (docs/rl.md, "On a GPU"): the step's channel from the engine's batched call
// on the device (its CUDA open-system backend for CUDA tensors), the channel applied by a
// batched matrix product, features and fidelities as one linear map of the state, task
// draws and measurement records from a generator on the device. Nothing is copied to the
// host per step but one flag: whether the actions passed the checks (a bad action is an
// error before anything changes, as on the CPU).
//
// A step can also be captured in a CUDA graph (PPO's rollout_mode = graph): advance()
// does a step's device work alone, reading nothing back and changing no host state,
// on state held in place (the same tensors from its first call on); the elapsed time is
// a tensor on the device too. It marks invalid actions instead of refusing them
// (take_bad_actions() reads the mark), and its caller counts the steps (count()).
//
// VecEnv steps through this class when its device is a GPU; the same code runs on CPU
// tensors, which is how it is tested against the host loop without a GPU. Its random
// draws come from one Philox (CUDA) / mt19937 (CPU) generator seeded with `seed`, not
// from the host loop's per-environment streams: same seed, same device and same N give
// the same episodes, but not the same draws as the CPU.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "env_config.hpp"
#include "observe.hpp"
#include "qfleet/torch.hpp"
#include "tasks.hpp"

namespace qfleet::rl {

struct StepResult;

class TensorEnvs {
 public:
  // `library`: the discrete actions' rows (n_ctrl values each), already checked.
  TensorEnvs(const TaskSpec& task, const EnvConfig& cfg, const Observer& observer,
             const std::vector<std::vector<double>>& library, torch::Device device);

  // As VecEnv's (which checks `tasks` and the actions' shapes and types first).
  torch::Tensor reset(std::optional<uint64_t> seed, const torch::Tensor& tasks);
  StepResult step(const torch::Tensor& actions);  // actions checked by the caller (actions_valid)
  // A step without a check or a host read (capturable): `last` says whether it ends the
  // episodes (the count's business: the step after n_steps - 1 others). An action out of
  // range or not finite marks the step, which runs on with it replaced (NaN by 0,
  // infinities by +-1, discrete indices clamped into the library). Whether reset() was
  // given tasks must not change between a capture and its replays (the branch is captured).
  StepResult advance(const torch::Tensor& actions, bool last);
  void count(bool last) { t_ = last ? 0 : t_ + 1; }
  // Whether an action given to advance() since the last call was invalid (one value read
  // back); clears the mark.
  bool take_bad_actions();
  at::Generator generator() const { return gen_; }  // the task draws' and the shots'
  // Whether every action is in range and finite (one value read from the device).
  bool actions_valid(const torch::Tensor& actions) const;
  torch::Tensor invalid(const torch::Tensor& actions) const;  // bool, 0-dim on the device
  torch::Tensor amplitudes(const torch::Tensor& actions) const;  // float64 [N, n_ctrl] on the device
  torch::Tensor tasks() const { return params_.clone(); }
  torch::Tensor fidelity() const { return fid_.clone(); }
  torch::Tensor elapsed() const;
  std::string execution() const;

 private:
  StepResult apply(const torch::Tensor& actions, bool last);  // the device work of a step
  torch::Tensor draw_tasks();
  torch::Tensor start_episodes(const torch::Tensor& params);  // returns linear() of the new states
  // [M, n_phys + 1]: the exact features and (last column) the fidelity of M states.
  torch::Tensor linear(const torch::Tensor& state) const;
  torch::Tensor sampled(torch::Tensor x);
  // The observations from linear()'s output, the time and (observe_noise) the tasks.
  torch::Tensor observe(const torch::Tensor& lin);

  TaskSpec task_;
  EnvConfig cfg_;
  ObsKind kind_;
  int64_t shots_, n_, d_, len_, n_phys_;
  bool closed_, discrete_;
  torch::Device device_;
  torch::TensorOptions real_, cx_;
  c10::intrusive_ptr<nn::OpenSystemProgram> program_;  // one segment, the step's channel
  torch::Tensor library_;         // [n_actions, n_ctrl], amplitudes
  torch::Tensor map_, offset_;    // [2 len, n_phys + 1], [n_phys + 1]: features and fidelity of the state
  torch::Tensor initial_;         // [len]: the episodes' first state
  torch::Tensor lo_, span_;       // [n_params]: the task ranges
  torch::Tensor rate_idx_, drift_idx_;
  at::Generator gen_;
  torch::Tensor fixed_;           // [N, n_params] tasks kept by autoresets (undefined: draws)
  // In place from construction on (a captured step reads and writes these very tensors),
  // the state from the first advance() on (step() alone replaces it: faster on the CPU):
  torch::Tensor params_, rates_, drift_, state_, fid_;  // [N, P], [N, nj], [N, nd], [N, len], [N]
  torch::Tensor t_dev_;           // float64, 0-dim: t_ on the device (the observations' time)
  torch::Tensor bad_;             // bool, 0-dim: advance() was given an invalid action
  bool pinned_ = false;           // advance() was called: state_ keeps its address
  int64_t t_ = 0;                 // segments applied: the same in every environment (fixed-length episodes, reset together)
};

}  // namespace qfleet::rl
