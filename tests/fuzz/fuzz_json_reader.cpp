// libFuzzer target for one JSON problem reader (QFLEET_FUZZ_KIND 0: circuit,
// 1: lindblad): any text must be either read, or rejected with qfleet::Error
// (ProblemError carrying the key's path). Anything else escaping, a sanitizer
// report, a leak or a hang is a bug. Problems small enough to run quickly are
// also evaluated, so the library's own checks see the fuzzed models too.
// Built with clang (-fsanitize=fuzzer,address,undefined) by tests/fuzz/CMakeLists.txt;
// scripts/test.sh runs each target for a bounded time from the seeds in tests/fuzz/seeds.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>

#include "qfleet/error.hpp"
#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"

namespace qj = qfleet::json_problem;

namespace {

// Small enough to run in well under a millisecond or so: the fuzzer's time goes to new
// inputs, and a legitimately long simulation (60 qubits, 10^9 rk4 steps) is not a hang.
bool small(const qj::CircuitProblem& p, const nlohmann::json& /*doc*/) {
  // Density matrices (noisy circuits) hold 4^n amplitudes: half the qubits.
  const int max_qubits = p.circuit.is_noisy() || p.options.simulator == qfleet::Simulator::density_matrix ? 4 : 8;
  return p.circuit.n_qubits() <= max_qubits && p.batch <= 16 && p.circuit.operations().size() <= 512 &&
         (!p.shots || *p.shots <= 4096);
}

// The largest magnitude of any number in the document.
double largest(const nlohmann::json& j) {
  if (j.is_number()) return std::abs(j.get<double>());
  double m = 0;
  if (j.is_array() || j.is_object()) {
    for (const auto& v : j) m = std::max(m, largest(v));
  }
  return m;
}

// dopri5 or tsit5 on a stiff problem (a rate of 1e120) shrinks its step until the library's
// limit of 10^6 steps per segment stops it with an error: correct, but seconds of
// work; such inputs are read and checked, not run. Stiffness also comes from small
// numbers: a jump L at rate g decays coherences at about g |L|^2, and an explicit
// method's stable step is about 3 / (g |L|^2), so g |L|^2 T counts its steps (the
// fuzzer found g = 8, |L| = 60, T = 5.7: 1.6e5, 86 s with gradients under ASan).
bool small(const qj::LindbladProblem& p, const nlohmann::json& doc) {
  const auto& d = p.system.segment_durations();
  const double total = std::accumulate(d.begin(), d.end(), 0.0);
  const bool adaptive = qfleet::solver_info(p.options.solver).adaptive;  // dopri5, tsit5
  if (adaptive) {
    if (largest(doc) > 1e3) return false;
    const double jump = doc.contains("jumps") ? largest(doc["jumps"]) : 0.0;
    const double rate = doc.contains("rates") ? largest(doc["rates"]) : 1.0;
    if (rate * jump * jump * total > 2000) return false;
  }
  const auto& o = p.options;
  const bool steps_ok = o.solver == qfleet::Solver::exact ||
                        (adaptive ? o.rtol >= 1e-6 && o.atol >= 1e-9 && total <= 10
                                                            : o.dt > 0 && total / o.dt <= 2000);
  return p.system.dim() <= 6 && p.batch <= 8 && p.system.n_segments() <= 64 && steps_ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc = qj::parse_text(text, "fuzz");
#if QFLEET_FUZZ_KIND == 0
    const qj::CircuitProblem p = qj::parse_circuit_problem(doc);
#else
    const qj::LindbladProblem p = qj::parse_lindblad_problem(doc);
#endif
    // (problems with "output_npy" are read, not run: running them would write files
    // wherever the fuzzed prefix points; the .npy reader has its own target, fuzz_npy)
    if (small(p, doc) && p.output_npy.empty()) (void)qj::evaluate(p);
  } catch (const qfleet::Error&) {
    // A clear rejection: what the reader promises for bad input.
  }
  return 0;
}
