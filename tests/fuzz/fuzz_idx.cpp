// libFuzzer target for qfleet-classify's IDX reader (apps/classify/idx_reader.cpp, plain
// or gzipped): any bytes give an array whose size is its shape's product, or a DataError,
// never a crash, a sanitizer report or an allocation larger than the data (a header may
// claim 2^36 bytes). The reader opens a path, so each input goes through a file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "idx_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/qfleet_fuzz_idx_" + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (int dims : {1, 3}) {
    try {
      const auto d = qfleet::classify::read_idx_data(path, dims);
      std::size_t n = 1;
      for (int64_t s : d.shape) n *= std::size_t(s);
      if (d.shape.size() != std::size_t(dims) || d.bytes.size() != n) __builtin_trap();
    } catch (const qfleet::classify::DataError&) {
    }
  }
  return 0;
}
