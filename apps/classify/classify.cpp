// The training run of qfleet-classify (classify.hpp): data, model, the timed step on
// qfleet::train's StepRunner, evaluation, checkpoints with resume, the report.
#include "classify.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <optional>
#include <stdexcept>

#include "common/memory_check.hpp"
#include "common/lifecycle.hpp"
#include "features.hpp"
#include "qfleet/files.hpp"
#include "qfleet/train.hpp"
#include "report.hpp"

namespace qfleet::classify {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Wall time of the step's parts; on a GPU each mark waits for the queued work first, so
// only timed steps (every time_every) pay for it.
struct StepClock {
  bool cuda = false, on = false;
  Clock::time_point last;
  void start(bool timed) {
    on = timed;
    if (on) sync(), last = Clock::now();
  }
  void sync() const {
    if (cuda) torch::cuda::synchronize();
  }
  double lap() {  // ms since the previous mark
    if (!on) return 0;
    sync();
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  }
};

// Images as the network's input: [N, 1, H, W] float32, standardised with the training
// split's mean and standard deviation (computed once, reported).
torch::Tensor as_input(const torch::Tensor& u8, double mean, double std) {
  return ((u8.to(torch::kFloat32) / 255.0 - mean) / std).unsqueeze(1);
}

// One training run (app::run_lifecycle): set up (configuration, device, data, model,
// the inputs on the device, optimizer), resume, one step per batch, the end of each
// epoch (evaluation, history, checkpoint), and the report. The
// random draws' order is the run's contract (a resumed run is bit-identical): the model
// from the default generator seeded with seed, each epoch's batch order from (seed, epoch).
class ClassifyRun {
 public:
  explicit ClassifyRun(const Config& cfg_in);
  int64_t resume();
  train::RunnerOptions runner_options() const;
  train::Metrics step(int64_t i);
  void checkpoint(int64_t done);  // at the end of each epoch
  json finish(const app::Loop& loop);
  std::string settings() const {  // (named by an error while running: app::run_lifecycle)
    return "backbone = " + cfg_.model.backbone + ", layer = " + cfg_.model.layer + ", batch = " +
           std::to_string(cfg_.batch) + ", device = " + device_.str();
  }

 private:
  void load_inputs();
  void check_memory(const std::vector<torch::Tensor>& trainable);

