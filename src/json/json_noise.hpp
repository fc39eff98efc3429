// The circuit problem's noise (docs/noisy.md): channel operations, readout errors
// and device noise models, read into the library's types (json_noise.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "qfleet/circuit.hpp"
#include "qfleet/noise_model.hpp"

namespace qfleet::json_problem::internal {

// {"channel": name, "wires": [...], "params": [...]} or {"channel": "Kraus", "wires":
// [...], "kraus": [matrix, ...]}.
void read_channel_op(Circuit& c, const nlohmann::json& v, const std::string& path);
// [{"wire": w, "p1_given_0": a, "p0_given_1": b} | {"wire": w, "matrix": [[..], [..]]}, ...]
void read_readout_errors(Circuit& c, const nlohmann::json& v, const std::string& path);
// A noise model object (docs/noisy.md).
NoiseModel read_noise_model(const nlohmann::json& v, const std::string& path);

}  // namespace qfleet::json_problem::internal
