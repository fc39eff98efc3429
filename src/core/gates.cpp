#include <string>

#include "qfleet/error.hpp"
#include "qfleet/gates.hpp"

namespace qfleet {

Gate gate_from_name(std::string_view name) {
  for (const auto& g : kGateTable) {
    if (g.name == name) return g.id;
  }
  struct Alias {
    std::string_view alias;
    Gate gate;
  };
  static constexpr Alias kAliases[] = {
      {"I", Gate::Identity}, {"H", Gate::Hadamard}, {"X", Gate::PauliX},   {"Y", Gate::PauliY},
      {"Z", Gate::PauliZ},   {"Sdg", Gate::Sdg},    {"Tdg", Gate::Tdg},    {"SXdg", Gate::SXdg},
      {"CX", Gate::CNOT},    {"U", Gate::U3},       {"CPhase", Gate::ControlledPhaseShift}};
  for (const auto& a : kAliases) {
    if (a.alias == name) return a.gate;
  }
  std::string known;
  for (const auto& g : kGateTable) {
    if (!known.empty()) known += ", ";
    known += g.name;
  }
  throw Error("unknown gate '" + std::string(name) + "'; known gates: " + known);
}

}  // namespace qfleet
