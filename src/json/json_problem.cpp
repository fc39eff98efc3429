// The JSON problem format (docs/cli.md): reading and checking circuit problems,
// writing results (json_circuit.cpp runs circuit problems; json_lindblad*.cpp the
// Lindblad kind).
#include "qfleet/json_problem.hpp"

#include "json_circuit_readers.hpp"
#include "json_common.hpp"
#include "json_noise.hpp"
#include "npy.hpp"
#include "qfleet/json_lindblad.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "qfleet/device_lowering.hpp"
#include "qfleet/gates.hpp"
#include "qfleet/observable.hpp"

namespace qfleet::json_problem {

namespace {

using nlohmann::json;
using namespace internal;

// Readers and messages: json_common.hpp.

// Layers below 10^4 (indices: json_circuit_readers.hpp's kMaxIndex), so no index
// arithmetic downstream can overflow an int.
constexpr int kMaxLayers = 10000;

// ----------------------------------------------------------------- readers ---

Rotation read_rotation(const json& v, const std::string& path) {
  const std::string s = read_string(v, path);
  if (s == "X" || s == "RX") return Rotation::X;
  if (s == "Y" || s == "RY") return Rotation::Y;
  if (s == "Z" || s == "RZ") return Rotation::Z;
  fail(path, "unknown rotation " + quote(s) + "; expected \"X\", \"Y\" or \"Z\"");
}

// ------------------------------------------------------------------- ops ---

void read_gate_op(Circuit& c, const json& v, const std::string& path) {
  const Object o(v, path, {"gate", "wires", "params", "matrix"});
  const std::string name = read_string(o.require("gate"), o.path("gate"));
  const Gate g = at(o.path("gate"), [&] { return gate_from_name(name); });
  const std::vector<int> wires = read_wires(o.require("wires"), o.path("wires"));
  if (g == Gate::QubitUnitary) {
    if (o.has("params")) fail(path, "QubitUnitary takes a \"matrix\", not \"params\"");
    const std::vector<std::complex<double>> entries = read_square_cmatrix(o.require("matrix"), o.path("matrix"));
    at(path, [&] { c.qubit_unitary(wires, entries); });
    return;
  }
  if (o.has("matrix")) fail(path, "only QubitUnitary takes a \"matrix\"");
  std::vector<Param> params;
  if (const json* p = o.get("params")) {
    read_array(*p, o.path("params"), "a list of parameters");
    for (std::size_t i = 0; i < p->size(); ++i)
      params.push_back(read_param((*p)[i], index_path(o.path("params"), i)));
  }
  at(path, [&] { c.add(g, wires, params); });
}

int opt_int(const Object& o, std::string_view key, int def, int lo = 0, int hi = kMaxIndex) {
  const json* v = o.get(key);
  return v ? read_int32(*v, o.path(key), lo, hi) : def;
}

void read_template_op(Circuit& c, const json& v, const std::string& path) {
  const std::string name = read_string(v.at("template"), join_path(path, "template"));
  if (name == "AngleEmbedding") {
    const Object o(v, path, {"template", "wires", "rotation", "first_input"});
    const auto wires = read_wires(o.require("wires"), o.path("wires"));
    const Rotation r =
        o.has("rotation") ? read_rotation(*o.get("rotation"), o.path("rotation")) : Rotation::X;
    const int first = opt_int(o, "first_input", 0);
    at(path, [&] { c.angle_embedding(wires, r, first); });
  } else if (name == "AmplitudeEmbedding") {
    const Object o(v, path,
                   {"template", "wires", "n_features", "first_input", "normalize", "pad_with"});
    const auto wires = read_wires(o.require("wires"), o.path("wires"));
    const int def_features = wires.size() < 31 ? 1 << wires.size() : 0;
    const int n_features = opt_int(o, "n_features", def_features, 1, 1 << 30);
    const int first = opt_int(o, "first_input", 0);
    const bool normalize =
        o.has("normalize") ? read_bool(*o.get("normalize"), o.path("normalize")) : false;
    std::optional<double> pad;
    if (const json* p = o.get("pad_with")) pad = read_number(*p, o.path("pad_with"));
    at(path, [&] { c.amplitude_embedding(wires, n_features, first, normalize, pad); });
  } else if (name == "BasicEntanglerLayers") {
    const Object o(v, path, {"template", "wires", "layers", "rotation", "first_weight"});
    const auto wires = read_wires(o.require("wires"), o.path("wires"));
    const int layers = read_int32(o.require("layers"), o.path("layers"), 0, kMaxLayers);
    const Rotation r =
        o.has("rotation") ? read_rotation(*o.get("rotation"), o.path("rotation")) : Rotation::X;
    const int first = opt_int(o, "first_weight", 0);
    at(path, [&] { c.basic_entangler_layers(wires, layers, r, first); });
  } else if (name == "StronglyEntanglingLayers") {
    const Object o(v, path,
                   {"template", "wires", "layers", "first_weight", "ranges", "imprimitive"});
    const auto wires = read_wires(o.require("wires"), o.path("wires"));
    const int layers = read_int32(o.require("layers"), o.path("layers"), 0, kMaxLayers);
    const int first = opt_int(o, "first_weight", 0);
    std::vector<int> ranges;
    if (const json* r = o.get("ranges")) {
      read_array(*r, o.path("ranges"), "a list of integers");
      for (std::size_t i = 0; i < r->size(); ++i)
        ranges.push_back(read_int32((*r)[i], index_path(o.path("ranges"), i)));
    }
    Gate imp = Gate::CNOT;
    if (const json* g = o.get("imprimitive")) {
      const std::string gname = read_string(*g, o.path("imprimitive"));
      imp = at(o.path("imprimitive"), [&] { return gate_from_name(gname); });
    }
    at(path, [&] { c.strongly_entangling_layers(wires, layers, first, ranges, imp); });
  } else {
    fail(join_path(path, "template"),
         "unknown template " + quote(name) +
             "; known templates: AngleEmbedding, AmplitudeEmbedding, BasicEntanglerLayers, "
             "StronglyEntanglingLayers");
  }
}

void read_op(Circuit& c, const json& v, const std::string& path) {
  if (!v.is_object()) {
    fail(path, "expected an operation object ({\"gate\": ...}, {\"template\": ...} or {\"channel\": ...}), got " +
                   describe(v));
  }
  const bool gate = v.contains("gate"), tmpl = v.contains("template"), chan = v.contains("channel");
  if (int(gate) + int(tmpl) + int(chan) != 1) {
    fail(path, "an operation needs exactly one of \"gate\", \"template\" or \"channel\"");
  }
  if (chan) {
    read_channel_op(c, v, path);
  } else if (gate) {
    read_gate_op(c, v, path);
  } else {
    read_template_op(c, v, path);
  }
}

// ------------------------------------------------------------- measurements ---

Observable read_observable(const json& v, const std::string& path) {
  if (v.is_string()) {  // one Pauli word with coefficient 1, as the Python builder's expval("Z0")
    Observable obs;
    obs.terms.emplace_back(1.0, at(path, [&] { return PauliWord::parse(v.get<std::string>()); }));
    return obs;
  }
  read_array(v, path, "an observable (a Pauli word \"X0 Z1\" or a list of [coeff, \"X0 Z1\"] terms)");
  if (v.empty()) fail(path, "an observable needs at least one [coeff, \"X0 Z1\"] term");
  Observable obs;
  for (std::size_t t = 0; t < v.size(); ++t) {
    const std::string tp = index_path(path, t);
    const json& term = v[t];
    if (!term.is_array() || term.size() != 2) {
      fail(tp, "expected a term [coeff, \"X0 Z1\"], got " +
                   (term.is_array() ? "an array of " + std::to_string(term.size()) + " element(s)"
                                    : describe(term)));
    }
    const double coeff = read_number(term[0], index_path(tp, 0));
    const std::string word = read_string(term[1], index_path(tp, 1));
    obs.terms.emplace_back(coeff, at(index_path(tp, 1), [&] { return PauliWord::parse(word); }));
  }
  return obs;
}

// A B x cols matrix of numbers (rows of equal length).
std::vector<double> read_matrix(const json& v, const std::string& path, std::size_t& rows,
                                std::size_t& cols) {
  rows = v.size();
  cols = 0;
  std::vector<double> out;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::string rp = index_path(path, r);
    const json& row = read_array(v[r], rp, "a row (a list of numbers)");
    if (r == 0) {
      cols = row.size();
      out.reserve(rows * cols);
    } else if (row.size() != cols) {
      fail(rp, "has " + std::to_string(row.size()) + " values but row 0 has " +
                   std::to_string(cols) + " (rows must have equal length)");
    }
    for (std::size_t k = 0; k < row.size(); ++k)
      out.push_back(read_number(row[k], index_path(rp, k)));
  }
  return out;
}

// The problem's kind: true for "lindblad" (json_lindblad.cpp), false for "circuit".
bool check_kind(const json& doc) {
  if (!doc.is_object()) fail("", "a problem must be a JSON object, got " + describe(doc));
  const auto it = doc.find("kind");
  if (it == doc.end()) fail("", "missing key \"kind\" (use \"kind\": \"circuit\" or \"lindblad\")");
  const std::string kind = read_string(*it, "kind");
  if (kind == "lindblad") return true;
  if (kind != "circuit") {
    fail("kind", "unknown problem kind " + quote(kind) +
                     " (supported kinds: \"circuit\", \"lindblad\")");
  }
  return false;
}

// ------------------------------------------------------------------- dump ---

void write(std::string& out, const json& v, int indent, int level) {
  const auto pad = [&](int l) { out.append(static_cast<std::size_t>(indent * l), ' '); };
  const auto scalar = [](const json& x) {
    return x.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  const auto flat = [](const json& x) {
    return std::none_of(x.begin(), x.end(), [](const json& e) { return e.is_structured(); });
  };
  if (v.is_object() && !v.empty() && flat(v) && v.size() <= 8) {  // a small record: one line
    out += "{";
    std::size_t i = 0;
    for (const auto& item : v.items()) {
      out += i++ ? ", " : "";
      out += scalar(json(item.key())) + ": " + scalar(item.value());
    }
    out += "}";
  } else if (v.is_object() && !v.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (const auto& item : v.items()) {
      pad(level + 1);
      out += scalar(json(item.key()));
      out += ": ";
      write(out, item.value(), indent, level + 1);
      out += ++i < v.size() ? ",\n" : "\n";
    }
    pad(level);
    out += "}";
  } else if (v.is_array() && !v.empty()) {
    if (flat(v)) {
      out += "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += scalar(v[i]);
      }
      out += "]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < v.size(); ++i) {
      pad(level + 1);
      write(out, v[i], indent, level + 1);
      out += i + 1 < v.size() ? ",\n" : "\n";
    }
    pad(level);
    out += "]";
  } else {
    out += scalar(v);
  }
}

}  // namespace

