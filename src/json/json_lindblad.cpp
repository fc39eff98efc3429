// "kind": "lindblad" problems (docs/cli.md, "Lindblad problems"): running them and
// their results as JSON (json_lindblad_parse.cpp reads and checks them).
#include "qfleet/json_lindblad.hpp"
#include "qfleet/structured_ops.hpp"

#include "json_common.hpp"
#include "npy.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <complex>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace qfleet::json_problem {

namespace {

using nlohmann::json;
using namespace internal;

// The JSON key of the input a library error raised while compiling is about.
std::string key_of(qfleet::ErrorSubject subject) {
  switch (subject) {
    case qfleet::ErrorSubject::initial_state: return "rho0";
    case qfleet::ErrorSubject::target: return "target.density";
    case qfleet::ErrorSubject::solver: return "solver";
    case qfleet::ErrorSubject::unspecified: break;
  }
  return "";
}

// Per-task size of the final state (complex numbers) and its row length.
void final_state_layout(const OpenSystem& s, std::size_t& size, std::size_t& cols, bool& vector) {
  const std::size_t d = static_cast<std::size_t>(s.dim());
  const bool gate = s.initial_kind() == OpenSystem::Initial::Gate;
  vector = false;
  if (gate) {
    cols = s.closed() ? d : d * d;  // the unitary, or the superoperator
  } else if (s.closed()) {
    cols = d;  // a pure state
    vector = true;
  } else {
    cols = d;  // a density matrix
  }
  size = vector ? d : cols * cols;
}

// ------------------------------------------------------------------ run ---

// Values shaped like an argument: [n_seg][n_ctrl] / [B][n_seg][n_ctrl] (amplitudes)
// or [m] / [B][m] (vectors).
template <class R>
json shaped(const std::vector<R>& v, bool per_task, std::size_t batch, std::size_t rows,
            std::size_t cols, bool matrix) {
  auto one = [&](const R* p) {
    if (!matrix) return reals(p, cols);
    json m = json::array();
    for (std::size_t r = 0; r < rows; ++r) m.push_back(reals(p + r * cols, cols));
    return m;
  };
  const std::size_t per = matrix ? rows * cols : cols;
  if (!per_task) return one(v.data());
  json all = json::array();
  for (std::size_t b = 0; b < batch; ++b) all.push_back(one(v.data() + b * per));
  return all;
}

// What a run computed, in the engine's row-major layouts; grads: amplitudes, drift
// coefficients, rates and durations (empty without gradients).
template <class R>
struct Results {
  std::vector<R> fidelity, leakage, expvals;
  std::vector<std::complex<R>> final_state;
  std::array<std::vector<R>, 4> grads;
};

// The results as .npy files ("output_npy"): the same keys and shapes as the JSON
// result (final states as complex arrays), each written to "<prefix>.<key>.npy".
template <class R>
json with_npy_results(const LindbladProblem& p, json res, const Results<R>& r) {
  const OpenSystem& s = p.system;
  const std::size_t B = p.batch;
  const std::size_t n_seg = static_cast<std::size_t>(s.n_segments());
  const std::size_t n_obs = static_cast<std::size_t>(s.n_observables());
  const std::string& out = p.output_npy;
  if (!r.fidelity.empty()) res["fidelity"] = npy::write_result(out, "fidelity", {B}, r.fidelity);
  if (!r.leakage.empty()) res["leakage"] = npy::write_result(out, "leakage", {B}, r.leakage);
  if (n_obs > 0) res["expvals"] = npy::write_result(out, "expvals", {B, n_seg + 1, n_obs}, r.expvals);
  std::size_t fs = 0, cols = 0;
  bool is_vector = false;
  final_state_layout(s, fs, cols, is_vector);
  res["final_state"] = npy::write_result(
      out, "final_state", is_vector ? std::vector<std::size_t>{B, fs} : std::vector<std::size_t>{B, fs / cols, cols},
      r.final_state);
  if (p.gradient_of != LindbladProblem::GradientOf::none) {
    auto shape = [&](bool per_task, std::vector<std::size_t> one) {
      if (per_task) one.insert(one.begin(), B);
      return one;
    };
    const std::size_t n_ctrl = static_cast<std::size_t>(s.n_controls());
    res["grad_amplitudes"] =
        npy::write_result(out, "grad_amplitudes", shape(p.per_task_amplitudes, {n_seg, n_ctrl}), r.grads[0]);
    res["grad_drift_coeffs"] = npy::write_result(
        out, "grad_drift_coeffs", shape(p.per_task_drift_coeffs, {std::size_t(s.n_drift_terms())}), r.grads[1]);
    res["grad_rates"] =
        npy::write_result(out, "grad_rates", shape(p.per_task_rates, {std::size_t(s.n_jumps())}), r.grads[2]);
    res["grad_durations"] = npy::write_result(out, "grad_durations", {n_seg}, r.grads[3]);
  }
  return res;
}

// The cotangents of the differentiated scalar, converted to R: a unit cotangent on
// every task's fidelity or leakage ("gradients": true alone), or those the problem gives.
template <class R>
struct CotangentValues {
  std::vector<R> fidelity, leakage, expvals;
  std::vector<std::complex<R>> final_state;

