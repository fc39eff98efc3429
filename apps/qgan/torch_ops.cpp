// TORCH_LIBRARY(qfleet_qgan): the app's entry point for Python (python -m qfleet.qgan runs
// this same command line) and its statistics, for the tests against scipy.
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "cli.hpp"
#include "distributions.hpp"

namespace {
int64_t cli(const std::string& prog, const std::vector<std::string>& args) { return qfleet::qgan::cli_main(prog, args); }

// [KL(p||q), KL(q||p), JS distance, total variation, Bhattacharyya coefficient]
std::vector<double> divergences(const std::vector<double>& p, const std::vector<double>& q) {
  using namespace qfleet::qgan;
  return {kl_divergence(p, q), kl_divergence(q, p), js_distance(p, q), total_variation(p, q), bhattacharyya(p, q)};
}
double ks(const std::vector<double>& p, const std::vector<double>& q, int64_t rows) { return qfleet::qgan::ks_distance(p, q, rows); }
// (shots, bound, alpha, beta); shots = bound = 0 when p and q are the same.
std::tuple<int64_t, int64_t, double, double> shots(const std::vector<double>& p, const std::vector<double>& q, double confidence) {
  const auto s = qfleet::qgan::shots_to_distinguish(p, q, confidence);
  return {s.shots, s.bound, s.alpha, s.beta};
}
std::tuple<double, double> error_rates(const std::vector<double>& p, const std::vector<double>& q, int64_t n) {
  const auto e = qfleet::qgan::lr_test_error_rates(p, q, n);
  return {e.first, e.second};
}
}  // namespace

TORCH_LIBRARY(qfleet_qgan, m) {
  m.def("main(str prog, str[] args) -> int", &cli);
  m.def("divergences(float[] p, float[] q) -> float[]", &divergences);
  m.def("ks_distance(float[] p, float[] q, int rows) -> float", &ks);
  m.def("shots_to_distinguish(float[] p, float[] q, float confidence) -> (int, int, float, float)", &shots);
  m.def("lr_test_error_rates(float[] p, float[] q, int n) -> (float, float)", &error_rates);
}
