// NumPy .npy files (format versions 1.0-3.0) for the arrays of `qfleet eval`
// problems: big batches come from and go to files instead of JSON text
// (docs/cli.md#arrays-in-npy-files). Only what the problems hold is read: C-order,
// little-endian float64 / float32 / int64 / int32, finite values; everything else
// is rejected with a message naming the file and what is wrong.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qfleet::json_problem::npy {

// At most this many values per array read (2 GiB of float64): larger files are
// rejected before anything is allocated.
inline constexpr std::size_t kMaxValues = std::size_t{1} << 28;

struct Array {
  std::vector<std::size_t> shape;  // () for a scalar
  std::vector<double> values;      // row-major, converted to double
};

// Parses the bytes of a .npy file; `what` names it in messages ("inputs file x.npy").
// Throws ProblemError(path, ...) on anything that is not a supported array.
Array parse(std::string_view bytes, const std::string& path, const std::string& what);

// Reads and parses a file.
Array read(const std::string& file, const std::string& path);

// Writes a C-order array: descr is numpy's ("<f8", "<f4", "<c16", "<c8", "<u8"),
// `data` holds product(shape) items of its size. Throws ProblemError(path, ...)
// when the file cannot be written.
void write(const std::string& file, const std::string& path, std::string_view descr,
           const std::vector<std::size_t>& shape, const void* data, std::size_t bytes);

// {"npy": "FILE"} in a problem: the array it names (`path` is the key's JSON path).
Array read_ref(const nlohmann::json& v, const std::string& path);

// A result array holding a value that is not finite (the solver overflowed): nothing of it
// was written; json_problem::evaluate refuses the problem as it refuses such a JSON result.
struct NonFiniteResult : std::runtime_error {
  NonFiniteResult(std::string key_, std::size_t index_)
      : std::runtime_error(key_ + " is not finite"), key(std::move(key_)), index(index_) {}
  std::string key;
  std::size_t index;  // the first non-finite value's flat index
};

// A result array written to "<prefix>.<key>.npy" (the problem's "output_npy"); returns
// what the JSON result holds in its place: {"npy": FILE, "shape": [...], "dtype": ...}.
// NonFiniteResult, with nothing written, when a value is not finite.
template <class T>
nlohmann::json write_result(const std::string& prefix, const std::string& key,
                            const std::vector<std::size_t>& shape, const std::vector<T>& values) {
  std::string descr, dtype;
  if constexpr (std::is_same_v<T, double>) {
    descr = "<f8", dtype = "float64";
  } else if constexpr (std::is_same_v<T, float>) {
    descr = "<f4", dtype = "float32";
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    descr = "<c16", dtype = "complex128";
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    descr = "<c8", dtype = "complex64";
  } else {
    static_assert(std::is_same_v<T, std::uint64_t>);
    descr = "<u8", dtype = "uint64";
  }
  if constexpr (!std::is_same_v<T, std::uint64_t>) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto& v = values[i];
      if (!std::isfinite(std::real(v)) || !std::isfinite(std::imag(v))) throw NonFiniteResult(key, i);
    }
  }
  const std::string file = prefix + "." + key + ".npy";
  write(file, "output_npy", descr, shape, values.data(), values.size() * sizeof(T));
  return nlohmann::json{{"npy", file}, {"shape", shape}, {"dtype", dtype}};
}

}  // namespace qfleet::json_problem::npy
