// "kind": "lindblad" problems (docs/cli.md, "Lindblad problems"): reading and
// checking them (json_lindblad.cpp runs them). Same conventions as json_problem.cpp:
// unknown keys and repeated keys are errors, every message names the JSON path of
// the value.
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

// "the \"rk4\" and \"euler\" solvers": the solvers whose row (qfleet/solver.hpp) has `property`.
std::string solvers_where(bool SolverInfo::*property) {
  std::vector<std::string> names;
  for (const SolverInfo& s : kSolvers) {
    if (s.*property) names.push_back(fmt::format("\"{}\"", s.name));
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out + (names.size() == 1 ? " solver" : " solvers");
}

using nlohmann::json;
using namespace internal;
using Cplx = std::complex<double>;

// Readers and messages: json_common.hpp.

double read_positive(const json& v, const std::string& path) {
  const double d = read_number(v, path);
  if (!(d > 0)) fail(path, "must be > 0, got " + v.dump());
  return d;
}

// ---------------------------------------------------- complex values ---

// A real number, or a complex number as [re, im].
Cplx read_entry(const json& v, const std::string& path) {
  if (v.is_number()) return {read_number(v, path), 0.0};
  if (!v.is_array() || v.size() != 2) {
    fail(path, "expected a number or a complex number as [re, im], got " + describe(v));
  }
  return {read_number(v[0], index_path(path, 0)), read_number(v[1], index_path(path, 1))};
}

std::string matrix_hint(int d) {
  return fmt::format("a {0}x{0} matrix: a list of {0} rows, each a list of {0} entries "
                     "(a number or [re, im])",
                     d);
}

// A d x d complex matrix, row-major.
ComplexMatrix read_cmatrix(const json& v, const std::string& path, int d) {
  const std::size_t n = static_cast<std::size_t>(d);
  if (!v.is_array()) fail(path, "expected " + matrix_hint(d) + ", got " + describe(v));
  if (!v.empty() && !v[0].is_array()) {
    fail(path, "expected " + matrix_hint(d) + ", got a list whose first element is " +
                   describe(v[0]) + " (a vector, not a matrix?)");
  }
  if (v.size() != n) {
    fail(path, "expected " + matrix_hint(d) + ", got " + std::to_string(v.size()) + " row(s)");
  }
  ComplexMatrix m;
  m.reserve(n * n);
  for (std::size_t r = 0; r < n; ++r) {
    const std::string rp = index_path(path, r);
    if (!v[r].is_array()) {
      fail(rp, fmt::format("expected a row of {} entries, got {}", d, describe(v[r])));
    }
    if (v[r].size() != n) {
      fail(rp, fmt::format("expected a row of {} entries, got {} (the matrix is {}x{})", d,
                           v[r].size(), d, d));
    }
    for (std::size_t c = 0; c < n; ++c) m.push_back(read_entry(v[r][c], index_path(rp, c)));
  }
  return m;
}

// An operator: a d x d matrix, or a structured operator (docs/open_systems.md#structured-operators):
//   {"pauli": "X0 Z1"} or {"pauli": [[c, "X0 Z1"], ...]}   Pauli sums (every subsystem a qubit)
//   {"local": M, "on": [k, ...]}                             M on subsystems k, identity elsewhere
//   {"sum": [operator, ...]}
// each with an optional "coeff" (a number or [re, im]). dims: the subsystems' dimensions.
// Sums nest at most kMaxSumDepth deep: each level holds a d x d partial sum (16 MiB at
// d = 1024), so unbounded nesting could exhaust memory.
constexpr int kMaxSumDepth = 4;
ComplexMatrix read_operator(const json& v, const std::string& path, int d, const std::vector<int>& dims,
                            int depth = 0) {
  if (!v.is_object()) return read_cmatrix(v, path, d);
  if (depth > kMaxSumDepth) fail(path, fmt::format("operator sums nest at most {} deep", kMaxSumDepth));
  const Object o(v, path, {"pauli", "local", "on", "sum", "coeff"}, "an operator (a matrix or an object)");
  const int forms = int(o.has("pauli")) + int(o.has("local")) + int(o.has("sum"));
  if (forms != 1) {
    fail(path, "an operator object has exactly one of \"pauli\", \"local\" or \"sum\"" +
                   std::string(forms == 0 ? " (none given)" : " (several given)"));
  }
  if (o.has("on") && !o.has("local")) fail(o.path("on"), "\"on\" goes with \"local\"");
  ComplexMatrix m;
  if (const json* p = o.get("pauli")) {
    std::vector<std::pair<Cplx, std::string>> terms;
    if (p->is_string()) {
      terms.emplace_back(Cplx(1, 0), p->get<std::string>());
    } else {
      read_array(*p, o.path("pauli"), "a Pauli word (\"X0 Z1\") or a list of [coefficient, word] pairs");
      for (std::size_t i = 0; i < p->size(); ++i) {
        const json& t = (*p)[i];
        const std::string tp = index_path(o.path("pauli"), i);
        if (!t.is_array() || t.size() != 2 || !t[1].is_string()) {
          fail(tp, "expected [coefficient, \"X0 Z1\"] (the coefficient a number or [re, im]), got " + describe(t));
        }
        terms.emplace_back(read_entry(t[0], index_path(tp, 0)), t[1].get<std::string>());
      }
    }
    bool qubits = true;  // dims multiply to d (read_subsystems), so all 2s means 2^n = d
    for (const int k : dims) qubits = qubits && k == 2;
    const int n = static_cast<int>(dims.size());
    if (!qubits) {
      fail(o.path("pauli"), fmt::format("Pauli strings need a system of qubits (dim a power of two, every subsystem "
                                        "of dimension 2); this one has dim {}", d));
    }
    m = at(o.path("pauli"), [&] { return pauli_operator(terms, n); });
  } else if (const json* l = o.get("local")) {
    const json& on_v = o.require("on", "the subsystems the local operator acts on, e.g. [0] or [1, 2]");
    read_array(on_v, o.path("on"), "a list of subsystem indices");
    std::vector<int> on;
    long long D = 1;
    for (std::size_t i = 0; i < on_v.size(); ++i) {
      on.push_back(int(read_int(on_v[i], index_path(o.path("on"), i), 0, static_cast<long long>(dims.size()) - 1)));
      D *= dims[std::size_t(on.back())];
      if (D > d) fail(o.path("on"), "names more subsystems than the system has (a repeated index?)");
    }
    const ComplexMatrix op = read_cmatrix(*l, o.path("local"), int(D));
    m = at(path, [&] { return local_operator(op, on, dims); });
  } else {
    const json& terms = read_array(*o.get("sum"), o.path("sum"), "a list of operators");
    if (terms.empty()) fail(o.path("sum"), "is empty; give at least one operator");
    m.assign(std::size_t(d) * std::size_t(d), Cplx(0, 0));
    for (std::size_t i = 0; i < terms.size(); ++i) {
      const ComplexMatrix t = read_operator(terms[i], index_path(o.path("sum"), i), d, dims, depth + 1);
      for (std::size_t k = 0; k < m.size(); ++k) m[k] += t[k];
    }
  }
  if (const json* c = o.get("coeff")) {
    const Cplx f = read_entry(*c, o.path("coeff"));
    for (Cplx& x : m) x *= f;
  }
  return m;
}

// The subsystems' dimensions: "subsystems" if given (their product must be dim),
// else qubits when dim is a power of two, else one subsystem of dimension dim.
std::vector<int> read_subsystems(const Object& top, int d) {
  if (const json* v = top.get("subsystems")) {
    read_array(*v, "subsystems", "a list of subsystem dimensions, e.g. [2, 2, 3]");
    if (v->empty()) fail("subsystems", "is empty; give every subsystem's dimension, e.g. [2, 2, 3]");
    std::vector<int> dims;
    long long prod = 1;
    for (std::size_t i = 0; i < v->size(); ++i) {
      dims.push_back(int(read_int((*v)[i], index_path("subsystems", i), 2, 4096)));
      prod *= dims.back();
      if (prod > d) break;
    }
    if (prod != d) {
      fail("subsystems", fmt::format("the dimensions multiply to {}{} but dim is {}", prod,
                                     prod > d ? " or more" : "", d));
    }
    return dims;
  }
  int n = 0;
  while (n < 13 && (1 << n) < d) ++n;
  if ((1 << n) == d && d > 1) return std::vector<int>(std::size_t(n), 2);
  return {d};
}

// A list of d x d matrices.
std::vector<ComplexMatrix> read_operator_list(const json& v, const std::string& path, int d,
                                              const std::vector<int>& dims) {
  read_array(v, path, "a list of matrices");
  if (!v.empty() && v[0].is_array() && !v[0].empty() && !v[0][0].is_array()) {
    fail(path, "expected a list of matrices, got a list of rows of numbers "
               "(a single matrix? wrap it in a list: [M])");
  }
  std::vector<ComplexMatrix> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(read_operator(v[i], index_path(path, i), d, dims));
  return out;
}

// A vector of d complex entries.
ComplexVector read_cvector(const json& v, const std::string& path, int d) {
  const std::string what =
      fmt::format("a vector of {} entries (each a number or [re, im])", d);
  if (!v.is_array()) fail(path, "expected " + what + ", got " + describe(v));
  if (v.size() != static_cast<std::size_t>(d)) {
    fail(path, "expected " + what + ", got " + std::to_string(v.size()) + " entries");
  }
  ComplexVector out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(read_entry(v[i], index_path(path, i)));
  return out;
}

// ------------------------------------------------ per-task real arrays ---

// A rectangular nested list of numbers: shared (`levels` deep) or per task (one
// level deeper: a leading batch dimension), told apart by the nesting depth.
struct TaskArray {
  std::vector<double> values;
  bool per_task = false;
  std::size_t batch = 0;            // rows, when per task
  std::vector<std::size_t> shape;   // of one task: `levels` sizes
};

void read_block(const json& v, const std::string& path, std::span<const std::string_view> names,
                std::size_t level, std::vector<std::optional<std::size_t>>& shape,
                std::vector<std::string>& first, std::vector<double>& out) {
  if (level == names.size()) {
    out.push_back(read_number(v, path));
    return;
  }
  if (!v.is_array()) {
    fail(path, "expected a list of " + std::string(names[level]) + ", got " + describe(v));
  }
  if (!shape[level]) {
    shape[level] = v.size();
    first[level] = path;
  } else if (v.size() != *shape[level]) {
    fail(path, fmt::format("has {} {} but {} has {} (the array must be rectangular)", v.size(),
                           names[level], first[level], *shape[level]));
  }
  for (std::size_t i = 0; i < v.size(); ++i)
    read_block(v[i], index_path(path, i), names, level + 1, shape, first, out);
}

// `names`: what each level of one task holds, outermost first (e.g. "segments",
// "control amplitudes"). Per task when the array is nested one level deeper.
TaskArray read_task_array(const json& v, const std::string& path,
                          std::initializer_list<std::string_view> names) {
  if (v.is_object()) {  // {"npy": FILE} (docs/cli.md#arrays-in-npy-files)
    npy::Array a = npy::read_ref(v, path);
    TaskArray t;
    t.per_task = a.shape.size() == names.size() + 1;
    if (!t.per_task && a.shape.size() != names.size()) {
      fail(path, fmt::format("the .npy array has {} dimension(s); expected {} (shared) or {} (per task)",
                             a.shape.size(), names.size(), names.size() + 1));
    }
    t.values = std::move(a.values);
    t.shape = std::move(a.shape);
    if (t.per_task) {
      t.batch = t.shape.front();
      t.shape.erase(t.shape.begin());
      if (t.batch == 0) fail(path, "needs at least one task");
    }
    return t;
  }
  read_array(v, path, "a list");
  // Depth of the first leaf path.
  std::size_t depth = 0;
  const json* e = &v;
  while (e->is_array() && !e->empty()) {
    e = &(*e)[0];
    ++depth;
  }
  if (e->is_array()) ++depth;  // an empty innermost list still counts as a level
  TaskArray t;
  std::vector<std::string_view> levels(names);
  t.per_task = depth > levels.size();
  if (t.per_task) levels.insert(levels.begin(), "tasks");
  std::vector<std::optional<std::size_t>> shape(levels.size());
  std::vector<std::string> first(levels.size());
  read_block(v, path, levels, 0, shape, first, t.values);
  for (std::size_t l = 0; l < levels.size(); ++l) t.shape.push_back(shape[l].value_or(0));
  if (t.per_task) {
    t.batch = t.shape.front();
    t.shape.erase(t.shape.begin());
    if (t.batch == 0) fail(path, "needs at least one task");
  }
  return t;
}

// ------------------------------------------------------------------ parse ---

// What the per-task arrays and the time grid must agree on: the batch size and the
// number of segments, each with the key that set it first (for the message).
struct Agreement {
  std::optional<std::size_t> batch_size, n_seg;
  std::string batch_from, n_seg_from;
  void batch(const TaskArray& t, const std::string& key) {
    if (!t.per_task) return;
    if (!batch_size) {
      batch_size = t.batch;
      batch_from = key;
    } else if (*batch_size != t.batch) {
      fail(key, fmt::format("has {} rows (per task) but \"{}\" has {}; per-task arrays must agree "
                            "on the batch size",
                            t.batch, batch_from, *batch_size));
    }
  }
  void segments(std::size_t n, const std::string& key, const std::string& what) {
    if (!n_seg) {
      n_seg = n;
      n_seg_from = what;
    } else if (*n_seg != n) {
      fail(key, fmt::format("gives {} segment(s) but {} gives {}", n, n_seg_from, *n_seg));
    }
  }
};

// The time grid: "durations", or "segment_duration" with the number of segments.
void read_time_grid(const Object& top, OpenSystem& s, Agreement& agree) {
  const json* durations = top.get("durations");
  const json* seg_dur = top.get("segment_duration");
  if (durations != nullptr && seg_dur != nullptr) {
    fail("", "give \"durations\" or \"segment_duration\", not both");
  }
  if (durations == nullptr && seg_dur == nullptr) {
    fail("", "missing key \"durations\" or \"segment_duration\": the time grid is needed");
  }
  std::vector<double> dts;
  if (durations != nullptr) {
    read_array(*durations, "durations", "a list of segment durations");
    if (durations->empty()) fail("durations", "needs at least one segment");
    for (std::size_t k = 0; k < durations->size(); ++k)
      dts.push_back(read_positive((*durations)[k], index_path("durations", k)));
    agree.segments(dts.size(), "durations", "\"durations\"");
  }
  if (const json* v = top.get("n_segments")) {
    const auto n = static_cast<std::size_t>(read_int(*v, "n_segments", 1, 1 << 20));
    agree.segments(n, "n_segments", "\"n_segments\"");
  }
  if (seg_dur != nullptr) {
    const double t = read_positive(*seg_dur, "segment_duration");
    if (!agree.n_seg) {
      fail("", "missing the number of segments: with \"segment_duration\" give \"amplitudes\" or "
               "\"n_segments\"");
    }
    dts.assign(*agree.n_seg, t);
  }
  at(durations != nullptr ? "durations" : "segment_duration", [&] { s.durations(dts); });

}

// What is propagated: "psi0", "rho0" or the gate ("gate": true, returned).
bool read_initial_state(const Object& top, OpenSystem& s, int d, std::size_t n_jump) {
  const bool gate = top.has("gate") && read_bool(*top.get("gate"), "gate");
  // None given: the pure state |0>, as the C++ and Python builders start from.
  const int n_initial = int(top.has("rho0")) + int(top.has("psi0")) + int(gate);
  if (n_initial > 1) fail("", "give at most one of \"psi0\", \"rho0\" and \"gate\": true (none: |0>)");
  if (const json* v = top.get("psi0")) {
    const ComplexVector psi = read_cvector(*v, "psi0", d);
    at("psi0", [&] { s.initial_state(psi); });
  }
  if (const json* v = top.get("rho0")) {
    if (n_jump == 0) {
      fail("rho0", "a closed system (no \"jumps\") propagates a pure state: give \"psi0\", or add "
                   "\"jumps\" to propagate a density matrix");
    }
    const ComplexMatrix rho = read_cmatrix(*v, "rho0", d);
    at("rho0", [&] { s.initial_density(rho); });
  }
  if (gate) s.propagate_gate();

  return gate;
}

// The target: {"state": psi}, {"density": rho} or {"unitary": U} (gate problems).
void read_target(const Object& top, OpenSystem& s, int d, bool gate) {
  if (const json* v = top.get("target")) {
    const Object t(*v, "target", {"state", "density", "unitary"},
                   "a target object: {\"state\": psi}, {\"density\": rho} or {\"unitary\": U}");
    const int n_keys = int(t.has("state")) + int(t.has("density")) + int(t.has("unitary"));
    if (n_keys != 1) {
      fail("target", "needs exactly one of \"state\", \"density\" or \"unitary\"");
    }
    if (const json* x = t.get("state")) {
      if (gate) fail("target.state", "a gate problem (\"gate\": true) needs {\"unitary\": U}");
      const ComplexVector psi = read_cvector(*x, "target.state", d);
      at("target.state", [&] { s.target_state(psi); });
    } else if (const json* y = t.get("density")) {
      if (gate) fail("target.density", "a gate problem (\"gate\": true) needs {\"unitary\": U}");
      const ComplexMatrix rho = read_cmatrix(*y, "target.density", d);
      at("target.density", [&] { s.target_density(rho); });
    } else {
      if (!gate) {
        fail("target.unitary", "a target unitary needs \"gate\": true (propagate the whole "
                               "unitary/channel instead of a state)");
      }
      const ComplexMatrix u = read_cmatrix(*t.get("unitary"), "target.unitary", d);
      at("target.unitary", [&] { s.target_unitary(u); });
    }
  }
}

// The computational subspace (levels), for the leakage.
void read_subspace(const Object& top, OpenSystem& s) {
  if (const json* v = top.get("subspace")) {
    read_array(*v, "subspace", "a list of levels");
    std::vector<int> levels;
    for (std::size_t i = 0; i < v->size(); ++i)
      levels.push_back(static_cast<int>(read_int((*v)[i], index_path("subspace", i),
                                                 std::numeric_limits<int>::min(),
                                                 std::numeric_limits<int>::max())));
    at("subspace", [&] { s.computational_subspace(levels); });
  }

}

// The options (solver and its step or tolerances, form, exact method, precision,
// threads, device) and the output prefix.
void read_lindblad_options(const Object& top, LindbladProblem& p) {
  if (const json* v = top.get("device")) p.options.device = read_device(*v, "device");
  if (const json* v = top.get("solver")) {
    const std::string name = read_string(*v, "solver");
    const auto solver = qfleet::value_in(qfleet::kSolverNames, name);
    if (!solver) {
      fail("solver", "unknown solver " + quote(name) + "; expected " + qfleet::names_in(qfleet::kSolverNames));
    }
    p.options.solver = *solver;
  }
  const Solver solver = p.options.solver;
  const bool fixed_step = solver_info(solver).fixed_step;
  if (const json* v = top.get("dt")) {
    if (!fixed_step) {
      fail("dt", fmt::format("only used by the {} (solver is \"{}\")", solvers_where(&SolverInfo::fixed_step),
                             qfleet::to_string(solver)));
    }
    p.options.dt = read_positive(*v, "dt");
  } else if (fixed_step) {
    fail("", fmt::format("missing key \"dt\": solver \"{}\" needs a step dt > 0",
                         qfleet::to_string(solver)));
  }
  for (const char* key : {"rtol", "atol"}) {
    if (const json* v = top.get(key)) {
      if (!solver_info(solver).adaptive) {
        fail(key, fmt::format("only used by the {} (solver is \"{}\")", solvers_where(&SolverInfo::adaptive),
                              qfleet::to_string(solver)));
      }
      (std::string_view(key) == "rtol" ? p.options.rtol : p.options.atol) =
          read_positive(*v, key);
    }
  }
  if (const json* v = top.get("form")) {
    const std::string name = read_string(*v, "form");
    const auto form = qfleet::value_in(qfleet::kOpenFormNames, name);
    if (!form) refuse_respelling(qfleet::kOpenFormNames, name, "form");
    if (!form) fail("form", "unknown form " + quote(name) + "; expected " + qfleet::names_in(qfleet::kOpenFormNames));
    p.options.form = *form;
  }
  if (const json* v = top.get("exact")) {
    const std::string name = read_string(*v, "exact");
    const auto method = qfleet::value_in(qfleet::kExactMethodNames, name);
    if (!method) {
      refuse_respelling(qfleet::kExactMethodNames, name, "exact");
      fail("exact", "unknown method " + quote(name) + "; expected " + qfleet::names_in(qfleet::kExactMethodNames));
    }
    if (solver != Solver::exact) fail("exact", fmt::format("only used by the exact solver (solver is \"{}\")", qfleet::to_string(solver)));
    p.options.exact = *method;
  }
  if (const json* v = top.get("precision")) p.options.precision = read_precision(*v, "precision");
  if (const json* v = top.get("threads")) {
    p.options.num_threads = static_cast<int>(read_int(*v, "threads", 0, 1 << 16));
  }
  if (const json* v = top.get("isa")) p.options.isa = read_string(*v, "isa");
  if (const json* v = top.get("output_npy")) {
    p.output_npy = read_string(*v, "output_npy");
    if (p.output_npy.empty()) fail("output_npy", "must name a file prefix, e.g. \"out/run1\"");
  }
}

// ------------------------------------------------------------ cotangents ---

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string t;
  for (const std::size_t n : shape) t += (t.empty() ? "" : ", ") + std::to_string(n);
  return "(" + t + (shape.size() == 1 ? ",)" : ")");
}

