// The first line of an exception's message. LibTorch's errors (c10::Error) append the
// C++ call stack after it, which the runtime's own messages (checkpoints, distributed
// start-up, graph capture) leave out.
#pragma once

#include <string>

namespace qfleet::train {

inline std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

}  // namespace qfleet::train
