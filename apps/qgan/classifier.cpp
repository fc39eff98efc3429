// qfleet-qgan classify's training runs and report (classifier.hpp): one network per
// shot count on qfleet::train's StepRunner, checkpoints with resume, the Bayes limit
// beside each.
#include "classifier.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "bayes.hpp"
#include "common/lifecycle.hpp"
#include "common/report_header.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/tensor_file.hpp"
#include "qfleet/train.hpp"

namespace qfleet::qgan {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The network's view of a record: counts / shots, float32, on the device.
torch::Tensor frequencies(const torch::Tensor& counts, int64_t shots, const torch::Device& device) {
  return (counts.to(torch::kFloat32) / float(shots)).to(device);
}

// The records and the initial network as one tensor file (qfleet/tensor_file.hpp: data
// only; python -m qfleet reads it with qfleet.read_tensor_file, safetensors too): the same
// data and weights for a comparison outside the app.
void save_records(const std::string& path, const Records& train_set, const Records& test_set,
                  const ClassifierData& data, torch::nn::Sequential& net, int64_t shots, const torch::Tensor& check_logits) {
  train::TensorFile f;
  f.format = "qfleet-qgan-records/1";
  f.texts["shots"] = std::to_string(shots);
  f.tensors = {{"train_counts", train_set.counts},
               {"train_labels", train_set.labels},
               {"test_counts", test_set.counts},
               {"test_labels", test_set.labels},
               {"probabilities", distributions_tensor(data.probabilities)},
               {"check_logits", check_logits}};
  for (const auto& item : net->named_parameters()) f.tensors["initial_state." + item.key()] = item.value().detach();
  train::write_tensor_file(path, f);
}

struct Evaluation {
  double loss = 0, accuracy = 0;
  torch::Tensor predicted;  // [N] int64, on the CPU
};

// One network for one shot count (app::run_lifecycle): records drawn, network built,
// one step per batch, the test set evaluated at the end of each epoch, a checkpoint
// there. Its draws: the network from torch's default generator seeded with (seed,
// shots); each epoch's batch order from (seed, shots, epoch).
class ShotRun {
 public:
  ShotRun(const ClassifierConfig& c, const ClassifierData& data, int64_t shots, const torch::Device& device,
          const train::PrecisionPolicy& policy);
  int64_t resume();
  train::RunnerOptions runner_options() const;
  train::Metrics step(int64_t i);
  void checkpoint(int64_t done);
  json finish(const app::Loop& loop);
  std::string settings() const {  // (named by an error while running: app::run_lifecycle)
    return "shots = " + std::to_string(shots_) + ", batch = " + std::to_string(cfg_.batch) + ", device = " + device_.str();
  }

 private:
  Evaluation evaluate();
  uint64_t stream(uint64_t salt) const { return (cfg_.seed * 1000003 + uint64_t(shots_)) * 97 + salt; }