// A nested list of exactly `shape` (outermost first; names[l]: what level l holds),
// its leaves read by `leaf` into `out`, row-major.
template <class T, class Leaf>
void read_exact(const json& v, const std::string& path, std::span<const std::size_t> shape,
                std::span<const std::string_view> names, const Leaf& leaf, std::vector<T>& out) {
  if (shape.empty()) {
    out.push_back(leaf(v, path));
    return;
  }
  const std::string want = fmt::format("expected a list of {} {}", shape[0], names[0]);
  if (!v.is_array()) fail(path, want + ", got " + describe(v));
  if (v.size() != shape[0]) fail(path, fmt::format("{}, got {}", want, v.size()));
  for (std::size_t i = 0; i < v.size(); ++i)
    read_exact(v[i], index_path(path, i), shape.subspan(1), names.subspan(1), leaf, out);
}

// {"npy": FILE} holding an array of exactly `shape`, or (complex values) `shape` with
// a last axis of 2, [re, im]; returns whether it has that axis.
bool read_npy_exact(const json& v, const std::string& path, const std::vector<std::size_t>& shape,
                    bool complex, std::vector<double>& values) {
  npy::Array a = npy::read_ref(v, path);
  std::vector<std::size_t> pairs = shape;
  pairs.push_back(2);
  const bool as_pairs = complex && a.shape == pairs;
  if (a.shape != shape && !as_pairs) {
    fail(path, "the .npy array has shape " + shape_text(a.shape) + "; expected " + shape_text(shape) +
                   (complex ? " or, as [re, im] pairs, " + shape_text(pairs) : ""));
  }
  values = std::move(a.values);
  return as_pairs;
}

