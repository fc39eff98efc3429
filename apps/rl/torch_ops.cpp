// The environments and the app for Python: torch.classes.qfleet_rl.VecEnv (the class that
// qfleet.rl's Gymnasium VectorEnv wraps) and torch.ops.qfleet_rl.main (the command line
// of qfleet-rl; python -m qfleet.rl runs it).
#include <torch/custom_class.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli.hpp"
#include "vec_env.hpp"

namespace {

using qfleet::rl::EnvConfig;
using qfleet::rl::VecEnv;

struct VecEnvHolder : torch::CustomClassHolder {
  explicit VecEnvHolder(const std::string& config_json)
      : env(EnvConfig::from_json(nlohmann::json::parse(config_json))) {}
  VecEnv env;
};

using Step = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// The static description Python needs to build its spaces: one JSON object.
std::string spec(const VecEnv& e) {
  const auto& t = e.task();
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& r : t.ranges) ranges.push_back({r.first, r.second});
  return nlohmann::json{{"config", e.config().to_json()},
                        {"task", t.name},
                        {"dim", t.dim},
                        {"gate", t.gate},
                        {"closed", t.jumps.empty()},
                        {"num_envs", e.num_envs()},
                        {"obs_dim", e.obs_dim()},
                        {"n_controls", e.n_controls()},
                        {"control_names", t.control_names},
                        {"n_actions", e.n_actions()},
                        {"pulse_library", e.pulse_library()},
                        {"discrete", e.discrete()},
                        {"n_steps", e.n_steps()},
                        {"segment_duration", e.segment_duration()},
                        {"max_amplitude", t.max_amplitude},
                        {"param_names", t.param_names},
                        {"param_ranges", ranges},
                        {"device", e.device().str()},
                        {"stepping", e.tensor_stepping() ? "tensors" : "loop"},
                        {"describe", e.describe()}}
      .dump();
}

int64_t cli(const std::string& prog, const std::vector<std::string>& args) { return qfleet::rl::cli_main(prog, args); }

}  // namespace

TORCH_LIBRARY(qfleet_rl, m) {
  m.class_<VecEnvHolder>("VecEnv")
      .def(torch::init<std::string>())
      .def("spec", [](const c10::intrusive_ptr<VecEnvHolder>& self) { return spec(self->env); })
      .def("reset",
           [](const c10::intrusive_ptr<VecEnvHolder>& self, int64_t seed, std::optional<at::Tensor> tasks) {
             std::optional<uint64_t> s;
             if (seed >= 0) s = static_cast<uint64_t>(seed);
             return self->env.reset(s, tasks ? *tasks : at::Tensor());
           })
      .def("step",
           [](const c10::intrusive_ptr<VecEnvHolder>& self, const at::Tensor& actions) -> Step {
             auto r = self->env.step(actions);
             return {r.obs, r.reward, r.terminated, r.truncated, r.final_obs, r.final_fidelity, r.fidelity};
           })
      .def("amplitudes", [](const c10::intrusive_ptr<VecEnvHolder>& self, const at::Tensor& a) { return self->env.amplitudes(a); })
      .def("tasks", [](const c10::intrusive_ptr<VecEnvHolder>& self) { return self->env.tasks(); })
      .def("fidelity", [](const c10::intrusive_ptr<VecEnvHolder>& self) { return self->env.fidelity(); })
      .def("elapsed", [](const c10::intrusive_ptr<VecEnvHolder>& self) { return self->env.elapsed(); });
  m.def("main(str prog, str[] args) -> int", &cli);
}
