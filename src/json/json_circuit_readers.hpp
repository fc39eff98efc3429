// Readers of the circuit problem's values (docs/cli.md) shared by json_problem.cpp
// and json_noise.cpp: integers, wires, complex numbers and matrices, parameters.
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "json_common.hpp"
#include "qfleet/circuit.hpp"

namespace qfleet::json_problem::internal {

// Input/weight indices (and first_input, first_weight) stay below 2^24, so no index
// arithmetic downstream can overflow an int.
constexpr int kMaxIndex = (1 << 24) - 1;

inline int read_int32(const json& v, const std::string& path, int lo = std::numeric_limits<int>::min(),
                      int hi = std::numeric_limits<int>::max()) {
  return static_cast<int>(read_int(v, path, lo, hi));
}

inline std::uint64_t read_uint64(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  return static_cast<std::uint64_t>(read_int(v, path, 0, std::numeric_limits<long long>::max()));
}

inline std::vector<int> read_wires(const json& v, const std::string& path) {
  read_array(v, path, "a list of wires");
  std::vector<int> w;
  for (std::size_t i = 0; i < v.size(); ++i) w.push_back(read_int32(v[i], index_path(path, i)));
  return w;
}

// [re, im]
inline std::complex<double> read_complex(const json& v, const std::string& path) {
  if (!v.is_array() || v.size() != 2) {
    fail(path, "expected a complex number as [re, im], got " +
                   (v.is_array() ? "an array of " + std::to_string(v.size()) + " element(s)"
                                 : describe(v)));
  }
  return {read_number(v[0], index_path(path, 0)), read_number(v[1], index_path(path, 1))};
}

// A number, {"input": i} or {"weight": j}, optionally with "scale".
inline Param read_param(const json& v, const std::string& path) {
  if (v.is_number()) return Param::constant(read_number(v, path));
  if (!v.is_object()) {
    fail(path, "expected a number, {\"input\": i} or {\"weight\": j}, got " + describe(v));
  }
  const Object o(v, path, {"input", "weight", "scale"});
  const bool is_input = o.has("input"), is_weight = o.has("weight");
  if (is_input == is_weight) {
    fail(path, "a parameter object needs exactly one of \"input\" or \"weight\"");
  }
  const double scale = o.has("scale") ? read_number(*o.get("scale"), o.path("scale")) : 1.0;
  if (is_input)
    return Param::input(read_int32(*o.get("input"), o.path("input"), 0, kMaxIndex), scale);
  return Param::weight(read_int32(*o.get("weight"), o.path("weight"), 0, kMaxIndex), scale);
}

// A square complex matrix as a list of rows of [re, im] pairs, row-major.
inline std::vector<std::complex<double>> read_square_cmatrix(const json& v, const std::string& path) {
  const json& m = read_array(v, path, "a matrix (a list of rows)");
  std::vector<std::complex<double>> entries;
  for (std::size_t r = 0; r < m.size(); ++r) {
    const std::string rp = index_path(path, r);
    const json& row = read_array(m[r], rp, "a row (a list of [re, im] pairs)");
    if (row.size() != m.size()) {
      fail(rp, "the matrix must be square: row has " + std::to_string(row.size()) + " entries, the matrix has " +
                   std::to_string(m.size()) + " rows");
    }
    for (std::size_t k = 0; k < row.size(); ++k) entries.push_back(read_complex(row[k], index_path(rp, k)));
  }
  return entries;
}

}  // namespace qfleet::json_problem::internal
