// torch.classes.qfleet.ControlOptimizer: the batched optimiser (include/qfleet/control.hpp)
// for Python's qfleet.control, which evaluates the pending tasks and hands the results back.
#include <nlohmann/json.hpp>

#include "../op_support.hpp"
#include "classes.hpp"
#include "qfleet/control.hpp"
#include "qfleet/error.hpp"

namespace qfleet::control {
namespace {

using torch::Tensor;

// Options from a JSON object whose keys are the fields' names (python/qfleet/control.py).
Options options_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  TORCH_CHECK_VALUE(j.is_object(), "qfleet.control: options must be a JSON object");
  Options o;
  for (const auto& [key, v] : j.items()) {
    try {
      if (key == "method") {
        const std::string m = v.get<std::string>();
        TORCH_CHECK_VALUE(m == "lbfgsb" || m == "adam", "qfleet.control: unknown method '", m, "' (lbfgsb, adam)");
        o.method = m == "adam" ? Method::adam : Method::lbfgsb;
      } else if (key == "schedule") {
        const std::string m = v.get<std::string>();
        TORCH_CHECK_VALUE(m == "constant" || m == "cosine", "qfleet.control: unknown schedule '", m, "' (constant, cosine)");
        o.schedule = m == "cosine" ? Schedule::cosine : Schedule::constant;
      } else if (key == "target" && v.is_array()) {
        o.targets = torch::tensor(v.get<std::vector<double>>(), torch::kFloat64);
      } else if (key == "target") o.target = v.is_null() ? -std::numeric_limits<double>::infinity() : v.get<double>();
      else if (key == "gtol") o.gtol = v.get<double>();
      else if (key == "ftol") o.ftol = v.get<double>();
      else if (key == "max_evaluations") o.max_evaluations = v.get<int64_t>();
      else if (key == "max_iterations") o.max_iterations = v.is_null() ? -1 : v.get<int64_t>();
      else if (key == "max_seconds") o.max_seconds = v.is_null() ? std::numeric_limits<double>::infinity() : v.get<double>();
      else if (key == "memory") o.memory = v.get<int>();
      else if (key == "lr") o.lr = v.get<double>();
      else if (key == "beta1") o.beta1 = v.get<double>();
      else if (key == "beta2") o.beta2 = v.get<double>();
      else if (key == "eps") o.eps = v.get<double>();
      else if (key == "keep_best") o.keep_best = v.get<bool>();
      else if (key == "record_history") o.record_history = v.get<bool>();
      else TORCH_CHECK_VALUE(false, "qfleet.control: unknown option '", key, "'");
    } catch (const nlohmann::json::exception&) {
      TORCH_CHECK_TYPE(false, "qfleet.control: option '", key, "' has the wrong type: ", v.dump());
    }
  }
  return o;
}

struct ControlOptimizer : torch::CustomClassHolder {
  Optimizer opt;
  ControlOptimizer(const Tensor& x0, const std::optional<Tensor>& lower, const std::optional<Tensor>& upper,
                   const std::string& options)
      : opt(nn::op_support::guarded([&] {
          Options o = options_from_json(options);
          if (lower) o.lower = *lower;
          if (upper) o.upper = *upper;
          return Optimizer(x0, o);
        })) {}
};

using Summary = std::tuple<Tensor, Tensor, Tensor, Tensor, std::vector<std::string>, std::vector<std::vector<double>>, double>;

Summary summary(const Optimizer& opt) {
  Result r = opt.result();
  std::vector<std::string> reasons;
  for (Reason why : r.reasons) reasons.emplace_back(reason_name(why));
  return {r.x, r.cost, r.evaluations, r.iterations, reasons, r.history, r.seconds};
}

}  // namespace
}  // namespace qfleet::control

// Called from TORCH_LIBRARY(qfleet) (ops.cpp) after OpenSystemProgram is registered: a
// method taking that class cannot be registered before it (static initialisation order).
void qfleet::control::register_classes(torch::Library& m) {
  using qfleet::control::ControlOptimizer;
  // One evaluation of the engine's 1 - F and its gradient (qfleet::control::infidelity) at
  // amplitudes x [A, n_seg * n_ctrl] of tasks [A]: what run_infidelity calls each round.
  m.def("control_infidelity",
        [](const c10::intrusive_ptr<qfleet::nn::OpenSystemProgram>& program, const at::Tensor& x,
           const at::Tensor& tasks, const std::optional<at::Tensor>& rates,
           const std::optional<at::Tensor>& drift_coeffs, const std::optional<at::Tensor>& weights) {
          return qfleet::nn::op_support::guarded([&] {
            auto [cost, grad] = qfleet::control::infidelity(program, rates.value_or(at::Tensor()),
                                                            drift_coeffs.value_or(at::Tensor()),
                                                            weights.value_or(at::Tensor()))(x, tasks);
            return std::make_tuple(cost, grad);
          });
        });
  m.class_<ControlOptimizer>("ControlOptimizer")
      .def(torch::init<const at::Tensor&, const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                       const std::string&>())
      // (task indices [A], points [A, n]) of the tasks that want an evaluation; A = 0 when done.
      .def("ask",
           [](const c10::intrusive_ptr<ControlOptimizer>& self) {
             return std::make_tuple(self->opt.pending(), self->opt.points());
           })
      .def("tell",
           [](const c10::intrusive_ptr<ControlOptimizer>& self, const at::Tensor& cost, const at::Tensor& grad) {
             qfleet::nn::op_support::guarded([&] {
               self->opt.tell(cost, grad);
               return 0;
             });
           })
      .def("done", [](const c10::intrusive_ptr<ControlOptimizer>& self) { return self->opt.done(); })
      // The whole loop in C++ on the engine's 1 - F (qfleet::control::infidelity); weights: an ensemble.
      .def("run_infidelity",
           [](const c10::intrusive_ptr<ControlOptimizer>& self,
              const c10::intrusive_ptr<qfleet::nn::OpenSystemProgram>& program, const std::optional<at::Tensor>& rates,
              const std::optional<at::Tensor>& drift_coeffs, const std::optional<at::Tensor>& weights) {
             qfleet::nn::op_support::guarded([&] {
               qfleet::control::run_infidelity(self->opt, program, rates.value_or(at::Tensor()),
                                               drift_coeffs.value_or(at::Tensor()), weights.value_or(at::Tensor()));
               return 0;
             });
             return qfleet::control::summary(self->opt);
           })
      .def("result", [](const c10::intrusive_ptr<ControlOptimizer>& self) { return qfleet::control::summary(self->opt); });
}
