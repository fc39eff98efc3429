// EnvConfig <-> JSON, every value checked by the app's schema (env_config.hpp;
// config.json's env.KEY keys, listed in docs/rl.md).
#include "env_config.hpp"

#include "rl_config.hpp"  // generated: kConfigJson, the text of config.json

namespace qfleet::rl {

using nlohmann::json;

const app::Schema& schema() {
  static const app::Schema s(kConfigJson);
  return s;
}

json EnvConfig::to_json() const { return json(*this); }

EnvConfig EnvConfig::from_json(const json& j) {
  if (!j.is_object()) throw app::ConfigError("environment configuration: expected a JSON object");
  json given = json::object();
  for (const auto& [key, v] : j.items()) given[key] = schema().checked("env." + key, v);
  return given.get<EnvConfig>();
}

void EnvConfig::set(const std::string& text) {
  auto [key, v] = schema().assignment("env." + text);
  json j = to_json();
  j[key.substr(4)] = v;
  *this = from_json(j);
}

}  // namespace qfleet::rl
