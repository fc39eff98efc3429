// One error ladder for every app's command line: what an app's body throws becomes one
// line "<prog>: error: <message>" on stderr and an exit status, the same in each app and
// from `python -m qfleet.<app>` (which runs the same cli_main):
//   2  what the user can fix: the app's own input errors (the Usage... types: a config
//      key, a data file, a target), a bad value (std::invalid_argument, which
//      qfleet::Error is), a checkpoint that does not belong to the run;
//   1  anything else (torch's message without its C++ backtrace).
// Command-line parse errors come before this, from CLI11, with the same status 2.
#pragma once

#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "qfleet/train.hpp"

namespace qfleet::app {

namespace cli_detail {

inline int report(const std::string& prog, const char* what, int status) {
  std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), what);
  return status;
}

template <class Body>
int usage_guard(const std::string&, Body& body) {
  return body();
}

// The app's own input errors, innermost, so that they are matched before the ladder's
// std::exception.
template <class E, class... Rest, class Body>
int usage_guard(const std::string& prog, Body& body) {
  try {
    return usage_guard<Rest...>(prog, body);
  } catch (const E& e) {
    return report(prog, e.what(), 2);
  }
}

}  // namespace cli_detail

// Runs body() (returning the exit status), catching what it throws as above.
template <class... Usage, class Body>
int run_guarded(const std::string& prog, Body body) {
  using cli_detail::report;
  try {
    return cli_detail::usage_guard<Usage...>(prog, body);
  } catch (const train::CheckpointError& e) {
    return report(prog, e.what(), 2);
  } catch (const std::invalid_argument& e) {
    return report(prog, e.what(), 2);
  } catch (const c10::Error& e) {
    return report(prog, e.what_without_backtrace(), 1);
  } catch (const std::exception& e) {
    return report(prog, e.what(), 1);
  }
}

}  // namespace qfleet::app
