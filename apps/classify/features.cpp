// Cached backbone features (features.hpp).
#include "features.hpp"

#include <chrono>
#include <filesystem>

#include "data.hpp"
#include "qfleet/tensor_file.hpp"
#include "qfleet/train.hpp"

namespace qfleet::classify {
namespace fs = std::filesystem;

namespace {
constexpr const char* kBackboneFormat = "qfleet-classify-backbone/1";
constexpr const char* kFeaturesFormat = "qfleet-classify-features/1";
}  // namespace

void load_backbone(torch::nn::Module& backbone, const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw DataError(path + ": no such backbone file (a run writes <out>/backbone.pt)");
  try {
    train::get_module(train::read_tensor_file(path, kBackboneFormat), "backbone", backbone, path);
  } catch (const train::TensorFileError& e) {
    throw DataError(e.what());  // names the file and what is wrong: damaged, another format, another architecture
  }
}

void save_backbone(torch::nn::Module& backbone, const std::string& path) {
  train::TensorFile file;
  file.format = kBackboneFormat;
  train::put_module(file, "backbone", backbone);
  train::write_tensor_file(path, file);
}

namespace {

torch::Tensor compute(HybridNetImpl& net, const torch::Tensor& inputs, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  net.eval();
  std::vector<torch::Tensor> parts;
  for (int64_t at = 0; at < inputs.size(0); at += 500)
    parts.push_back(net.features(inputs.narrow(0, at, std::min<int64_t>(500, inputs.size(0) - at)).to(device)).cpu());
  return torch::cat(parts);
}

std::string weights_checksum(torch::nn::Module& m) {
  uint64_t seed = 1469598103934665603ull;
  std::string sum = "0";
  for (const auto& p : m.named_parameters()) {
    sum = tensor_checksum(p.value().detach(), seed);
    seed = std::stoull(sum, nullptr, 16);
  }
  for (const auto& b : m.named_buffers()) {
    sum = tensor_checksum(b.value(), seed);
    seed = std::stoull(sum, nullptr, 16);
  }
  return sum;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> cached_features(HybridNetImpl& net, const std::string& dir,
                                                        const std::string& data_checksum, const std::string& backbone,
                                                        const torch::Tensor& train_inputs, const torch::Tensor& test_inputs,
                                                        const torch::Device& device, FeatureCacheInfo& info) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string shape = std::to_string(train_inputs.size(0)) + "-" + std::to_string(test_inputs.size(0));
  info.key = tensor_checksum(torch::tensor(std::vector<int64_t>{train_inputs.size(0), test_inputs.size(0)}),
                             std::stoull(data_checksum, nullptr, 16) ^ std::stoull(weights_checksum(net.backbone_module()), nullptr, 16));
  info.path = (fs::path(dir) / ("features-" + backbone + "-" + shape + "-" + info.key + ".pt")).string();
  std::error_code ec;
  if (fs::exists(info.path, ec)) {
    // A tensor file: data only, its digest checked before anything is decoded.
    try {
      const train::TensorFile f = train::read_tensor_file(info.path, kFeaturesFormat);
      const auto tr = f.tensors.find("train"), te = f.tensors.find("test");
      const auto sum = f.texts.find("checksum");  // the report's; the file's own digest is already checked
      if (tr == f.tensors.end() || te == f.tensors.end() || sum == f.texts.end() || tr->second.dim() < 1 ||
          te->second.dim() < 1 || tr->second.size(0) != train_inputs.size(0) || te->second.size(0) != test_inputs.size(0))
        throw train::TensorFileError(info.path + ": not the features of these inputs");
      info.hit = true;
      info.checksum = sum->second;
      info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return {tr->second.to(device), te->second.to(device)};
    } catch (const train::TensorFileError& e) {
      info.note = std::string(e.what()) + ": recomputed";
    }
  }
  torch::Tensor tr = compute(net, train_inputs, device), te = compute(net, test_inputs, device);
  info.checksum = tensor_checksum(torch::cat({tr.flatten(), te.flatten()}));
  train::TensorFile f;
  f.format = kFeaturesFormat;
  f.tensors = {{"train", tr}, {"test", te}};
  f.texts["checksum"] = info.checksum;
  train::write_tensor_file(info.path, f);  // write_file_atomic: whole or not at all, no planted link followed
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {tr.to(device), te.to(device)};
}

}  // namespace qfleet::classify
