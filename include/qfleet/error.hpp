// Errors raised by qfleet. Every rejected input throws qfleet::Error before any
// output or model state is modified, so a caller can catch, fix and retry.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace qfleet {

// Which input an error is about, where the library knows it and the message alone
// would not say it to a program: a reader of another format (qfleet::json) maps it
// to its own key with a table, never by reading the message's words.
enum class ErrorSubject : std::uint8_t {
  unspecified,
  initial_state,  // OpenSystem's initial state (set_initial_density / set_initial_state)
  target,         // OpenSystem's target (set_target_*)
  solver,         // OpenCompileOptions::solver
};

class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what, ErrorSubject subject = ErrorSubject::unspecified)
      : std::invalid_argument("qfleet: " + what), subject_(subject) {}
  ErrorSubject subject() const noexcept { return subject_; }

 private:
  ErrorSubject subject_;
};

}  // namespace qfleet
