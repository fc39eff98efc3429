// qfleet-qgan tournament's settings bound to tournament.json (common/settings.hpp): the one
// table of key -> field; TournamentConfig::to_json, the command line's reading and validate()
// go through it.
#include <stdexcept>

#include "qgan_config.hpp"  // generated: kTournamentJson, the text of tournament.json
#include "tournament.hpp"

namespace qfleet::qgan {

const app::Schema& tournament_schema() {
  static const app::Schema s(kTournamentJson);
  return s;
}

const std::vector<app::Setting<TournamentConfig>>& tournament_settings() {
  using app::setting;
  using C = TournamentConfig;
  static const std::vector<app::Setting<TournamentConfig>> table = {
      setting<C>("devices", [](C& c) -> auto& { return c.device_files; }),
      setting<C>("noiseless", [](C& c) -> auto& { return c.noiseless; }),
      setting<C>("qubits", [](C& c) -> auto& { return c.qubits; }),
      setting<C>("random_circuits", [](C& c) -> auto& { return c.random_circuits; }),
      setting<C>("random_layers", [](C& c) -> auto& { return c.random_layers; }),
      setting<C>("generator_report", [](C& c) -> auto& { return c.generator_report; }),
      setting<C>("shots", [](C& c) -> auto& { return c.shots; }),
      setting<C>("resamples", [](C& c) -> auto& { return c.resamples; }),
      setting<C>("confidence", [](C& c) -> auto& { return c.confidence; }),
      setting<C>("level", [](C& c) -> auto& { return c.level; }),
      setting<C>("seed", [](C& c) -> auto& { return c.seed; }),
      setting<C>("threads", [](C& c) -> auto& { return c.threads; }),
      // (every app answers --device; the density matrices run on the CPU, the schema's one choice)
      app::Setting<C>{"device", [](const C&) { return nlohmann::json("cpu"); }, [](C&, const nlohmann::json&) {}},
      setting<C>("out", [](C& c) -> auto& { return c.out; }),
  };
  return table;
}

TournamentConfig TournamentConfig::from_settings(const nlohmann::json& resolved) { return app::read_settings(tournament_settings(), resolved); }

nlohmann::json TournamentConfig::to_json() const {
  return app::write_settings(*this, tournament_settings(), {"threads", "device", "out"});  // (those do not decide the results)
}

void validate(const TournamentConfig& c) {
  app::check_settings(c, tournament_settings(), tournament_schema());
  // What the schema cannot say: open intervals.
  if (!(c.confidence > 0.5 && c.confidence < 1)) throw std::invalid_argument("confidence must be in (0.5, 1)");
  if (!(c.level > 0 && c.level < 1)) throw std::invalid_argument("level must be in (0, 1)");
}

}  // namespace qfleet::qgan
