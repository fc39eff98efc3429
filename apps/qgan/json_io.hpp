// The app's files: numbers that may be infinite in JSON, the target's record, and
// noise-model and result files read with errors that name the file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "qfleet/noise_model.hpp"
#include "targets.hpp"

namespace qfleet::qgan {

// A finite number as itself; +inf / -inf / NaN as the strings "inf", "-inf", "nan"
// (JSON has no infinity; nlohmann would write null).
nlohmann::json number(double v);
// The inverse of number(): a number, or one of those strings. std::invalid_argument otherwise.
double from_number(const nlohmann::json& v, const std::string& what);

// The target as the report records it (docs/qgan.md).
nlohmann::json target_json(const Target& t);

// A JSON file parsed (a clear error naming the file for a missing or malformed one).
nlohmann::json read_json_file(const std::string& path);
// A device noise model (docs/noisy.md) from a file; errors name the file and the key.
NoiseModel read_noise_model_file(const std::string& path);

}  // namespace qfleet::qgan
