// IDX files as tensors (the format and the reader: idx_reader.hpp).
#pragma once

#include <torch/torch.h>

#include "idx_reader.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace qfleet::classify {

// read_idx_data's array as a uint8 tensor of its shape (DataError as there).
torch::Tensor read_idx(const std::string& path, int expected_dims);

// Writes a uint8 tensor as an IDX file (gzipped when `path` ends in ".gz"): for tests
// and for converting other data sets (python -m qfleet.classify.digits).
void write_idx(const std::string& path, const torch::Tensor& data);

}  // namespace qfleet::classify
