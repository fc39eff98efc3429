// One error ladder for every app's command line: what an app's body throws becomes one
// line "<prog>: error: <message>" on stderr and an exit status, the same in each app and
// from `python -m qfleet.<app>` (which runs the same cli_main):
//   2  what the user can fix: the app's own input errors (the Usage... types: a data
//      file, a target), a bad value or configuration key (std::invalid_argument, which
//      qfleet::Error and app::ConfigError are), a checkpoint that does not belong to
//      the run;
//   1  anything else (torch's message without its C++ backtrace).
// The command line itself is read first by parse_command_line: --help prints and ends
// with 0, a bad option is one line and status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

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

// Parses args (in the order given) into `cli`: nullopt to go on, or the exit status
// to end with: 0 after --help (printed by CLI11, a subcommand's own where one was
// named), 2 after a bad option ("<prog>: error: ... (<prog> --help lists the options)").
inline std::optional<int> parse_command_line(CLI::App& cli, const std::string& prog,
                                             const std::vector<std::string>& args) {
  try {
    cli.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // (CLI11 takes them last first)
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli.exit(e);
    std::fprintf(stderr, "%s: error: %s (%s --help lists the options)\n", prog.c_str(), e.what(), prog.c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace qfleet::app
