// Errors raised by qfleet. Every rejected input throws qfleet::Error before any
// output or model state is modified, so a caller can catch, fix and retry.
#pragma once

#include <stdexcept>
#include <string>

namespace qfleet {

class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument("qfleet: " + what) {}
};

}  // namespace qfleet
