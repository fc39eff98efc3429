// Readers and messages shared by the JSON problem parsers (json_problem.cpp for
// circuits, json_lindblad.cpp for open systems): every rejection names the JSON
// path of the value, unknown and repeated keys are errors.
#pragma once

#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "qfleet/json_problem.hpp"
#include "qfleet/names.hpp"
#include "qfleet/nearest_name.hpp"

namespace qfleet::json_problem::internal {

using nlohmann::json;

// How many bytes of a user's string a message echoes: a message is one line, and a
// key, a name or a value of megabytes would make it megabytes long.
inline constexpr std::size_t kEchoLimit = 200;

// A string as a JSON literal, escaped to ASCII so a message stays on one line (a NUL
// shows as \u0000 instead of ending the C string the message is printed from), cut
// to kEchoLimit bytes with an ellipsis and the full length.
inline std::string quote(std::string_view s) {
  auto literal = [](std::string_view t) {
    return json(std::string(t)).dump(-1, ' ', true, json::error_handler_t::replace);
  };
  if (s.size() <= kEchoLimit) return literal(s);
  std::string q = literal(s.substr(0, kEchoLimit));
  q.insert(q.size() - 1, "...");
  return q + " (" + std::to_string(s.size()) + " bytes)";
}

// A message of a library that echoes input itself (nlohmann's "last read: '...'"), cut
// where it passes a few hundred bytes.
inline std::string capped(std::string m) {
  constexpr std::size_t kLimit = 2 * kEchoLimit;
  if (m.size() <= kLimit) return m;
  const std::size_t n = m.size();
  m.resize(kLimit);
  return m + "... (" + std::to_string(n) + " bytes)";
}

// qfleet::Error messages start with "qfleet: "; drop it when nesting a message.
inline std::string strip_prefix(const char* what) {
  std::string_view s(what);
  constexpr std::string_view kPrefix = "qfleet: ";
  if (s.substr(0, kPrefix.size()) == kPrefix) s.remove_prefix(kPrefix.size());
  return std::string(s);
}

[[noreturn]] inline void fail(const std::string& path, const std::string& message) {
  throw ProblemError(path, message);
}

inline std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "the number " + v.dump();
    case json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "the string " + quote(s);
    }
    case json::value_t::array:
      return "an array of " + std::to_string(v.size()) + " element(s)";
    case json::value_t::object:
      return "an object";
    default:
      return "a " + std::string(v.type_name()) + " value";
  }
}

// Refuses, before anything runs, a result of more than kMaxOutputValues numbers.
inline void expect_result_fits(double values, std::string_view reduce) {
  if (values > static_cast<double>(kMaxOutputValues)) {
    fail("", fmt::format("the result would hold {:.4g} values, more than the limit of {} (2^25); reduce {}", values,
                         kMaxOutputValues, reduce));
  }
}

// n reals (float or double) as a JSON array of numbers: a row of an output.
template <class R>
json reals(const R* p, std::size_t n) {
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) a.push_back(static_cast<double>(p[i]));
  return a;
}

inline std::string join_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

inline std::string index_path(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Runs f, re-raising a library error with the JSON path it came from.
template <class F>
inline auto at(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ProblemError&) {
    throw;
  } catch (const qfleet::Error& e) {
    fail(path, strip_prefix(e.what()));
  }
}

// An object whose keys must all be known.
class Object {
 public:
  Object(const json& j, std::string path, std::initializer_list<std::string_view> allowed,
         std::string_view what = "an object")
      : j_(j), path_(std::move(path)) {
    if (!j.is_object()) fail(path_, "expected " + std::string(what) + ", got " + describe(j));
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string names;
      for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      const std::string guess = nearest_name(key, allowed, 3);
      std::string msg = "unknown key " + quote(key);
      if (!guess.empty()) msg += " (did you mean " + quote(guess) + "?)";
      msg += "; allowed keys: " + names;
      fail(path_, msg);
    }
  }

  // The value of an optional key, or nullptr when absent or null.
  const json* get(std::string_view key) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  const json& require(std::string_view key, std::string_view why = {}) const {
    const auto it = j_.find(key);
    if (it == j_.end()) {
      fail(path_, "missing key " + quote(key) + (why.empty() ? "" : ": " + std::string(why)));
    }
    return *it;
  }
  std::string path(std::string_view key) const { return join_path(path_, key); }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string path_;
};

