// Every app's configuration, read one way: a schema (the app's config.json, embedded at
// build time) names each key with its type, range, default and one line of meaning;
// a run's configuration is the defaults, then a preset, then a JSON file, then
// command-line values, each value checked against the schema. An unknown key is
// refused with the nearest name. The docs' key tables are printed from the same
// schema (markdown_table), so they cannot drift from what the app reads.
//
// Schema file:
//   {"about": "...", "docs": "docs/<app>.md",
//    "default_preset": "fast",                      (optional, with "presets")
//    "presets": {"fast": {"about": "...", "base": "other", "key": value, ...}},
//    "aliases": {"out": "output_dir"},             (optional: more option names, shell.hpp)
//    "keys": {"name": {"type": T, "default": v, "help": "...", ...}}}
// Types: "string" ("choices": [...] optional), "integer" and "number" ("min", "max",
// "allow_zero"), "boolean", "range" ([lo, hi] within "min".."max"; "allow_empty": [] too),
// "strings" (a list; "charset": the characters allowed, one at least), "integers" (a list,
// each within "min".."max"), "rows" (a list of non-empty lists of numbers in "min".."max").
// Dotted keys ("env.task") stand for nested objects in a file ({"env": {"task": ...}});
// resolve() returns them flat, nest() folds them back.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qfleet::app {

// What a user wrote wrong in a configuration: a bad value, as std::invalid_argument
// (exit status 2, cli_errors.hpp; ValueError from Python).
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class Schema {
 public:
  // `text` is the schema file's JSON; a schema that breaks the rules above is a
  // std::logic_error (a mistake in the app, caught by its tests).
  explicit Schema(const char* text);

  const nlohmann::json& keys() const { return keys_; }
  const nlohmann::json& presets() const { return presets_; }
  const std::vector<std::string>& key_order() const { return order_; }  // as the file lists them
  const nlohmann::json& aliases() const { return aliases_; }  // option name -> key (shell.hpp)
  bool has_presets() const { return !presets_.empty(); }
  const std::string& docs() const { return docs_; }  // the page that explains the keys
  const std::string& default_preset() const { return default_preset_; }

  // The defaults, then `preset` (a file's "preset" key wins; "" = the default preset),
  // then `file`'s keys, then `sets` (key, value) in order. Every value is checked; the
  // result is flat (dotted keys) and, with presets, names the preset under "preset".
  nlohmann::json resolve(const nlohmann::json& file, std::string preset,
                         const std::vector<std::pair<std::string, nlohmann::json>>& sets) const;

  // A command-line value for `key`: strings as written (or a JSON string literal), booleans from true/false,
  // numbers and [lo, hi] as JSON, lists as JSON or comma-separated. ConfigError for an
  // unknown key (with the nearest name) or a text that is not of the key's type.
  nlohmann::json value_from_text(const std::string& key, const std::string& text) const;
  // "key=value" (the --set form) parsed by value_from_text.
  std::pair<std::string, nlohmann::json> assignment(const std::string& text) const;

  // The keys as a Markdown table (key, type, default, meaning) in the schema file's
  // order, for the app's docs.
  std::string markdown_table() const;

  [[noreturn]] void unknown_key(const std::string& key, const std::string& where) const;
  void check(const std::string& key, const nlohmann::json& value) const;
  // check() (an old spelling of a choice, "auto", is refused naming the one qfleet uses),
  // then the value as the app reads it: integral floats as integers.
  nlohmann::json checked(const std::string& key, const nlohmann::json& value) const;

 private:
  nlohmann::json keys_, presets_, aliases_;
  std::vector<std::string> order_;  // the keys as the schema file lists them
  std::string default_preset_, docs_;
};

// A configuration file's JSON object (ConfigError when it is missing, unreadable,
// not JSON or not an object).
nlohmann::json load_config_file(const std::string& path);

// {"env.task": x, "seed": 1} -> {"env": {"task": x}, "seed": 1}.
nlohmann::json nest(const nlohmann::json& flat);

// field = j[key] where j has the key (its value checked by the schema already).
template <class T>
void read_if_present(const nlohmann::json& j, const char* key, T& field) {
  if (j.contains(key)) field = j[key].get<T>();
}

}  // namespace qfleet::app
