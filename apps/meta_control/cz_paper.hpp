// arXiv:2601.18973's two-qubit CZ system (its Fig. 5, as its code builds it), which only this
// app's cz_paper preset uses: an always-on J Z1 Z2 drift; controls X, Y (scaled) on each
// qubit, then Z on each (the paper's order X1, Y1, X2, Y2, Z1, Z2); per qubit relaxation by
// |1><0| (its code's sigma_m) at rate gamma_relax and dephasing sqrt(1/2) Z at rate
// gamma_deph; the CZ gate. The library's shared systems (qfleet/control_systems.hpp) have
// the same fields.
#pragma once

#include "qfleet/control_systems.hpp"

namespace qfleet::meta {

inline constexpr const char* kCzPaperSystem = "two_qubit_cz_paper";

// Throws ConfigError for a scale or coupling that is not finite.
control::QubitGateSystem cz_paper_system(double control_scale, double coupling);

// The configuration's system: the paper's CZ system, or the library's by name.
control::QubitGateSystem system_named(const std::string& name, double control_scale, double coupling);

}  // namespace qfleet::meta
