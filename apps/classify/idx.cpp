// IDX files as tensors (idx.hpp), on the reader and writer of idx_reader.cpp.
#include "idx.hpp"

namespace qfleet::classify {

torch::Tensor read_idx(const std::string& path, int expected_dims) {
  IdxData d = read_idx_data(path, expected_dims);
  return torch::from_blob(d.bytes.data(), d.shape, torch::kUInt8).clone();
}

void write_idx(const std::string& path, const torch::Tensor& data) {
  TORCH_CHECK(data.scalar_type() == torch::kUInt8, "write_idx: uint8 data expected");
  TORCH_CHECK(data.dim() >= 1 && data.dim() <= 255, "write_idx: 1 to 255 dimensions");
  const torch::Tensor c = data.contiguous();
  IdxData d{c.sizes().vec(), std::vector<uint8_t>(c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel())};
  write_idx_data(path, d);
}

}  // namespace qfleet::classify
