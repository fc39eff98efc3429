// IDX files as tensors (idx.hpp): the reader of idx_reader.cpp, and the writer, which
// compresses in memory and writes through qfleet's one writer (write_file_atomic: a reader
// never sees half a file).
#include "idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "qfleet/files.hpp"

namespace qfleet::classify {
namespace {

// `raw` as a gzip stream (zlib's deflate with the gzip wrapper: windowBits 15 + 16; level 6,
// gzip's default).
std::string gzip(const std::string& raw, const std::string& path) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw DataError(path + ": cannot start compressing");
  std::string out;
  std::vector<char> buf(1 << 16);
  std::size_t pos = 0;
  int rc = Z_OK;
  do {  // in pieces of at most 2^30 bytes: avail_in is 32 bits wide
    const std::size_t piece = std::min<std::size_t>(raw.size() - pos, std::size_t(1) << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data() + pos));
    z.avail_in = uInt(piece);
    pos += piece;
    const int flush = pos == raw.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = uInt(buf.size());
      rc = deflate(&z, flush);
      out.append(buf.data(), buf.size() - z.avail_out);
    } while (z.avail_out == 0);
  } while (pos < raw.size());
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw DataError(path + ": cannot compress");
  return out;
}

// Unsigned bytes as an IDX file (gzipped when `path` ends in ".gz").
void write_idx_data(const std::string& path, const std::vector<int64_t>& shape, const uint8_t* bytes,
                    std::size_t n) {
  std::string file = {0, 0, 0x08, char(shape.size())};
  for (int64_t d : shape) {
    if (d < 0 || uint64_t(d) > std::numeric_limits<uint32_t>::max()) throw DataError(path + ": a dimension over 2^32");
    for (int s = 24; s >= 0; s -= 8) file.push_back(char((uint64_t(d) >> s) & 0xff));
  }
  file.append(reinterpret_cast<const char*>(bytes), n);
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  write_file_atomic(path, gz ? gzip(file, path) : file);
}

}  // namespace

torch::Tensor read_idx(const std::string& path, int expected_dims) {
  IdxData d = read_idx_data(path, expected_dims);
  return torch::from_blob(d.bytes.data(), d.shape, torch::kUInt8).clone();
}

void write_idx(const std::string& path, const torch::Tensor& data) {
  TORCH_CHECK(data.scalar_type() == torch::kUInt8, "write_idx: uint8 data expected");
  TORCH_CHECK(data.dim() >= 1 && data.dim() <= 255, "write_idx: 1 to 255 dimensions");
  const torch::Tensor c = data.contiguous();
  write_idx_data(path, c.sizes().vec(), c.data_ptr<uint8_t>(), std::size_t(c.numel()));
}

}  // namespace qfleet::classify
