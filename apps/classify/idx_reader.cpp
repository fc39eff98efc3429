// The IDX reader without LibTorch (idx_reader.hpp).
#include "idx_reader.hpp"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

namespace qfleet::classify {
namespace {

struct GzCloser {
  void operator()(gzFile f) const {
    if (f) gzclose(f);
  }
};
using Gz = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

std::string gz_reason(gzFile f) {
  int code = 0;
  const char* msg = gzerror(f, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return msg ? msg : "unknown zlib error";
}

// Reads up to n bytes; returns how many were read (fewer at the end of the data).
std::size_t read_some(gzFile f, uint8_t* out, std::size_t n, const std::string& path) {
  std::size_t done = 0;
  while (done < n) {
    const unsigned chunk = unsigned(std::min<std::size_t>(n - done, 1u << 30));
    const int got = gzread(f, out + done, chunk);
    if (got < 0) throw DataError(path + ": cannot read: " + gz_reason(f) + " (a damaged or cut gzip file?)");
    if (got == 0) break;
    done += std::size_t(got);
  }
  return done;
}

}  // namespace

IdxData read_idx_data(const std::string& path, int expected_dims) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw DataError(path + ": no such file");
  Gz f(gzopen(path.c_str(), "rb"));
  if (!f) throw DataError(path + ": cannot open: " + std::strerror(errno));
  std::array<uint8_t, 4> magic{};
  if (read_some(f.get(), magic.data(), 4, path) != 4) throw DataError(path + ": empty or shorter than an IDX header");
  if (magic[0] != 0 || magic[1] != 0)
    throw DataError(path + ": not an IDX file (its first two bytes are not zero)");
  if (magic[2] != 0x08) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", unsigned(magic[2]));
    throw DataError(path + ": IDX type code " + code + " (only 0x08, unsigned bytes, is read)");
  }
  if (magic[3] != expected_dims)
    throw DataError(path + ": " + std::to_string(magic[3]) + " dimensions, expected " + std::to_string(expected_dims) +
                    (expected_dims == 1 ? " (a label file)" : " (an image file)"));
  IdxData d;
  uint64_t total = 1;
  for (int i = 0; i < expected_dims; ++i) {
    std::array<uint8_t, 4> b{};
    if (read_some(f.get(), b.data(), 4, path) != 4) throw DataError(path + ": the header is cut short");
    const uint64_t n = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | uint64_t(b[3]);
    if (n == 0) throw DataError(path + ": dimension " + std::to_string(i) + " has size 0");
    total *= n;
    if (total > (uint64_t(1) << 36))  // 64 GiB: no image set this app reads comes near
      throw DataError(path + ": its header declares more than 2^36 bytes of data (a corrupt header?)");
    d.shape.push_back(int64_t(n));
  }
  // In chunks: a header may declare far more than the file holds, and the memory must
  // follow the data, not the claim.
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  std::size_t got = 0;
  while (got < total) {
    const std::size_t want = std::min<std::size_t>(kChunk, std::size_t(total) - got);
    d.bytes.resize(got + want);
    const std::size_t n = read_some(f.get(), d.bytes.data() + got, want, path);
    got += n;
    if (n < want) break;
  }
  if (got != total)
    throw DataError(path + ": cut short: " + std::to_string(got) + " data bytes, the header declares " + std::to_string(total));
  uint8_t extra = 0;
  if (read_some(f.get(), &extra, 1, path) != 0)
    throw DataError(path + ": longer than its header declares (" + std::to_string(total) + " data bytes)");
  return d;
}

}  // namespace qfleet::classify
