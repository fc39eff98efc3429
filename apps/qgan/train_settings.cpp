// qfleet-qgan train's settings bound to config.json (common/settings.hpp): the one table of
// key -> field; TrainConfig::to_json, the command line's reading and validate() go through it.
#include "qgan.hpp"
#include "qgan_config.hpp"  // generated: kConfigJson, the text of config.json

namespace qfleet::qgan {

const app::Schema& train_schema() {
  static const app::Schema s(kConfigJson);
  return s;
}

const std::vector<app::Setting<TrainConfig>>& train_settings() {
  using app::setting;
  using C = TrainConfig;
  static const std::vector<app::Setting<TrainConfig>> table = {
      setting<C>("target", [](C& c) -> auto& { return c.target.name; }),
      setting<C>("qubits", [](C& c) -> auto& { return c.target.qubits; }),
      setting<C>("image", [](C& c) -> auto& { return c.target.image; }),
      setting<C>("fourier_features", [](C& c) -> auto& { return c.target.fourier_features; }),
      setting<C>("reps", [](C& c) -> auto& { return c.reps; }),
      setting<C>("epochs", [](C& c) -> auto& { return c.epochs; }),
      setting<C>("d_steps", [](C& c) -> auto& { return c.d_steps; }),
      setting<C>("lr_g", [](C& c) -> auto& { return c.lr_g; }),
      setting<C>("lr_d", [](C& c) -> auto& { return c.lr_d; }),
      setting<C>("beta1", [](C& c) -> auto& { return c.beta1; }),
      setting<C>("beta2", [](C& c) -> auto& { return c.beta2; }),
      setting<C>("hidden", [](C& c) -> auto& { return c.hidden; }),
      setting<C>("shots", [](C& c) -> auto& { return c.shots; }),
      setting<C>("noise_model", [](C& c) -> auto& { return c.noise_model; }),
      setting<C>("precision", [](C& c) -> auto& { return c.precision; }),
      setting<C>("seed", [](C& c) -> auto& { return c.seed; }),
      setting<C>("threads", [](C& c) -> auto& { return c.threads; }),
      setting<C>("device", [](C& c) -> auto& { return c.device; }),
      setting<C>("checkpoint_every", [](C& c) -> auto& { return c.checkpoint_every; }),
      setting<C>("out", [](C& c) -> auto& { return c.out; }),
  };
  return table;
}

TrainConfig TrainConfig::from_settings(const nlohmann::json& resolved) { return app::read_settings(train_settings(), resolved); }

nlohmann::json TrainConfig::to_json() const {
  return app::write_settings(*this, train_settings(), {"threads", "checkpoint_every", "out"});  // (those do not decide the results)
}

void validate(const TrainConfig& c) {
  app::check_settings(c, train_settings(), train_schema());
  // What the schema cannot say: open and half-open intervals, the number of hidden layers.
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  for (double lr : {c.lr_g, c.lr_d})
    if (!(lr > 0 && lr < 10)) bad("learning rates (lr_g, lr_d) must be in (0, 10)");
  if (!(c.beta1 < 1) || !(c.beta2 < 1)) bad("beta1, beta2 must be in [0, 1)");
  if (c.hidden.size() > 8) bad("at most 8 hidden layers");
}

}  // namespace qfleet::qgan
