// qfleet-qgan suite's settings bound to suite.json (common/settings.hpp): the one table of
// key -> field; the command line reads the suite through it. seed and threads set both
// stages' fields (the qGAN's and the tournament's), so their rows are written out.
#include "qgan_config.hpp"  // generated: kSuiteJson, the text of suite.json
#include "suite.hpp"

namespace qfleet::qgan {

const app::Schema& suite_schema() {
  static const app::Schema s(kSuiteJson);
  return s;
}

const std::vector<app::Setting<SuiteConfig>>& suite_settings() {
  using app::setting;
  using C = SuiteConfig;
  using nlohmann::json;
  static const std::vector<app::Setting<SuiteConfig>> table = {
      setting<C>("target", [](C& c) -> auto& { return c.qgan.target.name; }),
      setting<C>("epochs", [](C& c) -> auto& { return c.qgan.epochs; }),
      setting<C>("devices", [](C& c) -> auto& { return c.tournament.device_files; }),
      setting<C>("shots", [](C& c) -> auto& { return c.tournament.shots; }),
      setting<C>("classify", [](C& c) -> auto& { return c.classify; }),
      {"seed", [](const C& c) { return json(c.qgan.seed); },
       [](C& c, const json& v) { c.qgan.seed = c.tournament.seed = v.get<uint64_t>(); }},
      {"threads", [](const C& c) { return json(c.qgan.threads); },
       [](C& c, const json& v) { c.qgan.threads = c.tournament.threads = v.get<int>(); }},
      setting<C>("device", [](C& c) -> auto& { return c.qgan.device; }),
      setting<C>("figures", [](C& c) -> auto& { return c.figures; }),
      setting<C>("python", [](C& c) -> auto& { return c.python; }),
      setting<C>("out", [](C& c) -> auto& { return c.out; }),
  };
  return table;
}

}  // namespace qfleet::qgan
