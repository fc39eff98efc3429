// qfleet::train — the training runtime every app runs on, first part: a
// step's metrics kept on their device and copied to the host once every
// `sync_every` steps (one transfer for all of them), JSON-lines logging, a progress
// bar with ETA, atomic file writes for checkpoints, and a step runner that drives a
// user's step with them. C++ users call it directly; Python reaches the same code
// through torch.classes.qfleet_train (python/qfleet/train.py).
//
// Why: the research codes qfleet replaces synchronised the GPU every step
// (`loss.item()` to print a running loss); a host transfer stalls the queue of
// asynchronous launches. Here the per-step metrics are summed on the device and only
// the schedule's sync points transfer, which tests count (`host_syncs()`).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qfleet::train {

// A step's metrics: named scalars (0-dim tensors, or one-element), on any one device.
struct Metrics {
  std::vector<std::string> names;
  std::vector<torch::Tensor> values;
};

// The means of each metric over the steps since the previous sync.
struct MetricRow {
  int64_t step = 0;       // steps done when the row was taken
  int64_t steps = 0;      // steps the means are over
  double seconds = 0;     // wall time since the meter was made
  std::vector<double> means;  // in the order of names()
};

struct MeterOptions {
  int64_t sync_every = 100;  // steps between host transfers (>= 1)
  std::string log_path;      // JSON lines, one object per row ("" = no log); appended to
};

// Sums each step's metrics on their device; every sync_every steps copies the sums to
// the host in one transfer and appends a row. Names and device are fixed by the first
// step; a later step that differs is an error (std::invalid_argument), as is a metric
// with more than one element.
class MetricMeter {
 public:
  explicit MetricMeter(MeterOptions options);
  // Adds one step; returns true when this call synchronised (a row was taken).
  bool add(const Metrics& m);
  // Takes a row of what is pending (end of training, before a checkpoint); false if nothing was.
  bool flush();
  // A resumed run's meter: its rows count steps from `steps_done` (the step the run resumed
  // at), so the log's "step" goes on from the checkpoint's. Only before the first add.
  void start_at(int64_t steps_done);

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<MetricRow>& rows() const { return rows_; }
  int64_t steps() const { return steps_; }
  // Host transfers so far: steps / sync_every, plus flushes that had something pending.
  int64_t host_syncs() const { return syncs_; }

 private:
  void take_row();
  MeterOptions opt_;
  std::vector<std::string> names_;
  torch::Tensor sums_;  // [n_metrics] float64, on the metrics' device
  int64_t steps_ = 0, pending_ = 0, syncs_ = 0;
  std::vector<MetricRow> rows_;
  std::chrono::steady_clock::time_point t0_;
};

// A progress bar with ETA on stderr: redrawn in place on a terminal, one line per 10%
// otherwise (logs, CI). `note` is appended (e.g. the latest metric).
class ProgressBar {
 public:
  ProgressBar();
  void update(int64_t done, int64_t total, const std::string& note = "");
  void finish();

 private:
  bool tty_;
  std::chrono::steady_clock::time_point t0_;
  int64_t first_ = -1;
  int last_decile_ = -1;
  double last_draw_ = -1;
};

// "mm:ss" (or "h:mm:ss") for a progress bar.
std::string clock_text(double seconds);

// Writes `text` to `path` so that a reader sees the old file or the whole new one,
// never a part, and a planted symbolic link cannot redirect it: qfleet::write_file_atomic
// (qfleet/files.hpp). Creates the parent folders. Throws std::runtime_error with the path
// and the system's reason.
void write_file_atomic(const std::string& path, const std::string& text);

struct RunnerOptions {
  int64_t steps = 0;           // total steps (the loop runs from the first step given to run())
  int64_t sync_every = 100;
  std::string log_path;
  bool progress = false;
  int64_t checkpoint_every = 0;  // 0: only at the end
  int64_t stop_after = -1;       // >= 0: stop after this many steps of a run() call, with a checkpoint
};

