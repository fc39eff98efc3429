// The image data sets: a folder of IDX files in MNIST's naming (idx.hpp), checked as a
// whole — image and label counts agree, labels lie in [0, n_classes), both splits have
// one image size, large enough for the backbones.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "idx.hpp"

namespace qfleet::classify {

// Where Debian's dataset-fashion-mnist package puts Fashion-MNIST (the default data).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct Split {
  torch::Tensor images;  // uint8 [N, H, W]
  torch::Tensor labels;  // int64 [N]
  std::string images_path, labels_path;
};

struct DataSet {
  Split train, test;
  int64_t height = 0, width = 0, n_classes = 10;
  std::string dir;
  // FNV-1a 64 over both splits' bytes: keys the feature cache and goes in the report.
  std::string checksum;
};

// Reads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte (with or without ".gz").
// DataError (naming the file) for a missing or corrupt file, counts that differ, a label
// outside [0, n_classes), images of different sizes in the two splits or smaller than
// min_size x min_size.
DataSet load_data(const std::string& dir, int64_t n_classes = 10, int64_t min_size = 8);

// The first `n` of a split (all when n <= 0 or n >= its size), for short runs.
Split head(const Split& s, int64_t n);

// FNV-1a 64 of a tensor's bytes (contiguous CPU copy), as 16 hex digits.
std::string tensor_checksum(const torch::Tensor& t, uint64_t seed = 1469598103934665603ull);

// Class names for the report and plots: Fashion-MNIST's where the folder is it (same
// counts and sizes), else "0".."9".
std::vector<std::string> class_names(const DataSet& d);

}  // namespace qfleet::classify
