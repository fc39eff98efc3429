// Cached backbone features (features.hpp).
#include "features.hpp"

#include <chrono>
#include <filesystem>

#include "data.hpp"
#include "qfleet/train.hpp"

namespace qfleet::classify {
namespace fs = std::filesystem;

void load_backbone(torch::nn::Module& backbone, const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw DataError(path + ": no such backbone file (a run writes <out>/backbone.pt)");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    backbone.load(archive);
  } catch (const c10::Error& e) {
    throw DataError(path + ": not a backbone of this architecture, or damaged: " + e.what_without_backtrace());
  }
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
    try {
      torch::serialize::InputArchive a;
      a.load_from(info.path);
      torch::Tensor tr, te, sum;
      a.read("train", tr);
      a.read("test", te);
      a.read("checksum", sum);
      const std::string want(static_cast<const char*>(sum.data_ptr()), std::size_t(sum.numel()));
      const std::string got = tensor_checksum(torch::cat({tr.flatten(), te.flatten()}));
      if (got == want && tr.size(0) == train_inputs.size(0) && te.size(0) == test_inputs.size(0)) {
        info.hit = true;
        info.checksum = got;
        info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return {tr.to(device), te.to(device)};
      }
      info.note = info.path + " failed its checksum (" + got + ", stored " + want + "): recomputed";
    } catch (const c10::Error& e) {
      info.note = info.path + " could not be read (" + std::string(e.what_without_backtrace()) + "): recomputed";
    }
  }
  torch::Tensor tr = compute(net, train_inputs, device), te = compute(net, test_inputs, device);
  info.checksum = tensor_checksum(torch::cat({tr.flatten(), te.flatten()}));
  torch::serialize::OutputArchive a;
  a.write("train", tr);
  a.write("test", te);
  a.write("checksum", torch::from_blob(info.checksum.data(), {int64_t(info.checksum.size())}, torch::kUInt8).clone());
  fs::create_directories(dir);
  const std::string tmp = info.path + ".tmp";
  a.save_to(tmp);
  fs::rename(tmp, info.path);
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {tr.to(device), te.to(device)};
}

}  // namespace qfleet::classify