// ------------------------------------------------------------------ public ---

json parse_text(std::string_view text, std::string_view source) {
  // Tracks where the parser is, to reject repeated keys with their path.
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    std::size_t index = 0;
  };
  std::vector<Frame> stack;
  auto where = [&]() {
    std::string p;
    for (std::size_t f = 0; f + 1 < stack.size(); ++f) {
      p = stack[f].object ? join_path(p, stack[f].key) : index_path(p, stack[f].index);
    }
    return p;
  };
  auto element_done = [&]() {
    if (!stack.empty() && !stack.back().object) ++stack.back().index;
  };
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        stack.push_back(Frame{true, {}, {}, 0});
        break;
      case json::parse_event_t::array_start:
        stack.push_back(Frame{false, {}, {}, 0});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        stack.pop_back();
        element_done();
        break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!stack.back().keys.insert(key).second) {
          const std::string p = where();
          throw ProblemError(
              std::string(source) + ": invalid JSON: key " + quote(key) + " appears twice in " +
              (p.empty() ? std::string("the top-level object") : "the object at " + p));
        }
        stack.back().key = std::move(key);
        break;
      }
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {  // parse_error; out_of_range for numbers like 1e999
    std::string msg = e.what();
    if (const auto p = msg.find("] "); p != std::string::npos) msg.erase(0, p + 2);
    throw ProblemError(std::string(source) + ": invalid JSON: " + capped(std::move(msg)));
  }
}

