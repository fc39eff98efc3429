// A tensor file's digest recomputed, as whoever edits a file can do (qfleet/tensor_file.hpp:
// the SHA-1 of the whole file with its own 40 digits read as zeros), so that a test or a
// fuzzer reaches the checks behind the digest. Bytes too short to hold one come back as given.
#pragma once

#include <c10/util/hash.h>

#include <cstring>
#include <string>

namespace qfleet_test {

inline std::string reseal(std::string bytes) {
  const std::size_t at = 8 + std::strlen(R"({"__metadata__":{"qfleet.sha1":")");
  if (bytes.size() < at + 40) return bytes;
  bytes.replace(at, 40, 40, '0');
  const std::string digest = c10::sha1(bytes).str();
  return bytes.replace(at, 40, digest);
}

}  // namespace qfleet_test
