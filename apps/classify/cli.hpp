// The command line of qfleet-classify and python -m qfleet.classify (cli.cpp), on its
// own so that main.cpp compiles without LibTorch's headers.
#pragma once

#include <string>
#include <vector>

namespace qfleet::classify {

// `prog [options]` (docs/classify.md). Returns the exit status: 0 done, 1 failed,
// 2 bad arguments or input.
int cli_main(const std::string& prog, const std::vector<std::string>& args);

}  // namespace qfleet::classify
