// libFuzzer target for qfleet-qgan's PGM reader (apps/qgan/targets.cpp): any bytes give
// an image or a TargetError, never a crash, a sanitizer report or a runaway allocation.
#include <cstddef>
#include <cstdint>
#include <string>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto img = qfleet::qgan::parse_pgm(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>");
    if (img.pixels.size() != static_cast<size_t>(img.rows * img.cols)) __builtin_trap();
  } catch (const qfleet::qgan::TargetError&) {
  }
  return 0;
}