// Drives `step(i)` for i = first .. steps-1 (or up to first + stop_after) with a
// MetricMeter and a ProgressBar; calls `checkpoint(i + 1)` every checkpoint_every steps
// and after the last one (after a flush, so the log is complete up to the checkpoint).
// last_step(first) is where run(..., first) stops. A run from `first` first drops the log's
// rows past `first` (those of a run killed after its last checkpoint, or a line cut short)
// and counts the log's steps on from `first`.
class StepRunner {
 public:
  explicit StepRunner(RunnerOptions options);
  void run(const std::function<Metrics(int64_t)>& step, int64_t first = 0,
           const std::function<void(int64_t)>& checkpoint = nullptr);
  const MetricMeter& meter() const { return meter_; }
  int64_t last_step(int64_t first) const;

 private:
  RunnerOptions opt_;
  MetricMeter meter_;
};

// ---- mixed precision (precision.cpp) ---------------------------------------------
//
// The rule: the classical network parts run under autocast where it pays (BF16 on
// CUDA compute capability >= 8, FP16 with a GradScaler below it, FP32 on the CPU);
// the quantum engine always runs in its program's precision (complex64 / complex128):
// under autocast, qfleet's operators cast reduced-precision inputs (bf16, fp16) up to
// the program's real type and never cast float32/float64 inputs down
// (adapters/torch/src/autocast.cpp).
struct PrecisionPolicy {
  torch::DeviceType device = torch::kCPU;
  bool autocast = false;                     // autocast on for the classical parts
  torch::ScalarType dtype = torch::kFloat;   // its dtype when on
  bool grad_scaler = false;                  // FP16: scale the loss (GradScaler)
  bool tf32 = false;                         // TF32 matmuls and convolutions (cuBLAS, cuDNN)
  bool cudnn_benchmark = false;              // cuDNN picks its fastest algorithms per shape
  std::string rule;                          // one sentence for logs and reports
};
// `cc_major` < 0: asked of the device (qfleet::cuda_compute_capability).
PrecisionPolicy precision_policy(const torch::Device& device, int cc_major = -1);
// Turns on the TF32 and cuDNN benchmark switches the policy names (process-wide).
void apply_backend_switches(const PrecisionPolicy& policy);

// Autocast on the policy's device with its dtype for the scope's life (nothing when
// the policy has autocast off); restores the previous state.
class AutocastScope {
 public:
  explicit AutocastScope(const PrecisionPolicy& policy);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_;
  torch::DeviceType device_;
  bool was_enabled_;
  torch::ScalarType was_dtype_;
};

// Dynamic loss scaling for FP16 training (the algorithm of torch.amp.GradScaler:
// multiply the loss by S; unscale the gradients; skip the step and halve S when one
// is inf or NaN; double S after growth_interval clean steps). Uses ATen's own
// _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ kernels.
struct GradScalerOptions {
  double init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  // off: scale() and step() pass through
};
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});
  torch::Tensor scale(const torch::Tensor& loss);
  // Unscales the optimizer's gradients in place and steps unless one is inf/NaN; returns
  // whether it stepped (one host transfer, as torch.amp.GradScaler.step).
  bool step(torch::optim::Optimizer& optimizer);
  void update();
  double scale_value() const;  // the current scale (host transfer)
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  GradScalerOptions opt_;
  torch::Tensor scale_, growth_tracker_, found_inf_;
};

