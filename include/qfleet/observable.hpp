// Observables: real-weighted sums of Pauli words, e.g. 0.5 * "X0 Z2" - 1.0 * "Y1".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qfleet {

// A tensor product of Pauli operators on distinct wires. Wires not named act as
// identity. Stored as bit masks over wires (bit w set = wire w), kept by the
// builder so a word can be validated against a circuit's qubit count.
struct PauliWord {
  std::vector<std::pair<char, int>> factors;  // ('X'|'Y'|'Z', wire), wires distinct

  // Parses "X0 Z2 Y5" (factors separated by spaces; "I", "" or "I0" = identity).
  // Throws qfleet::Error on an unknown letter, a missing or negative wire, or a
  // repeated wire.
  static PauliWord parse(std::string_view text);
  std::string str() const;
  int max_wire() const;  // -1 for the identity
};

struct Observable {
  std::vector<std::pair<double, PauliWord>> terms;

  Observable() = default;
  // A single word with coefficient 1.
  static Observable word(std::string_view text);
  // Terms given as (coefficient, "X0 Z2").
  static Observable sum(const std::vector<std::pair<double, std::string>>& terms);
  std::string str() const;
};

}  // namespace qfleet
