// A settings struct bound to its app's schema (config.hpp) key by key: one table of (key,
// the field it sets) reads a resolved configuration into the struct, writes the struct back
// as JSON and checks a struct built in code against the schema's types, ranges and choices,
// so no copy function and no validate repeats what config.json declares. The defaults stay
// the struct's initialisers and the schema's "default"; each app's tests check the two agree
// (defaults_disagree below).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "common/config.hpp"

namespace qfleet::app {

template <class S>
struct Setting {
  std::string key;
  std::function<nlohmann::json(const S&)> get;
  std::function<void(S&, const nlohmann::json&)> set;
};

// A setting of the field `ref(s)` returns a reference to: setting<Config>("qubits",
// [](Config& c) -> auto& { return c.model.qubits; }).
template <class S, class Ref>
Setting<S> setting(std::string key, Ref ref) {
  return {std::move(key), [ref](const S& s) { return nlohmann::json(ref(const_cast<S&>(s))); },
          [ref](S& s, const nlohmann::json& v) {
            using T = std::remove_reference_t<decltype(ref(s))>;
            ref(s) = v.get<T>();
          }};
}

// The struct from a resolved configuration (every key of the table present, checked by the
// schema already); the fields the table does not bind keep their defaults.
template <class S>
S read_settings(const std::vector<Setting<S>>& table, const nlohmann::json& resolved) {
  S s;
  for (const auto& t : table) t.set(s, resolved.at(t.key));
  return s;
}

// The struct's settings as a flat JSON object of the table's keys, less `leave_out` (those
// that do not decide a run's results: a report's and a checkpoint's configuration hash).
template <class S>
nlohmann::json write_settings(const S& s, const std::vector<Setting<S>>& table,
                              std::initializer_list<const char*> leave_out = {}) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& t : table) j[t.key] = t.get(s);
  for (const char* k : leave_out) j.erase(k);
  return j;
}

// Each setting against the schema: ConfigError naming the key, its type, range or choices.
template <class S>
void check_settings(const S& s, const std::vector<Setting<S>>& table, const Schema& schema) {
  for (const auto& t : table) schema.check(t.key, t.get(s));
}

// The keys whose struct default differs from the schema's default ("" when they all agree).
template <class S>
std::string defaults_disagree(const std::vector<Setting<S>>& table, const Schema& schema) {
  const S s{};
  std::string differ;
  for (const auto& t : table)
    if (schema.keys().at(t.key).at("default") != t.get(s))
      differ += (differ.empty() ? "" : ", ") + t.key + " (" + t.get(s).dump() + " against " +
                schema.keys().at(t.key).at("default").dump() + ")";
  return differ;
}

}  // namespace qfleet::app
