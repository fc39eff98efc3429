// The IDX reader without LibTorch (idx.hpp wraps it in a tensor; tests/fuzz/fuzz_idx.cpp
// fuzzes it): IDX files (the format of MNIST and Fashion-MNIST: LeCun et al., "THE MNIST
// DATABASE", http://yann.lecun.com/exdb/mnist/) are a big-endian header - two zero bytes,
// a type code (0x08 = unsigned byte), the number of dimensions - then each dimension's
// size as a 32-bit big-endian integer, then the data. Files may be gzipped (Debian's
// dataset-fashion-mnist ships them so); zlib reads both.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qfleet::classify {

// A file that cannot be used as data: the message names the file and what is wrong.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct IdxData {
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // row-major, shape's product of them
};

// Reads an unsigned-byte IDX file of `expected_dims` dimensions (1: labels, 3: images).
// DataError for a missing or unreadable file, a corrupt gzip stream, a wrong magic
// number, another type code or dimension count, a size of zero, a header declaring more
// than 2^36 bytes, a file shorter than its header says (with how many bytes it has and
// needs) or longer. Memory grows with the data actually read, never with what a
// (possibly corrupt) header declares.
IdxData read_idx_data(const std::string& path, int expected_dims);

}  // namespace qfleet::classify
