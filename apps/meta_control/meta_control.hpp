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

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/output_folder.hpp"
#include "common/settings.hpp"
#include "common/tensor_json.hpp"
#include "qfleet/torch.hpp"
#include "qfleet/train.hpp"

namespace qfleet::meta {

using app::ConfigError;  // (apps/common/config.hpp)

// The schema, presets and default preset (config.json, embedded at build time).
const nlohmann::json& schema();
const app::Schema& config_schema();  // the same, as the apps' common reader

// Resolves a configuration: the key defaults, then the preset (the file's
// "preset" key, else `preset`, else the default preset), then the file's keys,
// then the `overrides` ("key=value", the value read as app::Schema::value_from_text does).
// Unknown keys, wrong types and out-of-range values throw ConfigError naming the key.
nlohmann::json resolve_config(const nlohmann::json& file, const std::string& preset,
                              const std::vector<std::string>& overrides);
nlohmann::json load_config_file(const std::string& path);  // ConfigError when missing/invalid

// Every key of config.json, in its order, with its default (app::setting binds each one:
// config.cpp's settings(); the meta tests check the defaults are the schema's).
struct Config {
  std::string system = "qubit_x";
  std::string controls = "automatic";
  double coupling = 2.0;
  std::string algorithm = "fomaml";
  int64_t iterations = 300;
  int64_t meta_batch = 32;
  int64_t inner_steps = 5;
  double inner_lr = 0.01;
  double meta_lr = 0.001;
  std::string meta_optimizer = "adam";
  double weight_decay = 0.01;
  std::string meta_lr_schedule = "constant";
  std::string meta_step = "automatic";
  double meta_lr_min = 1e-05;
  double meta_grad_clip = 0.0;
  double inner_grad_clamp = 0.0;
  int64_t hidden_width = 128;
  int64_t hidden_layers = 2;
  bool layer_norm = false;
  std::string init = "uniform";
  double init_gain = 0.5;
  double output_init_gain = 0.5;
  std::string features = "scaled";
  double amplitude_scale = 4.0;
  std::string output = "linear";
  double amplitude_clamp = 0.0;
  int64_t n_segments = 0;
  double gate_time = 1.0;
  std::array<double, 2> gamma_deph = {0.02, 0.15};
  std::array<double, 2> gamma_relax = {0.01, 0.08};
  std::string task_noise = "shared";
  double correlation_spread = 0.2;
  double ood_factor = 7.0;
  double ood_spread = 0.15;
  std::string fidelity = "average_gate";
  std::vector<std::string> input_states;
  std::string solver = "exact";
  double dt = 0.0;
  std::string dt_rule = "ceil";
  bool renormalize_trace = false;
  std::string precision = "complex128";
  int64_t validation_tasks = 20;
  int64_t validate_every = 25;
  int64_t adapt_steps = 5;
  std::string adapt_optimizer = "sgd";
  double adapt_lr = 0.0;
  double adapt_grad_clip = 0.0;
  int64_t robust_iterations = 500;
  double robust_lr = 0.05;
  int64_t grape_iterations = 1500;
  double grape_lr = 0.02;
  uint64_t seed = 1;
  int64_t threads = 0;
  std::string device = "automatic";
  int64_t checkpoint_every = 100;
  std::string checkpoint_policy = "final";
  int64_t select_every = 0;
  std::string output_dir = "meta-control-out";
  std::string preset;   // the resolved configuration's preset
  nlohmann::json json;  // the resolved configuration
};
// The table binding each key to its field (config.cpp): what make_config reads.
const std::vector<app::Setting<Config>>& settings();
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
  // A task's noise: (gamma_deph, gamma_relax) shared by every qubit, or per qubit
  // (task_noise = per_qubit_correlated) (gamma_deph_0, gamma_relax_0, gamma_deph_1, gamma_relax_1).
  int n_noise() const { return per_qubit_noise_ ? 2 * qubits_ : 2; }
  double segment_duration() const { return seg_dt_; }
  const std::vector<std::string>& control_names() const { return control_names_; }
  torch::ScalarType dtype() const { return dtype_; }
  std::string fidelity_definition() const;
  // noise [T, n_noise] -> the engine's per-task rates [T, n_jumps].
  torch::Tensor jump_rates(const torch::Tensor& noise) const;
  // Differentiable fidelity [T] of amplitudes [T, n_seg, n_ctrl] (or shared [n_seg, n_ctrl]).
  torch::Tensor fidelity(const torch::Tensor& amplitudes, const torch::Tensor& noise) const;
  // `qfleet eval` problems (docs/cli.md) that reproduce fidelity(): one per program.
  std::vector<nlohmann::json> eval_problems(const torch::Tensor& amplitudes, const torch::Tensor& noise) const;

 private:
  int qubits_, n_seg_, n_ctrl_;
  bool per_qubit_noise_, renormalize_;
  double seg_dt_;
  torch::ScalarType dtype_;
  std::vector<std::string> control_names_;
  std::vector<nlohmann::json> models_;  // the eval JSON of each program, without per-task arrays
  std::vector<c10::intrusive_ptr<nn::OpenSystemProgram>> programs_;
  // renormalize_trace: per input state, the populations <i|rho(T)|i> whose sum is tr rho(T).
  std::vector<std::vector<c10::intrusive_ptr<nn::OpenSystemProgram>>> population_programs_;
};

// Draws n tasks [n, n_noise] of the configuration's distribution (uniform in the rate
// ranges; per_qubit_correlated: qubit 1 = qubit 0 times U(1 - s, 1 + s) per rate).
torch::Tensor sample_tasks(const Config& cfg, at::Generator& gen, int64_t n, torch::ScalarType dtype);
// Tasks around a centre (gamma_deph, gamma_relax), each rate uniform within +-spread relative
// (the paper's out-of-distribution sets); per-qubit noise: qubit 1 correlated as in sample_tasks.
torch::Tensor tasks_around(const Config& cfg, at::Generator& gen, int64_t n, double deph, double relax,
                           double spread, torch::ScalarType dtype);