  explicit CotangentValues(const LindbladProblem& p) {
    using G = LindbladProblem::GradientOf;
    const LindbladProblem::Cotangents& c = p.cotangents;
    if (p.gradient_of == G::fidelity) fidelity.assign(p.batch, R(1));
    if (p.gradient_of == G::leakage) leakage.assign(p.batch, R(1));
    if (p.gradient_of != G::cotangents) return;
    fidelity.assign(c.fidelity.begin(), c.fidelity.end());
    leakage.assign(c.leakage.begin(), c.leakage.end());
    expvals.assign(c.expvals.begin(), c.expvals.end());
    final_state.assign(c.final_state.begin(), c.final_state.end());
  }
  TaskCotangents<R> spans() const { return {fidelity, leakage, expvals, final_state}; }
};

// One forward call, or with gradients one vjp call (outputs and gradients in one pass).
template <class R>
Results<R> compute(const LindbladProblem& p, const OpenProgram& prog) {
  const OpenSystem& s = p.system;
  const std::size_t B = p.batch;
  const std::vector<R> amps(p.amplitudes.begin(), p.amplitudes.end());
  const std::vector<R> drift(p.drift_coeffs.begin(), p.drift_coeffs.end());
  const std::vector<R> rates(p.rates.begin(), p.rates.end());
  TaskArgs<R> args;
  args.batch = B;
  args.amplitudes = amps;
  args.drift_coeffs = drift;
  args.rates = rates;

  std::size_t fs = 0, cols = 0;
  bool is_vector = false;
  final_state_layout(s, fs, cols, is_vector);
  Results<R> r;
  r.fidelity.resize(s.target_kind() != OpenSystem::Target::None ? B : 0);
  r.leakage.resize(s.subspace().empty() ? 0 : B);
  r.expvals.resize(B * (static_cast<std::size_t>(s.n_segments()) + 1) * static_cast<std::size_t>(s.n_observables()));
  r.final_state.resize(B * fs);
  TaskOutputs<R> outs;
  outs.fidelity = r.fidelity;
  outs.leakage = r.leakage;
  outs.expvals = r.expvals;
  outs.final_state = r.final_state;
  if (p.gradient_of == LindbladProblem::GradientOf::none) {
    prog.forward(args, outs);
    return r;
  }
  // The time grid is the compiled one (no durations argument), so its gradient is
  // the shared [n_seg] one, summed over the tasks.
  r.grads = {std::vector<R>(amps.size()), std::vector<R>(drift.size()), std::vector<R>(rates.size()),
             std::vector<R>(static_cast<std::size_t>(s.n_segments()))};
  TaskGradients<R> grads;
  grads.amplitudes = r.grads[0];
  grads.drift_coeffs = r.grads[1];
  grads.rates = r.grads[2];
  grads.durations = r.grads[3];
  const CotangentValues<R> cot(p);
  prog.vjp(args, cot.spans(), grads, outs);
  return r;
}

// final_state[b] as nested lists of [re, im]: [d] for a state vector, else its rows.
template <class R>
json final_states_json(const OpenSystem& s, std::size_t B, const std::vector<std::complex<R>>& final_state) {
  std::size_t fs = 0, cols = 0;
  bool is_vector = false;
  final_state_layout(s, fs, cols, is_vector);
  json states = json::array();
  for (std::size_t b = 0; b < B; ++b) {
    const std::complex<R>* x = final_state.data() + b * fs;
    json st = json::array();
    if (is_vector) {
      for (std::size_t i = 0; i < fs; ++i) st.push_back(complex_pair(x[i]));
    } else {
      for (std::size_t r = 0; r < fs / cols; ++r) {
        json row = json::array();
        for (std::size_t c = 0; c < cols; ++c) row.push_back(complex_pair(x[r * cols + c]));
        st.push_back(std::move(row));
      }
    }
    states.push_back(std::move(st));
  }
  return states;
}

template <class R>
json run(const LindbladProblem& p) {
  const OpenSystem& s = p.system;
  const OpenProgram prog = [&] {
    try {
      return compile(s, p.options);
    } catch (const ProblemError&) {
      throw;
    } catch (const qfleet::Error& e) {
      fail(key_of(e.subject()), strip_prefix(e.what()));
    }
  }();
  const Results<R> r = compute<R>(p, prog);
  const std::size_t B = p.batch;
  const std::size_t n_seg = static_cast<std::size_t>(s.n_segments());
  const std::size_t n_obs = static_cast<std::size_t>(s.n_observables());

  json res = json::object();
  res["dim"] = s.dim();
  res["batch"] = B;
  res["solver"] = std::string(qfleet::to_string(p.options.solver));
  res["form"] = std::string(qfleet::to_string(prog.form()));
  if (p.options.solver == Solver::exact) res["exact"] = std::string(qfleet::to_string(prog.exact_method()));
  res["precision"] = precision_name(p.options.precision);
  res["isa"] = prog.isa();
  if (!p.output_npy.empty()) return with_npy_results(p, res, r);
  if (!r.fidelity.empty()) res["fidelity"] = reals(r.fidelity.data(), B);
  if (!r.leakage.empty()) res["leakage"] = reals(r.leakage.data(), B);
  if (n_obs > 0) {
    json all = json::array();
    for (std::size_t b = 0; b < B; ++b) {
      json per_task = json::array();
      for (std::size_t k = 0; k <= n_seg; ++k)
        per_task.push_back(reals(r.expvals.data() + (b * (n_seg + 1) + k) * n_obs, n_obs));
      all.push_back(std::move(per_task));
    }
    res["expvals"] = std::move(all);
  }
  res["final_state"] = final_states_json(s, B, r.final_state);
  if (p.gradient_of != LindbladProblem::GradientOf::none) {
    const std::size_t n_ctrl = static_cast<std::size_t>(s.n_controls());
    const std::size_t n_drift = static_cast<std::size_t>(s.n_drift_terms());
    const std::size_t n_jump = static_cast<std::size_t>(s.n_jumps());
    res["grad_amplitudes"] = shaped(r.grads[0], p.per_task_amplitudes, B, n_seg, n_ctrl, true);
    res["grad_drift_coeffs"] = shaped(r.grads[1], p.per_task_drift_coeffs, B, 1, n_drift, false);
    res["grad_rates"] = shaped(r.grads[2], p.per_task_rates, B, 1, n_jump, false);
    res["grad_durations"] = reals(r.grads[3].data(), n_seg);
  }
  return res;
}

}  // namespace

