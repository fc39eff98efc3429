// A message for one line: the readers cap what they echo of the user's input
// (json_problem's quote(): 200 bytes), and this caps the whole message where it leaves
// qfleet (the CLI's error line, the PyTorch adapter's exceptions), for any echo a reader
// does not cap itself (a Pauli word or a gate name of megabytes). The middle is cut,
// so the start (what and where) and the end (what to do) stay.
#pragma once

#include <cstddef>
#include <string>

namespace qfleet {

inline constexpr std::size_t kMessageLimit = 1000;

inline std::string capped_message(std::string m) {
  if (m.size() <= kMessageLimit) return m;
  constexpr std::size_t kHead = 600, kTail = 300;
  return m.substr(0, kHead) + "... (" + std::to_string(m.size()) + " bytes in all) ..." +
         m.substr(m.size() - kTail);
}

}  // namespace qfleet