inline long long read_int(const json& v, const std::string& path, long long lo, long long hi) {
  long long x = 0;
  if (v.is_number_integer()) {  // also true for unsigned
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) {
        fail(path, "must be at most " + std::to_string(hi) + ", got " + v.dump());
      }
      x = static_cast<long long>(u);
    } else {
      x = v.get<long long>();
    }
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.0e15)) {
      fail(path, "expected an integer, got " + describe(v));
    }
    x = static_cast<long long>(d);
  } else {
    fail(path, "expected an integer, got " + describe(v));
  }
  if (x < lo) fail(path, "must be at least " + std::to_string(lo) + ", got " + std::to_string(x));
  if (x > hi) fail(path, "must be at most " + std::to_string(hi) + ", got " + std::to_string(x));
  return x;
}

inline double read_number(const json& v, const std::string& path) {
  if (!v.is_number()) fail(path, "expected a number, got " + describe(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "must be finite, got " + v.dump());
  return d;
}

// A name table t lacks that is an old spelling of one it has ("auto"): one line naming
// the spelling qfleet uses (qfleet/names.hpp). Returns for any other name.
template <class E, std::size_t N>
void refuse_respelling(const std::array<qfleet::EnumName<E>, N>& t, std::string_view name, const std::string& path) {
  const std::string_view now = qfleet::respelled(name);
  if (!now.empty() && qfleet::value_in(t, now)) fail(path, quote(name) + " is spelled " + quote(now));
}

// "device": "cpu" | "cuda" | "automatic" (CompileOptions / OpenCompileOptions::device).
inline qfleet::Device read_device(const json& v, const std::string& path) {
  if (!v.is_string()) fail(path, "expected a string, got " + describe(v));
  const std::string s = v.get<std::string>();
  if (const auto d = qfleet::value_in(qfleet::kDeviceNames, s)) return *d;
  refuse_respelling(qfleet::kDeviceNames, s, path);
  fail(path, "expected " + qfleet::names_in(qfleet::kDeviceNames) + ", got " + quote(s));
}


inline bool read_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) fail(path, "expected true or false, got " + describe(v));
  return v.get<bool>();
}

inline std::string read_string(const json& v, const std::string& path) {
  if (!v.is_string()) fail(path, "expected a string, got " + describe(v));
  return v.get<std::string>();
}

// "precision": "complex64" | "complex128".
inline Precision read_precision(const json& v, const std::string& path) {
  const std::string s = read_string(v, path);
  if (const auto p = qfleet::value_in(qfleet::kPrecisionNames, s)) return *p;
  fail(path, "expected " + qfleet::names_in(qfleet::kPrecisionNames) + ", got " + quote(s));
}

inline const json& read_array(const json& v, const std::string& path, std::string_view what = "an array") {
  if (!v.is_array()) fail(path, "expected " + std::string(what) + ", got " + describe(v));
  return v;
}

inline std::string precision_name(Precision p) { return std::string(qfleet::to_string(p)); }

// A complex value in a result: always [re, im] (states, density matrices, final states),
// so that a reader takes every entry alike. (Problems may write real entries as plain
// numbers: json_problem::complex_json.)
template <class R>
nlohmann::json complex_pair(const std::complex<R>& z) {
  return nlohmann::json::array({static_cast<double>(z.real()), static_cast<double>(z.imag())});
}

}  // namespace qfleet::json_problem::internal
