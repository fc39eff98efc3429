// The option enums' names, one table each (as gates.hpp is the gates' table): the
// JSON readers, the CLI, the PyTorch adapter and the apps map names to values only
// through these, so a new value is one row and an unknown name is always an error
// that lists the known ones.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "qfleet/open_system.hpp"
#include "qfleet/program.hpp"

namespace qfleet {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

inline constexpr std::array kPrecisionNames = {EnumName<Precision>{Precision::complex64, "complex64"},
                                               EnumName<Precision>{Precision::complex128, "complex128"}};
inline constexpr std::array kDeviceNames = {EnumName<Device>{Device::cpu, "cpu"},
                                            EnumName<Device>{Device::cuda, "cuda"},
                                            EnumName<Device>{Device::automatic, "automatic"}};
inline constexpr std::array kSimulatorNames = {EnumName<Simulator>{Simulator::automatic, "automatic"},
                                               EnumName<Simulator>{Simulator::statevector, "statevector"},
                                               EnumName<Simulator>{Simulator::density_matrix, "density_matrix"}};
inline constexpr std::array kOpenFormNames = {EnumName<OpenForm>{OpenForm::automatic, "automatic"},
                                              EnumName<OpenForm>{OpenForm::superoperator, "superoperator"},
                                              EnumName<OpenForm>{OpenForm::lindblad, "lindblad"}};
inline constexpr std::array kExactMethodNames = {EnumName<ExactMethod>{ExactMethod::automatic, "automatic"},
                                                 EnumName<ExactMethod>{ExactMethod::propagator, "propagator"},
                                                 EnumName<ExactMethod>{ExactMethod::action, "action"}};
// From the solvers' own table (solver.hpp), which holds their other properties too.
inline constexpr auto kSolverNames = [] {
  std::array<EnumName<Solver>, std::size(kSolvers)> t{};
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = {kSolvers[i].id, kSolvers[i].name};
  return t;
}();
static_assert([] {
  for (std::size_t i = 0; i < std::size(kSolvers); ++i) {
    if (static_cast<std::size_t>(kSolvers[i].id) != i) return false;
  }
  return true;
}(), "kSolvers' rows must be in the enum's order (solver_info indexes them)");

// The name of value v in table t ("?" for a value the table lacks, which a test forbids).
template <class E, std::size_t N>
constexpr std::string_view name_in(const std::array<EnumName<E>, N>& t, E v) {
  for (const auto& e : t) {
    if (e.value == v) return e.name;
  }
  return "?";
}

// Spellings qfleet once took and now refuses, each with the one it uses: a setting that
// reads "auto" is told it is spelled "automatic" (the engine's, the command line's,
// Python's and the apps' one word for "let qfleet choose").
inline constexpr std::pair<std::string_view, std::string_view> kRespellings[] = {{"auto", "automatic"}};

// The spelling qfleet uses for an old one, or "" when `name` is not an old spelling.
constexpr std::string_view respelled(std::string_view name) {
  for (const auto& [old, now] : kRespellings) {
    if (name == old) return now;
  }
  return {};
}

// The value named `name` in table t, or nothing.
template <class E, std::size_t N>
constexpr std::optional<E> value_in(const std::array<EnumName<E>, N>& t, std::string_view name) {
  for (const auto& e : t) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

// The table's names for an error message: "a", "b" or "c" (quoted).
template <class E, std::size_t N>
std::string names_in(const std::array<EnumName<E>, N>& t) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) s += i + 1 == N ? " or " : ", ";
    s += '"';
    s += t[i].name;
    s += '"';
  }
  return s;
}

// The value named `name` in table t, or std::invalid_argument naming the setting and the
// known names: `precision "half": "complex64" or "complex128"`. (The apps' settings are
// checked against their schema's choices first; this is where a name becomes a value.)
template <class E, std::size_t N>
E value_named(const std::array<EnumName<E>, N>& t, std::string_view name, std::string_view what) {
  if (const auto v = value_in(t, name)) return *v;
  const std::string_view now = respelled(name);
  if (!now.empty() && value_in(t, now)) {
    throw std::invalid_argument(std::string(what) + " \"" + std::string(name) + "\" is spelled \"" + std::string(now) + "\"");
  }
  throw std::invalid_argument(std::string(what) + " \"" + std::string(name) + "\": " + names_in(t));
}

constexpr std::string_view to_string(Precision p) { return name_in(kPrecisionNames, p); }
constexpr std::string_view to_string(Device d) { return name_in(kDeviceNames, d); }
constexpr std::string_view to_string(Simulator s) { return name_in(kSimulatorNames, s); }
constexpr std::string_view to_string(Solver s) { return name_in(kSolverNames, s); }
constexpr std::string_view to_string(OpenForm f) { return name_in(kOpenFormNames, f); }
constexpr std::string_view to_string(ExactMethod m) { return name_in(kExactMethodNames, m); }

}  // namespace qfleet
