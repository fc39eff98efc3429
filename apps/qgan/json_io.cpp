// JSON helpers of qfleet-qgan (json_io.hpp).
#include "json_io.hpp"

#include <cmath>
#include <stdexcept>

#include "qfleet/files.hpp"
#include "qfleet/json_problem.hpp"

namespace qfleet::qgan {
using json = nlohmann::json;

json number(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double from_number(const json& v, const std::string& what) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  throw std::invalid_argument(what + ": expected a number (or \"inf\"), got " + v.dump());
}

json target_json(const Target& t) {
  json j = {{"name", t.name},
            {"description", t.description},
            {"n_qubits", t.n_qubits},
            {"rows", t.rows},
            {"cols", t.cols},
            {"probabilities", t.probabilities},
            {"x", t.x},
            {"x_label", t.x_label},
            {"y_label", t.y_label},
            {"discriminator_inputs", t.n_features}};
  if (t.rows > 1) j["y"] = t.y;
  return j;
}

json read_json_file(const std::string& path) {
  std::string text;
  try {  // a regular file of at most 64 MiB: /dev/zero or a pipe is refused, not read forever
    text = read_file_bounded(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  try {
    return json_problem::parse_text(text, path);
  } catch (const qfleet::Error& e) {
    throw std::invalid_argument(e.what());
  }
}

NoiseModel read_noise_model_file(const std::string& path) {
  const json j = read_json_file(path);
  try {
    return json_problem::parse_noise_model(j);
  } catch (const qfleet::Error& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace qfleet::qgan