  const ClassifierConfig& cfg_;
  const ClassifierData& data_;
  int64_t shots_;
  torch::Device device_;
  train::PrecisionPolicy policy_;
  std::string dir_, ckpt_, hist_path_, history_text_;  // (history_text_: the history as the checkpoint holds it)
  Records train_set_, test_set_;
  torch::Tensor train_x_, train_y_, test_x_, test_y_;
  double records_seconds_ = 0, eval_seconds_ = 0;
  torch::nn::Sequential net_{nullptr};
  std::unique_ptr<torch::optim::Adam> opt_;
  std::unique_ptr<train::GradScaler> scaler_;
  train::TrainState state_;
  int64_t n_train_ = 0, per_epoch_ = 1, perm_epoch_ = -1;
  torch::Tensor perm_;
  json history_ = json::array();
};

ShotRun::ShotRun(const ClassifierConfig& c, const ClassifierData& data, int64_t shots, const torch::Device& device,
                 const train::PrecisionPolicy& policy)
    : cfg_(c), data_(data), shots_(shots), device_(device), policy_(policy) {
  dir_ = (fs::path(c.out) / ("shots_" + std::to_string(shots))).string();
  fs::create_directories(dir_);
  ckpt_ = (fs::path(dir_) / "checkpoint.pt").string();
  hist_path_ = (fs::path(dir_) / "history.json").string();
  const auto t0 = Clock::now();
  train_set_ = draw_records(data, shots, c.train_records, stream(1), c.threads);
  test_set_ = draw_records(data, shots, c.test_records, stream(2), c.threads);
  records_seconds_ = since(t0);
  train_x_ = frequencies(train_set_.counts, shots, device_), train_y_ = train_set_.labels.to(device_);
  test_x_ = frequencies(test_set_.counts, shots, device_), test_y_ = test_set_.labels.to(device_);
  n_train_ = train_x_.size(0);
  per_epoch_ = (n_train_ + c.batch - 1) / c.batch;

  torch::manual_seed(stream(3));
  const auto K = int64_t(data.devices.size()), M = int64_t(data.probabilities[0].size());
  net_ = make_classifier(M, c.hidden, K);
  net_->to(device_);
  if (c.save_records) {
    torch::NoGradGuard no_grad;
    const torch::Tensor check = net_->forward(test_x_.narrow(0, 0, std::min<int64_t>(64, test_x_.size(0))));
    save_records((fs::path(dir_) / "records.pt").string(), train_set_, test_set_, data, net_, shots, check);
  }
  opt_ = std::make_unique<torch::optim::Adam>(net_->parameters(), torch::optim::AdamOptions(c.lr));
  train::GradScalerOptions so;
  so.enabled = policy_.grad_scaler;
  scaler_ = std::make_unique<train::GradScaler>(so);
  json hashed = c.to_json();
  hashed.erase("epochs");  // --resume --epochs N extends a run
  hashed["shots"] = shots;
  state_.config = hashed.dump();
  state_.modules = {{"model", net_.ptr().get()}};
  state_.optimizers = {{"adam", opt_.get()}};
  state_.scalers = {{"scaler", scaler_.get()}};
  state_.texts = {{"history", &history_text_}};
}

int64_t ShotRun::resume() {
  if (!cfg_.resume || !fs::exists(ckpt_)) return 0;
  train::load_checkpoint(ckpt_, state_);
  history_ = app::history_from_checkpoint(history_text_, state_.step / per_epoch_, hist_path_);
  return state_.step;
}

train::RunnerOptions ShotRun::runner_options() const {
  return app::epoch_runner_options(per_epoch_, cfg_.epochs, cfg_.progress, (fs::path(dir_) / "train_log.jsonl").string());
}

train::Metrics ShotRun::step(int64_t i) {
  const int64_t epoch = i / per_epoch_, b = i % per_epoch_;
  if (epoch != perm_epoch_) {  // the epoch's order from (seed, shots, epoch): a resumed run draws the same batches
    auto gen = at::make_generator<at::CPUGeneratorImpl>(stream(100 + uint64_t(epoch)));
    perm_ = torch::randperm(n_train_, gen, torch::kInt64).to(device_);
    perm_epoch_ = epoch;
  }
  const torch::Tensor idx = perm_.narrow(0, b * cfg_.batch, std::min(cfg_.batch, n_train_ - b * cfg_.batch));
  const torch::Tensor x = train_x_.index_select(0, idx), y = train_y_.index_select(0, idx);
  net_->train();
  torch::Tensor logits, loss;
  {
    train::AutocastScope autocast(policy_);
    logits = net_->forward(x);
    loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), y);
  }
  opt_->zero_grad();
  scaler_->scale(loss).backward();
  scaler_->step(*opt_);
  scaler_->update();
  const torch::Tensor hits = (logits.argmax(1) == y).sum();
  return {{"loss", "accuracy"}, {loss.detach(), hits.to(torch::kFloat64) / double(y.size(0))}};
}

Evaluation ShotRun::evaluate() {
  torch::NoGradGuard no_grad;
  net_->eval();
  torch::Tensor logits;
  {
    train::AutocastScope autocast(policy_);
    logits = net_->forward(test_x_).to(torch::kFloat32);
  }
  Evaluation e;
  e.loss = torch::nn::functional::cross_entropy(logits, test_y_).item<double>();
  e.predicted = logits.argmax(1).to(torch::kCPU);
  e.accuracy = (e.predicted == test_set_.labels).to(torch::kFloat64).mean().item<double>();
  return e;
}

void ShotRun::checkpoint(int64_t done) {
  if (done % per_epoch_ != 0) return;
  const auto t0 = Clock::now();
  const Evaluation ev = evaluate();
  history_.push_back({{"epoch", done / per_epoch_}, {"steps", done}, {"test_loss", ev.loss}, {"test_accuracy", ev.accuracy}});
  if (cfg_.progress)
    std::fprintf(stderr, "shots %lld, epoch %lld: test loss %.4f, accuracy %.4f\n", static_cast<long long>(shots_),
                 static_cast<long long>(done / per_epoch_), ev.loss, ev.accuracy);
  state_.step = done;
  history_text_ = history_.dump();
  train::save_checkpoint(ckpt_, state_);
  train::write_file_atomic(hist_path_, history_.dump(1));
  eval_seconds_ += since(t0);
}

