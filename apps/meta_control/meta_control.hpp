// Meta-learned robust quantum control on qfleet (docs/meta_control.md).
//
// A policy network maps a task's noise rates to piecewise-constant control
// pulses; it is meta-trained (FOMAML, second-order MAML or Reptile) over a
// distribution of noisy qubits so that a few SGD steps adapt it to a new task.
// Every meta-batch is simulated as one batched engine call: the tasks' inner
// steps run together on per-task fast weights [T, P].
//
// This library is the app, once: the qfleet-meta binary is a thin main over
// cli_main, and `python -m qfleet.meta_control` reaches the same functions
// through the torch extension (torch_ops.cpp, the operators torch.ops.qfleet_meta.*).
// The configuration schema and presets are apps/meta_control/config.json.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"

namespace qfleet::meta {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The schema, presets and default preset (config.json, embedded at build time).
const nlohmann::json& schema();

// Resolves a configuration: the key defaults, then the preset (the file's
// "preset" key, else `preset`, else the default preset), then the file's keys,
// then the `overrides` ("key=value", value parsed as JSON, else taken as a string).
// Unknown keys, wrong types and out-of-range values throw ConfigError naming the key.
nlohmann::json resolve_config(const nlohmann::json& file, const std::string& preset,
                              const std::vector<std::string>& overrides);
nlohmann::json load_config_file(const std::string& path);  // ConfigError when missing/invalid

struct Config {
  std::string system, algorithm, fidelity, solver, precision, device, output_dir, preset;
  int64_t iterations, meta_batch, inner_steps, hidden_width, hidden_layers, n_segments, validation_tasks,
      validate_every, adapt_steps, robust_iterations, grape_iterations, checkpoint_every, threads;
  uint64_t seed;
  double inner_lr, meta_lr, amplitude_scale, gate_time, dt, robust_lr, grape_lr;
  double deph_lo, deph_hi, relax_lo, relax_hi;
  std::vector<std::string> input_states;
  nlohmann::json json;  // the resolved configuration
};
Config make_config(const nlohmann::json& resolved);

// The physics: the engine programs whose mean fidelity is a task's figure of merit.
class Problem {
 public:
  explicit Problem(const Config& cfg);
  int qubits() const { return qubits_; }
  int dim() const { return 1 << qubits_; }
  int n_segments() const { return n_seg_; }
  int n_controls() const { return n_ctrl_; }
  int n_jumps() const { return 2 * qubits_; }
  double segment_duration() const { return seg_dt_; }
  const std::vector<std::string>& control_names() const { return control_names_; }
  torch::ScalarType dtype() const { return dtype_; }
  std::string fidelity_definition() const;
  // rates [T, 2] = (gamma_deph, gamma_relax) -> the engine's per-task rates [T, n_jumps].
  torch::Tensor jump_rates(const torch::Tensor& noise) const;
  // Differentiable fidelity [T] of amplitudes [T, n_seg, n_ctrl] (or shared [n_seg, n_ctrl]).
  torch::Tensor fidelity(const torch::Tensor& amplitudes, const torch::Tensor& noise) const;
  // `qfleet eval` problems (docs/cli.md) that reproduce fidelity(): one per program.
  std::vector<nlohmann::json> eval_problems(const torch::Tensor& amplitudes, const torch::Tensor& noise) const;

 private:
  int qubits_, n_seg_, n_ctrl_;
  double seg_dt_;
  torch::ScalarType dtype_;
  std::vector<std::string> control_names_;
  std::vector<nlohmann::json> models_;  // the eval JSON of each program, without per-task arrays
  std::vector<c10::intrusive_ptr<nn::OpenSystemProgram>> programs_;
};

// The policy: features [T, 2] -> amplitudes [T, n_seg, n_ctrl], an MLP whose
// parameters are one flat vector (per layer W [in, out] row-major, then b [out]).
class Policy {
 public:
  Policy(int64_t in, int64_t width, int64_t layers, int64_t out, double scale);
  int64_t size() const { return size_; }
  // Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias (torch.nn.Linear's range).
  torch::Tensor init(at::Generator& gen, torch::ScalarType dtype) const;
  // params [P] (shared) or [T, P] (per task).
  torch::Tensor forward(const torch::Tensor& params, const torch::Tensor& features) const;
  // The same on the parameters split into layers (W0, b0, W1, b1, ...; views of the flat vector):
  // autograd then sees one leaf per layer, so a backward pass writes each layer's gradient once
  // instead of scattering every slice's gradient into a zero-filled copy of the whole vector.
  std::vector<torch::Tensor> split(const torch::Tensor& params) const;
  torch::Tensor forward(const std::vector<torch::Tensor>& layers, const torch::Tensor& features) const;