namespace {

// "probs": a list of wires (one measurement) or a list of wire lists.
void read_probs(const json& pr, CircuitProblem& p) {
  const std::string hint =
      "expected a list of wires like [0, 1] or a list of wire lists like [[0], [1, 2]]";
  if (!pr.is_array() || pr.empty())
    fail("probs", hint + ", got " + (pr.is_array() ? "[]" : describe(pr)));
  const bool nested = pr[0].is_array();
  for (const json& e : pr) {
    if (e.is_array() != nested) fail("probs", hint + " (not a mix of both)");
  }
  p.probs_nested = nested;
  if (nested) {
    for (std::size_t m = 0; m < pr.size(); ++m)
      p.probs.push_back(read_wires(pr[m], index_path("probs", m)));
  } else {
    p.probs.push_back(read_wires(pr, "probs"));
  }
  for (std::size_t m = 0; m < p.probs.size(); ++m) {
    // (the library's message starts with "probs: " already)
    at(nested ? index_path("probs", m) : std::string(), [&] { p.circuit.probs(p.probs[m]); });
  }
}

// "weights": shared ([n_weights]) or per sample ([batch, n_weights]), as JSON or a .npy
// reference; sets their row and column counts.
void read_weights(const json& v, CircuitProblem& p, std::size_t& w_rows, std::size_t& w_cols) {
  if (v.is_object()) {
    npy::Array a = npy::read_ref(v, "weights");
    if (a.shape.size() == 1) {
      w_cols = a.shape[0];
    } else if (a.shape.size() == 2 && a.shape[0] > 0) {
      w_rows = a.shape[0];
      w_cols = a.shape[1];
      p.per_sample_weights = true;
    } else {
      fail("weights", "the .npy array must be 1-D [n_weights] (shared) or 2-D [batch, n_weights] (per sample)");
    }
    p.weights = std::move(a.values);
  } else {
    read_array(v, "weights", "a list of numbers (shared) or a list of rows (per sample)");
    if (!v.empty() && v[0].is_array()) {
      p.weights = read_matrix(v, "weights", w_rows, w_cols);
      p.per_sample_weights = true;
    } else {
      for (std::size_t j = 0; j < v.size(); ++j) {
        if (v[j].is_array())
          fail(index_path("weights", j),
               "shared weights are a list of numbers; "
               "per-sample weights a list of rows, not a mix");
        p.weights.push_back(read_number(v[j], index_path("weights", j)));
      }
      w_cols = v.size();
    }
  }
}

// The options: precision, threads, isa, device, simulator, what to compute.
void read_circuit_options(const Object& top, CircuitProblem& p) {
  if (const json* v = top.get("precision")) p.options.precision = read_precision(*v, "precision");
  if (const json* v = top.get("threads"))
    p.options.num_threads = read_int32(*v, "threads", 0, 1 << 16);
  if (const json* v = top.get("isa")) p.options.isa = read_string(*v, "isa");
  if (const json* v = top.get("device")) p.options.device = read_device(*v, "device");
  if (const json* v = top.get("simulator")) {
    const std::string name = read_string(*v, "simulator");
    const auto sim = value_in(kSimulatorNames, name);
    if (!sim) refuse_respelling(kSimulatorNames, name, "simulator");
    if (!sim) fail("simulator", "unknown simulator " + quote(name) + "; expected " + names_in(kSimulatorNames));
    p.options.simulator = *sim;
  }
  if (const json* v = top.get("gradients")) p.gradients = read_bool(*v, "gradients");
  if (const json* v = top.get("states")) p.states = read_bool(*v, "states");
  if (const json* v = top.get("shots"))
    p.shots = static_cast<std::uint64_t>(read_int(*v, "shots", 1, 1LL << 40));
  if (const json* v = top.get("seed")) {
    if (!p.shots) fail("seed", "only used with \"shots\" (give \"shots\": N to sample)");
    p.seed = read_uint64(*v, "seed");
  }
  if (const json* v = top.get("output_npy")) {
    p.output_npy = read_string(*v, "output_npy");
    if (p.output_npy.empty()) fail("output_npy", "must name a file prefix, e.g. \"out/run1\"");
  }
}

}  // namespace