// ---- capturable optimizers (device_optimizer.cpp) --------------------------------
//
// Adam, AdamW and SGD whose whole state, step counters included, is tensors on the
// parameters' device, updated by ATen's fused kernels (_fused_adam_, _fused_adamw_,
// _fused_sgd_) with no host-side branch or transfer: a step can be captured in a CUDA
// graph and replayed (qfleet/train_graph.hpp). zero_grad() zeroes the gradients in
// place, so their addresses stay fixed across replays. The learning rate is a number
// baked into a captured step (capture again to change it), unless lr_on_device: then
// it is a tensor on the device that set_lr() fills between replays (a schedule), and
// the step is torch.optim's "capturable" formula in tensor ops instead of the fused
// kernels. The update rules are torch.optim's (tests compare them with
// torch::optim::Adam / AdamW / SGD), and the state converts to and from theirs, so a
// run may checkpoint with one and resume with the other.
enum class OptimizerKind { adam, adamw, sgd };
struct DeviceOptimizerOptions {
  OptimizerKind kind = OptimizerKind::adam;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  double momentum = 0;  // sgd (dampening 0, no Nesterov)
  bool lr_on_device = false;
};
class DeviceOptimizer {
 public:
  DeviceOptimizer(std::vector<torch::Tensor> parameters, DeviceOptimizerOptions options);
  void zero_grad();
  void step();
  void set_lr(double lr);  // lr_on_device: fills the device tensor in place (no capture needed again)
  double lr() const { return opt_.lr; }
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  // The state as torch::optim's Adam / AdamW / SGD on the same parameters (in their
  // order) holds it: written into `into`, or read from `from` (no state there: zeros).
  void export_state(torch::optim::Optimizer& into) const;
  void import_state(const torch::optim::Optimizer& from);

 private:
  void step_with_lr_tensor(const std::vector<torch::Tensor>& grads);
  DeviceOptimizerOptions opt_;
  std::vector<torch::Tensor> params_, exp_avg_, exp_avg_sq_, steps_, momentum_;
  torch::Tensor lr_;  // lr_on_device: 0-dim, the parameters' dtype and device
};

// ---- graph mode from libraries that link only this one (graph_loader.cpp) ----------
//
// A training step as train_graph.hpp's GraphStep runs it (eager for `warmup` steps,
// then captured into a CUDA graph and replayed; eager with the reason where capture
// fails), for code that links only libqfleet_torch, such as the apps: GraphStep's
// library, libqfleet_train_cuda.so (it links LibTorch's CUDA half), is loaded from
// beside this library on the first call for a CUDA device. On the CPU, or where it
// cannot load, the step runs eagerly and status() says why. The step's contract is
// GraphStep's: static inputs filled before each call, no host synchronisation, fixed
// shapes; the metrics returned after capture are static outputs (read them before
// the next call). `generators`: CUDA generators other than the default one that the
// step draws from (GraphOptions::generators).
class CapturedStep {
 public:
  virtual ~CapturedStep() = default;
  virtual Metrics operator()() = 0;
  virtual bool captured() const = 0;
  virtual std::string status() const = 0;  // "captured ...", "warming up", or "eager: why"
};
std::unique_ptr<CapturedStep> captured_step(std::function<Metrics()> step, const torch::Device& device,
                                            int64_t warmup = 3, std::vector<at::Generator> generators = {});