// Real cotangents shaped like an output: a nested list, or {"npy": FILE}.
std::vector<double> read_real_cotangent(const json& v, const std::string& path, const std::vector<std::size_t>& shape,
                                        std::initializer_list<std::string_view> names) {
  std::vector<double> out;
  if (v.is_object()) {
    read_npy_exact(v, path, shape, false, out);
  } else {
    read_exact(v, path, shape, std::span<const std::string_view>(names.begin(), names.size()), read_number, out);
  }
  return out;
}

// The final state's shape per task, as the result holds it: [d] (a closed system's
// state), [d^2, d^2] (an open channel's superoperator) or [d, d].
std::vector<std::size_t> final_state_shape(const OpenSystem& s) {
  const std::size_t d = static_cast<std::size_t>(s.dim());
  const bool gate = s.initial_kind() == OpenSystem::Initial::Gate;
  if (s.closed() && !gate) return {d};
  const std::size_t n = gate && !s.closed() ? d * d : d;
  return {n, n};
}

// The "cotangents" of the outputs (OpenProgram::vjp's TaskCotangents), each shaped
// exactly like its output, with the batch dimension: cotangents are per task.
void read_cotangents(const json& v, LindbladProblem& p) {
  const OpenSystem& s = p.system;
  const Object c(v, "cotangents", {"fidelity", "leakage", "expvals", "final_state"},
                 "an object of the outputs' cotangents, e.g. {\"fidelity\": [1]}");
  if (!c.has("fidelity") && !c.has("leakage") && !c.has("expvals") && !c.has("final_state")) {
    fail("cotangents", "is empty; give at least one of \"fidelity\", \"leakage\", \"expvals\" and \"final_state\"");
  }
  auto needs = [&](std::string_view key, bool has_output, std::string_view what) {
    if (c.has(key) && !has_output) fail(c.path(key), std::string(what));
  };
  needs("fidelity", s.target_kind() != OpenSystem::Target::None, "needs a \"target\" (it gives the fidelity)");
  needs("leakage", !s.subspace().empty(), "needs a \"subspace\" (it gives the leakage)");
  needs("expvals", s.n_observables() > 0, "needs \"observables\" (they give the expvals)");
  const std::size_t B = p.batch;
  LindbladProblem::Cotangents& out = p.cotangents;
  constexpr std::string_view kPerTask = "values, one per task";
  if (const json* f = c.get("fidelity")) out.fidelity = read_real_cotangent(*f, c.path("fidelity"), {B}, {kPerTask});
  if (const json* l = c.get("leakage")) out.leakage = read_real_cotangent(*l, c.path("leakage"), {B}, {kPerTask});
  if (const json* e = c.get("expvals")) {
    const std::vector<std::size_t> shape = {B, std::size_t(s.n_segments()) + 1, std::size_t(s.n_observables())};
    out.expvals = read_real_cotangent(*e, c.path("expvals"), shape,
                                      {"tasks", "segment boundaries (n_seg + 1)", "values, one per observable"});
  }
  if (const json* x = c.get("final_state")) {
    const std::string path = c.path("final_state");
    std::vector<std::size_t> shape = final_state_shape(s);
    shape.insert(shape.begin(), B);
    if (x->is_object()) {
      std::vector<double> values;
      const bool pairs = read_npy_exact(*x, path, shape, true, values);
      for (std::size_t i = 0; i < values.size(); i += pairs ? 2 : 1)
        out.final_state.emplace_back(values[i], pairs ? values[i + 1] : 0.0);
    } else {
      const std::array<std::string_view, 3> names = {"tasks", shape.size() == 2 ? "entries" : "rows", "entries"};
      read_exact(*x, path, shape, names, read_entry, out.final_state);
    }
  }
}