CircuitProblem parse_circuit_problem(const json& doc, bool model_only) {
  if (check_kind(doc)) {
    fail("kind", "expected \"circuit\", got \"lindblad\" (read it with parse_lindblad_problem)");
  }
  const Object top(doc, "",
                   {"kind", "qubits", "ops", "observables", "probs", "inputs", "weights",
                    "precision", "threads", "isa", "device", "gradients", "states", "shots", "seed",
                    "readout_errors", "purity", "simulator", "noise_model", "lower_to_device", "output_npy"});
  CircuitProblem p;
  const int n = read_int32(top.require("qubits"), "qubits");
  p.circuit = at("qubits", [&] { return Circuit(n); });
  Circuit& c = p.circuit;

  if (const json* ops = top.get("ops")) {
    read_array(*ops, "ops", "a list of operations");
    for (std::size_t i = 0; i < ops->size(); ++i) read_op(c, (*ops)[i], index_path("ops", i));
  }

  if (const json* obs = top.get("observables")) {
    read_array(*obs, "observables", "a list of observables");
    for (std::size_t k = 0; k < obs->size(); ++k) {
      const std::string op = index_path("observables", k);
      const Observable o = read_observable((*obs)[k], op);
      at(op, [&] { c.expval(o); });
    }
    p.n_observables = static_cast<int>(obs->size());
  }

  if (const json* pr = top.get("probs")) read_probs(*pr, p);

  if (const json* v = top.get("purity")) {
    if (read_bool(*v, "purity")) c.purity();
  }
  if (const json* v = top.get("readout_errors")) read_readout_errors(c, *v, "readout_errors");
  const json* lower = top.get("lower_to_device");
  if (lower && read_bool(*lower, "lower_to_device") && !top.has("noise_model"))
    fail("lower_to_device", "lowers the circuit onto a device: give the device as \"noise_model\"");
  if (const json* v = top.get("noise_model")) {
    const NoiseModel model = read_noise_model(*v, "noise_model");
    if (lower && read_bool(*lower, "lower_to_device")) {  // layout, routing, the device's basis; then its noise
      p.circuit = at("lower_to_device", [&] {
        const LoweredCircuit low = lower_to_device(c, model);
        return apply_noise_model(low.circuit, low.model);
      });
    } else {
      p.circuit = at("noise_model", [&] { return apply_noise_model(c, model); });
    }
  }

  // Batch, inputs and weights.
  std::size_t in_rows = 0, in_cols = 0;
  const bool has_inputs = top.has("inputs");
  if (has_inputs && top.get("inputs")->is_object()) {
    npy::Array a = npy::read_ref(*top.get("inputs"), "inputs");
    if (a.shape.size() != 2 || a.shape[0] == 0)
      fail("inputs", "the .npy array must be 2-D [batch, n_inputs] with at least one row");
    in_rows = a.shape[0];
    in_cols = a.shape[1];
    p.inputs = std::move(a.values);
  } else if (has_inputs) {
    const json& v = read_array(*top.get("inputs"), "inputs", "a list of rows (batch x n_inputs)");
    if (v.empty()) fail("inputs", "needs at least one row (the batch size is its number of rows)");
    p.inputs = read_matrix(v, "inputs", in_rows, in_cols);
  }
  std::size_t w_rows = 0, w_cols = 0;
  if (const json* v = top.get("weights")) read_weights(*v, p, w_rows, w_cols);
  if (has_inputs) {
    p.batch = in_rows;
    if (p.per_sample_weights && w_rows != in_rows) {
      fail("weights", "has " + std::to_string(w_rows) +
                          " rows (per-sample weights) but \"inputs\" has " +
                          std::to_string(in_rows) + " rows; both must have one row per sample");
    }
  } else if (p.per_sample_weights) {
    p.batch = w_rows;
  }
  if (model_only && !has_inputs) in_cols = static_cast<std::size_t>(c.n_inputs());
  if (model_only && !top.has("weights")) w_cols = static_cast<std::size_t>(c.n_weights());
  if (in_cols < static_cast<std::size_t>(c.n_inputs())) {
    const std::string need =
        "the circuit reads " + std::to_string(c.n_inputs()) + " input column(s)";
    if (!has_inputs) fail("", "missing key \"inputs\": " + need);
    fail("inputs", "has " + std::to_string(in_cols) + " column(s) but " + need);
  }
  if (w_cols < static_cast<std::size_t>(c.n_weights())) {
    const std::string need = "the circuit reads " + std::to_string(c.n_weights()) + " weight(s)";
    if (!top.has("weights")) fail("", "missing key \"weights\": " + need);
    fail("weights", "has " + std::to_string(w_cols) +
                        (p.per_sample_weights ? " column(s)" : " value(s)") + " but " + need);
  }
  if (in_cols > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      w_cols > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    fail("", "too many input or weight columns");
  }
  p.n_inputs = static_cast<int>(in_cols);
  p.n_weights = static_cast<int>(w_cols);
  c.reserve_inputs(p.n_inputs);
  c.reserve_weights(p.n_weights);
  if (p.n_weights == 0) p.per_sample_weights = false;

  read_circuit_options(top, p);
  if (c.measurements().empty() && !p.states && !p.shots) {
    fail("", "nothing to compute: give \"observables\", \"probs\", \"states\": true or \"shots\"");
  }
  if (c.measurements().empty() && p.gradients) {
    fail("gradients", "needs \"observables\" and/or \"probs\" to differentiate");
  }
  return p;
}

