// Pre-computed features (the original authors' suggested fix): the frozen backbone runs
// once over both splits, its features are cached on disk with a checksum, and training
// touches only the layers after it.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>

#include "model.hpp"

namespace qfleet::classify {

struct FeatureCacheInfo {
  std::string path, key, checksum;
  bool hit = false;
  double seconds = 0;  // computing (or reading) them
  std::string note;    // e.g. why a cached file was not used
};

// A backbone saved by a run (<out>/backbone.pt, a tensor file: qfleet/tensor_file.hpp)
// into `backbone`; DataError naming the file if it is missing, damaged, not a backbone
// file or holds another architecture. Nothing in the file runs as it is read.
void load_backbone(torch::nn::Module& backbone, const std::string& path);
// The backbone's parameters and buffers as such a file, written atomically.
void save_backbone(torch::nn::Module& backbone, const std::string& path);

// The backbone's features of both splits, from <dir>/features-<key>.pt when its key (the
// data's checksum, the backbone's kind and weights, the inputs' shapes) and its content
// checksum match, else computed (in eval mode, batches of 500) and written there. A
// cached file that fails its digest or is not a tensor file of these inputs is recomputed
// and overwritten (info.note says so).
std::pair<torch::Tensor, torch::Tensor> cached_features(HybridNetImpl& net, const std::string& dir,
                                                        const std::string& data_checksum, const std::string& backbone,
                                                        const torch::Tensor& train_inputs, const torch::Tensor& test_inputs,
                                                        const torch::Device& device, FeatureCacheInfo& info);

}  // namespace qfleet::classify
