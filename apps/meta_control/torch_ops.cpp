// TORCH_LIBRARY(qfleet_meta): the meta-control app's entry points for Python.
// `python -m qfleet.meta_control` and the qfleet.meta_control module call these
// operators, so Python runs this library's code, not a re-implementation
// (docs/architecture.md, "how to add an app"). Configurations cross as the
// resolved JSON text; a bad configuration reaches Python as ValueError (which the
// module re-raises as qfleet.meta_control.ConfigError), anything else as
// RuntimeError, each with the library's message.
#include <torch/custom_class.h>
#include <torch/library.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "fit.hpp"
#include "meta_control.hpp"

namespace qfleet::meta {
namespace {

// Runs `f`, turning ConfigError into c10::ValueError (Python's ValueError).
template <class F>
auto config_errors_as_value_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ConfigError& e) {
    C10_THROW_ERROR(ValueError, e.what());
  } catch (const app::OutputFolderInUse& e) {
    C10_THROW_ERROR(ValueError, e.what());
  }
}

// JSON text from Python; malformed text is a ConfigError naming `what`.
nlohmann::json parse(const std::string& text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(std::string(what) + " is not valid JSON: " + e.what());
  }
}

Config config_of(const std::string& resolved) {
  return config_errors_as_value_errors([&] {
    // Checked again: a caller may hand over a dictionary it edited after resolving.
    return make_config(resolve_config(parse(resolved, "the configuration"), "", {}));
  });
}

int64_t cli(const std::string& prog, const std::vector<std::string>& args) { return cli_main(prog, args); }

std::string schema_text() { return schema().dump(); }

std::string resolve(const std::string& file, const std::string& preset, const std::vector<std::string>& overrides) {
  return config_errors_as_value_errors(
      [&] { return resolve_config(parse(file, "the configuration"), preset, overrides).dump(); });
}

std::string load_file(const std::string& path) {
  return config_errors_as_value_errors([&] { return load_config_file(path).dump(); });
}

std::string check(const std::string& resolved) { return config_of(resolved).json.dump(); }

std::tuple<std::string, bool> run_app(const std::string& resolved, bool resume, int64_t stop_after, bool progress,
                                      const std::string& app, bool overwrite) {
  const Config cfg = config_of(resolved);
  std::unique_ptr<Progress> bar = progress ? make_progress_bar() : nullptr;
  RunOptions opt;
  opt.resume = resume;
  opt.overwrite = overwrite;
  opt.ways = {"resume=True", "overwrite=True", "output_dir"};  // (qfleet.meta_control.run's keywords)
  opt.stop_after = stop_after;
  opt.progress = bar.get();
  opt.app = app;
  RunResult r = config_errors_as_value_errors([&] { return run(cfg, opt); });
  return {r.report.dump(), r.complete};
}

int64_t size(const std::string& resolved) { return policy_size(config_of(resolved)); }

// The reproduction's fits (fit.hpp), for tests against scipy and for scripts.
std::vector<double> saturation(const std::vector<double>& K, const std::vector<double>& G) {
  try {
    const auto f = fit_saturation(K, G);
    return {f.c, f.beta, f.r2};
  } catch (const std::invalid_argument& e) {
    C10_THROW_ERROR(ValueError, e.what());
  }
}
std::vector<double> line(const std::vector<double>& x, const std::vector<double>& y) {
  try {
    const auto f = fit_line(x, y);
    return {f.slope, f.intercept, f.r2};
  } catch (const std::invalid_argument& e) {
    C10_THROW_ERROR(ValueError, e.what());
  }
}

// MetaStep for Python (torch.classes.qfleet_meta.MetaStep): compiled once, called per step;
// qfleet.meta_control.meta_gradient / meta_objective are one-off calls of it.
struct MetaStepHolder : torch::CustomClassHolder {
  explicit MetaStepHolder(const std::string& resolved)
      : step(config_errors_as_value_errors([&] { return std::make_unique<MetaStep>(config_of(resolved)); })) {}
  at::Tensor gradient(const at::Tensor& theta, const at::Tensor& noise) {
    return config_errors_as_value_errors([&] { return step->gradient(theta, noise); });
  }
  double objective(const at::Tensor& theta, const at::Tensor& noise) {
    return config_errors_as_value_errors([&] { return step->objective(theta, noise); });
  }
  std::unique_ptr<MetaStep> step;
};

}  // namespace
}  // namespace qfleet::meta

TORCH_LIBRARY(qfleet_meta, m) {
  using namespace qfleet::meta;
  m.def("main(str prog, str[] args) -> int", &cli);
  m.def("schema() -> str", &schema_text);
  m.def("resolve_config(str file, str preset, str[] overrides) -> str", &resolve);
  m.def("load_config_file(str path) -> str", &load_file);
  m.def("check_config(str resolved) -> str", &check);
  m.def("run(str resolved, bool resume, int stop_after, bool progress, str app, bool overwrite) -> (str, bool)", &run_app);
  m.def("policy_size(str resolved) -> int", &size);
  m.def("fit_saturation(float[] K, float[] G) -> float[]", &saturation);
  m.def("fit_line(float[] x, float[] y) -> float[]", &line);
  m.class_<MetaStepHolder>("MetaStep")
      .def(torch::init<std::string>())
      .def("gradient", &MetaStepHolder::gradient)
      .def("objective", &MetaStepHolder::objective);
}
