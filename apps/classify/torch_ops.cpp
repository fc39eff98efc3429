// TORCH_LIBRARY(qfleet_classify): the classifier's entry point for Python
// (python -m qfleet.classify runs this same command line).
#include <torch/library.h>

#include <string>
#include <vector>

#include "classify.hpp"
#include "cli.hpp"

namespace {
int64_t cli(const std::string& prog, const std::vector<std::string>& args) {
  return qfleet::classify::cli_main(prog, args);
}
}  // namespace

TORCH_LIBRARY(qfleet_classify, m) { m.def("main(str prog, str[] args) -> int", &cli); }
