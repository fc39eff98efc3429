// Running another qfleet app from an app, as a separate program: no app links another
// (an app that compares itself with another runs it the way a user would: its command
// line, its configuration file, its report.json).
#pragma once

#include <string>
#include <vector>

namespace qfleet::app {

struct OtherApp {
  const char* binary;     // "qfleet-meta"
  const char* module;     // "qfleet.meta_control" (python -m)
  const char* env;        // "QFLEET_META": a path to the binary, which then wins
  const char* build_dir;  // "meta_control": the binary's folder under a build tree's apps/
};

// The command that starts `other` the way this process was started: under Python
// (`python -m qfleet.<app>`) the same interpreter with -m other.module; else $<env> when
// set, the binary beside this one (an installation's bin/), the binary in the build
// tree (../<build_dir>/), or the binary's name for a PATH search.
std::vector<std::string> other_app_command(const OtherApp& other);

// Runs other_app_command(other) + args and waits; std::runtime_error naming the command
// when it cannot start or exits with an error.
void run_other_app(const OtherApp& other, const std::vector<std::string>& args);

}  // namespace qfleet::app
