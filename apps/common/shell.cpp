// The apps' common command line (shell.hpp).
#include "common/shell.hpp"

#include <cstdio>
#include <stdexcept>
#include <utility>

namespace qfleet::app {

using nlohmann::json;

namespace {

std::string option_name(std::string key) {
  for (char& c : key)
    if (c == '_' || c == '.') c = '-';
  return "--" + key;
}

// What the help shows for a key's value.
std::string type_name(const json& spec) {
  const std::string type = spec["type"];
  if (spec.contains("choices")) {
    std::string names;
    for (const auto& c : spec["choices"]) names += (names.empty() ? "{" : ",") + c.get<std::string>();
    return names + "}";
  }
  if (type == "string") return "TEXT";
  if (type == "integer") return "INT";
  if (type == "number") return "NUMBER";
  if (type == "boolean") return "BOOL";
  if (type == "range") return "[LO,HI]";
  return "A,B,...";
}

// The key the option --out sets (the key "out", or the one its alias names).
std::string output_key(const Schema& s) {
  return s.keys().contains("out") ? std::string("out") : s.aliases()["out"].get<std::string>();
}

// A value as --help shows it (strings without quotes).
std::string help_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "--out" for the output key: the key itself or the alias naming it.
std::map<std::string, std::string> aliases_by_key(const Schema& s) {
  std::map<std::string, std::string> out;
  for (const auto& [alias, key] : s.aliases().items()) {
    if (!s.keys().contains(key.get<std::string>()))
      throw std::logic_error("configuration schema: alias '" + alias + "' names no key");
    out[key.get<std::string>()] += "," + option_name(alias);
  }
  return out;
}

}  // namespace

Shell::Shell(CLI::App& cli, const Schema& schema, bool resume) : schema_(schema), can_resume_(resume) {
  for (const char* key : {"device", "threads", "seed"})
    if (!schema.keys().contains(key)) throw std::logic_error(std::string("configuration schema: no '") + key + "' key");
  if (!schema.keys().contains("out") && !schema.aliases().contains("out"))
    throw std::logic_error("configuration schema: no 'out' key or alias");
  cli.add_option("--config", config_file_, "a JSON file of keys (" + schema.docs() + " lists them)");
  if (schema.has_presets()) {
    std::string names;  // every preset, so that --help shows them all
    for (const auto& [name, _] : schema.presets().items())
      names += (names.empty() ? "" : ", ") + name + (name == schema.default_preset() ? " (the default)" : "");
    cli.add_option("--preset", preset_, "a named set of keys: " + names + "; a --config file's \"preset\" wins");
  }
  cli.add_option("--set", sets_, "key=value: one key (repeat; applied last)");
  cli.add_flag("--print-config", print_config_, "print the resolved configuration as JSON and exit");
  cli.add_flag("--print-keys", print_keys_, "print every key (type, default, meaning) as a Markdown table and exit");
  cli.add_flag("--quiet", quiet_, "no progress bar or summary");
  CLI::Option* overwrite = cli.add_flag("--overwrite", overwrite_,
                                         std::string("replace the run in the output folder (removes the files this "
                                                     "command writes, nothing else); without it") +
                                             (resume ? " or --resume" : "") + " a folder holding a run is refused");
  if (resume) cli.add_flag("--resume", resume_, "continue from the checkpoint in the output folder")->excludes(overwrite);
  const auto aliases = aliases_by_key(schema);
  // What a run without options uses: the default preset over the keys' defaults.
  const json bare = schema.resolve(json::object(), "", {});
  json preset_keys = json::object();
  if (schema.has_presets()) {
    for (std::string at = schema.default_preset(); !at.empty();) {  // the preset and the bases it names
      const json& p = schema.presets()[at];
      for (const auto& [k, _] : p.items())
        if (!preset_keys.contains(k)) preset_keys[k] = at;
      at = p.value("base", "");
    }
  }
  for (const auto& key : schema.key_order()) {
    const json& spec = schema.keys()[key];
    const auto alias = aliases.find(key);
    const std::string names = option_name(key) + (alias == aliases.end() ? "" : alias->second);
    const std::string type = spec["type"];
    const bool list = type == "strings" || type == "integers";
    const bool by_preset = preset_keys.contains(key) && bare[key] != spec["default"];
    CLI::Option* o = cli.add_option(names, texts_[key], spec["help"].get<std::string>())
                         ->type_name(type_name(spec))
                         ->expected(1)
                         ->default_str(help_text(bare[key]) +
                                       (by_preset ? " (preset " + preset_keys[key].get<std::string>() + ")" : ""));
    if (list) o->take_all();  // --key a --key b: both (a list option)
    else o->take_last();
  }
}

json Shell::config() const {
  const json file = config_file_.empty() ? json::object() : load_config_file(config_file_);
  std::vector<std::pair<std::string, json>> values;
  for (const auto& [key, texts] : texts_) {
    if (texts.empty()) continue;
    const std::string type = schema_.keys()[key]["type"];
    if (type == "strings" || type == "integers") {  // repeated options add to the list
      json list = json::array();
      for (const auto& t : texts)
        for (const auto& x : schema_.value_from_text(key, t)) list.push_back(x);
      values.emplace_back(key, list);
    } else {
      values.emplace_back(key, schema_.value_from_text(key, texts.back()));
    }
  }
  for (const auto& s : sets_) values.push_back(schema_.assignment(s));
  return schema_.resolve(file, preset_, values);
}

RunClaim Shell::claim(const std::string& command, OutputFiles files) const {
  RunClaim c;
  c.command = command;
  c.config = config();
  c.output_key = output_key(schema_);
  c.files = std::move(files);
  c.resume = resume_;
  c.overwrite = overwrite_;
  if (!can_resume_) c.ways.resume.clear();
  return c;
}

std::optional<int> Shell::answer_printing() const {
  if (print_keys_) {
    std::printf("%s", schema_.markdown_table().c_str());
    return 0;
  }
  if (print_config_) {
    std::printf("%s\n", config().dump(1).c_str());
    return 0;
  }
  return std::nullopt;
}

}  // namespace qfleet::app
