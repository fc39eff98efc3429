// The command line of qfleet-qgan and python -m qfleet.qgan (cli.cpp).
#pragma once

#include <string>
#include <vector>

namespace qfleet::qgan {

// `prog [train|tournament|suite] [options]` (no subcommand: train with its defaults).
// Returns the exit status: 0, 1 (a failure while running), 2 (bad arguments or input).
int cli_main(const std::string& prog, const std::vector<std::string>& args);

}  // namespace qfleet::qgan
