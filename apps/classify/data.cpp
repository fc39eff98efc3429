// Data sets of IDX files (data.hpp).
#include "data.hpp"

#include <cstdio>
#include <filesystem>

namespace qfleet::classify {
namespace {

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* ext : {".gz", ""}) {
    const std::string p = (std::filesystem::path(dir) / (stem + ext)).string();
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p;
  }
  std::error_code ec;
  const std::string hint = std::filesystem::path(dir) == kFashionMnistDir && !std::filesystem::exists(dir, ec)
                               ? " (install Debian's dataset-fashion-mnist package: apt-get install dataset-fashion-mnist)"
                               : " (--data takes a folder of MNIST-style IDX files)";
  throw DataError((std::filesystem::path(dir) / stem).string() + "[.gz]: no such file" + hint);
}

Split read_split(const std::string& dir, const std::string& name, int64_t n_classes) {
  Split s;
  s.images_path = find_file(dir, name + "-images-idx3-ubyte");
  s.labels_path = find_file(dir, name + "-labels-idx1-ubyte");
  s.images = read_idx(s.images_path, 3);
  s.labels = read_idx(s.labels_path, 1).to(torch::kInt64);
  if (s.images.size(0) != s.labels.size(0))
    throw DataError(s.images_path + " has " + std::to_string(s.images.size(0)) + " images but " + s.labels_path +
                    " has " + std::to_string(s.labels.size(0)) + " labels");
  const int64_t top = s.labels.max().item<int64_t>();
  if (top >= n_classes) {
    const int64_t at = (s.labels >= n_classes).nonzero()[0][0].item<int64_t>();
    throw DataError(s.labels_path + ": label " + std::to_string(s.labels[at].item<int64_t>()) + " at index " +
                    std::to_string(at) + " is outside [0, " + std::to_string(n_classes) + ")");
  }
  return s;
}

}  // namespace

std::string tensor_checksum(const torch::Tensor& t, uint64_t seed) {
  const torch::Tensor c = t.cpu().contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  const std::size_t n = std::size_t(c.numel()) * c.element_size();
  uint64_t h = seed;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

DataSet load_data(const std::string& dir, int64_t n_classes, int64_t min_size) {
  DataSet d;
  d.dir = dir;
  d.n_classes = n_classes;
  d.train = read_split(dir, "train", n_classes);
  d.test = read_split(dir, "t10k", n_classes);
  const auto a = d.train.images.sizes(), b = d.test.images.sizes();
  if (a[1] != b[1] || a[2] != b[2])
    throw DataError(d.test.images_path + ": images of " + std::to_string(b[1]) + "x" + std::to_string(b[2]) + ", but " +
                    d.train.images_path + " has " + std::to_string(a[1]) + "x" + std::to_string(a[2]));
  if (a[1] < min_size || a[2] < min_size)
    throw DataError(d.train.images_path + ": images of " + std::to_string(a[1]) + "x" + std::to_string(a[2]) +
                    ", smaller than the backbones take (" + std::to_string(min_size) + "x" + std::to_string(min_size) + ")");
  d.height = a[1];
  d.width = a[2];
  uint64_t seed = 1469598103934665603ull;
  std::string sum;
  for (const auto* t : {&d.train.images, &d.train.labels, &d.test.images, &d.test.labels}) {
    sum = tensor_checksum(*t, seed);
    seed = std::stoull(sum, nullptr, 16);
  }
  d.checksum = sum;
  return d;
}

Split head(const Split& s, int64_t n) {
  if (n <= 0 || n >= s.images.size(0)) return s;
  Split h = s;
  h.images = s.images.narrow(0, 0, n);
  h.labels = s.labels.narrow(0, 0, n);
  return h;
}

std::vector<std::string> class_names(const DataSet& d) {
  const bool fashion = d.n_classes == 10 && d.height == 28 && d.width == 28 && d.train.images.size(0) == 60000 &&
                       d.test.images.size(0) == 10000 && d.dir.find("fashion") != std::string::npos;
  if (fashion)
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  std::vector<std::string> n;
  for (int64_t i = 0; i < d.n_classes; ++i) n.push_back(std::to_string(i));
  return n;
}

}  // namespace qfleet::classify
