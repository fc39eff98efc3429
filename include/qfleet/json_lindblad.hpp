// The "kind": "lindblad" problems of `qfleet eval` (docs/cli.md, "Lindblad
// problems"): open (and closed) d-level systems with piecewise-constant controls,
// batched over tasks, with exact gradients. json_problem::evaluate(json) dispatches
// here on "kind"; the two-step form is
//
//   qfleet::json_problem::LindbladProblem p = qfleet::json_problem::parse_lindblad_problem(doc);
//   nlohmann::json out = qfleet::json_problem::evaluate(p);
//
// Rejections throw qfleet::json_problem::ProblemError with the JSON path of the
// offending value; library errors (qfleet::Error) get the path prefixed too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qfleet/json_problem.hpp"
#include "qfleet/open_system.hpp"

namespace qfleet::json_problem {

// A parsed "kind": "lindblad" problem: the system (time grid, initial state,
// target, observables, subspace), the options and the per-call arguments.
struct LindbladProblem {
  qfleet::OpenSystem system{1};
  qfleet::OpenCompileOptions options;  // precision, solver, dt, rtol, atol, num_threads

  std::size_t batch = 1;
  // Row-major; shared ([n_seg, n_ctrl], [n_drift_terms], [n_jumps]) or per task
  // (with a leading batch dimension), as given in the problem.
  std::vector<double> amplitudes;
  bool per_task_amplitudes = false;
  std::vector<double> drift_coeffs;
  bool per_task_drift_coeffs = false;
  std::vector<double> rates;
  bool per_task_rates = false;

  // What is differentiated. "gradients": true alone: the fidelity when there is a
  // target, otherwise the leakage (a subspace is then required). "cotangents": the
  // scalar L = sum of cotangent * output that OpenProgram::vjp's TaskCotangents defines.
  enum class GradientOf : std::uint8_t { none, fidelity, leakage, cotangents };
  GradientOf gradient_of = GradientOf::none;
  // The "cotangents", row-major like the outputs (each empty where not given: zero):
  // fidelity and leakage [B], expvals [B, n_seg + 1, n_obs], final_state [B, final state size].
  struct Cotangents {
    std::vector<double> fidelity, leakage, expvals;
    std::vector<Complex> final_state;
  };
  Cotangents cotangents;
  // When set, the array results are written to "<output_npy>.<key>.npy" (docs/cli.md).
  std::string output_npy;
};

// Checks and converts a "kind": "lindblad" problem. Throws ProblemError / qfleet::Error.
// With model_only, "amplitudes", "drift_coeffs" and "rates" may be absent (the
// system alone is wanted; give "n_segments" with "segment_duration"), and
// "cotangents", data of a call as they are, is not read.
LindbladProblem parse_lindblad_problem(const nlohmann::json& problem, bool model_only = false);

// Compiles and runs a parsed problem; returns the result object of docs/cli.md.
nlohmann::json evaluate(const LindbladProblem& problem);

// Operators and states as problems write them, for programs that build problems: an
// entry is a number where its imaginary part is 0, else [re, im]; a matrix is its rows.
// matrix_json throws qfleet::Error for a size that is not a square.
nlohmann::json complex_json(Complex z);
nlohmann::json matrix_json(const ComplexMatrix& m);
nlohmann::json vector_json(const ComplexVector& v);

}  // namespace qfleet::json_problem