// The policy's inputs [T, n_features] for noise [T, n_noise] (features = scaled or paper).
torch::Tensor task_features(const Config& cfg, const torch::Tensor& noise);
int64_t n_features(const Config& cfg);

// The policy: features [T, n_features] -> amplitudes [T, n_seg, n_ctrl], an MLP whose
// parameters are one flat vector: per layer W [in, out] row-major, then b [out], then for a
// hidden layer with LayerNorm its scale [out] and shift [out].
struct PolicySpec {
  int64_t in, width, layers, out;
  bool layer_norm = false;
  std::string init = "uniform";  // or "orthogonal"
  double init_gain = 0.5, output_init_gain = 0.5;
  std::string output = "linear";  // or "tanh"
  double scale = 1.0, clamp = 0.0;  // amplitude = scale x linear output (clamped to +-clamp if > 0), or scale x tanh
};
PolicySpec policy_spec(const Config& cfg, const Problem& problem);

class Policy {
 public:
  explicit Policy(PolicySpec spec);
  int64_t size() const { return size_; }
  const PolicySpec& spec() const { return spec_; }
  // uniform: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias (torch.nn.Linear's range);
  // orthogonal: torch.nn.init.orthogonal_'s construction (QR of a Gaussian matrix, signs of R's
  // diagonal) with the gains, zero biases; LayerNorm scale 1, shift 0.
  torch::Tensor init(at::Generator& gen, torch::ScalarType dtype) const;
  // params [P] (shared) or [T, P] (per task).
  torch::Tensor forward(const torch::Tensor& params, const torch::Tensor& features) const;
  // The same on the parameters split into pieces (W0, b0[, g0, s0], W1, ...; views of the flat
  // vector): autograd then sees one leaf per piece, so a backward pass writes each piece's
  // gradient once instead of scattering every slice's gradient into a zero-filled copy of the whole vector.
  std::vector<torch::Tensor> split(const torch::Tensor& params) const;
  torch::Tensor forward(const std::vector<torch::Tensor>& layers, const torch::Tensor& features) const;
  // The output map on raw outputs (the same bound applies to GRAPE's and the robust pulse's amplitudes).
  torch::Tensor amplitudes(const torch::Tensor& raw) const;
  // Projects free amplitudes onto the policy's range (tanh: +-scale; clamp: +-clamp).
  torch::Tensor bound(const torch::Tensor& amplitudes) const;
  // That bound's magnitude b (amplitudes within [-b, b]); 0 where amplitudes are unbounded.
  double amplitude_bound() const;

 private:
  PolicySpec spec_;
  std::vector<int64_t> dims_;
  int64_t size_ = 0;
};

// One torch::optim::Adam step on `param` (in place) with a gradient computed outside
// autograd's graph (the meta-gradient, GRAPE's per-task gradients).
void adam_step(torch::optim::Adam& opt, const torch::Tensor& param, const torch::Tensor& grad);

// Per-task GRAPE (baselines.cpp): Adam on each task's own pulse u [T, n_seg, n_ctrl] with the
// engine's exact gradients, projected onto the policy's amplitude range after each step.
struct GrapeOptions {
  int64_t iterations = 0;
  double lr = 0.02;
  bool cosine = true;     // learning rate decayed to 1% (false: constant, the paper's appendix)
  bool keep_best = true;  // return the best pulse seen per task (false: the last)
};
// Returns (fidelity [T], pulses [T, n_seg, n_ctrl]).
std::pair<torch::Tensor, torch::Tensor> grape(const Problem& problem, const Policy& policy, torch::Tensor u,
                                              const torch::Tensor& noise, const GrapeOptions& options);
// One pulse [n_seg, n_ctrl] for all tasks: Adam on the mean fidelity over the batches `tasks` draws.
torch::Tensor robust_pulse(const Problem& problem, const Policy& policy, torch::Tensor u,
                           const std::function<torch::Tensor()>& tasks, int64_t iterations, double lr);
using app::tensor_json;  // (apps/common/tensor_json.hpp)

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
  bool overwrite = false;      // replace the run output_dir holds (its files only: output_files())
  int64_t stop_after = -1;     // stop (with a checkpoint) after this many iterations, for tests and time limits
  Progress* progress = nullptr;
  bool quiet = false;
  std::string app = "qfleet-meta";  // the entry point, the report's "app"
  app::Ways ways;              // how a refusal names --resume, --overwrite and --out (Python: resume=True, ...)
  bool holds_folder = false;   // the caller holds output_dir with output_claim already (the command line)
};

// What a run writes into output_dir: report.json, pulses, eval/, checkpoint.pt, the log and the plots.
app::OutputFiles output_files();
// A run's claim on output_dir (apps/common/output_folder.hpp): run() takes it (on rank 0)
// unless options.holds_folder.
app::RunClaim output_claim(const Config& cfg, const RunOptions& options);

// The progress bar the command line draws: ETA and the running validation fidelity on
// stderr, redrawn in place on a terminal, one line per 10% otherwise (logs, CI).
std::unique_ptr<Progress> make_progress_bar();

struct RunResult {
  nlohmann::json report;
  bool complete = false;  // false when stopped by stop_after before the end
};

// Trains, runs the baselines, writes report.json, pulses.csv/json, eval/*.json and
// checkpoint.pt into cfg.output_dir. Throws ConfigError for bad configurations, and
// app::OutputFolderTaken (a ConfigError) where output_dir holds a run and the options
// neither resume nor overwrite it.
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