  Config cfg_;
  std::string device_why_;
  torch::Device device_{torch::kCPU};
  train::PrecisionPolicy precision_;
  app::RunClock run_clock_;  // (reset once the settings are checked)
  DataSet data_;
  Split train_split_, test_split_;
  double mean_ = 0, stdev_ = 1;
  HybridNet net_{nullptr};
  std::string ckpt_, hist_path_, history_text_;  // (history_text_: the history as the checkpoint holds it)
  torch::Tensor train_x_, test_x_, train_y_, test_y_;  // on the device for the whole run: a step indexes them there
  FeatureCacheInfo cache_info_;
  int64_t n_train_ = 0, per_epoch_ = 1;
  std::unique_ptr<torch::optim::Adam> opt_;
  train::TrainState state_;
  json history_ = json::array();
  Timing timing_{false};
  StepClock clock_;
  torch::Tensor perm_, loss_sum_, correct_sum_;
  int64_t perm_epoch_ = -1, seen_ = 0;
  Clock::time_point epoch_start_;
};

ClassifyRun::ClassifyRun(const Config& cfg_in) : cfg_(cfg_in) {
  validate(cfg_);
  if (cfg_.threads > 0) torch::set_num_threads(cfg_.threads);
  if (!cfg_.circuit_file.empty()) {
    try {
      cfg_.model.circuit_json = qfleet::read_file_bounded(cfg_.circuit_file);  // no device, no file of gigabytes
    } catch (const std::runtime_error& e) {
      throw DataError(std::string("the circuit file: ") + e.what());
    }
  }
  device_ = train::device_from_setting(cfg_.device, &device_why_);
  cfg_.model.cuda = device_.is_cuda();
  // The runtime's rule: the CNN under autocast where it pays (BF16 on GPUs of compute
  // capability >= 8, FP32 on the CPU); the circuit keeps its program's precision.
  precision_ = train::precision_policy(device_);
  train::apply_backend_switches(precision_);
  cfg_.model.seed = cfg_.seed;
  run_clock_ = app::RunClock();

  data_ = load_data(cfg_.data);
  train_split_ = head(data_.train, cfg_.train_subset), test_split_ = head(data_.test, cfg_.test_subset);
  // One float64 copy of the training images (376 MB for Fashion-MNIST) for both moments,
  // freed before training.
  {
    const torch::Tensor pixels = train_split_.images.to(torch::kFloat64).div_(255.0);
    mean_ = pixels.mean().item<double>(), stdev_ = pixels.std().item<double>();
  }
  // Images that are all one value would be normalised by a standard deviation of 0.
  if (train_split_.images.numel() > 0 && train_split_.images.max().item<int64_t>() == train_split_.images.min().item<int64_t>())
    throw DataError(cfg_.data + ": the " + std::to_string(train_split_.images.size(0)) +
                    " training images are all one value (their pixels' standard deviation is 0): nothing to learn from");
  torch::manual_seed(cfg_.seed);
  net_ = HybridNet(cfg_.model);
  net_->to(device_);
  fs::create_directories(cfg_.out);
  ckpt_ = (fs::path(cfg_.out) / "checkpoint.pt").string();
  hist_path_ = (fs::path(cfg_.out) / "history.json").string();
  load_inputs();

  std::vector<torch::Tensor> trainable;
  for (auto& p : net_->parameters())
    if (p.requires_grad()) trainable.push_back(p);
  check_memory(trainable);
  opt_ = std::make_unique<torch::optim::Adam>(trainable, torch::optim::AdamOptions(cfg_.lr));
  json hashed = cfg_.to_json();
  hashed.erase("epochs");  // --resume --epochs N extends a run
  state_.config = hashed.dump();
  state_.modules = {{"model", net_.ptr().get()}};
  state_.optimizers = {{"adam", opt_.get()}};
  state_.texts = {{"history", &history_text_}};
  timing_ = Timing(device_.is_cuda());
  clock_.cuda = device_.is_cuda();
  loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  correct_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
}

// A training step's memory on 1 and 2 of the training images (the network's forward and
// its gradients, without updating the parameters, their gradients or batch norm's
// statistics), before the first step allocates it for `batch` images.
void ClassifyRun::check_memory(const std::vector<torch::Tensor>& trainable) {
  const int64_t items = std::min(cfg_.batch, n_train_);
  if (items < 2) return;
  net_->eval();
  app::check_memory_fits(device_, "batch", items, "images", [&](int64_t n) {
    std::optional<train::AutocastScope> autocast(std::in_place, precision_);
    const torch::Tensor x = train_x_.narrow(0, 0, n);
    const torch::Tensor feats = cfg_.mode == "features" ? x : net_->features(x);
    const torch::Tensor logits = net_->head_logits(net_->middle(net_->angles(feats)));
    const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, train_y_.narrow(0, 0, n));
    autocast.reset();
    (void)torch::autograd::grad({loss}, trainable, {}, c10::nullopt, false, /*allow_unused=*/true);
  });
  net_->train();
}

// The images as the network's inputs, or (mode features) the frozen backbone's features
// of them, cached on disk.
void ClassifyRun::load_inputs() {
  if (cfg_.mode == "features") {
    if (!cfg_.backbone_from.empty()) load_backbone(net_->backbone_module(), cfg_.backbone_from);
    for (auto& p : net_->backbone_module().parameters()) p.set_requires_grad(false);
    const std::string cache_dir = cfg_.cache.empty() ? (fs::path(cfg_.out) / "cache").string() : cfg_.cache;
    auto feats = cached_features(*net_, cache_dir, data_.checksum, cfg_.model.backbone,
                                 as_input(train_split_.images, mean_, stdev_), as_input(test_split_.images, mean_, stdev_),
                                 device_, cache_info_);
    train_x_ = feats.first;
    test_x_ = feats.second;
  } else {
    train_x_ = as_input(train_split_.images, mean_, stdev_).to(device_);
    test_x_ = as_input(test_split_.images, mean_, stdev_).to(device_);
  }
  train_y_ = train_split_.labels.to(device_), test_y_ = test_split_.labels.to(device_);
  n_train_ = train_x_.size(0);
  per_epoch_ = (n_train_ + cfg_.batch - 1) / cfg_.batch;
}

int64_t ClassifyRun::resume() {
  epoch_start_ = Clock::now();
  if (!cfg_.resume) return 0;
  train::load_checkpoint(ckpt_, state_);  // CheckpointError: missing, damaged, another configuration
  history_ = app::history_from_checkpoint(history_text_, state_.step / per_epoch_, hist_path_);
  return state_.step;
}

