// Per-call argument checks shared by Program (circuits) and OpenProgram (open
// systems). They run on every call, so they never allocate unless they throw.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "qfleet/error.hpp"
#include "qfleet/names.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

template <class R>
constexpr Precision precision_of() {
  return std::is_same_v<R, float> ? Precision::complex64 : Precision::complex128;
}

inline std::string precision_name(Precision p) { return std::string(to_string(p)); }

// A program compiled for one precision called with the other's data.
template <class R>
void expect_precision(Precision compiled) {
  if (compiled != precision_of<R>()) {
    throw Error(std::string("this program was compiled for ") + precision_name(compiled) + " but was called with " +
                precision_name(precision_of<R>()) + " data");
  }
}

// `shape()` builds the message's shape text only on failure.
template <class Shape>
void expect_size(std::string_view what, std::size_t got, std::size_t want, Shape&& shape) {
  if (got != want) {
    throw Error(std::string(what) + " has " + std::to_string(got) + " values, expected " + std::to_string(want) +
                " " + std::string(shape()));
  }
}

// Every value finite; a failure names its row and column (rows of `row` values).
template <class R>
void expect_finite(std::string_view what, std::span<const R> v, std::size_t row) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      const std::size_t r = std::max<std::size_t>(row, 1);
      throw Error(std::string(what) + " contains a non-finite value (" + std::to_string(v[i]) + ") at row " +
                  std::to_string(i / r) + ", column " + std::to_string(i % r));
    }
  }
}

}  // namespace qfleet::detail
