// libFuzzer target for the .npy reader of `qfleet eval` problems (src/json/npy.cpp): any
// bytes must be read, or rejected with qfleet::Error (ProblemError naming the file).
// Anything else escaping, a sanitizer report, a leak or a hang is a bug. A read array
// must hold exactly product(shape) finite values, and writing it back and reading the
// file again must give the same array.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "npy.hpp"
#include "qfleet/error.hpp"

namespace npy = qfleet::json_problem::npy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  npy::Array a;
  try {
    a = npy::parse(std::string_view(reinterpret_cast<const char*>(data), size), "inputs",
                   "file fuzz.npy");
  } catch (const qfleet::Error&) {
    return 0;
  }
  std::size_t count = 1;
  for (const std::size_t d : a.shape) count *= d;
  if (count != a.values.size()) std::abort();
  for (const double v : a.values) {
    if (!std::isfinite(v)) std::abort();
  }
  const std::string file =
      "fuzz-npy-roundtrip.npy";  // in the working directory (scripts/fuzz.sh: the build)
  npy::write(file, "output_npy", "<f8", a.shape, a.values.data(), a.values.size() * sizeof(double));
  const npy::Array b = npy::read(file, "inputs");
  std::remove(file.c_str());
  if (b.shape != a.shape || b.values != a.values) std::abort();
  return 0;
}
