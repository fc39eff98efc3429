// check_memory_fits (memory_check.hpp).
#include "common/memory_check.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "qfleet/train.hpp"

namespace qfleet::app {

namespace {

// 724 GiB, 0.74 MiB: GiB from 1 GiB up, MiB below.
std::string gib(double bytes) {
  char buf[32];
  if (bytes >= 0x1p30)
    std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / 0x1p30);
  else
    std::snprintf(buf, sizeof buf, "%.3g MiB", bytes / 0x1p20);
  return buf;
}

}  // namespace

std::size_t check_bytes_fit(const torch::Device& device, const std::string& setting, double bytes,
                            const std::string& what, double fraction) {
  const std::size_t free_bytes = train::free_memory(device);
  if (bytes > fraction * double(free_bytes))
    throw std::invalid_argument(setting + ": " + what + " need about " + gib(bytes) + " at once on " + device.str() +
                                ", " + gib(double(free_bytes)) + " are free: lower " + setting);
  return free_bytes;
}

MemoryEstimate check_memory_fits(const torch::Device& device, const std::string& setting, int64_t items,
                                 const std::string& noun, const std::function<void(int64_t)>& step, double fraction) {
  MemoryEstimate e;
  const std::size_t one = train::peak_memory(device, [&] { step(1); });
  const std::size_t two = train::peak_memory(device, [&] { step(2); });
  e.per_item_bytes = two > one ? two - one : 0;
  e.fixed_bytes = one > e.per_item_bytes ? one - e.per_item_bytes : 0;
  e.needed_bytes = e.fixed_bytes + std::size_t(std::max<int64_t>(items, 0)) * e.per_item_bytes;
  e.free_bytes = check_bytes_fit(device, setting, double(e.needed_bytes),
                                 std::to_string(items) + " " + noun + " (measured on 1 and 2: " +
                                     gib(double(e.per_item_bytes)) + " each)",
                                 fraction);
  return e;
}

}  // namespace qfleet::app
