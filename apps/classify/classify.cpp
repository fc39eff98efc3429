// The training run of qfleet-classify (classify.hpp): data, model, the timed step on
// qfleet::train's StepRunner, evaluation, checkpoints with resume, the report.
#include "classify.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "features.hpp"
#include "qfleet/train.hpp"
#include "report.hpp"

namespace qfleet::classify {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

json Config::to_json() const {
  return {{"data", data},
          {"mode", mode},
          {"backbone", model.backbone},
          {"layer", model.layer},
          {"qubits", model.qubits},
          {"layers", model.layers},
          {"embedding", model.embedding},
          {"entangler", model.entangler},
          {"measure", model.measure},
          {"circuit", circuit_file},
          {"head_inputs", model.head_inputs},
          {"precision", model.precision},
          {"backbone_from", backbone_from},
          {"epochs", epochs},
          {"batch", batch},
          {"lr", lr},
          {"train_subset", train_subset},
          {"test_subset", test_subset},
          {"seed", seed},
          {"device", device}};
}

void validate(const Config& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.mode != "end_to_end" && c.mode != "features") bad("mode \"" + c.mode + "\": end_to_end or features");
  if (c.epochs < 1 || c.epochs > 10000) bad("epochs = " + std::to_string(c.epochs) + ": 1 to 10000");
  if (c.batch < 1 || c.batch > 65536) bad("batch = " + std::to_string(c.batch) + ": 1 to 65536");
  if (!(c.lr > 0 && c.lr < 10)) bad("lr = " + std::to_string(c.lr) + ": in (0, 10)");
  if (c.train_subset < 0 || c.test_subset < 0) bad("train_subset / test_subset: 0 (all) or a positive count");
  if (c.time_every < 1) bad("time_every = " + std::to_string(c.time_every) + ": at least 1");
  if (c.device != "cpu" && c.device != "cuda" && c.device != "auto") bad("device \"" + c.device + "\": cpu, cuda or auto");
  if (c.mode == "end_to_end" && !c.backbone_from.empty()) bad("backbone_from is for mode = features");
}

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

}  // namespace

