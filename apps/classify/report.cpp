// Evaluation, timing and the report (report.hpp).
#include "report.hpp"
#include "common/report_header.hpp"

#include <cmath>
#include <cstdlib>

namespace qfleet::classify {
using json = nlohmann::json;

void Timing::add(const std::vector<double>& ms) {
  for (std::size_t i = 0; i < sums_.size() && i < ms.size(); ++i) sums_[i] += ms[i];
  ++steps_;
}

json Timing::to_json() const {
  json ms = json::object(), share = json::object();
  double step = 0;
  for (std::size_t i = 0; i < sums_.size(); ++i)
    if (kComponents[i] != "quantum_backward") step += steps_ ? sums_[i] / double(steps_) : 0.0;
  for (std::size_t i = 0; i < sums_.size(); ++i) {
    const double m = steps_ ? sums_[i] / double(steps_) : 0.0;
    ms[kComponents[i]] = m;
    share[kComponents[i]] = step > 0 ? m / step : 0.0;
  }
  const double q = ms["quantum_forward"].get<double>() + ms["quantum_backward"].get<double>();
  return {{"timed_steps", steps_},
          {"step_ms", step},
          {"ms", ms},
          {"share", share},
          {"quantum_layer_ms", q},
          {"quantum_layer_share", step > 0 ? q / step : 0.0},
          {"transfers", "none in the step: the data set is on the device before training and indexed there"},
          {"how", std::string("wall clock between marks in the step") +
                      (cuda_ ? ", each mark after torch::cuda::synchronize() (timed steps only)" : "") +
                      "; quantum_backward is part of backward (between the gradients of the layer's output and input)"}};
}

Evaluation evaluate(HybridNetImpl& net, const torch::Tensor& inputs, const torch::Tensor& labels, int64_t n_classes,
                    bool inputs_are_features) {
  torch::NoGradGuard no_grad;
  net.eval();
  Evaluation ev;
  torch::Tensor loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(inputs.device()));
  torch::Tensor counts = torch::zeros({n_classes * n_classes}, torch::TensorOptions().dtype(torch::kInt64).device(inputs.device()));
  const int64_t n = inputs.size(0);
  for (int64_t at = 0; at < n; at += 1000) {
    const int64_t m = std::min<int64_t>(1000, n - at);
    const torch::Tensor x = inputs.narrow(0, at, m), y = labels.narrow(0, at, m);
    const torch::Tensor feats = inputs_are_features ? x : net.features(x);
    const torch::Tensor logits = net.head_logits(net.middle(net.angles(feats)));
    loss += torch::nn::functional::cross_entropy(logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .to(torch::kFloat64);
    counts += torch::bincount(y * n_classes + logits.argmax(1), {}, n_classes * n_classes);
  }
  ev.confusion = counts.view({n_classes, n_classes}).cpu();
  ev.loss = loss.item<double>() / double(n);
  ev.accuracy = double(ev.confusion.diagonal().sum().item<int64_t>()) / double(n);
  return ev;
}

json confusion_json(const torch::Tensor& c) {
  json rows = json::array();
  for (int64_t i = 0; i < c.size(0); ++i) {
    json r = json::array();
    for (int64_t j = 0; j < c.size(1); ++j) r.push_back(c[i][j].item<int64_t>());
    rows.push_back(r);
  }
  return rows;
}

json make_report(HybridNetImpl& net, const ReportInputs& in) {
  const ParameterCounts pc = count_parameters(net);
  json report = app::report_header("qfleet-classify", in.cfg.to_json(), in.cfg.seed, in.clock);
  report["seeds"] = {{"model", "torch::manual_seed(seed) before the model is built; circuit weights uniform in [0, 2 pi) from seed"},
                     {"batches", "epoch e's order: randperm from a generator seeded seed * 1000003 + e"}};
  report["data"] = {{"dir", in.data.dir},
                    {"train_images", in.train.images_path},
                    {"test_images", in.test.images_path},
                    {"train", in.train.images.size(0)},
                    {"test", in.test.images.size(0)},
                    {"image", {in.data.height, in.data.width}},
                    {"classes", class_names(in.data)},
                    {"checksum", in.data.checksum},
                    {"standardisation", {{"mean", in.mean}, {"std", in.stdev}}}};
  report["model"] = {{"description", net.describe()},
                     {"parameters", {{"backbone", pc.backbone}, {"to_angles", pc.to_angles}, {"middle", pc.middle}, {"head", pc.head}}},
                     {"middle_layer", in.cfg.model.layer}};
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  report["device"] = {{"name", in.device.str()}, {"why", in.device_why}, {"threads", torch::get_num_threads()},
                      {"omp_wait_policy", wait ? wait : "(unset: the runtime's default)"}};
  if (in.cfg.mode == "features")
    report["features"] = {{"cache", in.cache.path}, {"key", in.cache.key}, {"checksum", in.cache.checksum}, {"hit", in.cache.hit},
                          {"seconds", in.cache.seconds}, {"note", in.cache.note},
                          {"backbone", in.cfg.backbone_from.empty() ? "random initialisation, frozen (no --backbone-from)"
                                                                    : in.cfg.backbone_from}};
  report["epochs"] = in.history;
  report["timing"] = in.timing.to_json();
  report["seconds"] = report["wall_seconds"];
  report["resumed_from_step"] = in.resumed_from_step;
  if (!in.history.empty()) {
    const json& last = in.history.back();
    const auto names = class_names(in.data);
    json per_class = json::object();
    const json& cm = last["confusion"];
    for (std::size_t i = 0; i < cm.size(); ++i) {
      int64_t row = 0;
      for (const auto& v : cm[i]) row += v.get<int64_t>();
      per_class[i < names.size() ? names[i] : std::to_string(i)] = row ? double(cm[i][i].get<int64_t>()) / double(row) : NAN;
    }
    report["test_accuracy"] = last["test_accuracy"];
    report["test_loss"] = last["test_loss"];
    report["per_class_accuracy"] = per_class;
    report["confusion"] = cm;
  }
  return report;
}

}  // namespace qfleet::classify
