// IDX files (the format of MNIST and Fashion-MNIST: LeCun et al., "THE MNIST DATABASE",
// http://yann.lecun.com/exdb/mnist/): a big-endian header — two zero bytes, a type code
// (0x08 = unsigned byte), the number of dimensions — then each dimension's size as a
// 32-bit big-endian integer, then the data. Files may be gzipped (Debian's
// dataset-fashion-mnist ships them so); zlib reads both.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qfleet::classify {

// A file that cannot be used as data: the message names the file and what is wrong.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads an unsigned-byte IDX file of `expected_dims` dimensions (1: labels, 3: images)
// into a uint8 tensor of its shape. DataError for a missing or unreadable file, a corrupt
// gzip stream, a wrong magic number, another type code or dimension count, a size of
// zero or one that would not fit in memory, a file shorter than its header says (with
// how many bytes it has and needs) or longer.
torch::Tensor read_idx(const std::string& path, int expected_dims);

// Writes a uint8 tensor as an IDX file (gzipped when `path` ends in ".gz"): for tests
// and for converting other data sets (python -m qfleet.classify.digits).
void write_idx(const std::string& path, const torch::Tensor& data);

}  // namespace qfleet::classify