json run(const Config& cfg_in) {
  Config cfg = cfg_in;
  validate(cfg);
  if (cfg.threads > 0) torch::set_num_threads(cfg.threads);
  if (!cfg.circuit_file.empty()) {
    std::ifstream f(cfg.circuit_file);
    if (!f) throw DataError(cfg.circuit_file + ": cannot open the circuit file");
    cfg.model.circuit_json.assign(std::istreambuf_iterator<char>(f), {});
  }
  std::string device_why;
  const torch::Device device = train::device_from_setting(cfg.device, &device_why);
  cfg.model.cuda = device.is_cuda();
  // The runtime's rule: the CNN under autocast where it pays (BF16 on GPUs of compute
  // capability >= 8, FP32 on the CPU); the circuit keeps its program's precision.
  const train::PrecisionPolicy precision = train::precision_policy(device);
  train::apply_backend_switches(precision);
  cfg.model.seed = cfg.seed;
  const auto t_start = Clock::now();

  DataSet data = load_data(cfg.data);
  const Split train_split = head(data.train, cfg.train_subset), test_split = head(data.test, cfg.test_subset);
  // One float64 copy of the training images (376 MB for Fashion-MNIST) for both moments,
  // freed before training.
  const auto [mean, stdev] = [&] {
    const torch::Tensor pixels = train_split.images.to(torch::kFloat64).div_(255.0);
    return std::pair<double, double>(pixels.mean().item<double>(), pixels.std().item<double>());
  }();

  torch::manual_seed(cfg.seed);
  HybridNet net(cfg.model);
  net->to(device);
  fs::create_directories(cfg.out);
  const std::string ckpt = (fs::path(cfg.out) / "checkpoint.pt").string();
  const std::string hist_path = (fs::path(cfg.out) / "history.json").string();

  // Inputs live on the device for the whole run: a step indexes them there (no host
  // copies in the step).
  torch::Tensor train_x, test_x;
  FeatureCacheInfo cache_info;
  if (cfg.mode == "features") {
    if (!cfg.backbone_from.empty()) load_backbone(net->backbone_module(), cfg.backbone_from);
    for (auto& p : net->backbone_module().parameters()) p.set_requires_grad(false);
    const std::string cache_dir = cfg.cache.empty() ? (fs::path(cfg.out) / "cache").string() : cfg.cache;
    auto feats = cached_features(*net, cache_dir, data.checksum, cfg.model.backbone, as_input(train_split.images, mean, stdev),
                                 as_input(test_split.images, mean, stdev), device, cache_info);
    train_x = feats.first;
    test_x = feats.second;
  } else {
    train_x = as_input(train_split.images, mean, stdev).to(device);
    test_x = as_input(test_split.images, mean, stdev).to(device);
  }
  const torch::Tensor train_y = train_split.labels.to(device), test_y = test_split.labels.to(device);
  const int64_t n_train = train_x.size(0);
  const int64_t per_epoch = (n_train + cfg.batch - 1) / cfg.batch;
  const int64_t total = per_epoch * cfg.epochs;

  std::vector<torch::Tensor> trainable;
  for (auto& p : net->parameters())
    if (p.requires_grad()) trainable.push_back(p);
  torch::optim::Adam opt(trainable, torch::optim::AdamOptions(cfg.lr));

  train::TrainState state;
  json hashed = cfg.to_json();
  hashed.erase("epochs");  // --resume --epochs N extends a run
  state.config = hashed.dump();
  state.modules = {{"model", net.ptr().get()}};
  state.optimizers = {{"adam", &opt}};
  json history = json::array();
  int64_t first = 0;
  if (cfg.resume) {
    train::load_checkpoint(ckpt, state);  // CheckpointError: missing, damaged, another configuration
    first = state.step;
    std::ifstream h(hist_path);
    if (h) history = json::parse(h, nullptr, false);
    if (!history.is_array()) history = json::array();
    while (int64_t(history.size()) > first / per_epoch) history.erase(history.end() - 1);
  }

  Timing timing(device.is_cuda());
  StepClock clock;
  clock.cuda = device.is_cuda();
  torch::Tensor perm;
  int64_t perm_epoch = -1;
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  torch::Tensor correct_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  int64_t seen = 0;
  auto epoch_start = Clock::now();

  auto step = [&](int64_t i) -> train::Metrics {
    const int64_t epoch = i / per_epoch, b = i % per_epoch;
    const bool timed = i % cfg.time_every == 0;
    clock.start(timed);
    if (epoch != perm_epoch) {  // each epoch's order from (seed, epoch): a resumed run draws the same batches
      auto gen = at::make_generator<at::CPUGeneratorImpl>(cfg.seed * 1000003 + uint64_t(epoch));
      perm = torch::randperm(n_train, gen, torch::kInt64).to(device);
      perm_epoch = epoch;
    }
    const torch::Tensor idx = perm.narrow(0, b * cfg.batch, std::min(cfg.batch, n_train - b * cfg.batch));
    const torch::Tensor x = train_x.index_select(0, idx), y = train_y.index_select(0, idx);
    const double t_data = clock.lap();
    net->train();
    std::optional<train::AutocastScope> autocast(std::in_place, precision);
    const torch::Tensor feats = cfg.mode == "features" ? x : net->features(x);
    const torch::Tensor angles = net->angles(feats);
    const double t_backbone = clock.lap();
    const torch::Tensor mid = net->middle(angles);
    const double t_quantum = clock.lap();
    const torch::Tensor logits = net->head_logits(mid);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
    autocast.reset();
    const double t_head = clock.lap();
    opt.zero_grad();
    Clock::time_point q_in, q_out;  // the quantum layer's backward: between its output's and its input's gradients
    if (timed) {
      mid.register_hook([&](const torch::Tensor& g) { clock.sync(); q_out = Clock::now(); return g; });
      angles.register_hook([&](const torch::Tensor& g) { clock.sync(); q_in = Clock::now(); return g; });
    }
    loss.backward();
    const double t_backward = clock.lap();
    opt.step();
    const double t_opt = clock.lap();
    if (timed)
      timing.add({t_data, t_backbone, t_quantum, t_head, t_backward,
                  std::chrono::duration<double, std::milli>(q_in - q_out).count(), t_opt});
    const torch::Tensor hits = (logits.argmax(1) == y).sum();
    loss_sum += loss.detach().to(torch::kFloat64) * double(y.size(0));
    correct_sum += hits;
    seen += y.size(0);
    return {{"loss", "accuracy"}, {loss.detach(), hits.to(torch::kFloat64) / double(y.size(0))}};
  };

  auto end_of_epoch = [&](int64_t done) {
    if (done % per_epoch != 0) return;
    const Evaluation ev = [&] {
      train::AutocastScope autocast(precision);
      return evaluate(*net, test_x, test_y, data.n_classes, cfg.mode == "features");
    }();
    const double secs = std::chrono::duration<double>(Clock::now() - epoch_start).count();
    const double train_loss = seen ? loss_sum.item<double>() / double(seen) : NAN;
    const double train_acc = seen ? double(correct_sum.item<int64_t>()) / double(seen) : NAN;
    history.push_back({{"epoch", done / per_epoch}, {"steps", done}, {"train_loss", train_loss}, {"train_accuracy", train_acc},
                       {"test_loss", ev.loss}, {"test_accuracy", ev.accuracy}, {"seconds", secs},
                       {"confusion", confusion_json(ev.confusion)}});
    if (cfg.progress)
      std::fprintf(stderr, "epoch %lld: train loss %.4f accuracy %.4f, test loss %.4f accuracy %.4f (%.1f s)\n",
                   static_cast<long long>(done / per_epoch), train_loss, train_acc, ev.loss, ev.accuracy, secs);
    state.step = done;
    train::save_checkpoint(ckpt, state);
    train::write_file_atomic(hist_path, history.dump(1));
    loss_sum.zero_();
    correct_sum.zero_();
    seen = 0;
    epoch_start = Clock::now();
  };

  train::RunnerOptions ro;
  ro.steps = total;
  ro.sync_every = std::max<int64_t>(1, std::min<int64_t>(50, per_epoch));
  ro.progress = cfg.progress;
  ro.checkpoint_every = per_epoch;
  ro.log_path = (fs::path(cfg.out) / "train_log.jsonl").string();
  train::StepRunner runner(ro);
  runner.run(step, first, end_of_epoch);
  torch::save(net->backbone_module().shared_from_this(), (fs::path(cfg.out) / "backbone.pt").string());

  ReportInputs in{cfg, data, train_split, test_split, mean, stdev, device, device_why + "; " + precision.rule, cache_info, history, timing,
                  std::chrono::duration<double>(Clock::now() - t_start).count(), first};
  json report = make_report(*net, in);
  train::write_file_atomic((fs::path(cfg.out) / "report.json").string(), report.dump(1));
  return report;
}

}  // namespace qfleet::classify