namespace {
// The keys whose array may be {"npy": FILE} (docs/cli.md#arrays-in-npy-files).
constexpr const char* kNpyArrayKeys[] = {"inputs", "weights", "amplitudes", "drift_coeffs", "rates"};

bool names_npy_file(const json& problem, const char* key) {
  const auto it = problem.find(key);
  return it != problem.end() && it->is_object() && it->contains("npy");
}

// Refuses an "output_npy" prefix whose folders below the output folder `dir` ("" = the
// working directory) include a symbolic link: "linkdir/r" with linkdir a link would write
// wherever it points. Checked with lstat before anything runs; the folders must exist
// (the writer makes none), and the files themselves replace a link rather than follow it.
void refuse_linked_folders(const std::filesystem::path& prefix, const std::string& dir) {
  std::filesystem::path at = dir.empty() ? std::filesystem::path() : std::filesystem::path(dir);
  for (const auto& part : prefix.parent_path()) {
    if (part == "." || part.empty()) continue;
    at /= part;
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(at, ec)))
      fail("output_npy", "\"" + prefix.string() + "\" passes through the symbolic link " + at.string() +
                             ": the files go under the output folder through no link");
  }
}
}  // namespace

void resolve_npy_paths(json& problem, const std::string& base_dir, const std::string& output_dir) {
  if (!problem.is_object()) return;
  auto resolve = [&](json& name, const std::string& dir) {
    if (!name.is_string() || dir.empty()) return;  // the parser reports a name that is not a string
    const std::filesystem::path f(name.get<std::string>());
    if (!f.empty() && f.is_relative()) name = (std::filesystem::path(dir) / f).string();
  };
  // A problem file does not choose where its results are written: inside the output
  // folder only (an absolute path or a ".." would let a file from elsewhere overwrite
  // any file its user can write).
  // A NUL ends a file name where the system reads it: "a\0b" would name the file "a".
  auto no_nul = [](const json& name, const std::string& key) {
    if (name.is_string() && name.get_ref<const std::string&>().find('\0') != std::string::npos)
      fail(key, quote(name.get_ref<const std::string&>()) + " holds a NUL character, which no file name can hold");
  };
  for (const char* key : kNpyArrayKeys) {
    if (names_npy_file(problem, key)) no_nul(problem[key]["npy"], std::string(key) + ".npy");
  }
  if (const auto it = problem.find("output_npy"); it != problem.end() && it->is_string()) {
    no_nul(*it, "output_npy");
    const std::filesystem::path f(it->get<std::string>());
    bool escapes = f.is_absolute();
    for (const auto& part : f) escapes = escapes || part == "..";
    if (escapes)
      fail("output_npy", quote(f.string()) + " leaves the output folder: give a relative path without \"..\" "
                         "(the files go under the problem file's folder, or qfleet eval --output-dir DIR)");
    refuse_linked_folders(f, output_dir.empty() ? base_dir : output_dir);
    resolve(*it, output_dir.empty() ? base_dir : output_dir);
  }
  for (const char* key : kNpyArrayKeys) {
    if (names_npy_file(problem, key)) resolve(problem[key]["npy"], base_dir);
  }
}

