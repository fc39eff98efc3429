// NumPy .npy files (format versions 1.0-3.0) for the arrays of `qfleet eval`
// problems: big batches come from and go to files instead of JSON text
// (docs/cli.md#arrays-in-npy-files). Only what the problems hold is read: C-order,
// little-endian float64 / float32 / int64 / int32, finite values; everything else
// is rejected with a message naming the file and what is wrong.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace qfleet::json_problem::npy
