// torch.classes.qfleet_train: the training runtime's C++ pieces from Python
// (python/qfleet/train.py wraps them). Errors become ValueError.
#include <torch/custom_class.h>

#include "qfleet/train.hpp"

namespace {

using qfleet::train::MetricMeter;

struct MeterHolder : torch::CustomClassHolder {
  MeterHolder(int64_t sync_every, const std::string& log_path) : meter(make(sync_every, log_path)) {}
  static MetricMeter make(int64_t sync_every, const std::string& log_path) {
    try {
      return MetricMeter({sync_every, log_path});
    } catch (const std::invalid_argument& e) {
      C10_THROW_ERROR(ValueError, e.what());
    }
  }
  MetricMeter meter;
};

using Holder = c10::intrusive_ptr<MeterHolder>;

}  // namespace

TORCH_LIBRARY(qfleet_train, m) {
  m.class_<MeterHolder>("MetricMeter")
      .def(torch::init<int64_t, std::string>())
      .def("add",
           [](const Holder& self, std::vector<std::string> names, std::vector<at::Tensor> values) {
             try {
               return self->meter.add({std::move(names), std::move(values)});
             } catch (const std::invalid_argument& e) {
               C10_THROW_ERROR(ValueError, e.what());
             }
           })
      .def("flush", [](const Holder& self) { return self->meter.flush(); })
      .def("names", [](const Holder& self) { return self->meter.names(); })
      .def("steps", [](const Holder& self) { return self->meter.steps(); })
      .def("host_syncs", [](const Holder& self) { return self->meter.host_syncs(); })
      // Each row as [step, steps, seconds, mean_0, mean_1, ...].
      .def("rows", [](const Holder& self) {
        std::vector<std::vector<double>> out;
        for (const auto& r : self->meter.rows()) {
          std::vector<double> row = {double(r.step), double(r.steps), r.seconds};
          row.insert(row.end(), r.means.begin(), r.means.end());
          out.push_back(std::move(row));
        }
        return out;
      });
}
