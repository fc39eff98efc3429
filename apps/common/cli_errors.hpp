// One error ladder for every app's command line: what an app's body throws becomes one
// line "<prog>: error: <message>" on stderr and an exit status, the same in each app and
// from `python -m qfleet.<app>` (which runs the same cli_main):
//   2  what the user can fix: the app's own input errors (the Usage... types: a data
//      file, a target), a bad value or configuration key (std::invalid_argument, which
//      qfleet::Error and app::ConfigError are), a checkpoint that does not belong to
//      the run;
//   1  anything else (torch's message without its C++ backtrace; an allocation that
//      failed says how much was asked for and what to lower), after what the run was
//      doing where it failed when a phase says so (doing.hpp: "while training, step 38 of
//      4690 (batch = 64, device = cuda): ..."); a file system error names its path and is 2
//      where the path is the user's to change (cli_detail::file_system_error).
// The command line itself is read first by parse_command_line: --help prints and ends
// with 0, a bad option is one line and status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "doing.hpp"
#include "qfleet/message.hpp"
#include "qfleet/train.hpp"

namespace qfleet::app {

namespace cli_detail {

// (The message capped: a configuration key or value of megabytes is echoed in part.)
inline int report(const std::string& prog, const char* what, int status) {
  std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), capped_message(what).c_str());
  return status;
}

// A failure while running (status 1), after what the run was doing where it was thrown
// (doing.hpp). Called inside the handler.
inline int report_failure(const std::string& prog, const std::string& what) {
  const std::string phase = doing_when_thrown();
  return report(prog, (phase.empty() ? what : "while " + phase + ": " + what).c_str(), 1);
}

// An allocation that failed, in the user's terms: how much was asked for at once (where
// the allocator says) and what to lower, instead of the allocator's own text.
inline std::string out_of_memory(const std::string& what) {
  // "... you tried to allocate 131072000000 bytes" (CPU), "Tried to allocate 2.00 GiB" (CUDA).
  std::string asked;
  const std::size_t at = what.find("ried to allocate ");  // (t|T)ried
  if (at != std::string::npos) {
    const char* p = what.c_str() + at + 17;
    char* end = nullptr;
    double bytes = std::strtod(p, &end);
    const std::string unit = end != p ? std::string(end).substr(0, 4) : "";
    const double scale = unit == " KiB" ? 0x1p10 : unit == " MiB" ? 0x1p20 : unit == " GiB" ? 0x1p30 : unit == " TiB" ? 0x1p40 : 1.0;
    bytes *= scale;
    if (end != p && bytes > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (%.3g GiB at once)", bytes / 0x1p30);
      asked = buf;
    }
  }
  return "out of memory" + asked + ": the run needs more memory than is free; lower the batch (the meta-batch, the "
         "batch size, the number of environments or records) or the problem's size";
}

// Whether a torch error is an allocation failure (the CPU allocator's or CUDA's).
inline bool is_out_of_memory(const c10::Error& e) {
  const std::string w = e.what_without_backtrace();
  return dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr || w.find("can't allocate memory") != std::string::npos;
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

// A file system error in the user's terms: "cannot create directories /x/y: Not a
// directory" rather than libstdc++'s "filesystem error: cannot create directories: Not a
// directory [/x/y]"; status 2 where the path is the user's to change (missing, not a
// folder, not allowed, read-only), else 1.
inline int file_system_error(const std::string& prog, const std::filesystem::filesystem_error& e) {
  std::string what = e.what();
  const std::string prefix = "filesystem error: ";
  if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
  std::string op = what.substr(0, what.find(": "));
  std::string paths;
  for (const auto* p : {&e.path1(), &e.path2()})
    if (!p->empty()) paths += (paths.empty() ? " " : ", ") + p->string();
  const auto c = e.code();
  const bool users = c == std::errc::no_such_file_or_directory || c == std::errc::not_a_directory ||
                     c == std::errc::permission_denied || c == std::errc::read_only_file_system ||
                     c == std::errc::file_exists || c == std::errc::is_a_directory;
  return report(prog, (op + paths + ": " + c.message()).c_str(), users ? 2 : 1);
}

}  // namespace cli_detail

// Runs body() (returning the exit status), catching what it throws as above.
template <class... Usage, class Body>
int run_guarded(const std::string& prog, Body body) {
  using cli_detail::report;
  using cli_detail::report_failure;
  try {
    return cli_detail::usage_guard<Usage...>(prog, body);
  } catch (const train::CheckpointError& e) {
    return report(prog, e.what(), 2);
  } catch (const std::invalid_argument& e) {
    return report(prog, e.what(), 2);
  } catch (const c10::Error& e) {
    if (cli_detail::is_out_of_memory(e)) return report_failure(prog, cli_detail::out_of_memory(e.what_without_backtrace()));
    return report_failure(prog, e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return report_failure(prog, cli_detail::out_of_memory(""));
  } catch (const std::filesystem::filesystem_error& e) {
    return cli_detail::file_system_error(prog, e);
  } catch (const std::exception& e) {
    return report_failure(prog, e.what());
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
    std::fprintf(stderr, "%s: error: %s (%s --help lists the options)\n", prog.c_str(), capped_message(e.what()).c_str(),
                 prog.c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace qfleet::app
