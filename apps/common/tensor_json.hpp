// A tensor as nested JSON arrays of float64 values (a 0-dim tensor as a number): the
// pulses and rates the apps write into reports and `qfleet eval` problems.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

namespace qfleet::app {

inline nlohmann::json tensor_json(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kFloat64).contiguous();
  if (c.dim() == 0) return c.item<double>();
  nlohmann::json a = nlohmann::json::array();
  for (int64_t i = 0; i < c.size(0); ++i) a.push_back(tensor_json(c[i]));
  return a;
}

}  // namespace qfleet::app
