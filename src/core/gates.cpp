#include <string>

#include "core/name_lookup.hpp"
#include "qfleet/gates.hpp"

namespace qfleet {

Gate gate_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, Gate> kAliases[] = {
      {"I", Gate::Identity}, {"H", Gate::Hadamard}, {"X", Gate::PauliX},   {"Y", Gate::PauliY},
      {"Z", Gate::PauliZ},   {"Sdg", Gate::Sdg},    {"Tdg", Gate::Tdg},    {"SXdg", Gate::SXdg},
      {"CX", Gate::CNOT},    {"U", Gate::U3},       {"CPhase", Gate::ControlledPhaseShift}};
  return detail::id_from_name(name, kGateTable, kAliases, "gate", "gates");
}

}  // namespace qfleet