json evaluate(const LindbladProblem& p) {
  // Refuse results too large to hold before computing anything.
  const OpenSystem& s = p.system;
  std::size_t fs = 0, cols = 0;
  bool is_vector = false;
  final_state_layout(s, fs, cols, is_vector);
  const double B = static_cast<double>(p.batch);
  double values = B * (2.0 * static_cast<double>(fs) +
                       static_cast<double>(s.n_segments() + 1) * s.n_observables() + 2.0);
  if (p.gradient_of != LindbladProblem::GradientOf::none) {
    values += static_cast<double>(p.amplitudes.size() + p.drift_coeffs.size() + p.rates.size()) +
              static_cast<double>(s.n_segments());
  }
  expect_result_fits(values, "the batch, the dimension or the number of segments");
  if (p.options.precision == Precision::complex64) return run<float>(p);
  return run<double>(p);
}

json complex_json(Complex z) { return z.imag() == 0 ? json(z.real()) : json::array({z.real(), z.imag()}); }

json matrix_json(const ComplexMatrix& m) {
  const auto d = static_cast<std::size_t>(std::llround(std::sqrt(double(m.size()))));
  if (d * d != m.size()) throw Error("matrix_json: " + std::to_string(m.size()) + " entries are not a square matrix");
  json rows = json::array();
  for (std::size_t i = 0; i < d; ++i) {
    json row = json::array();
    for (std::size_t j = 0; j < d; ++j) row.push_back(complex_json(m[i * d + j]));
    rows.push_back(std::move(row));
  }
  return rows;
}

json vector_json(const ComplexVector& v) {
  json a = json::array();
  for (const Complex z : v) a.push_back(complex_json(z));
  return a;
}

}  // namespace qfleet::json_problem
