// Evaluation on the test split, the step's component timing, and report.json.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "classify.hpp"
#include "common/report_header.hpp"
#include "features.hpp"

namespace qfleet::classify {

// The step's parts, in order; quantum_backward is the part of backward spent in the
// quantum (or, for the ablation, classical) layer, measured between the gradients of its
// output and of its input.
inline const std::vector<std::string> kComponents = {"data", "backbone_forward", "quantum_forward", "head_forward",
                                                     "backward", "quantum_backward", "optimizer"};

class Timing {
 public:
  explicit Timing(bool cuda) : cuda_(cuda), sums_(kComponents.size(), 0.0) {}
  void add(const std::vector<double>& ms);  // one timed step, in kComponents' order
  // {"steps", "ms": {component: mean}, "share": {component: fraction of the step}, "step_ms"}
  nlohmann::json to_json() const;

 private:
  bool cuda_;
  std::vector<double> sums_;
  int64_t steps_ = 0;
};

struct Evaluation {
  double loss = 0, accuracy = 0;
  torch::Tensor confusion;  // int64 [classes, classes]: row = true label, column = prediction
};
// Batches of 1000 in eval mode; `inputs_are_features` for the features mode.
Evaluation evaluate(HybridNetImpl& net, const torch::Tensor& inputs, const torch::Tensor& labels, int64_t n_classes,
                    bool inputs_are_features);
nlohmann::json confusion_json(const torch::Tensor& confusion);

struct ReportInputs {
  const Config& cfg;
  const DataSet& data;
  const Split &train, &test;
  double mean, stdev;
  torch::Device device;
  std::string device_why;
  const FeatureCacheInfo& cache;
  const nlohmann::json& history;
  const Timing& timing;
  const app::RunClock& clock;
  int64_t resumed_from_step;
};
nlohmann::json make_report(HybridNetImpl& net, const ReportInputs& in);

}  // namespace qfleet::classify