json ShotRun::finish(const app::Loop& loop) {
  const Evaluation ev = evaluate();
  const auto K = int64_t(data_.devices.size());
  std::vector<std::vector<int64_t>> confusion(std::size_t(K), std::vector<int64_t>(std::size_t(K), 0));
  const auto* truth = test_set_.labels.data_ptr<int64_t>();
  const auto* guess = ev.predicted.data_ptr<int64_t>();
  for (int64_t i = 0; i < test_set_.labels.size(0); ++i) ++confusion[std::size_t(truth[i])][std::size_t(guess[i])];
  const double map_test =
      map_credit(log_likelihoods(test_set_.counts, distributions_tensor(data_.probabilities)), test_set_.labels)
          .mean().item<double>();
  const auto tb = Clock::now();
  const BayesLimit bayes = bayes_limit(data_.probabilities, shots_, cfg_.bayes_records, stream(4));
  const double bayes_seconds = since(tb);
  const auto n_test = double(test_set_.labels.size(0));
  const int64_t epochs_run = (per_epoch_ * cfg_.epochs - loop.first) / per_epoch_;
  const double train_seconds = loop.seconds - eval_seconds_;
  return {{"shots", shots_},
          {"accuracy", ev.accuracy},
          {"accuracy_error", std::sqrt(ev.accuracy * (1 - ev.accuracy) / n_test)},
          {"test_loss", ev.loss},
          {"bayes", bayes.to_json()},
          {"fraction_of_bayes", ev.accuracy / bayes.accuracy},
          {"map_rule_on_test", map_test},
          {"confusion", confusion},
          {"history", history_},
          {"resumed_from_step", loop.first},
          {"timing",
           {{"records_seconds", records_seconds_},
            {"train_seconds", train_seconds},
            {"train_ms_per_epoch", epochs_run > 0 ? json(1e3 * train_seconds / double(epochs_run)) : json()},  // null: no epoch ran
            {"eval_seconds", eval_seconds_},
            {"bayes_seconds", bayes_seconds},
            {"records_share", records_seconds_ / (records_seconds_ + train_seconds)},
            {"steps_per_epoch", per_epoch_},
            {"host_syncs", loop.host_syncs}}},
          {"files", {{"checkpoint", ckpt_}, {"history", hist_path_}}}};
}

json device_json(const ClassifierData& d) {
  json out = json::array();
  for (std::size_t k = 0; k < d.devices.size(); ++k)
    out.push_back({{"name", d.devices[k].name}, {"kind", d.devices[k].kind}, {"source", d.devices[k].source},
                   {"run", d.device_runs[k]}, {"probabilities", d.probabilities[k]}});
  return out;
}

}  // namespace

json run_classifier(const ClassifierConfig& cfg) {
  validate(cfg);
  const app::RunClock clock;
  // The engine draws the records on `threads` threads; the network's layers are too small
  // to split: on the CPU it runs on one (on 2 cores, two threads made an epoch 4.6-5.1x
  // slower, `git show b60db4d:docs/benchmarks.md`). Restored on the way out.
  struct TorchThreads {
    int before = torch::get_num_threads();
    ~TorchThreads() { torch::set_num_threads(before); }
  } restore;
  std::string why;
  const torch::Device device = train::device_from_setting(cfg.device, &why);
  const train::PrecisionPolicy policy = train::precision_policy(device);
  train::apply_backend_switches(policy);
  if (device.is_cpu()) torch::set_num_threads(1);
  const ClassifierData data = classifier_distributions(cfg);
  json report = app::report_header("qfleet-qgan classify", cfg.to_json(), cfg.seed, clock);
  report["circuit"] = {{"name", data.circuit.name}, {"description", data.circuit.description}};
  report["devices"] = device_json(data);
  report["outcomes"] = data.probabilities[0].size();
  report["chance"] = 1.0 / double(data.devices.size());
  report["device"] = {{"name", device.str()}, {"why", why}, {"precision", policy.rule}};
  report["results"] = json::array();
  for (std::size_t i = 0; i < cfg.shots.size(); ++i) {
    if (cfg.progress)
      std::fprintf(stderr, "[%zu/%zu] %lld shots per record\n", i + 1, cfg.shots.size(), static_cast<long long>(cfg.shots[i]));
    const auto setup = [&] {
      return "drawing the records and building the network for " + std::to_string(cfg.shots[i]) + " shots (device = " +
             device.str() + ")";
    };
    report["results"].push_back(app::doing(setup, [&] {  // (the run's own phases, inside, name themselves)
      ShotRun run(cfg, data, cfg.shots[i], device, policy);
      return app::run_lifecycle(run);
    }));
  }
  report["timing"] = {{"distributions_seconds", data.seconds}, {"seconds", report["wall_seconds"]}};
  train::write_file_atomic((fs::path(cfg.out) / "classifier.json").string(), json_problem::dump(report, 1));
  return report;
}

}  // namespace qfleet::qgan
