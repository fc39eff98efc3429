// The qfleet-rl command line (docs/rl.md), shared by the binary and `python -m qfleet.rl`.
#pragma once

#include <string>
#include <vector>

namespace qfleet::rl {

// `prog` names the entry point in messages; `args` excludes the program name. Returns the
// exit status (0 done, 1 failed, 2 bad configuration or option) and never throws.
int cli_main(const std::string& prog, const std::vector<std::string>& args);

}  // namespace qfleet::rl