train::Metrics ClassifyRun::step(int64_t i) {
  const int64_t epoch = i / per_epoch_, b = i % per_epoch_;
  const bool timed = i % cfg_.time_every == 0;
  clock_.start(timed);
  if (epoch != perm_epoch_) {  // each epoch's order from (seed, epoch): a resumed run draws the same batches
    auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg_.seed * 1000003 + uint64_t(epoch));
    perm_ = torch::randperm(n_train_, gen, torch::kInt64).to(device_);
    perm_epoch_ = epoch;
  }
  const torch::Tensor idx = perm_.narrow(0, b * cfg_.batch, std::min(cfg_.batch, n_train_ - b * cfg_.batch));
  const torch::Tensor x = train_x_.index_select(0, idx), y = train_y_.index_select(0, idx);
  const double t_data = clock_.lap();
  net_->train();
  std::optional<train::AutocastScope> autocast(std::in_place, precision_);
  const torch::Tensor feats = cfg_.mode == "features" ? x : net_->features(x);
  const torch::Tensor angles = net_->angles(feats);
  const double t_backbone = clock_.lap();
  const torch::Tensor mid = net_->middle(angles);
  const double t_quantum = clock_.lap();
  const torch::Tensor logits = net_->head_logits(mid);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
  autocast.reset();
  const double t_head = clock_.lap();
  opt_->zero_grad();
  Clock::time_point q_in, q_out;  // the quantum layer's backward: between its output's and its input's gradients
  if (timed) {
    mid.register_hook([&](const torch::Tensor& g) { clock_.sync(); q_out = Clock::now(); return g; });
    angles.register_hook([&](const torch::Tensor& g) { clock_.sync(); q_in = Clock::now(); return g; });
  }
  loss.backward();
  const double t_backward = clock_.lap();
  opt_->step();
  const double t_opt = clock_.lap();
  if (timed)
    timing_.add({t_data, t_backbone, t_quantum, t_head, t_backward,
                 std::chrono::duration<double, std::milli>(q_in - q_out).count(), t_opt});
  const torch::Tensor hits = (logits.argmax(1) == y).sum();
  loss_sum_ += loss.detach().to(torch::kFloat64) * double(y.size(0));
  correct_sum_ += hits;
  seen_ += y.size(0);
  return {{"loss", "accuracy"}, {loss.detach(), hits.to(torch::kFloat64) / double(y.size(0))}};
}

train::RunnerOptions ClassifyRun::runner_options() const {
  return app::epoch_runner_options(per_epoch_, cfg_.epochs, cfg_.progress, (fs::path(cfg_.out) / "train_log.jsonl").string());
}

void ClassifyRun::checkpoint(int64_t done) {
  if (done % per_epoch_ != 0) return;
  const Evaluation ev = [&] {
    train::AutocastScope autocast(precision_);
    return evaluate(*net_, test_x_, test_y_, data_.n_classes, cfg_.mode == "features");
  }();
  const double secs = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  const double train_loss = seen_ ? loss_sum_.item<double>() / double(seen_) : NAN;
  const double train_acc = seen_ ? double(correct_sum_.item<int64_t>()) / double(seen_) : NAN;
  history_.push_back({{"epoch", done / per_epoch_}, {"steps", done}, {"train_loss", train_loss},
                      {"train_accuracy", train_acc}, {"test_loss", ev.loss}, {"test_accuracy", ev.accuracy},
                      {"seconds", secs}, {"confusion", confusion_json(ev.confusion)}});
  if (cfg_.progress)
    std::fprintf(stderr, "epoch %lld: train loss %.4f accuracy %.4f, test loss %.4f accuracy %.4f (%.1f s)\n",
                 static_cast<long long>(done / per_epoch_), train_loss, train_acc, ev.loss, ev.accuracy, secs);
  state_.step = done;
  history_text_ = history_.dump();
  train::save_checkpoint(ckpt_, state_);
  train::write_file_atomic(hist_path_, history_.dump(1));
  loss_sum_.zero_();
  correct_sum_.zero_();
  seen_ = 0;
  epoch_start_ = Clock::now();
}

json ClassifyRun::finish(const app::Loop& loop) {  // (the report times the whole run)
  save_backbone(net_->backbone_module(), (fs::path(cfg_.out) / "backbone.pt").string());
  ReportInputs in{cfg_, data_, train_split_, test_split_, mean_, stdev_, device_, device_why_ + "; " + precision_.rule,
                  cache_info_, history_, timing_, run_clock_, loop.first};
  json report = make_report(*net_, in);
  train::write_file_atomic((fs::path(cfg_.out) / "report.json").string(), report.dump(1));
  return report;
}

}  // namespace

json run(const Config& cfg) {
  const auto setup = [&] {
    return "setting up the run: the data (data = " + cfg.data + ") and the model (backbone = " + cfg.model.backbone +
           ", layer = " + cfg.model.layer + ", device = " + cfg.device + ")";
  };
  return app::doing(setup, [&] {  // (the run's own phases, inside, name themselves)
    ClassifyRun run(cfg);
    return app::run_lifecycle(run);
  });
}

}  // namespace qfleet::classify