// What is differentiated: the outputs' "cotangents" (which imply gradients), or with
// "gradients": true alone the fidelity, else the leakage. A model_only reader leaves
// the cotangents, data of a call like the amplitudes, unread.
void read_gradients(const Object& top, LindbladProblem& p, bool model_only) {
  const OpenSystem& s = p.system;
  const json* g = top.get("gradients");
  const bool gradients = g != nullptr && read_bool(*g, "gradients");
  if (const json* c = top.get("cotangents")) {
    if (g != nullptr && !gradients) {
      fail("cotangents", "asks for gradients, but \"gradients\" is false (leave it out or set it to true)");
    }
    if (model_only) return;
    read_cotangents(*c, p);
    p.gradient_of = LindbladProblem::GradientOf::cotangents;
  } else if (gradients) {
    if (s.target_kind() != OpenSystem::Target::None) {
      p.gradient_of = LindbladProblem::GradientOf::fidelity;
    } else if (!s.subspace().empty()) {
      p.gradient_of = LindbladProblem::GradientOf::leakage;
    } else {
      fail("gradients", "needs a \"target\" (gradients of the fidelity), a \"subspace\" (gradients of the "
                        "leakage) or \"cotangents\"");
    }
  }
}

}  // namespace


LindbladProblem parse_lindblad_problem(const json& doc, bool model_only) {
  if (!doc.is_object()) fail("", "a problem must be a JSON object, got " + describe(doc));
  const auto kind_it = doc.find("kind");
  if (kind_it == doc.end()) fail("", "missing key \"kind\" (use \"kind\": \"lindblad\")");
  const std::string kind = read_string(*kind_it, "kind");
  if (kind != "lindblad") fail("kind", "expected \"lindblad\", got " + quote(kind));
  const Object top(doc, "",
                   {"kind", "dim", "H0", "drift_terms", "drift_coeffs", "controls", "amplitudes",
                    "durations", "segment_duration", "n_segments", "jumps", "rates", "rho0",
                    "psi0", "gate", "target", "observables", "subspace", "solver", "dt", "rtol",
                    "atol", "form", "exact", "precision", "threads", "isa", "device", "gradients", "cotangents",
                    "output_npy", "subsystems"});

  LindbladProblem p;
  const int d = static_cast<int>(read_int(top.require("dim"), "dim", std::numeric_limits<int>::min(),
                                          std::numeric_limits<int>::max()));
  p.system = at("dim", [&] { return OpenSystem(d); });
  OpenSystem& s = p.system;

  // Hamiltonian, drift terms, controls, jumps.
  const std::vector<int> dims = read_subsystems(top, d);
  if (const json* v = top.get("H0")) {
    const ComplexMatrix h0 = read_operator(*v, "H0", d, dims);
    at("H0", [&] { s.drift(h0); });
  }
  auto matrices = [&](std::string_view key, auto add) {
    const json* v = top.get(key);
    if (v == nullptr) return std::size_t{0};
    const std::string path(key);
    const std::vector<ComplexMatrix> ms = read_operator_list(*v, path, d, dims);
    for (std::size_t i = 0; i < ms.size(); ++i) at(index_path(path, i), [&] { add(ms[i]); });
    return ms.size();
  };
  const std::size_t n_drift = matrices("drift_terms", [&](const ComplexMatrix& m) { s.drift_term(m); });
  const std::size_t n_ctrl = matrices("controls", [&](const ComplexMatrix& m) { s.control(m); });
  const std::size_t n_jump = matrices("jumps", [&](const ComplexMatrix& m) { s.jump(m); });

  // Per-task arrays and the batch.
  Agreement agree;
  auto vector_arg = [&](std::string_view key, std::string_view terms_key, std::size_t n,
                        std::string_view value_name, std::vector<double>& out, bool& per_task) {
    const std::string path(key);
    const json* v = top.get(key);
    if (v == nullptr) {
      if (n > 0 && !model_only) {
        fail("", fmt::format("missing key \"{}\": there are {} \"{}\"", key, n, terms_key));
      }
      return TaskArray{};
    }
    TaskArray t = read_task_array(*v, path, {value_name});
    const std::size_t m = t.shape[0];
    if (m != n) {
      fail(path, fmt::format("has {} value(s){} but there are {} \"{}\"", m,
                             t.per_task ? " per task" : "", n, terms_key));
    }
    agree.batch(t, path);
    out = t.values;
    per_task = t.per_task;
    return t;
  };

  if (const json* v = top.get("amplitudes")) {
    const TaskArray t = read_task_array(*v, "amplitudes", {"segments", "control amplitudes"});
    if (t.shape[0] == 0) fail("amplitudes", "needs at least one segment");
    if (t.shape[1] != n_ctrl) {
      fail("amplitudes", fmt::format("has {} value(s) per segment but there are {} \"controls\"",
                                     t.shape[1], n_ctrl));
    }
    agree.batch(t, "amplitudes");
    agree.segments(t.shape[0], "amplitudes", "\"amplitudes\"");
    p.amplitudes = t.values;
    p.per_task_amplitudes = t.per_task;
  } else if (n_ctrl > 0 && !model_only) {
    fail("", fmt::format("missing key \"amplitudes\": there are {} \"controls\"", n_ctrl));
  }
  vector_arg("drift_coeffs", "drift_terms", n_drift, "drift coefficients", p.drift_coeffs,
             p.per_task_drift_coeffs);
  const TaskArray rates =
      vector_arg("rates", "jumps", n_jump, "rates", p.rates, p.per_task_rates);
  for (std::size_t i = 0; i < p.rates.size(); ++i) {
    if (p.rates[i] < 0) {
      const std::size_t m = std::max<std::size_t>(n_jump, 1);
      const std::string rp = rates.per_task ? index_path(index_path("rates", i / m), i % m)
                                            : index_path("rates", i);
      fail(rp, "a rate must be >= 0, got " + json(p.rates[i]).dump());
    }
  }
  p.batch = agree.batch_size.value_or(1);

  read_time_grid(top, s, agree);
  const bool gate = read_initial_state(top, s, d, n_jump);
  read_target(top, s, d, gate);
  if (const json* v = top.get("observables"); v != nullptr && !(v->is_array() && v->empty())) {
    if (gate) {
      fail("observables", "observables are measured on states; a gate problem (\"gate\": true) "
                          "has none");
    }
    matrices("observables", [&](const ComplexMatrix& m) { s.observable(m); });
  }
  read_subspace(top, s);
  read_lindblad_options(top, p);
  read_gradients(top, p, model_only);
  return p;
}

}  // namespace qfleet::json_problem