 private:
  std::vector<int64_t> dims_;
  int64_t size_ = 0;
  double scale_;
};

// One torch::optim::Adam step on `param` (in place) with a gradient computed outside
// autograd's graph (the meta-gradient, GRAPE's per-task gradients).
void adam_step(torch::optim::Adam& opt, const torch::Tensor& param, const torch::Tensor& grad);

struct CurvePoint {
  int64_t iteration;
  double train_fidelity;     // the meta-batch's mean fidelity after the inner steps
  double val_before, val_after;  // validation mean fidelity before / after adapt_steps
};

struct Progress {
  virtual ~Progress() = default;
  virtual void update(int64_t done, int64_t total, double val_after) = 0;
  virtual void finish() {}
};

struct RunOptions {
  bool resume = false;
  int64_t stop_after = -1;     // stop (with a checkpoint) after this many iterations, for tests and time limits
  Progress* progress = nullptr;
  bool quiet = false;
  std::string app = "qfleet-meta";  // the entry point, the report's "app"
};

// The progress bar the command line draws: ETA and the running validation fidelity on
// stderr, redrawn in place on a terminal, one line per 10% otherwise (logs, CI).
std::unique_ptr<Progress> make_progress_bar();

// The command line (options in docs/meta_control.md): `prog` names the entry point in
// messages and the report; `args` excludes the program name. Returns the exit status
// (0 done, 1 failed, 2 bad configuration or option) and never throws.
int cli_main(const std::string& prog, const std::vector<std::string>& args);

struct RunResult {
  nlohmann::json report;
  bool complete = false;  // false when stopped by stop_after before the end
};

// Trains, runs the baselines, writes report.json, pulses.csv/json, eval/*.json and
// checkpoint.json into cfg.output_dir. Throws ConfigError for bad configurations.
RunResult run(const Config& cfg, const RunOptions& options);

class Trainer;

// One configuration's meta-learning step, compiled once (its engine programs, with their
// GPU copies when device = cuda): `gradient` is the meta-gradient a training step feeds
// to Adam, for policy parameters `theta` [P] and tasks `noise` [T, 2] = (gamma_deph,
// gamma_relax); `objective` is what it approximates, the mean over tasks of 1 - F after
// inner_steps SGD steps (maml: its gradient; fomaml: the gradient at the adapted
// parameters; reptile: theta - mean phi). Both run where theta and noise are: CUDA
// tensors (device = cuda) keep the whole step on the GPU, on PyTorch's current stream,
// with no host synchronisation in `gradient`, so a training step that calls it can be
// captured in a CUDA graph (tests/python/test_cuda_tensors.py).
class MetaStep {
 public:
  explicit MetaStep(const Config& cfg);
  ~MetaStep();
  MetaStep(const MetaStep&) = delete;
  MetaStep& operator=(const MetaStep&) = delete;
  torch::Tensor gradient(const torch::Tensor& theta, const torch::Tensor& noise);
  double objective(const torch::Tensor& theta, const torch::Tensor& noise);

 private:
  Config cfg_;  // the trainer keeps a reference
  std::unique_ptr<Trainer> trainer_;
};

// One-off calls of the same (each compiles the programs again).
torch::Tensor meta_gradient(const Config& cfg, const torch::Tensor& theta, const torch::Tensor& noise);
double meta_objective(const Config& cfg, const torch::Tensor& theta, const torch::Tensor& noise);
int64_t policy_size(const Config& cfg);
// The most processes a run may use (--nproc, torchrun): min(meta_batch, 8); the
// meta-gradient's sum runs over that many fixed blocks of tasks whatever the count.
int64_t max_processes(const Config& cfg);

// Atomic file write (a temporary next to the file, fsync, rename): the runtime's.
using qfleet::train::write_file_atomic;

}  // namespace qfleet::meta
