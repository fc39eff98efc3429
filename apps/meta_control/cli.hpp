// The command line of qfleet-meta and python -m qfleet.meta_control (cli.cpp), on its
// own so that main.cpp compiles without LibTorch's headers.
#pragma once

#include <string>
#include <vector>

namespace qfleet::meta {

// The command line (options in docs/meta_control.md): `prog` names the entry point in
// messages and the report; `args` excludes the program name. Returns the exit status
// (0 done, 1 failed, 2 bad configuration or option) and never throws.
int cli_main(const std::string& prog, const std::vector<std::string>& args);

}  // namespace qfleet::meta
