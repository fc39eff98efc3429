// The JSON problem format of `qfleet eval` (docs/cli.md), as a reusable API: the
// command-line tool and the Python package both read problems through it.
//
//   nlohmann::json doc = qfleet::json_problem::parse_text(text, "problem.json");
//   nlohmann::json out = qfleet::json_problem::evaluate(doc);
//
// or, in two steps, to inspect or reuse the parsed circuit:
//
//   qfleet::json_problem::CircuitProblem p = qfleet::json_problem::parse_circuit_problem(doc);
//   nlohmann::json out = qfleet::json_problem::evaluate(p);
//
// Every rejected problem throws qfleet::json_problem::ProblemError (a qfleet::Error), whose
// message names the offending key by its path, e.g.
//   "qfleet: ops[2].params[0]: unknown key \"wieght\" (allowed: input, weight, scale)".
// Errors raised by the library while building or running the circuit are
// qfleet::Error too, so catching qfleet::Error catches everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qfleet/circuit.hpp"
#include "qfleet/error.hpp"
#include "qfleet/noise_model.hpp"
#include "qfleet/program.hpp"

namespace qfleet::json_problem {

// A problem the JSON contract rejects (bad shape, type, key, value...).
class ProblemError : public qfleet::Error {
 public:
  // `path` is the JSON path of the offending value ("ops[2].params[0]", "target.density";
  // empty for the document as a whole); the message starts with it.
  ProblemError(std::string path, const std::string& message)
      : qfleet::Error(path.empty() ? message : path + ": " + message), path_(std::move(path)) {}
  explicit ProblemError(const std::string& message) : qfleet::Error(message) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Largest number of values (numbers) one result may hold; larger requests
// (states of many qubits, many shots, huge batches) are rejected before running.
inline constexpr std::size_t kMaxOutputValues = std::size_t{1} << 25;

// A parsed "kind": "circuit" problem: the circuit, the batch and the options.
struct CircuitProblem {
  qfleet::Circuit circuit{1};
  qfleet::CompileOptions options;  // precision, num_threads, isa (device cpu)

  std::size_t batch = 1;
  int n_inputs = 0;            // columns of inputs  (>= what the circuit reads; see reserve_inputs)
  int n_weights = 0;           // columns of weights (>= what the circuit reads)
  std::vector<double> inputs;  // [batch, n_inputs] row-major
  std::vector<double> weights;  // [n_weights] shared, or [batch, n_weights] per sample
  bool per_sample_weights = false;

  int n_observables = 0;                // expval measurements, added first
  std::vector<std::vector<int>> probs;  // wires of each probs measurement, added after
  bool probs_nested = false;            // "probs" was a list of lists

  bool gradients = false;
  bool states = false;
  std::optional<std::uint64_t> shots;  // samples on all wires when set
  std::uint64_t seed = 0;
  // When set, every array result is written to "<output_npy>.<key>.npy" and the result
  // holds {"npy": FILE, "shape": [...], "dtype": ...} in its place (docs/cli.md).
  std::string output_npy;
};

// Parses JSON text. Rejects malformed JSON (message with line and column) and
// objects that repeat a key. `source` names the text in messages (a file name or
// "<stdin>").
nlohmann::json parse_text(std::string_view text, std::string_view source = "<input>");

// Checks and converts a "kind": "circuit" problem (all keys, types, shapes, gates,
// templates, observables). Throws ProblemError / qfleet::Error. With model_only,
// "inputs" and "weights" may be absent (the circuit alone is wanted, e.g. by the
// PyTorch adapter, whose data come as tensors); given ones are still checked.
CircuitProblem parse_circuit_problem(const nlohmann::json& problem, bool model_only = false);

// Makes the .npy file names a problem reads ({"npy": FILE} in "inputs", "weights",
// "amplitudes", "drift_coeffs", "rates") that are relative paths relative to `base_dir`
// (the problem file's directory; "" = the working directory); absolute paths, and
// anything that is not such a name, are left alone. "output_npy" must be a relative path
// without ".." (ProblemError otherwise: a problem file cannot choose to write outside the
// output folder) and is placed under `output_dir` ("" = base_dir).
void resolve_npy_paths(nlohmann::json& problem, const std::string& base_dir, const std::string& output_dir = "");

// Whether any input array of the problem comes from a .npy file (the big-batch form).
bool reads_npy_arrays(const nlohmann::json& problem);

// Compiles and runs a parsed problem; returns the result object of docs/cli.md.
nlohmann::json evaluate(const CircuitProblem& problem);

// Dispatches on "kind" ("circuit", or "lindblad": json_lindblad.hpp), parses and runs.
nlohmann::json evaluate(const nlohmann::json& problem);

// The gate catalogue: [{"name", "wires", "params", "controls"}, ...].
nlohmann::json gate_catalogue();

// A device noise model (docs/noisy.md) read and validated; errors hold the key's path.
qfleet::NoiseModel parse_noise_model(const nlohmann::json& model);

// Serialises JSON with full double precision (shortest text that reads back as
// the same double). indent < 0: one line. indent >= 0: objects and nested arrays
// are broken over lines, but arrays holding only numbers/strings/booleans/null,
// and objects of at most 8 such values, stay on one line (matrices read row by row).
std::string dump(const nlohmann::json& value, int indent = -1);

}  // namespace qfleet::json_problem
