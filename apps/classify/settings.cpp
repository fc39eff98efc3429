// qfleet-classify's settings bound to config.json (common/settings.hpp): the one table of
// key -> field; Config::to_json, the command line's reading and validate() go through it.
#include "classify.hpp"
#include "classify_config.hpp"  // generated: kConfigJson, the text of config.json

namespace qfleet::classify {

const app::Schema& schema() {
  static const app::Schema s(kConfigJson);
  return s;
}

const std::vector<app::Setting<Config>>& settings() {
  using app::setting;
  using C = Config;
  static const std::vector<app::Setting<Config>> table = {
      setting<C>("data", [](C& c) -> auto& { return c.data; }),
      setting<C>("mode", [](C& c) -> auto& { return c.mode; }),
      setting<C>("backbone", [](C& c) -> auto& { return c.model.backbone; }),
      setting<C>("layer", [](C& c) -> auto& { return c.model.layer; }),
      setting<C>("qubits", [](C& c) -> auto& { return c.model.qubits; }),
      setting<C>("layers", [](C& c) -> auto& { return c.model.layers; }),
      setting<C>("embedding", [](C& c) -> auto& { return c.model.embedding; }),
      setting<C>("entangler", [](C& c) -> auto& { return c.model.entangler; }),
      setting<C>("measure", [](C& c) -> auto& { return c.model.measure; }),
      setting<C>("circuit", [](C& c) -> auto& { return c.circuit_file; }),
      setting<C>("head_inputs", [](C& c) -> auto& { return c.model.head_inputs; }),
      setting<C>("precision", [](C& c) -> auto& { return c.model.precision; }),
      setting<C>("backbone_from", [](C& c) -> auto& { return c.backbone_from; }),
      setting<C>("epochs", [](C& c) -> auto& { return c.epochs; }),
      setting<C>("batch", [](C& c) -> auto& { return c.batch; }),
      setting<C>("lr", [](C& c) -> auto& { return c.lr; }),
      setting<C>("train_subset", [](C& c) -> auto& { return c.train_subset; }),
      setting<C>("test_subset", [](C& c) -> auto& { return c.test_subset; }),
      setting<C>("seed", [](C& c) -> auto& { return c.seed; }),
      setting<C>("threads", [](C& c) -> auto& { return c.threads; }),
      setting<C>("device", [](C& c) -> auto& { return c.device; }),
      setting<C>("time_every", [](C& c) -> auto& { return c.time_every; }),
      setting<C>("out", [](C& c) -> auto& { return c.out; }),
      setting<C>("cache", [](C& c) -> auto& { return c.cache; }),
  };
  return table;
}

Config Config::from_settings(const nlohmann::json& resolved) { return app::read_settings(settings(), resolved); }

nlohmann::json Config::to_json() const {
  return app::write_settings(*this, settings(), {"threads", "time_every", "out", "cache"});  // (those do not decide the results)
}

void validate(const Config& c) {
  app::check_settings(c, settings(), schema());
  // What the schema cannot say: lr in the open interval, and a setting that only one mode reads.
  if (!(c.lr > 0 && c.lr < 10)) throw std::invalid_argument("lr = " + std::to_string(c.lr) + ": in (0, 10)");
  if (c.mode == "end_to_end" && !c.backbone_from.empty())
    throw std::invalid_argument("backbone_from is for mode = features");
}

}  // namespace qfleet::classify
