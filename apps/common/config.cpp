// The apps' configuration schema (config.hpp): checking values, resolving defaults,
// presets, files and command-line values, and the docs' key table.
#include "common/config.hpp"
#include "qfleet/files.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/names.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

#include "qfleet/nearest_name.hpp"

namespace qfleet::app {

using nlohmann::json;

namespace {

const char* const kTypes[] = {"string", "integer", "number", "boolean", "range", "strings", "integers", "rows"};

std::string range_text(const json& spec) {
  std::ostringstream o;
  o << std::setprecision(15) << "in [" << spec.value("min", -std::numeric_limits<double>::infinity()) << ", "
    << spec.value("max", std::numeric_limits<double>::infinity()) << "]";
  if (spec.value("allow_zero", false)) o << " or 0";
  return o.str();
}

bool in_range(const json& spec, double x) {
  if (x == 0 && spec.value("allow_zero", false)) return true;
  return x >= spec.value("min", -std::numeric_limits<double>::infinity()) &&
         x <= spec.value("max", std::numeric_limits<double>::infinity());
}

// An integer, or a number with an integral value (2e6 for 2000000).
bool is_integer(const json& v) {
  if (v.is_number_integer()) return true;
  return v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
         std::fabs(v.get<double>()) < 9.2e18;
}

double integer_value(const json& v) {
  if (v.is_number_float()) return v.get<double>();
  return v.is_number_unsigned() ? double(v.get<uint64_t>()) : double(v.get<int64_t>());
}

// A string an old spelling of one of the key's choices ("auto" for "automatic",
// qfleet/names.hpp): the spelling qfleet uses, else "".
std::string respelled_choice(const json& spec, const json& v) {
  if (!v.is_string() || !spec.contains("choices")) return "";
  const std::string now(qfleet::respelled(v.get<std::string>()));
  const auto& ch = spec["choices"];
  return !now.empty() && std::find(ch.begin(), ch.end(), now) != ch.end() ? now : "";
}

// Integral numbers written as 2e6 stored as integers.
json normalized(const json& spec, const json& v) {
  if (spec["type"] == "integer" && v.is_number_float()) return json(static_cast<int64_t>(v.get<double>()));
  if (spec["type"] == "integers") {
    json out = json::array();
    for (const auto& x : v) out.push_back(x.is_number_float() ? json(static_cast<int64_t>(x.get<double>())) : x);
    return out;
  }
  return v;
}

// What a value must be, for the error message.
std::string expected(const json& spec) {
  const std::string type = spec["type"];
  if (type == "string") return spec.contains("choices") ? "one of " + spec["choices"].dump() : "a string (UTF-8)";
  if (type == "integer") return "an integer " + range_text(spec);
  if (type == "number") return "a number " + range_text(spec);
  if (type == "boolean") return "true or false";
  if (type == "range")
    return std::string(spec.value("allow_empty", false) ? "[] or " : "") + "[lo, hi] with lo <= hi, both " +
           range_text(spec);
  if (type == "rows") return "a list of non-empty lists of numbers, each " + range_text(spec);
  if (type == "integers") return "a list of integers, each " + range_text(spec);
  if (spec.contains("charset"))
    return "a list of non-empty strings of the characters " + spec["charset"].get<std::string>();
  return "a list of strings";
}

// Valid UTF-8: JSON's writer refuses other bytes, and every report and --print-config writes
// the configuration (a `--set` value is taken as written, so it may hold any bytes).
bool utf8(const json& s) {
  try {
    (void)s.dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

bool valid(const json& spec, const json& v) {
  const std::string type = spec["type"];
  if (type == "string") {
    if (!v.is_string() || !utf8(v)) return false;
    if (!spec.contains("choices")) return true;
    const auto& ch = spec["choices"];
    return std::find(ch.begin(), ch.end(), v) != ch.end();
  }
  if (type == "integer") return is_integer(v) && in_range(spec, integer_value(v));
  if (type == "number") return v.is_number() && std::isfinite(v.get<double>()) && in_range(spec, v.get<double>());
  if (type == "boolean") return v.is_boolean();
  if (type == "range") {
    if (v.is_array() && v.empty() && spec.value("allow_empty", false)) return true;
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) return false;
    const double a = v[0].get<double>(), b = v[1].get<double>();
    return in_range(spec, a) && in_range(spec, b) && a <= b;
  }
  if (!v.is_array()) return false;
  const auto number_in_range = [&](const json& x) {
    return x.is_number() && std::isfinite(x.get<double>()) && in_range(spec, x.get<double>());
  };
  if (type == "rows")
    return std::all_of(v.begin(), v.end(), [&](const json& row) {
      return row.is_array() && !row.empty() && std::all_of(row.begin(), row.end(), number_in_range);
    });
  if (type == "integers")
    return std::all_of(v.begin(), v.end(),
                       [&](const json& x) { return is_integer(x) && in_range(spec, integer_value(x)); });
  const std::string charset = spec.value("charset", "");
  return std::all_of(v.begin(), v.end(), [&](const json& x) {
    if (!x.is_string() || !utf8(x)) return false;
    const std::string s = x.get<std::string>();
    return charset.empty() || (!s.empty() && s.find_first_not_of(charset) == std::string::npos);
  });
}

// A preset's keys over `out`, after those of the preset it names as "base" (the
// constructor checked the chain of bases ends).
void apply_preset(const json& presets, const std::string& name, json& out) {
  const json& p = presets.at(name);
  if (p.contains("base")) apply_preset(presets, p["base"].get<std::string>(), out);
  for (const auto& [k, v] : p.items())
    if (k != "about" && k != "base") out[k] = v;
}

// A file's keys, nested objects spelled as dotted keys where the schema has them.
void flatten_into(const Schema& s, const json& obj, const std::string& prefix, json& flat) {
  for (const auto& [k, v] : obj.items()) {
    const std::string key = prefix + k;
    if (v.is_object() && !s.keys().contains(key)) {
      const bool nested = std::any_of(s.keys().items().begin(), s.keys().items().end(),
                                      [&](const auto& kv) { return kv.key().rfind(key + ".", 0) == 0; });
      if (!nested) s.unknown_key(key, " in the configuration file");
      flatten_into(s, v, key + ".", flat);
    } else {
      flat[key] = v;
    }
  }
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ',') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

}  // namespace

Schema::Schema(const char* text) {
  const auto in_order = nlohmann::ordered_json::parse(text);
  for (const auto& [k, _] : in_order.at("keys").items()) order_.push_back(k);
  const json s = json::parse(text);
  keys_ = s.at("keys");
  presets_ = s.value("presets", json::object());
  aliases_ = s.value("aliases", json::object());
  default_preset_ = s.value("default_preset", "");
  docs_ = s.value("docs", "");
  auto broken = [](const std::string& what) { throw std::logic_error("configuration schema: " + what); };
  for (const auto& [k, spec] : keys_.items()) {
    if (!spec.contains("type") || !spec.contains("default") || !spec.contains("help"))
      broken("key '" + k + "' needs type, default and help");
    if (std::find(std::begin(kTypes), std::end(kTypes), spec["type"]) == std::end(kTypes))
      broken("key '" + k + "' has an unknown type " + spec["type"].dump());
    if (!valid(spec, spec["default"])) broken("key '" + k + "': the default is not " + expected(spec));
  }
  if (has_presets() != !default_preset_.empty()) broken("presets and default_preset go together");
  for (const auto& [name, p] : presets_.items()) {
    json out = json::object();
    std::string at = name;
    for (int depth = 0; presets_[at].contains("base"); ++depth) {
      at = presets_[at]["base"].get<std::string>();
      if (depth > 8 || !presets_.contains(at)) broken("preset '" + name + "' has a bad base");
    }
    apply_preset(presets_, name, out);
    for (const auto& [k, v] : out.items())
      if (!keys_.contains(k) || !valid(keys_[k], v)) broken("preset '" + name + "' sets '" + k + "' wrongly");
  }
}

void Schema::unknown_key(const std::string& key, const std::string& where) const {
  std::vector<std::string> names;
  for (const auto& [k, _] : keys_.items()) names.push_back(k);
  const std::string best = nearest_name(key, names, 4);
  std::string msg = "config: unknown key '" + key + "'" + where;
  if (!best.empty()) msg += " (did you mean '" + best + "'?)";
  if (!docs_.empty()) msg += "; " + docs_ + " lists the keys";
  throw ConfigError(msg);
}

void Schema::check(const std::string& key, const json& value) const {
  if (!keys_.contains(key)) unknown_key(key, "");
  if (const std::string now = respelled_choice(keys_[key], value); !now.empty())
    throw ConfigError("config: key '" + key + "': \"" + value.get<std::string>() + "\" is spelled \"" + now + "\"");
  if (!valid(keys_[key], value))
    throw ConfigError("config: key '" + key + "': expected " + expected(keys_[key]) + ", got " +
                      value.dump(-1, ' ', false, json::error_handler_t::replace));
}

json Schema::checked(const std::string& key, const json& value) const {
  check(key, value);
  return normalized(keys_[key], value);
}

json Schema::resolve(const json& file, std::string preset,
                     const std::vector<std::pair<std::string, json>>& sets) const {
  if (!file.is_null() && !file.is_object()) throw ConfigError("config: expected a JSON object of keys");
  json out = json::object();
  for (const auto& [k, spec] : keys_.items()) out[k] = spec["default"];
  json given = json::object();
  if (file.is_object()) flatten_into(*this, file, "", given);
  if (given.contains("preset")) {
    if (!has_presets()) unknown_key("preset", " in the configuration file");
    if (!given["preset"].is_string()) throw ConfigError("config: key 'preset': expected a string");
    preset = given["preset"].get<std::string>();
    given.erase("preset");
  }
  if (has_presets()) {
    if (preset.empty()) preset = default_preset_;
    if (!presets_.contains(preset)) {
      std::string names;
      for (const auto& [k, _] : presets_.items()) names += (names.empty() ? "" : ", ") + k;
      throw ConfigError("config: unknown preset '" + preset + "' (presets: " + names + ")");
    }
    apply_preset(presets_, preset, out);
  } else if (!preset.empty()) {
    throw ConfigError("config: this app has no presets (asked for '" + preset + "')");
  }
  for (const auto& [k, v] : given.items()) {
    if (!keys_.contains(k)) unknown_key(k, " in the configuration file");
    out[k] = checked(k, v);
  }
  for (const auto& [k, v] : sets) {
    out[k] = checked(k, v);
  }
  if (has_presets()) out["preset"] = preset;
  return out;
}

json Schema::value_from_text(const std::string& key, const std::string& text) const {
  if (!keys_.contains(key)) unknown_key(key, "");
  const json& spec = keys_[key];
  const std::string type = spec["type"];
  auto bad = [&]() -> json {
    throw ConfigError("config: key '" + key + "': expected " + expected(spec) + ", got '" + text + "'");
  };
  if (type == "string") {
    if (text.size() >= 2 && text.front() == '"') {
      const json v = json::parse(text, nullptr, false);
      if (v.is_string()) return v;
    }
    return text;
  }
  if (type == "boolean") {
    if (text == "true") return true;
    if (text == "false") return false;
    return bad();
  }
  if ((type == "strings" || type == "integers") && (text.empty() || text[0] != '[')) {  // a,b,c
    json list = json::array();
    if (text.empty()) return list;
    for (const auto& item : split_commas(text)) {
      if (type == "strings") {
        list.push_back(item);
      } else {
        const json x = json::parse(item, nullptr, false);
        list.push_back(x.is_discarded() ? bad() : x);
      }
    }
    return list;
  }
  const json v = json::parse(text, nullptr, false);
  if (v.is_discarded() || (v.is_number_float() && !std::isfinite(v.get<double>()))) return bad();  // (1e999)
  return v;
}

std::pair<std::string, json> Schema::assignment(const std::string& text) const {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("config: --set expects key=value, got '" + text + "'");
  const std::string key = text.substr(0, eq);
  if (!keys_.contains(key)) unknown_key(key, " in --set");
  return {key, value_from_text(key, text.substr(eq + 1))};
}

std::string Schema::markdown_table() const {
  std::string md = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : order_) {
    const json& spec = keys_[k];
    std::string type = spec["type"].get<std::string>();
    if (spec.contains("choices")) {
      type.clear();
      for (const auto& c : spec["choices"]) {
        if (!type.empty()) type += ", ";
        type += c.get<std::string>();
      }
    } else if (spec.contains("min") || spec.contains("max")) {
      type += ' ';
      type += range_text(spec);
    }
    const std::string help = spec["help"].get<std::string>();
    std::string cell;
    for (char ch : help) {
      if (ch == '|') cell += '\\';  // (a bar would end the table's cell)
      cell += ch;
    }
    md += "| `" + k + "` | " + type + " | `" + spec["default"].dump() + "` | " + cell + " |\n";
  }
  return md;
}

json load_config_file(const std::string& path) {
  std::string text;
  try {  // a regular file of at most 64 MiB: /dev/zero or a pipe is refused, not read forever
    text = read_file_bounded(path);
  } catch (const std::runtime_error& e) {
    throw ConfigError(std::string("config: ") + e.what());
  }
  json j;
  try {  // the problem files' reader: a key given twice is an error, not the last one silently
    j = json_problem::parse_text(text, path);
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.rfind("qfleet: ", 0) == 0) why.erase(0, 8);  // the engine's prefix; the app names itself
    throw ConfigError("config: " + why);
  }
  if (!j.is_object()) throw ConfigError("config: " + path + ": expected a JSON object of keys");
  return j;
}

json nest(const json& flat) {
  json out = json::object();
  for (const auto& [k, v] : flat.items()) {
    json* at = &out;
    std::size_t start = 0;
    for (std::size_t dot = k.find('.'); dot != std::string::npos; dot = k.find('.', start)) {
      at = &(*at)[k.substr(start, dot - start)];
      start = dot + 1;
    }
    (*at)[k.substr(start)] = v;
  }
  return out;
}

}  // namespace qfleet::app