// ---- checkpoints (checkpoint.cpp) ------------------------------------------------

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The checkpoint was written by another configuration (its text's hash differs).
struct CheckpointConfigError : CheckpointError {
  using CheckpointError::CheckpointError;
};

// What a checkpoint holds. The pointers name live objects: save_checkpoint reads
// them, load_checkpoint restores into them. The default CPU generator and every CUDA
// device's default generator are always saved and restored besides `generators`.
struct TrainState {
  int64_t step = 0;
  std::string config;  // the run's configuration (any text); its hash is saved, a resume with another is refused
  std::vector<std::pair<std::string, torch::nn::Module*>> modules;
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> optimizers;
  std::vector<std::pair<std::string, GradScaler*>> scalers;
  std::vector<std::pair<std::string, DeviceOptimizer*>> device_optimizers;
  std::vector<std::pair<std::string, at::Generator>> generators;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // restored in place (same shape and dtype)
  std::vector<std::pair<std::string, std::string*>> texts;     // a run's own records (a curve as JSON, ...): restored into the strings
};

// FNV-1a 64 of the text, as 16 hex digits.
std::string config_hash(const std::string& config);
// One tensor file (qfleet/tensor_file.hpp: data only, nothing in it runs when it is read,
// with the SHA-1 of the whole file), written atomically (write_file_atomic).
void save_checkpoint(const std::string& path, const TrainState& state);
// Restores everything `state` names and sets state.step; CheckpointError with the path
// and the reason for a missing, damaged (not matching its SHA-1) or foreign file (a
// LibTorch archive, as qfleet wrote before, is refused unread), or an entry that is missing or does not fit; CheckpointConfigError for a
// configuration hash that differs (naming the keys that differ when both texts are JSON
// objects). Nothing is restored unless the whole file checks.
void load_checkpoint(const std::string& path, TrainState& state);
// What a checkpoint holds, read without a run to restore into (its digest checked as
// load_checkpoint checks it): to look at a finished run's parameters or records.
struct CheckpointContents {
  int64_t step = 0;
  std::string config;  // empty for a checkpoint written before the text was kept
  std::map<std::string, std::string> texts;
  std::map<std::string, torch::Tensor> tensors;  // on the CPU
};
CheckpointContents read_checkpoint(const std::string& path);

// ---- device and batch choice (resources.cpp) -------------------------------------

// Bytes free for a batch: MemAvailable (capped by the cgroup's limit) on the CPU, the
// CUDA caching allocator's free figure (cudaMemGetInfo) on a GPU.
std::size_t free_memory(const torch::Device& device);
// The most tensor memory `fn` held at once on `device` above what was held before it:
// a counting CPU allocator on the CPU, the caching allocator's peak statistics on CUDA.
std::size_t peak_memory(const torch::Device& device, const std::function<void()>& fn);

struct BatchChoice {
  int64_t batch = 0;
  std::size_t fixed_bytes = 0, per_sample_bytes = 0, budget_bytes = 0;
  std::string reason;  // one sentence: the figures behind the choice
};
// batch = auto: `peak_bytes(b)` runs one step of batch b and returns its peak memory;
// it is called at b = 1 and b = 4 to separate the fixed and per-sample parts. The
// choice is the largest power of two whose estimate fits in fraction * free_bytes,
// capped at `cap`. Throws std::runtime_error when even one sample does not fit.
BatchChoice choose_batch(const std::function<std::size_t(int64_t)>& peak_bytes, std::size_t free_bytes,
                         double fraction = 0.7, int64_t cap = 65536);
// The same on a device: free_memory and peak_memory of `step(b)` there.
BatchChoice auto_batch(const std::function<void(int64_t)>& step, const torch::Device& device,
                       double fraction = 0.7, int64_t cap = 65536);

struct DeviceChoice {
  torch::Device device = torch::kCPU;
  std::vector<std::pair<std::string, double>> seconds_per_step;  // each candidate's median
  std::string reason;
};
// device = auto: for each candidate, `make_step(device)` builds the job there and
// returns a step; `warmup` steps are run, then `steps` timed ones (each step returns a
// tensor that is read on the host, so the time includes the device's work). Picks the
// fastest median; a candidate that throws is skipped with the reason in `reason`.
DeviceChoice choose_device(const std::function<std::function<torch::Tensor()>(const torch::Device&)>& make_step,
                           const std::vector<torch::Device>& candidates, int64_t warmup = 2, int64_t steps = 5);
// Loads LibTorch's CUDA half (libtorch_cuda.so, from beside the libtorch_cpu in use) once,
// where Python's `import torch` has not: a C++ program linked only against qfleet_torch
// has no CUDA tensors without it. True when it is loaded (or was); false where this
// LibTorch has none (a CPU-only build) or it failed to load, `why` (if given) says which.
bool load_torch_cuda(std::string* why = nullptr);
// load_torch_cuda where the engine sees a CUDA device (false, "qfleet sees no CUDA
// device", elsewhere): device_from_setting, available_devices and choose_device call it
// for a CUDA choice.
bool load_torch_cuda_for_a_gpu(std::string* why = nullptr);
// The devices this process can use: the CPU and each visible CUDA device.
std::vector<torch::Device> available_devices();
// The device an app's `device` setting names: "cpu", "cuda" (CUDA device 0) or "automatic"
// (CUDA device 0 when torch sees one, else the CPU); `why` (if given) gets the reason in
// words for the report. std::invalid_argument for "cuda" where torch sees no CUDA device,
// and for any other name.
torch::Device device_from_setting(const std::string& setting, std::string* why = nullptr);

// ---- multi-process data parallel (distributed.cpp, launch.cpp) -------------------
//
// The processes meet at a c10d TCPStore (torch.distributed's own store, from the
// PyTorch wheel): rank 0 hosts it, or torchrun's agent does. Gradients are summed
// through it in rank order, so every rank gets the same bits and a run on N processes
// differs from one process only by the order of one sum (tests/torch/test_distributed.cpp).
// Why not ProcessGroupGloo: the wheel ships c10d's headers but not gloo's, so a C++
// program outside PyTorch's build cannot construct one; the fleets here exchange one
// gradient vector of a few thousand numbers per step, which the store carries in
// well under a millisecond on one machine (docs/training.md has the figures).

struct DistOptions {
  int rank = 0, world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool agent_store = false;  // torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE)
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (set by torchrun and by launch_local);
// nullopt when WORLD_SIZE is unset. std::invalid_argument for values that do not parse.
std::optional<DistOptions> dist_from_env();

class ProcessGroup {
 public:
  explicit ProcessGroup(const DistOptions& options = {});  // the default: one process
  // Rank 0, which hosts the store, waits here (up to a minute) until every rank has left.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  int rank() const { return opt_.rank; }
  int size() const { return opt_.world_size; }
  // Every rank's tensor concatenated along dim 0 in rank order (dim 0 may differ
  // between ranks; the other dims and the dtype may not). Any device (it travels
  // through host memory). A rank that does not arrive within the timeout makes this
  // throw std::runtime_error naming it.
  torch::Tensor all_gather(const torch::Tensor& mine);
  // Sum over ranks, in place, added in rank order (the same bits on every rank).
  void all_reduce_sum(torch::Tensor& t);
  void barrier();
  // This rank's contiguous share [begin, end) of n items, as even as possible.
  std::pair<int64_t, int64_t> share(int64_t n) const;
  // Rows cut into `blocks` fixed contiguous blocks (as share() would cut them for
  // `blocks` ranks), each rank holding whole blocks: this rank's rows [begin, end).
  std::pair<int64_t, int64_t> block_rows(int64_t n, int64_t blocks) const;
  // The sum over all n rows of the ranks' `mine` (this rank's block_rows, [rows, ...]):
  // each block summed on its own, the block sums gathered and added in block order. The
  // order depends only on n and `blocks`, so 1 and N <= blocks processes give the same
  // bits; `blocks` sums travel instead of n rows.
  torch::Tensor sum_rows(const torch::Tensor& mine, int64_t n, int64_t blocks);

 private:
  DistOptions opt_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t seq_ = 0;
};

// Data-parallel backward with a fixed reduction order: the global batch is cut into
// `n_shards` shards (the same number on any number of ranks); each rank runs
// `shard_loss(k)`'s backward for its share of them, one at a time, and the parameters'
// gradients become the sum over all shards, taken as one sum over the gathered
// [n_shards, P] gradients. So 1 and N processes give the same bits whenever the
// per-shard gradients are (tests/torch/test_distributed.cpp). Returns the sum of the
// shard losses (on every rank).
torch::Tensor data_parallel_backward(ProcessGroup& group, const std::vector<torch::Tensor>& parameters,
                                     int64_t n_shards, const std::function<torch::Tensor(int64_t)>& shard_loss);

// Runs `nproc` copies of this process's own command line (/proc/self/cmdline) with
// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and a free MASTER_PORT set, and waits.
// When one exits with an error or a signal the others are stopped. Returns 0 when all
// succeeded, else the first failure's status; `report` gets one line per failed rank.
int launch_local(int nproc, std::string* report = nullptr);

// This process's command line (/proc/self/cmdline): for `python -m qfleet.rl ...` the
// interpreter, "-m", the module and the arguments.
std::vector<std::string> own_command_line();
// Runs `argv` (argv[0] looked up in PATH when it has no '/') with this process's
// environment and waits for it: its exit status, 128 + the signal when one killed it.
// std::runtime_error when it cannot start.
int run_command(const std::vector<std::string>& argv);

}  // namespace qfleet::train
