// The noise-channel catalogue: one table (name, wires, parameters) that the
// builder, the density-matrix kernels, the JSON reader and the tests all read,
// like the gate table in gates.hpp. Definitions are PennyLane's (docs/noisy.md
// writes each channel's Kraus operators and its action on a density matrix):
//
//   Depolarizing(p)          (1-p) rho + p/3 (X rho X + Y rho Y + Z rho Z)
//   BitFlip(p)               (1-p) rho + p X rho X
//   PhaseFlip(p)             (1-p) rho + p Z rho Z
//   PauliChannel(px,py,pz)   (1-px-py-pz) rho + px X.X + py Y.Y + pz Z.Z
//   AmplitudeDamping(g)      K0 = diag(1, sqrt(1-g)), K1 = sqrt(g) |0><1|
//   GeneralizedAmplitudeDamping(g, p)   PennyLane's four Kraus operators: relaxation
//                            with rate g towards the thermal state diag(1-p, p)
//   PhaseDamping(g)          K0 = diag(1, sqrt(1-g)), K1 = sqrt(g) |1><1|
//   ThermalRelaxation(pe, t1, t2, tg)   PennyLane's ThermalRelaxationError (t2 <= 2 t1)
//   TwoQubitDepolarizing(p)  (1-p) rho + p/15 sum_{P != II} P rho P
//   Kraus                    given operators K_k on 1 or 2 wires, sum K^dag K = I
//
// Qiskit's depolarizing_error(lam, k) is Depolarizing / TwoQubitDepolarizing with
// p = lam (4^k - 1) / 4^k (docs/noisy.md, noise models).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace qfleet {

// X(id, name, wires, params); wires 0 = given by the operators (Kraus: 1 or 2).
#define QFLEET_CHANNEL_TABLE(X)                                 \
  X(Depolarizing, "Depolarizing", 1, 1)                         \
  X(BitFlip, "BitFlip", 1, 1)                                   \
  X(PhaseFlip, "PhaseFlip", 1, 1)                               \
  X(PauliChannel, "PauliChannel", 1, 3)                         \
  X(AmplitudeDamping, "AmplitudeDamping", 1, 1)                 \
  X(GeneralizedAmplitudeDamping, "GeneralizedAmplitudeDamping", 1, 2) \
  X(PhaseDamping, "PhaseDamping", 1, 1)                         \
  X(ThermalRelaxation, "ThermalRelaxation", 1, 4)               \
  X(TwoQubitDepolarizing, "TwoQubitDepolarizing", 2, 1)         \
  X(Kraus, "Kraus", 0, 0)

// None marks an Operation that is a gate, not a channel.
enum class Channel : std::uint8_t {
#define QFLEET_CHANNEL_ENUM(id, name, w, p) id,
  QFLEET_CHANNEL_TABLE(QFLEET_CHANNEL_ENUM)
#undef QFLEET_CHANNEL_ENUM
      None
};

struct ChannelInfo {
  Channel id;
  std::string_view name;
  int wires;   // 0: given by the Kraus operators
  int params;  // number of real parameters (strengths, times)
};

inline constexpr std::array kChannelTable = {
#define QFLEET_CHANNEL_INFO(id, name, w, p) ChannelInfo{Channel::id, name, w, p},
    QFLEET_CHANNEL_TABLE(QFLEET_CHANNEL_INFO)
#undef QFLEET_CHANNEL_INFO
};

inline constexpr int kMaxChannelParams = 4;
inline constexpr int kMaxChannelWires = 2;
// Tolerance of the Kraus completeness check, max |sum K^dag K - I|.
inline constexpr double kKrausTolerance = 1e-10;

constexpr const ChannelInfo& channel_info(Channel c) { return kChannelTable[static_cast<std::size_t>(c)]; }

// Looks a channel up by name (case-sensitive; PennyLane's class names
// "DepolarizingChannel", "AmplitudeDamping", "ThermalRelaxationError", "QubitChannel"
// are accepted too). Throws qfleet::Error listing the known names.
Channel channel_from_name(std::string_view name);

}  // namespace qfleet
