// EXPECT_QFLEET_ERROR(stmt, "fragment", ...): stmt throws qfleet::Error and its
// message contains every fragment (case-insensitive). Shared by the error tests.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <exception>
#include <string>

#include "qfleet/error.hpp"

namespace qfleet_test {

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const qfleet::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not a qfleet::Error: ") + e.what() + ">";
  }
  return "<no exception>";
}

}  // namespace qfleet_test

#define EXPECT_QFLEET_ERROR(stmt, ...)                                                                  \
  do {                                                                                                  \
    EXPECT_THROW(stmt, qfleet::Error);                                                                  \
    const std::string msg_ = qfleet_test::lower(qfleet_test::error_of([&] { stmt; }));                  \
    for (const char* frag_ : {__VA_ARGS__})                                                             \
      EXPECT_NE(msg_.find(qfleet_test::lower(frag_)), std::string::npos) << "message: " << msg_ << "\n" \
                                                                         << "should mention: " << frag_; \
  } while (0)
