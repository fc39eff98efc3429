// The meta-training loop's state (class Trainer: policy parameters, the meta-optimizer,
// the task generators, the inner loop, the meta-gradient, the evaluation adaptation and
// the best-policy selection) and its checkpoint helpers. Internal to the app: included by
// meta_control.cpp and experiments.cpp; MetaStep (meta_control.hpp) holds one.
#pragma once

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "meta_control.hpp"

namespace qfleet::meta {

using nlohmann::json;
using torch::Tensor;

// ---- training -------------------------------------------------------------------------------

namespace training {

using Clock = std::chrono::steady_clock;
// In the output folder: the checkpoint (Trainer::save), the file every app's resume reads.
inline constexpr const char* kCheckpointFile = "checkpoint.pt";
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline Tensor flat_tensor(const json& a, torch::ScalarType dtype) {
  const auto v = a.get<std::vector<double>>();
  return torch::tensor(v, torch::kFloat64).to(dtype);
}

inline json curve_json(const std::vector<CurvePoint>& curve) {
  json a = json::array();
  for (const auto& p : curve)
    a.push_back({{"iteration", p.iteration},
                 {"train_fidelity", std::isnan(p.train_fidelity) ? json(nullptr) : json(p.train_fidelity)},
                 {"val_before", p.val_before},
                 {"val_after", p.val_after}});
  return a;
}

// The keys that may differ between a checkpoint and the run that resumes it.
inline bool resumable_key(const std::string& k) {
  return k == "iterations" || k == "output_dir" || k == "checkpoint_every" || k == "threads" || k == "device" ||
         k == "meta_step" ||
         k == "robust_iterations" || k == "robust_lr" || k == "grape_iterations" || k == "grape_lr";
}

}  // namespace training

using namespace training;


class Trainer {
 public:
  explicit Trainer(const Config& cfg)
      : cfg_(cfg),
        problem_(cfg),
        policy_(policy_spec(cfg, problem_)),
        opts_(torch::TensorOptions().dtype(problem_.dtype())),
        task_gen_(at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 1)),
        fresh_gen_(at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 4)),
        device_(cfg.device == "cuda" ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU)) {
    auto init_gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed);
    theta_ = policy_.init(init_gen, problem_.dtype()).to(device_);
    make_optimizer();
    auto val_gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed + 2);
    val_noise_ = sample(val_gen, cfg.validation_tasks);
  }

  const Problem& problem() const { return problem_; }
  const torch::Device& device() const { return device_; }  // theta's and the meta-batches' (device_)
  const Policy& policy() const { return policy_; }
  const Config& config() const { return cfg_; }

  Tensor sample(at::Generator& gen, int64_t n) const { return sample_tasks(cfg_, gen, n, problem_.dtype()); }
  Tensor features(const Tensor& noise) const { return task_features(cfg_, noise); }

  // Per-task parameters are kept split into pieces ([T, n_l] each), see Policy::split.
  using Layers = std::vector<Tensor>;

  Tensor pulses(const Tensor& params, const Tensor& feats) const { return pulses(policy_.split(params), feats); }
  Tensor pulses(const Layers& layers, const Tensor& feats) const {
    return policy_.forward(layers, feats).view({feats.size(0), problem_.n_segments(), problem_.n_controls()});
  }

  Layers per_task(int64_t T) const { return per_task(theta_, T); }
  Layers per_task(const Tensor& theta, int64_t T) const {
    Layers out;
    for (const auto& l : policy_.split(theta.detach())) out.push_back(l.expand({T, l.size(0)}).clone());
    return out;
  }
  static Tensor task_norm(const Layers& layers) {  // [T, 1]
    Tensor s;
    for (const auto& l : layers) s = s.defined() ? s + l.square().sum(1, true) : l.square().sum(1, true);
    return s.sqrt();
  }

  // Per-task fidelity [T] and the gradient of sum_t (1 - F_t) w.r.t. the per-task parameters.
  std::pair<Tensor, Layers> loss_grad(const Layers& phi, const Tensor& feats, const Tensor& noise) const {
    Layers leaves;
    for (const auto& l : phi) leaves.push_back(l.detach().requires_grad_(true));
    const Tensor f = problem_.fidelity(pulses(leaves, feats), noise);
    return {f.detach(), torch::autograd::grad({(1 - f).sum()}, leaves)};
  }

  Tensor fidelity_nograd(const Layers& phi, const Tensor& feats, const Tensor& noise) const {
    torch::NoGradGuard ng;
    return problem_.fidelity(pulses(phi, feats), noise);
  }

  // Hessian-vector products of each task's loss, by central differences of the exact gradients.
  Layers hvp(const Layers& phi, const Layers& v, const Tensor& feats, const Tensor& noise) const {
    const double rel = problem_.dtype() == torch::kFloat32 ? 5e-3 : 6e-6;  // ~ cbrt(machine epsilon)
    const Tensor nv = task_norm(v), nphi = task_norm(phi);
    const Tensor nonzero = nv > 0;
    const Tensor eps = torch::where(nonzero, rel * (1 + nphi) / torch::where(nonzero, nv, torch::ones_like(nv)),
                                    torch::ones_like(nv));
    Layers plus, minus;
    for (std::size_t i = 0; i < phi.size(); ++i) {
      plus.push_back(phi[i] + eps * v[i]);
      minus.push_back(phi[i] - eps * v[i]);
    }
    const Layers gp = loss_grad(plus, feats, noise).second, gm = loss_grad(minus, feats, noise).second;
    Layers out;
    for (std::size_t i = 0; i < phi.size(); ++i)
      out.push_back(torch::where(nonzero, (gp[i] - gm[i]) / (2 * eps), torch::zeros_like(v[i])));
    return out;
  }

  // The training inner loop: `steps` SGD steps of inner_lr from theta on each task (each
  // gradient entry clamped to +-inner_grad_clamp when set, as the paper's CZ code does):
  // the adapted per-task parameters and the fidelities before adaptation; `trail` receives
  // the parameters each step started from.
  std::pair<Layers, Tensor> adapt(const Tensor& noise, int64_t steps, std::vector<Layers>* trail = nullptr) const {
    return adapt_from(theta_, noise, steps, trail);
  }
  std::pair<Layers, Tensor> adapt_from(const Tensor& theta, const Tensor& noise, int64_t steps,
                                       std::vector<Layers>* trail = nullptr) const {
    const Tensor feats = features(noise);
    Layers phi = per_task(theta, noise.size(0));
    Tensor f0;
    for (int64_t k = 0; k < steps; ++k) {
      auto [f, g] = loss_grad(phi, feats, noise);
      if (k == 0) f0 = f;
      if (trail) trail->push_back(phi);
      for (std::size_t i = 0; i < phi.size(); ++i) {
        const Tensor gi = cfg_.inner_grad_clamp > 0 ? torch::clamp(g[i], -cfg_.inner_grad_clamp, cfg_.inner_grad_clamp)
                                                    : g[i];
        phi[i] = torch::sub(phi[i], gi, cfg_.inner_lr);
      }
    }
    if (!f0.defined()) f0 = fidelity_nograd(phi, feats, noise);
    return {phi, f0};
  }

  // ---- evaluation adaptation (validation, experiments) ---------------------------------

  struct AdaptOptions {
    std::string method = "sgd";  // or "adam" (torch.optim.Adam's update, betas 0.9, 0.999, eps 1e-8)
    double lr = 0.01;
    double clip = 0;  // each task's gradient norm clipped to this first (torch's clip_grad_norm_); 0: none
    int64_t steps = 0;
  };
  AdaptOptions eval_adapt() const { return {cfg_.adapt_optimizer, cfg_.adapt_lr, cfg_.adapt_grad_clip, cfg_.adapt_steps}; }

  struct Curve {
    Tensor fidelity;  // [steps + 1, T]: F before adaptation, then after each step
    Layers phi;       // the adapted per-task parameters
  };
  // Adapts theta to each task independently (batched: per-task parameters, per-task optimizer
  // state, per-task clipping), recording the fidelity after every step.
  // (on the run's device; the curve and the adapted parameters come back on the host)
  Curve adapt_curve(const Tensor& theta_in, const Tensor& noise_in, const AdaptOptions& o) const {
    const Tensor theta = theta_in.to(device_), noise = noise_in.to(device_);
    const Tensor feats = features(noise);
    Layers phi = per_task(theta, noise.size(0)), m, v;
    std::vector<Tensor> rows;
    for (int64_t k = 1; k <= o.steps; ++k) {
      auto [f, g] = loss_grad(phi, feats, noise);
      rows.push_back(f);
      if (o.clip > 0) {
        const Tensor coef = torch::clamp(o.clip / (task_norm(g) + 1e-6), c10::nullopt, 1.0);
        for (auto& gi : g) gi = gi * coef;
      }
      if (o.method == "adam") {
        constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
        if (m.empty())
          for (const auto& gi : g) m.push_back(torch::zeros_like(gi)), v.push_back(torch::zeros_like(gi));
        const double bc1 = 1 - std::pow(b1, double(k)), bc2 = 1 - std::pow(b2, double(k));
        for (std::size_t i = 0; i < phi.size(); ++i) {
          m[i] = m[i] * b1 + g[i] * (1 - b1);
          v[i] = v[i] * b2 + g[i].square() * (1 - b2);
          phi[i] = phi[i] - (o.lr / bc1) * m[i] / (v[i].sqrt() / std::sqrt(bc2) + eps);
        }
      } else {
        for (std::size_t i = 0; i < phi.size(); ++i) phi[i] = torch::sub(phi[i], g[i], o.lr);
      }
    }
    rows.push_back(fidelity_nograd(phi, feats, noise));
    for (auto& p : phi) p = p.cpu();
    return {torch::stack(rows, 0).cpu(), phi};
  }

  // ---- meta-gradient and meta-step -------------------------------------------------------

  // The meta-batch's mean fidelity after the inner steps, and the meta-gradient. With a
  // process group each rank runs whole blocks of the tasks; the blocks' sums are added
  // in block order on any number of processes, so 1 and N processes give the same bits
  // (qfleet::train::ProcessGroup::sum_rows).
  std::pair<Tensor, Tensor> meta_grad(const Tensor& noise) const {
    const int64_t T = noise.size(0), blocks = reduction_blocks(T);
    qfleet::train::ProcessGroup single;  // one process: the same blocks, summed in the same order
    qfleet::train::ProcessGroup& group = group_ != nullptr ? *group_ : single;
    const auto [b, e] = group.block_rows(T, blocks);
    auto [fq, rows] = task_rows(noise.narrow(0, b, e - b));
    // The fidelities ride along as one more column: one exchange per iteration.
    const int64_t P = rows.size(1);
    const Tensor sums = group.sum_rows(torch::cat({rows, fq.to(rows.scalar_type()).unsqueeze(1)}, 1), T, blocks);
    const Tensor mean = sums.narrow(0, 0, P) / double(T);
    return {sums[P] / double(T), cfg_.algorithm == "reptile" ? theta_ - mean : mean};
  }
  // The meta-gradient's sum over tasks runs over this many fixed blocks of tasks, so it
  // is the same on 1 and on up to kMaxProcesses processes.
  static constexpr int64_t kMaxProcesses = 8;
  static int64_t reduction_blocks(int64_t tasks) { return std::min<int64_t>(tasks, kMaxProcesses); }

  // Per task: the fidelity after the inner steps and the task's row of the meta-gradient
  // (maml, fomaml: the gradient; reptile: the adapted parameters), [T] and [T, P].
  std::pair<Tensor, Tensor> task_rows(const Tensor& noise) const {
    const Tensor feats = features(noise);
    std::vector<Layers> trail;
    const Layers phi = adapt(noise, cfg_.inner_steps, cfg_.algorithm == "maml" ? &trail : nullptr).first;
    if (cfg_.algorithm == "reptile") return {fidelity_nograd(phi, feats, noise), torch::cat(phi, 1)};
    auto [fq, v] = loss_grad(phi, feats, noise);
    if (cfg_.algorithm == "maml")  // d phi_K / d theta = prod_k (I - lr H(phi_k)), applied right to left
      for (auto k = static_cast<int64_t>(trail.size()) - 1; k >= 0; --k) {
        const Layers hv = hvp(trail[std::size_t(k)], v, feats, noise);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = torch::sub(v[i], hv[i], cfg_.inner_lr);
      }
    return {fq, torch::cat(v, 1)};
  }

  // Meta-iteration i (0-based); returns the meta-batch's mean fidelity on theta's device (no
  // host transfer: the runner's meter takes it). The meta-gradient's norm is clipped to
  // meta_grad_clip (torch's clip_grad_norm_: coefficient clip / (norm + 1e-6), at most 1) and
  // the learning rate follows the schedule (cosine: torch's CosineAnnealingLR over iterations).
  // The tasks are drawn on the host's generator (every device draws the same); in graph
  // mode (meta_step) they are copied into a static input and the rest of the iteration,
  // the optimizer included, runs as one captured CUDA graph on a GPU.
  Tensor iteration(int64_t i) {
    const Tensor noise = sample(task_gen_, cfg_.meta_batch);
    const double lr = cfg_.meta_lr_schedule == "cosine"
                          ? cfg_.meta_lr_min + (cfg_.meta_lr - cfg_.meta_lr_min) *
                                                   (1 + std::cos(std::numbers::pi * double(i) /
                                                                 double(std::max<int64_t>(cfg_.iterations, 1)))) / 2
                          : cfg_.meta_lr;
    if (dopt_ == nullptr) {
      auto [f_mean, g] = meta_grad(noise.to(device_));
      theta_.mutable_grad() = clipped(g);
      opt_->param_groups()[0].options().set_lr(lr);
      opt_->step();
      return f_mean;
    }
    dopt_->set_lr(lr);
    if (graph_ == nullptr) {
      noise_in_ = noise.to(device_);
      graph_ = qfleet::train::captured_step([this] { return graph_iteration(); }, device_);
    } else {
      noise_in_.copy_(noise);
    }
    return (*graph_)().values[0];
  }
  // meta_step's resolution: graph mode (DeviceOptimizer, static inputs) or torch::optim.
  bool graph_mode() const { return cfg_.meta_step == "graph" || (cfg_.meta_step == "automatic" && device_.is_cuda()); }
  std::string graph_status() const { return graph_ ? graph_->status() : graph_mode() ? "not started" : "eager: meta_step"; }

  Tensor clipped(const Tensor& g) const {
    return cfg_.meta_grad_clip > 0 ? g * torch::clamp(cfg_.meta_grad_clip / (g.norm() + 1e-6), c10::nullopt, 1.0) : g;
  }

  void set_group(qfleet::train::ProcessGroup* group) { group_ = group; }

  void set_theta(const Tensor& theta) {
    theta_ = theta.detach().to(device_).clone();
    make_optimizer();
  }
  // MetaStep's inputs: theta [P] and noise [T, n_noise] of the configuration's precision, on one device.
  void check_step_inputs(const Tensor& theta, const Tensor& noise) const {
    const std::string dtype = problem_.dtype() == torch::kFloat32 ? "float32" : "float64";
    if (theta.dim() != 1 || theta.size(0) != policy_.size())
      throw ConfigError("meta step: theta must have shape [" + std::to_string(policy_.size()) +
                        "] (policy_size), got " + c10::str(theta.sizes()));
    const int n = problem_.n_noise();
    if (noise.dim() != 2 || noise.size(1) != n || noise.size(0) < 1)
      throw ConfigError("meta step: noise must have shape [T, " + std::to_string(n) + "] (" +
                        (n == 2 ? "gamma_deph, gamma_relax" : "gamma_deph_0, gamma_relax_0, gamma_deph_1, gamma_relax_1") +
                        ") with T >= 1, got " + c10::str(noise.sizes()));
    if (theta.scalar_type() != problem_.dtype() || noise.scalar_type() != problem_.dtype())
      throw ConfigError("meta step: theta and noise must be " + dtype + " (precision = " + cfg_.precision + ")");
    if (theta.device() != noise.device())
      throw ConfigError("meta step: theta and noise must be on one device, got " + theta.device().str() + " and " +
                        noise.device().str());
  }

  // ---- validation and the best policy ----------------------------------------------------

  struct Validation {
    Tensor before, after;  // [V]
    Tensor curve;          // [adapt_steps + 1, V]: F before, then after each adaptation step
    Layers adapted;
  };
  // The held-out tasks before and after the evaluation adaptation (adapt_optimizer, adapt_lr,
  // adapt_grad_clip, adapt_steps) of `theta` (default: the current parameters).
  Validation validate(const Tensor& theta = Tensor()) const {
    const Curve c = adapt_curve(theta.defined() ? theta : theta_, val_noise_, eval_adapt());
    return {c.fidelity[0], c.fidelity[-1], c.fidelity, c.phi};
  }

  // checkpoint_policy = best: the training inner loop's mean fidelity on validation_tasks fresh
  // tasks (new ones at every call, as the original code drew them); the parameters are kept
  // when it beats every earlier call's. Returns that fidelity.
  double consider_best(int64_t iteration) {
    const Tensor noise = sample(fresh_gen_, cfg_.validation_tasks).to(device_);
    const Layers phi = adapt(noise, cfg_.inner_steps).first;
    const double f = fidelity_nograd(phi, features(noise), noise).to(torch::kFloat64).mean().item<double>();
    if (!best_theta_.defined() || f > best_fidelity_) {
      best_theta_ = theta_.detach().clone();
      best_fidelity_ = f;
      best_iteration_ = iteration;
    }
    return f;
  }
  bool has_best() const { return best_theta_.defined(); }
  Tensor best_theta() const { return best_theta_.defined() ? best_theta_.cpu() : best_theta_; }  // (on the host)
  json best_json() const {
    return {{"iteration", best_iteration_}, {"fresh_validation_fidelity", best_fidelity_},
            {"fresh_tasks", cfg_.validation_tasks}};
  }

  // A checkpoint (train::save_checkpoint: one file with the SHA-1 of its content): theta and
  // the best parameters, the meta-optimizer, both task generators, and as texts the whole
  // configuration and the run's records (curve, training seconds, the best's state). Its
  // hashed configuration is the keys a resume may not change (resumable_key).
  void save(const std::string& path, int64_t iteration, const std::vector<CurvePoint>& curve, double train_s) const {
    std::string config = cfg_.json.dump();
    std::string records = json{{"curve", curve_json(curve)},
                               {"train_seconds", train_s},
                               {"best", best_theta_.defined() ? best_json() : json(nullptr)}}
                              .dump();
    Tensor best = best_theta_.defined() ? best_theta_ : torch::zeros_like(theta_);
    if (dopt_) dopt_->export_state(*opt_);  // the checkpoint holds torch::optim's state, whatever the mode
    auto state = train_state(best);
    state.step = iteration;
    state.texts = {{"config", &config}, {"records", &records}};
    qfleet::train::save_checkpoint(path, state);
  }

  // Restores a checkpoint: returns the iteration it was taken at.
  int64_t restore(const std::string& path, std::vector<CurvePoint>& curve, double& train_s) {
    std::string config, records;
    Tensor best = torch::zeros_like(theta_);
    auto state = train_state(best);
    state.texts = {{"config", &config}, {"records", &records}};
    try {
      qfleet::train::load_checkpoint(path, state);
    } catch (const qfleet::train::CheckpointConfigError& e) {
      throw ConfigError(std::string("resume: ") + e.what() +
                        " (only iterations, not with the cosine schedule which spans them, output_dir, "
                        "checkpoint_every, threads, device and the baselines' settings may change)");
    } catch (const qfleet::train::CheckpointError& e) {
      throw ConfigError(std::string("resume: ") + e.what());
    }
    if (dopt_) dopt_->import_state(*opt_);  // (theta_ was restored in place: the graph stays valid)
    if (state.step > cfg_.iterations)
      throw ConfigError("resume: the checkpoint is at iteration " + std::to_string(state.step) +
                        ", beyond iterations = " + std::to_string(cfg_.iterations));
    const json r = json::parse(records, nullptr, false);
    try {
      curve.clear();
      for (const auto& p : r.at("curve"))
        curve.push_back({p.at("iteration"),
                         p.at("train_fidelity").is_null() ? std::nan("") : p.at("train_fidelity").get<double>(),
                         p.at("val_before"), p.at("val_after")});
      train_s = r.at("train_seconds");
      best_theta_ = r.at("best").is_null() ? Tensor() : best;
      if (best_theta_.defined()) {
        best_iteration_ = r.at("best").at("iteration");
        best_fidelity_ = r.at("best").at("fresh_validation_fidelity");
      }
    } catch (const json::exception& e) {  // a file whose digest matched but whose records lack a key
      throw ConfigError("resume: " + path + ": its records lack what a checkpoint holds: " + e.what());
    }
    return state.step;
  }

  Tensor theta() const { return theta_.cpu(); }  // (on the host)
  const Tensor& val_noise() const { return val_noise_; }

 private:
  // The keys a resume may not change, as the checkpoint's hashed configuration.
  std::string fixed_config() const {
    json j = json::object();
    for (const auto& [k, v] : cfg_.json.items())
      if (!resumable_key(k) || (k == "iterations" && cfg_.meta_lr_schedule == "cosine")) j[k] = v;
    return j.dump();
  }
  // What save and restore share (`best` is the best parameters' slot).
  qfleet::train::TrainState train_state(const Tensor& best) const {
    qfleet::train::TrainState s;
    s.config = fixed_config();
    s.optimizers = {{"meta", opt_.get()}};
    s.generators = {{"tasks", task_gen_}, {"fresh_tasks", fresh_gen_}};
    s.tensors = {{"theta", theta_}, {"best_theta", best}};
    return s;
  }
  void make_optimizer() {
    if (cfg_.meta_optimizer == "adamw")
      opt_ = std::make_unique<torch::optim::AdamW>(
          std::vector<Tensor>{theta_}, torch::optim::AdamWOptions(cfg_.meta_lr).weight_decay(cfg_.weight_decay));
    else
      opt_ = std::make_unique<torch::optim::Adam>(std::vector<Tensor>{theta_}, torch::optim::AdamOptions(cfg_.meta_lr));
    graph_.reset();
    dopt_.reset();
    if (!graph_mode()) return;
    qfleet::train::DeviceOptimizerOptions o;
    o.kind = cfg_.meta_optimizer == "adamw" ? qfleet::train::OptimizerKind::adamw : qfleet::train::OptimizerKind::adam;
    o.lr = cfg_.meta_lr;
    o.weight_decay = cfg_.meta_optimizer == "adamw" ? cfg_.weight_decay : 0.0;
    o.lr_on_device = true;
    dopt_ = std::make_unique<qfleet::train::DeviceOptimizer>(std::vector<Tensor>{theta_}, o);
    theta_.mutable_grad() = torch::zeros_like(theta_);  // the captured step writes the gradient here
  }
  // The captured part of a graph-mode iteration (noise_in_ filled, the learning rate set).
  qfleet::train::Metrics graph_iteration() {
    auto [f_mean, g] = meta_grad(noise_in_);
    theta_.mutable_grad().copy_(clipped(g));
    dopt_->step();
    return qfleet::train::Metrics{{"train_fidelity"}, {f_mean}};
  }

  const Config& cfg_;
  Problem problem_;
  Policy policy_;
  torch::TensorOptions opts_;
  at::Generator task_gen_, fresh_gen_;
  // Where theta, its optimizer and each meta-batch live (device = cuda: the GPU, so a
  // meta-iteration's engine calls take CUDA tensors on the programs' GPU copies, no host
  // staging); tasks are drawn on the host's generators, so every device draws the same.
  torch::Device device_;
  Tensor theta_;
  std::unique_ptr<torch::optim::Optimizer> opt_;  // on theta_ (graph mode: the checkpoint's copy of dopt_'s state)
  std::unique_ptr<qfleet::train::DeviceOptimizer> dopt_;  // graph mode: theta_'s optimizer
  std::unique_ptr<qfleet::train::CapturedStep> graph_;     // graph mode: the iteration, captured on a GPU
  Tensor noise_in_;                                        // graph mode: the meta-batch's static input
  Tensor val_noise_;
  Tensor best_theta_;
  double best_fidelity_ = 0;
  int64_t best_iteration_ = -1;
  qfleet::train::ProcessGroup* group_ = nullptr;  // set for multi-process runs
};


}  // namespace qfleet::meta
