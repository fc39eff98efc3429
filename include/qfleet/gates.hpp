// The gate catalogue: one table (name, wires, parameters, control count) that the
// builder, the kernels, the JSON reader and the tests all read. Adding a gate is
// adding a row to QFLEET_GATE_TABLE and its matrix to kernels/gate_matrix.hpp.
//
// Conventions are PennyLane's, exactly: wire 0 is the most significant bit of a
// basis index; a gate's matrix is indexed with its first wire most significant;
// controlled gates list their control wires first. See docs/gates.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace qfleet {

// X(id, name, wires, params, controls)
//  wires: total wires the gate acts on; controls: how many of them (listed first)
//  are pure controls, so the kernel applies a (wires-controls)-qubit block on the
//  subspace where every control is |1>.
#define QFLEET_GATE_TABLE(X)                               \
  X(Identity, "Identity", 1, 0, 0)                         \
  X(Hadamard, "Hadamard", 1, 0, 0)                         \
  X(PauliX, "PauliX", 1, 0, 0)                             \
  X(PauliY, "PauliY", 1, 0, 0)                             \
  X(PauliZ, "PauliZ", 1, 0, 0)                             \
  X(S, "S", 1, 0, 0)                                       \
  X(Sdg, "Adjoint(S)", 1, 0, 0)                            \
  X(T, "T", 1, 0, 0)                                       \
  X(Tdg, "Adjoint(T)", 1, 0, 0)                            \
  X(SX, "SX", 1, 0, 0)                                     \
  X(SXdg, "Adjoint(SX)", 1, 0, 0)                          \
  X(RX, "RX", 1, 1, 0)                                     \
  X(RY, "RY", 1, 1, 0)                                     \
  X(RZ, "RZ", 1, 1, 0)                                     \
  X(PhaseShift, "PhaseShift", 1, 1, 0)                     \
  X(Rot, "Rot", 1, 3, 0)                                   \
  X(U3, "U3", 1, 3, 0)                                     \
  X(CNOT, "CNOT", 2, 0, 1)                                 \
  X(CY, "CY", 2, 0, 1)                                     \
  X(CZ, "CZ", 2, 0, 1)                                     \
  X(SWAP, "SWAP", 2, 0, 0)                                 \
  X(ISWAP, "ISWAP", 2, 0, 0)                               \
  X(CRX, "CRX", 2, 1, 1)                                   \
  X(CRY, "CRY", 2, 1, 1)                                   \
  X(CRZ, "CRZ", 2, 1, 1)                                   \
  X(CRot, "CRot", 2, 3, 1)                                 \
  X(ControlledPhaseShift, "ControlledPhaseShift", 2, 1, 1) \
  X(IsingXX, "IsingXX", 2, 1, 0)                           \
  X(IsingYY, "IsingYY", 2, 1, 0)                           \
  X(IsingZZ, "IsingZZ", 2, 1, 0)                           \
  X(Toffoli, "Toffoli", 3, 0, 2)                           \
  X(CSWAP, "CSWAP", 3, 0, 1)                               \
  X(QubitUnitary, "QubitUnitary", 0, 0, 0)

enum class Gate : std::uint8_t {
#define QFLEET_GATE_ENUM(id, name, w, p, c) id,
  QFLEET_GATE_TABLE(QFLEET_GATE_ENUM)
#undef QFLEET_GATE_ENUM
};

struct GateInfo {
  Gate id;
  std::string_view name;
  int wires;     // 0 = given by the matrix (QubitUnitary: 1 or 2 wires)
  int params;    // number of real parameters
  int controls;  // leading control wires
};

inline constexpr std::array kGateTable = {
#define QFLEET_GATE_INFO(id, name, w, p, c) GateInfo{Gate::id, name, w, p, c},
    QFLEET_GATE_TABLE(QFLEET_GATE_INFO)
#undef QFLEET_GATE_INFO
};

inline constexpr int kMaxGateWires = 3;
inline constexpr int kMaxGateParams = 3;

constexpr const GateInfo& gate_info(Gate g) {
  return kGateTable[static_cast<std::size_t>(g)];
}

// Looks a gate up by its PennyLane name (case-sensitive) or one of the aliases
// "I", "H", "X", "Y", "Z", "Sdg", "Tdg", "SXdg", "CX", "U" (U3), "CPhase". Throws qfleet::Error on
// an unknown name, listing the known ones.
Gate gate_from_name(std::string_view name);

}  // namespace qfleet