bool reads_npy_arrays(const json& problem) {
  if (!problem.is_object()) return false;
  return std::any_of(std::begin(kNpyArrayKeys), std::end(kNpyArrayKeys),
                     [&](const char* key) { return names_npy_file(problem, key); });
}

namespace {

// Where the first non-finite number of a result is ("fidelity[0]"); "" when all are finite.
std::string first_non_finite(const json& v, const std::string& path) {
  if (v.is_number_float()) return std::isfinite(v.get<double>()) ? "" : path;
  if (v.is_array())
    for (std::size_t i = 0; i < v.size(); ++i)
      if (std::string at = first_non_finite(v[i], index_path(path, i)); !at.empty()) return at;
  if (v.is_object())
    for (const auto& [k, x] : v.items())
      if (std::string at = first_non_finite(x, join_path(path, k)); !at.empty()) return at;
  return "";
}

double largest_magnitude(const json& v) {
  if (v.is_number()) return std::abs(v.get<double>());
  double m = 0;
  if (v.is_structured())
    for (const auto& x : v) m = std::max(m, largest_magnitude(x));
  return m;
}

// Finite inputs can still overflow a solver (an amplitude of 1e300, a duration of 1e300):
// the result is refused, naming the problem's largest inputs, rather than returned as nulls
// (or NaN in a .npy file) with success.
[[noreturn]] void refuse_non_finite(const json& problem, const std::string& at) {
  std::vector<std::pair<double, std::string>> sizes;
  for (const auto& [k, x] : problem.items()) {
    double m = largest_magnitude(x);
    // An array in a .npy file: its values, not the {"npy": name} that stands for them in the
    // problem (read again only here, on the way to the error).
    if (names_npy_file(problem, k.c_str())) {
      try {
        for (double v : npy::read_ref(x, k).values) m = std::max(m, std::abs(v));
      } catch (const std::exception&) {  // read once already; a file changed since is left out
      }
    }
    if (m > 0 && k != "qubits" && k != "dim") sizes.emplace_back(m, k);
  }
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::string largest;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, sizes.size()); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", sizes[i].first);
    largest += (i ? ", " : "") + sizes[i].second + " " + buf;
  }
  fail(at.empty() ? std::string("the result") : at,
       "is not finite: the inputs overflow the solver (the largest magnitudes: " + largest + "); scale them down");
}

}  // namespace

json evaluate(const json& problem) {
  json result;
  try {
    result = check_kind(problem) ? evaluate(parse_lindblad_problem(problem)) : evaluate(parse_circuit_problem(problem));
  } catch (const npy::NonFiniteResult& e) {
    refuse_non_finite(problem, e.key + " (value " + std::to_string(e.index) + " of its .npy, not written)");
  }
  if (const std::string at = first_non_finite(result, ""); !at.empty()) refuse_non_finite(problem, at);
  return result;
}

NoiseModel parse_noise_model(const json& model) { return read_noise_model(model, ""); }

json gate_catalogue() {
  json all = json::array();
  for (const GateInfo& g : kGateTable) {
    all.push_back(json{{"name", std::string(g.name)},
                       {"wires", g.wires},
                       {"params", g.params},
                       {"controls", g.controls}});
  }
  return all;
}

std::string dump(const json& value, int indent) {
  if (indent < 0) return value.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  write(out, value, indent, 0);
  return out;
}

}  // namespace qfleet::json_problem
