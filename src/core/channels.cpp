// Channel names and parameter ranges (the catalogue is include/qfleet/channels.hpp).
#include <cmath>
#include <cstdio>
#include <string>

#include "core/dm_compiled.hpp"
#include "core/name_lookup.hpp"
#include "qfleet/channels.hpp"
#include "qfleet/error.hpp"

namespace qfleet {

Channel channel_from_name(std::string_view name) {
  // PennyLane's class names.
  static constexpr std::pair<std::string_view, Channel> kAliases[] = {
      {"DepolarizingChannel", Channel::Depolarizing},
      {"ThermalRelaxationError", Channel::ThermalRelaxation},
      {"QubitChannel", Channel::Kraus}};
  return detail::id_from_name(name, kChannelTable, kAliases, "channel", "channels");
}

namespace detail {

namespace {
std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
// "" when lo <= v <= hi (false for NaN).
std::string in_range(const char* name, double v, double lo, double hi) {
  if (v >= lo && v <= hi) return "";
  return std::string(name) + " = " + num(v) + " is outside [" + num(lo) + ", " + num(hi) + "]";
}
}  // namespace

std::string channel_params_error(Channel ch, const double* p) {
  switch (ch) {
    case Channel::Depolarizing:
    case Channel::BitFlip:
    case Channel::PhaseFlip:
    case Channel::TwoQubitDepolarizing:
      return in_range("p", p[0], 0, 1);
    case Channel::AmplitudeDamping:
    case Channel::PhaseDamping:
      return in_range("gamma", p[0], 0, 1);
    case Channel::GeneralizedAmplitudeDamping: {
      std::string e = in_range("gamma", p[0], 0, 1);
      return e.empty() ? in_range("p", p[1], 0, 1) : e;
    }
    case Channel::PauliChannel: {
      const char* names[3] = {"px", "py", "pz"};
      for (int i = 0; i < 3; ++i) {
        std::string e = in_range(names[i], p[i], 0, 1);
        if (!e.empty()) return e;
      }
      if (p[0] + p[1] + p[2] > 1 + 1e-12) return "px + py + pz = " + num(p[0] + p[1] + p[2]) + " exceeds 1";
      return "";
    }
    case Channel::ThermalRelaxation: {
      std::string e = in_range("pe", p[0], 0, 1);
      if (!e.empty()) return e;
      if (!(p[1] > 0) || !std::isfinite(p[1])) return "t1 = " + num(p[1]) + " must be finite and > 0";
      if (!(p[2] > 0) || !std::isfinite(p[2])) return "t2 = " + num(p[2]) + " must be finite and > 0";
      if (p[2] > 2 * p[1]) {
        return "t2 = " + num(p[2]) + " exceeds 2 t1 = " + num(2 * p[1]) + " (no such physical qubit)";
      }
      if (!(p[3] >= 0) || !std::isfinite(p[3])) return "gate time tg = " + num(p[3]) + " must be finite and >= 0";
      return "";
    }
    case Channel::Kraus:
    case Channel::None:
      return "";
  }
  return "";
}

}  // namespace detail
}  // namespace qfleet
