// libFuzzer target for the apps' configuration reader (apps/common/config.cpp) on every
// app's schema: the first byte picks the schema (qfleet-meta, qfleet-classify, qfleet-qgan
// train / tournament / classify / suite, qfleet-rl), the bytes up to the first NUL are a
// configuration file (read as the apps read one: json_problem::parse_text), each NUL-separated
// part after it a `--set key=value`. Any bytes give a resolved configuration or a
// std::invalid_argument (app::ConfigError, and the parser's qfleet::Error), never a
// crash or a sanitizer report; and what resolves is a fixed point: every value passes the
// schema's check again and resolving the result as a file gives the result back.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "classify_config.hpp"
#include "common/config.hpp"
#include "meta_config.hpp"
#include "qfleet/json_problem.hpp"
#include "qgan_config.hpp"
#include "rl_config.hpp"

namespace {

const std::vector<qfleet::app::Schema>& schemas() {
  static const std::vector<qfleet::app::Schema> all = [] {
    std::vector<qfleet::app::Schema> s;
    for (const char* text : {qfleet::meta::kConfigJson, qfleet::classify::kConfigJson, qfleet::qgan::kConfigJson,
                             qfleet::qgan::kTournamentJson, qfleet::qgan::kClassifierJson, qfleet::qgan::kSuiteJson,
                             qfleet::rl::kConfigJson})
      s.emplace_back(text);
    return s;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& schema = schemas()[data[0] % schemas().size()];
  std::vector<std::string> parts(1);
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) parts.emplace_back();
    else parts.back().push_back(char(data[i]));
  }
  try {
    nlohmann::json file = nlohmann::json::object();
    if (!parts[0].empty()) file = qfleet::json_problem::parse_text(parts[0], "fuzz.json");
    std::vector<std::pair<std::string, nlohmann::json>> sets;
    for (size_t i = 1; i < parts.size(); ++i) sets.push_back(schema.assignment(parts[i]));
    const nlohmann::json out = schema.resolve(file, "", sets);
    for (const auto& [k, v] : out.items())
      if (k != "preset") schema.check(k, v);  // a resolved value the checker refuses: a bug
    if (schema.resolve(out, "", {}) != out) __builtin_trap();
  } catch (const std::invalid_argument&) {  // (qfleet::Error and app::ConfigError are ones)
  }
  return 0;
}
