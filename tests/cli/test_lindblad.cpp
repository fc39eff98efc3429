// "kind": "lindblad" problems: the real binary on the worked example
// docs/examples/lindblad.json, evaluate() in-process on closed and open systems,
// gates, solvers and precisions, and every error path. Every number is checked
// against the independent Eigen reference in tests/reference/ (finite
// differences for the gradients), never against qfleet itself.
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"
#include "reference/lindblad_json.hpp"
#include "run_cli.hpp"

namespace lindblad_cli_test {

using nlohmann::json;
using qfleet_test::CliResult;
using qfleet_test::run_cli;
using qfleet_test::source_path;
namespace qj = qfleet::json_problem;
namespace jref = ref::lindblad_json;

const std::string kExample = "docs/examples/lindblad.json";

json load_example() { return json::parse(qfleet_test::read_file(source_path(kExample))); }

void compare(const json& got, const json& want, double tol, const std::string& path) {
  if (want.is_number()) {
    ASSERT_TRUE(got.is_number()) << path << ": got " << got.dump();
    EXPECT_NEAR(got.get<double>(), want.get<double>(), tol) << path;
    return;
  }
  ASSERT_TRUE(want.is_array()) << path;
  ASSERT_TRUE(got.is_array()) << path << ": got " << got.dump();
  ASSERT_EQ(got.size(), want.size()) << path << ": got " << got.dump() << "\nwant " << want.dump();
  for (std::size_t i = 0; i < want.size(); ++i)
    compare(got[i], want[i], tol, path + "[" + std::to_string(i) + "]");
}

// Every key of the reference's result (values to `tol`, gradients to `grad_tol`),
// and no other keys than those and the informational ones.
void expect_matches(const json& got, const json& want, double tol, double grad_tol) {
  for (const auto& item : want.items()) {
    ASSERT_TRUE(got.contains(item.key())) << "missing " << item.key() << " in " << got.dump();
    const bool grad = item.key().rfind("grad_", 0) == 0;
    compare(got[item.key()], item.value(), grad ? grad_tol : tol, item.key());
  }
  const std::set<std::string> info = {"dim", "batch", "solver", "form", "exact", "precision", "isa", "openmp"};
  for (const auto& item : got.items()) {
    EXPECT_TRUE(want.contains(item.key()) || info.count(item.key())) << "unexpected " << item.key();
  }
}

// grad_durations: central differences of the reference's sum over tasks of the
// differentiated figure of merit, each segment's duration moved by +-h.
json reference_grad_durations(const json& problem, double h = 1e-6) {
  const std::vector<double> dts = jref::read(problem).model.durations;
  json base = problem;
  base.erase("gradients");
  base.erase("segment_duration");
  const char* key = problem.contains("target") ? "fidelity" : "leakage";
  auto sum_at = [&](std::size_t k, double delta) {
    std::vector<double> d = dts;
    d[k] += delta;
    base["durations"] = d;
    const json out = jref::evaluate(base);
    double sum = 0;
    for (const json& v : out[key]) sum += v.get<double>();
    return sum;
  };
  json g = json::array();
  for (std::size_t k = 0; k < dts.size(); ++k) g.push_back((sum_at(k, h) - sum_at(k, -h)) / (2 * h));
  return g;
}

// The reference's result, with grad_durations where the problem asks for gradients.
json reference(const json& problem) {
  json want = jref::evaluate(problem);
  if (problem.value("gradients", false)) want["grad_durations"] = reference_grad_durations(problem);
  return want;
}

void expect_matches_reference(const json& problem, const json& got, double tol = 1e-10,
                              double grad_tol = 1e-7) {
  const json want = reference(problem);
  expect_matches(got, want, tol, grad_tol);
  EXPECT_EQ(got["dim"], problem["dim"]);
  EXPECT_EQ(got["batch"], jref::read(problem).tasks.B);
  EXPECT_EQ(got["solver"], problem.value("solver", std::string("exact")));
  EXPECT_EQ(got["precision"], problem.value("precision", std::string("complex128")));
}

// ---------------------------------------------------------------- example ---

TEST(LindbladExample, HasWhatTheDocPromises) {
  const json p = load_example();
  EXPECT_EQ(p["kind"], "lindblad");
  EXPECT_EQ(p["dim"], 2);
  EXPECT_EQ(p["controls"].size(), 2u);  // X/2, Y/2
  EXPECT_EQ(p["jumps"].size(), 1u);     // |0><1|
  EXPECT_EQ(p["rates"].size(), 2u);     // per task: B = 2
  EXPECT_TRUE(p["rates"][0].is_array());
  EXPECT_EQ(p["gradients"], true);
  EXPECT_TRUE(p.contains("target"));
  EXPECT_TRUE(p.contains("observables"));
}

TEST(LindbladExample, EveryNumberMatchesTheReference) {
  const json problem = load_example();
  const auto r = run_cli({"eval", source_path(kExample)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "default output is one line";
  const json out = json::parse(r.out);
  expect_matches_reference(problem, out);
  EXPECT_EQ(out["batch"], 2);
  // Physics sanity: the stronger decay (task 1) transfers less population.
  EXPECT_GT(out["fidelity"][0].get<double>(), out["fidelity"][1].get<double>());
  EXPECT_LT(out["grad_rates"][0][0].get<double>(), 0.0);
}

TEST(LindbladExample, StdinAndIndentGiveTheSameNumbers) {
  const std::string text = qfleet_test::read_file(source_path(kExample));
  const auto from_file = run_cli({"eval", source_path(kExample)});
  const auto from_stdin = run_cli({"eval", "-", "--indent", "2"}, text);
  ASSERT_EQ(from_stdin.status, 0) << from_stdin.err;
  EXPECT_EQ(json::parse(from_stdin.out), json::parse(from_file.out));
}

// docs/cli.md shows the example's output between <!-- lindblad-output:begin/end -->.
TEST(LindbladExample, OutputShownInTheDocIsCurrent) {
  const std::string doc = qfleet_test::read_file(source_path("docs/cli.md"));
  const std::string block = qfleet_test::doc_block(doc, "lindblad-output");
  ASSERT_FALSE(block.empty()) << "docs/cli.md: no lindblad-output block";
  json shown = json::parse(block);
  expect_matches_reference(load_example(), shown);  // the doc's numbers are right...

  const auto r = run_cli({"eval", source_path(kExample)});
  ASSERT_EQ(r.status, 0) << r.err;
  json actual = json::parse(r.out);
  for (const char* key : {"isa", "openmp"}) {  // machine-dependent
    shown.erase(key);
    actual.erase(key);
  }
  ASSERT_EQ(shown.size(), actual.size());
  for (const auto& item : shown.items()) {  // ...and the binary still prints them
    ASSERT_TRUE(actual.contains(item.key())) << item.key();
    if (item.value().is_string() || item.value().is_number_integer()) {
      EXPECT_EQ(actual[item.key()], item.value()) << item.key();
    } else {
      compare(actual[item.key()], item.value(), 1e-12, item.key());
    }
  }
  // The doc's example problem is the file.
  const std::string pblock = qfleet_test::doc_block(doc, "lindblad-problem");
  ASSERT_FALSE(pblock.empty()) << "docs/cli.md: no lindblad-problem block";
  EXPECT_EQ(json::parse(pblock), load_example());
}

// -------------------------------------------------------------- in-process ---

// A 3-level system (a qubit with a leakage level): H0 = diag(0, 0, -0.3),
// controls (a + a^dag)/2 and i(a^dag - a)/2.
json three_level() {
  return json::parse(R"({
    "kind": "lindblad", "dim": 3,
    "H0": [[0, 0, 0], [0, 0, 0], [0, 0, -0.3]],
    "controls": [
      [[0, 0.5, 0], [0.5, 0, 0.7071067811865476], [0, 0.7071067811865476, 0]],
      [[0, [0, -0.5], 0], [[0, 0.5], 0, [0, -0.7071067811865476]], [0, [0, 0.7071067811865476], 0]]
    ],
    "durations": [0.6, 0.9, 0.75]
  })");
}

TEST(LindbladEvaluate, ClosedSystemStateTransferWithPerTaskAmplitudes) {
  json p = three_level();
  p["amplitudes"] = json::parse(R"([
    [[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]],
    [[0.9, 0.0], [1.0, 0.3], [1.2, -0.2]],
    [[0.2, 0.1], [0.1, 0.2], [0.3, 0.0]]])");
  p["psi0"] = json::parse("[[0.6, 0], [0, 0.8], 0]");
  p["target"] = json::parse(R"({"state": [[0, 0], [0.6, 0.0], [0, 0.8]]})");
  p["observables"] = json::parse(R"([[[0, 0, 0], [0, 1, 0], [0, 0, 2]], [[1, 0, 0], [0, -1, 0], [0, 0, 0]]])");
  p["subspace"] = {0, 1};
  p["gradients"] = true;
  const json out = qj::evaluate(p);
  expect_matches_reference(p, out);
  EXPECT_EQ(out["batch"], 3);
  ASSERT_EQ(out["final_state"][0].size(), 3u);  // a pure state [d] of [re, im]
  EXPECT_EQ(out["final_state"][0][0].size(), 2u);
  EXPECT_TRUE(out["final_state"][0][0][0].is_number());
  EXPECT_EQ(out["expvals"][0].size(), 4u);      // n_seg + 1 boundaries
  EXPECT_EQ(out["expvals"][0][0][0].get<double>(), out["expvals"][1][0][0].get<double>());
  EXPECT_EQ(out["grad_rates"], json::array());  // no jumps: shared, empty
  EXPECT_EQ(out["grad_drift_coeffs"], json::array());
  EXPECT_EQ(out["grad_amplitudes"].size(), 3u);  // per task, like amplitudes
}

TEST(LindbladEvaluate, SharedAndPerTaskArgumentsAgree) {
  const json shared = load_example();  // shared amplitudes and drift, per-task rates
  json per_task = shared;
  per_task["amplitudes"] = {shared["amplitudes"], shared["amplitudes"]};
  per_task["drift_coeffs"] = {shared["drift_coeffs"], shared["drift_coeffs"]};
  const json a = qj::evaluate(shared), b = qj::evaluate(per_task);
  expect_matches_reference(per_task, b);
  for (const char* key : {"fidelity", "final_state", "expvals", "grad_rates"}) {
    compare(b[key], a[key], 1e-13, key);
  }
  // Shared parameters get the gradient of the sum over tasks.
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t c = 0; c < 2; ++c) {
      EXPECT_NEAR(a["grad_amplitudes"][k][c].get<double>(),
                  b["grad_amplitudes"][0][k][c].get<double>() +
                      b["grad_amplitudes"][1][k][c].get<double>(),
                  1e-12);
    }
  EXPECT_NEAR(a["grad_drift_coeffs"][0].get<double>(),
              b["grad_drift_coeffs"][0][0].get<double>() + b["grad_drift_coeffs"][1][0].get<double>(),
              1e-12);
  // Shared rates: one task, shared everything (B = 1).
  json one = shared;
  one["rates"] = {0.2};
  const json c = qj::evaluate(one);
  EXPECT_EQ(c["batch"], 1);
  expect_matches_reference(one, c);
  compare(c["fidelity"][0], a["fidelity"][1], 1e-13, "fidelity");
}

TEST(LindbladEvaluate, OpenSystemLeakageGradientsWithoutTarget) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_terms"] = json::parse("[[[0, 0, 0], [0, 1, 0], [0, 0, 2]]]");  // detuning (number op)
  p["drift_coeffs"] = json::parse("[[0.05], [-0.1]]");                   // per task: B = 2
  p["jumps"] = json::parse(R"([[[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]],
                                 [[0, 0, 0], [0, 1, 0], [0, 0, 2]]])");  // decay, dephasing
  p["rates"] = {0.03, 0.01};
  p["rho0"] = json::parse("[[0.7, [0.1, 0.2], 0], [[0.1, -0.2], 0.3, 0], [0, 0, 0]]");
  p["observables"] = json::parse("[[[0, 0, 0], [0, 1, 0], [0, 0, 2]]]");
  p["subspace"] = {1, 0};
  p["gradients"] = true;
  const json out = qj::evaluate(p);
  expect_matches_reference(p, out);
  EXPECT_FALSE(out.contains("fidelity"));
  ASSERT_EQ(out["leakage"].size(), 2u);
  EXPECT_GT(out["leakage"][0].get<double>(), 1e-3);
  EXPECT_EQ(out["final_state"][0].size(), 3u);  // a density matrix [d][d] of [re, im]
  EXPECT_EQ(out["final_state"][0][0].size(), 3u);
  EXPECT_EQ(out["grad_drift_coeffs"].size(), 2u);  // per task
  EXPECT_EQ(out["grad_rates"].size(), 2u);         // shared: [n_jump]
}

TEST(LindbladEvaluate, DensityTargets) {
  json p = load_example();
  p["target"] = json::parse(R"({"density": [[0.1, [0.05, 0.1]], [[0.05, -0.1], 0.9]]})");
  expect_matches_reference(p, qj::evaluate(p), 1e-10, 1e-6);
  // Closed system with a mixed target: <psi|sigma|psi>.
  json c = p;
  c.erase("jumps");
  c.erase("rates");
  expect_matches_reference(c, qj::evaluate(c));
}

TEST(LindbladEvaluate, GateProblems) {
  // Open: the channel's superoperator and the average gate fidelity to X.
  json p = load_example();
  p.erase("psi0");
  p["observables"] = json::array();  // an empty list is allowed with "gate"
  p["gate"] = true;
  p["target"] = json::parse(R"({"unitary": [[0, 1], [1, 0]]})");
  const json out = qj::evaluate(p);
  EXPECT_FALSE(out.contains("expvals"));
  expect_matches_reference(p, out);
  ASSERT_EQ(out["final_state"][0].size(), 4u);  // d^2 x d^2
  ASSERT_EQ(out["final_state"][0][0].size(), 4u);
  EXPECT_GT(out["fidelity"][0].get<double>(), 0.9);

  // Closed: the unitary, with a leakage level; leakage reported, fidelity differentiated.
  json c = three_level();
  c["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  c["gate"] = true;
  c["target"] = json::parse(R"({"unitary": [[0, 1, 0], [1, 0, 0], [0, 0, 1]]})");
  c["subspace"] = {0, 1};
  c["gradients"] = true;
  const json co = qj::evaluate(c);
  expect_matches_reference(c, co);
  EXPECT_EQ(co["final_state"][0].size(), 3u);
  EXPECT_EQ(co["final_state"][0][0].size(), 3u);

  // Open gate leakage as the differentiated quantity (no target).
  json l = c;
  l.erase("target");
  l["jumps"] = json::parse("[[[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]]]");
  l["rates"] = json::parse("[[0.02], [0.08]]");
  expect_matches_reference(l, qj::evaluate(l));
}

TEST(LindbladEvaluate, FixedStepAndAdaptiveSolvers) {
  json p = load_example();
  p["solver"] = "rk4";
  p["dt"] = 0.03;  // 0.7 / 0.03 -> 24 steps per segment
  const json rk4 = qj::evaluate(p);
  expect_matches_reference(p, rk4);  // the reference's rk4 map, and its exact gradient
  expect_matches(rk4, reference(load_example()), 1e-6, 1e-5);  // close to exact

  p["solver"] = "euler";
  p["dt"] = 0.0095;  // not a divisor of 0.7: the step count stays put as the durations move
  expect_matches_reference(p, qj::evaluate(p), 1e-10, 1e-6);

  json d = load_example();
  d["solver"] = "dopri5";
  d["rtol"] = 1e-10;
  d["atol"] = 1e-12;
  const json dp = qj::evaluate(d);
  EXPECT_EQ(dp["solver"], "dopri5");
  EXPECT_EQ(dp["form"], "superoperator");  // automatic, for a qubit
  expect_matches(dp, reference(load_example()), 1e-7, 1e-6);

  d["solver"] = "tsit5";
  d["form"] = "lindblad";
  const json ts = qj::evaluate(d);
  EXPECT_EQ(ts["solver"], "tsit5");
  EXPECT_EQ(ts["form"], "lindblad");
  EXPECT_FALSE(ts.contains("exact"));
  expect_matches(ts, reference(load_example()), 1e-7, 1e-6);

  // The exact solver by the action of the exponential, in Lindblad form: the same exact map.
  json a = load_example();
  a["exact"] = "action";
  a["form"] = "lindblad";
  const json ac = qj::evaluate(a);
  EXPECT_EQ(ac["exact"], "action");
  EXPECT_EQ(ac["form"], "lindblad");
  expect_matches_reference(load_example(), ac, 1e-10, 1e-7);
}

TEST(LindbladEvaluate, Complex64) {
  json p = load_example();
  p["precision"] = "complex64";
  p["threads"] = 1;
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["precision"], "complex64");
  expect_matches(out, reference(load_example()), 1e-5, 1e-4);
  // Single-precision results widened exactly: each is a float.
  const double f = out["fidelity"][0].get<double>();
  EXPECT_EQ(static_cast<double>(static_cast<float>(f)), f);
}

// Every instruction set this machine runs gives the reference's results, and says so.
TEST(LindbladEvaluate, EveryInstructionSet) {
  for (const std::string& isa : qfleet::available_isas()) {
    json p = load_example();
    p["isa"] = isa;
    const json out = qj::evaluate(p);
    EXPECT_EQ(out["isa"], isa);
    expect_matches_reference(load_example(), out);
  }
}

TEST(LindbladEvaluate, ParsedProblemAndDefaults) {
  json p = load_example();
  p["n_segments"] = 4;  // agrees with amplitudes
  p["threads"] = 2;
  p["precision"] = nullptr;  // null = absent
  const qj::LindbladProblem lp = qj::parse_lindblad_problem(p);
  EXPECT_EQ(lp.batch, 2u);
  EXPECT_FALSE(lp.per_task_amplitudes);
  EXPECT_FALSE(lp.per_task_drift_coeffs);
  EXPECT_TRUE(lp.per_task_rates);
  EXPECT_EQ(lp.amplitudes.size(), 8u);
  EXPECT_EQ(lp.rates, (std::vector<double>{0.05, 0.2}));
  EXPECT_EQ(lp.system.n_segments(), 4);
  EXPECT_EQ(lp.system.segment_durations()[3], 0.7);
  EXPECT_EQ(lp.options.num_threads, 2);
  EXPECT_EQ(lp.options.precision, qfleet::Precision::complex128);
  EXPECT_EQ(lp.options.solver, qfleet::Solver::exact);
  EXPECT_EQ(lp.gradient_of, qj::LindbladProblem::GradientOf::fidelity);
  expect_matches_reference(load_example(), qj::evaluate(lp));

  // No controls: the grid from n_segments; no gradients: no grad_ keys.
  const json q = json::parse(R"({"kind": "lindblad", "dim": 2, "H0": [[0.5, 0], [0, -0.5]],
      "segment_duration": 0.5, "n_segments": 3, "psi0": [0.6, 0.8],
      "observables": [[[0, 1], [1, 0]]]})");
  const json out = qj::evaluate(q);
  expect_matches_reference(q, out);
  EXPECT_FALSE(out.contains("grad_amplitudes"));
  EXPECT_FALSE(out.contains("fidelity"));
  EXPECT_EQ(out["expvals"][0].size(), 4u);

  // Empty per-task rows set the batch of a problem without jumps.
  json r = q;
  r["rates"] = json::parse("[[], []]");
  const json two = qj::evaluate(r);
  EXPECT_EQ(two["batch"], 2);
  expect_matches_reference(r, two);
}

// ------------------------------------------------------------------ errors ---

void expect_error(const CliResult& r, const std::string& needle, const std::string& what) {
  EXPECT_EQ(r.status, 2) << what << "\nstderr: " << r.err;
  EXPECT_EQ(r.out, "") << what;
  EXPECT_EQ(r.err.rfind("qfleet: error: ", 0), 0u) << what << "\nstderr: " << r.err;
  ASSERT_FALSE(r.err.empty()) << what;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": not exactly one line\nstderr: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << what << "\nexpected: " << needle << "\nstderr:   " << r.err;
}

struct Case {
  std::string name;
  std::function<void(json&)> edit;
  std::string needle;
};

json big_open(int d) {  // a d-level open system (for the exact solver's size limit)
  json z = json::array(), row = json::array();
  for (int c = 0; c < d; ++c) row.push_back(0);
  for (int r = 0; r < d; ++r) z.push_back(row);
  json l = z;
  l[0][1] = 1;
  json psi = row;
  psi[0] = 1;
  return json{{"kind", "lindblad"}, {"dim", d}, {"H0", z},       {"jumps", {l}},
              {"rates", {0.1}},     {"psi0", psi}, {"n_segments", 1}, {"segment_duration", 1}};
}

TEST(LindbladErrors, BadProblemsExitWithStatus2AndOneLine) {
  const std::vector<Case> cases = {
      {"unknown key", [](json& p) { p["rate"] = {0.1}; },
       "unknown key \"rate\" (did you mean \"rates\"?); allowed keys: kind, dim, H0"},
      {"circuit key", [](json& p) { p["qubits"] = 1; }, "unknown key \"qubits\""},
      {"target unknown key", [](json& p) { p["target"]["states"] = {1, 0}; },
       "target: unknown key \"states\" (did you mean \"state\"?)"},
      {"dim missing", [](json& p) { p.erase("dim"); }, "missing key \"dim\""},
      {"dim zero", [](json& p) { p["dim"] = 0; }, "dim: an open system needs dimension 1..1024, got 0"},
      {"dim fraction", [](json& p) { p["dim"] = 2.5; }, "dim: expected an integer, got the number 2.5"},
      // matrices
      {"H0 not Hermitian", [](json& p) { p["H0"] = json::parse("[[0, 1], [0, 0]]"); },
       "H0: drift Hamiltonian H0 is not Hermitian"},
      {"control not Hermitian", [](json& p) { p["controls"][1][0][1] = json::parse("[0, 0.5]"); },
       "controls[1]: control Hamiltonian H_1 is not Hermitian"},
      {"H0 wrong size", [](json& p) { p["H0"] = json::parse("[[0, 0, 0], [0, 0, 0], [0, 0, 0]]"); },
       "H0: expected a 2x2 matrix: a list of 2 rows, each a list of 2 entries (a number or [re, im]), got 3 row(s)"},
      {"H0 a vector", [](json& p) { p["H0"] = {0, 0}; },
       "H0: expected a 2x2 matrix: a list of 2 rows, each a list of 2 entries (a number or [re, im]), got a list "
       "whose first element is the number 0 (a vector, not a matrix?)"},
      {"H0 short row", [](json& p) { p["H0"][1] = {0}; },
       "H0[1]: expected a row of 2 entries, got 1 (the matrix is 2x2)"},
      {"entry of 3", [](json& p) { p["H0"][0][1] = {0, 0, 1}; },
       "H0[0][1]: expected a number or a complex number as [re, im], got an array of 3 element(s)"},
      {"entry too deep", [](json& p) { p["H0"][0][1] = json::parse("[[0, 1]]"); },
       "H0[0][1]: expected a number or a complex number as [re, im], got an array of 1 element(s)"},
      {"entry string", [](json& p) { p["H0"][0][0] = "0"; },
       "H0[0][0]: expected a number or a complex number as [re, im], got the string \"0\""},
      {"controls one matrix", [](json& p) { p["controls"] = p["controls"][0]; },
       "controls: expected a list of matrices, got a list of rows of numbers (a single matrix? wrap it"},
      {"jumps not a list", [](json& p) { p["jumps"] = 1; },
       "jumps: expected a list of matrices, got the number 1"},
      {"observable not Hermitian", [](json& p) { p["observables"][0][0][1] = 1; },
       "observables[0]: observable 0 is not Hermitian"},
      // per-task arrays and shapes
      {"negative rate", [](json& p) { p["rates"][1][0] = -0.1; },
       "rates[1][0]: a rate must be >= 0, got -0.1"},
      {"negative shared rate", [](json& p) { p["rates"] = {-0.5}; },
       "rates[0]: a rate must be >= 0, got -0.5"},
      {"rates missing", [](json& p) { p.erase("rates"); }, "missing key \"rates\": there are 1 \"jumps\""},
      {"rates count", [](json& p) { p["rates"] = {0.1, 0.2}; },
       "rates: has 2 value(s) but there are 1 \"jumps\""},
      {"rates ragged", [](json& p) { p["rates"][1] = {0.1, 0.2}; },
       "rates[1]: has 2 rates but rates[0] has 1 (the array must be rectangular)"},
      {"batch mismatch",
       [](json& p) {
         p["amplitudes"] = {p["amplitudes"], p["amplitudes"], p["amplitudes"]};
       },
       "rates: has 2 rows (per task) but \"amplitudes\" has 3; per-task arrays must agree on the batch size"},
      {"amplitudes controls", [](json& p) { p["amplitudes"] = json::parse("[[1], [2], [3], [4]]"); },
       "amplitudes: has 1 value(s) per segment but there are 2 \"controls\""},
      {"amplitudes ragged", [](json& p) { p["amplitudes"][2] = {0.9}; },
       "amplitudes[2]: has 1 control amplitudes but amplitudes[0] has 2"},
      {"amplitudes missing", [](json& p) { p.erase("amplitudes"); },
       "missing key \"amplitudes\": there are 2 \"controls\""},
      {"amplitudes empty", [](json& p) { p["amplitudes"] = json::array(); },
       "amplitudes: needs at least one segment"},
      {"amplitude string", [](json& p) { p["amplitudes"][1][0] = "1"; },
       "amplitudes[1][0]: expected a number, got the string \"1\""},
      {"drift coeffs count", [](json& p) { p["drift_coeffs"] = {0.1, 0.2}; },
       "drift_coeffs: has 2 value(s) but there are 1 \"drift_terms\""},
      {"drift coeffs missing", [](json& p) { p.erase("drift_coeffs"); },
       "missing key \"drift_coeffs\": there are 1 \"drift_terms\""},
      // time grid
      {"no time grid", [](json& p) { p.erase("segment_duration"); },
       "missing key \"durations\" or \"segment_duration\""},
      {"both grids", [](json& p) { p["durations"] = {1, 1, 1, 1}; },
       "give \"durations\" or \"segment_duration\", not both"},
      {"durations vs amplitudes",
       [](json& p) {
         p.erase("segment_duration");
         p["durations"] = {0.5, 0.5, 0.5};
       },
       "durations: gives 3 segment(s) but \"amplitudes\" gives 4"},
      {"n_segments vs amplitudes", [](json& p) { p["n_segments"] = 5; },
       "n_segments: gives 5 segment(s) but \"amplitudes\" gives 4"},
      {"zero duration", [](json& p) { p["segment_duration"] = 0; }, "segment_duration: must be > 0, got 0"},
      {"negative duration",
       [](json& p) {
         p.erase("segment_duration");
         p["durations"] = {0.5, -0.5, 0.5, 0.5};
       },
       "durations[1]: must be > 0, got -0.5"},
      // initial state and target
      {"psi0 not normalised", [](json& p) { p["psi0"] = {1, 0.5}; },
       "psi0: initial state must be normalised, |psi|^2 = 1.25"},
      {"psi0 length", [](json& p) { p["psi0"] = {1, 0, 0}; },
       "psi0: expected a vector of 2 entries (each a number or [re, im]), got 3 entries"},
      {"two initials", [](json& p) { p["rho0"] = json::parse("[[1, 0], [0, 0]]"); },
       "give at most one of \"psi0\", \"rho0\" and \"gate\": true (none: |0>)"},
      {"rho0 trace", [](json& p) {
         p.erase("psi0");
         p["rho0"] = json::parse("[[1, 0], [0, 1]]");
       },
       "rho0: initial density matrix must have trace 1, got 2"},
      {"rho0 not PSD", [](json& p) {
         p.erase("psi0");
         p["rho0"] = json::parse("[[1.5, 0], [0, -0.5]]");
       },
       "rho0: initial density matrix is not positive semidefinite"},
      {"rho0 closed", [](json& p) {
         p.erase("psi0");
         p.erase("jumps");
         p.erase("rates");
         p["rho0"] = json::parse("[[1, 0], [0, 0]]");
       },
       "rho0: a closed system (no \"jumps\") propagates a pure state"},
      {"target two kinds", [](json& p) { p["target"]["unitary"] = json::parse("[[0, 1], [1, 0]]"); },
       "target: needs exactly one of \"state\", \"density\" or \"unitary\""},
      {"target not normalised", [](json& p) { p["target"]["state"] = {0, 2}; },
       "target.state: target state must be normalised"},
      {"unitary without gate", [](json& p) { p["target"] = json::parse(R"({"unitary": [[0, 1], [1, 0]]})"); },
       "target.unitary: a target unitary needs \"gate\": true"},
      {"gate with state target", [](json& p) {
         p.erase("psi0");
         p.erase("observables");
         p["gate"] = true;
       },
       "target.state: a gate problem (\"gate\": true) needs {\"unitary\": U}"},
      {"gate with observables", [](json& p) {
         p.erase("psi0");
         p["gate"] = true;
         p["target"] = json::parse(R"({"unitary": [[0, 1], [1, 0]]})");
       },
       "observables: observables are measured on states; a gate problem"},
      {"target not unitary", [](json& p) {
         p.erase("psi0");
         p.erase("observables");
         p["gate"] = true;
         p["target"] = json::parse(R"({"unitary": [[1, 1], [0, 1]]})");
       },
       "target.unitary: target unitary is not unitary"},
      {"subspace level", [](json& p) { p["subspace"] = {0, 2}; },
       "subspace: computational subspace: level 2 out of range 0..1"},
      {"subspace type", [](json& p) { p["subspace"] = 0; }, "subspace: expected a list of levels, got the number 0"},
      // options
      {"unknown device", [](json& p) { p["device"] = "tpu"; },
       "device: expected \"cpu\", \"cuda\" or \"automatic\", got \"tpu\""},
      {"unknown solver", [](json& p) { p["solver"] = "rk5"; },
       "solver: unknown solver \"rk5\"; expected \"exact\", \"rk4\", \"euler\", \"dopri5\" or \"tsit5\""},
      {"unknown form", [](json& p) { p["form"] = "dense"; },
       "form: unknown form \"dense\"; expected \"automatic\", \"superoperator\" or \"lindblad\""},
      {"lindblad form with the exact solver's propagator",
       [](json& p) {
         p["form"] = "lindblad";
         p["exact"] = "propagator";
       },
       "solver: form lindblad applies to open systems (with jump operators) on a step solver"},
      {"unknown exact method", [](json& p) { p["exact"] = "krylov"; },
       "exact: unknown method \"krylov\"; expected \"automatic\", \"propagator\" or \"action\""},
      {"exact method with a step solver",
       [](json& p) {
         p["solver"] = "tsit5";
         p["exact"] = "action";
       },
       "exact: only used by the exact solver (solver is \"tsit5\")"},
      {"rk4 without dt", [](json& p) { p["solver"] = "rk4"; },
       "missing key \"dt\": solver \"rk4\" needs a step dt > 0"},
      {"euler without dt", [](json& p) { p["solver"] = "euler"; }, "missing key \"dt\": solver \"euler\""},
      {"dt with exact", [](json& p) { p["dt"] = 0.01; },
       "dt: only used by the \"rk4\" and \"euler\" solvers (solver is \"exact\")"},
      {"negative dt", [](json& p) {
         p["solver"] = "rk4";
         p["dt"] = -0.01;
       },
       "dt: must be > 0, got -0.01"},
      {"rtol with rk4", [](json& p) {
         p["solver"] = "rk4";
         p["dt"] = 0.01;
         p["rtol"] = 1e-6;
       },
       "rtol: only used by the \"dopri5\" and \"tsit5\" solvers (solver is \"rk4\")"},
      {"atol zero", [](json& p) {
         p["solver"] = "dopri5";
         p["atol"] = 0;
       },
       "atol: must be > 0, got 0"},
      {"precision", [](json& p) { p["precision"] = "complex32"; },
       "precision: expected \"complex64\" or \"complex128\", got \"complex32\""},
      {"threads", [](json& p) { p["threads"] = -1; }, "threads: must be at least 0, got -1"},
      {"isa", [](json& p) { p["isa"] = "sse9"; }, "instruction set 'sse9' is not available"},
      {"isa type", [](json& p) { p["isa"] = 2; }, "isa: expected a string"},
      {"gradients type", [](json& p) { p["gradients"] = 1; }, "gradients: expected true or false, got the number 1"},
      {"gradients of nothing", [](json& p) { p.erase("target"); },
       "gradients: needs a \"target\" (gradients of the fidelity), a \"subspace\" (gradients of the leakage) or "
       "\"cotangents\""},
      {"exact solver's propagator too large",
       [](json& p) {
         p = big_open(17);
         p["exact"] = "propagator";
       },
       "solver: the exact solver's propagator exponentiates the 289x289 generator"},
  };
  const json base = load_example();
  for (const Case& c : cases) {
    json p = base;
    c.edit(p);
    const std::string path = qfleet_test::write_temp(p.dump());
    const CliResult r = run_cli({"eval", path});
    std::remove(path.c_str());
    expect_error(r, c.needle, c.name);
  }
}

// ProblemError::path() names the offending key as data, also for errors the library
// raises while compiling (qfleet::Error::subject(), mapped by a table, not by message text).
TEST(LindbladErrors, PathsAreTypedNotReadFromMessages) {
  auto path_of = [](const json& p) -> std::string {
    try {
      qj::evaluate(p);
    } catch (const qj::ProblemError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("qfleet: " + e.path() + ": ", 0), 0u) << e.what();
      return e.path();
    }
    return "no error";
  };
  const json base = load_example();
  json p = base;
  p.erase("psi0");
  p["rho0"] = json::parse("[[1.5, 0], [0, -0.5]]");  // trace 1, Hermitian, not PSD: found while compiling
  EXPECT_EQ(path_of(p), "rho0");
  p = base;
  p["target"] = {{"density", json::parse("[[1.5, 0], [0, -0.5]]")}};
  EXPECT_EQ(path_of(p), "target.density");
  json big = big_open(17);
  big["exact"] = "propagator";
  EXPECT_EQ(path_of(big), "solver");
  p = base;
  p["H0"] = json::parse("[[0, [0, 1]], [[0, 1], 0]]");
  EXPECT_EQ(path_of(p), "H0");
  p = base;
  p["threads"] = -1;
  EXPECT_EQ(path_of(p), "threads");

  // The library's side of it: the subject travels with the error.
  qfleet::OpenSystem s(2);
  s.segments(1, 0.5).control({0, 1, 1, 0}).jump({0, 1, 0, 0}).initial_density({1.5, 0, 0, -0.5});
  try {
    (void)qfleet::compile(s, qfleet::OpenCompileOptions{});
    ADD_FAILURE() << "no error";
  } catch (const qfleet::Error& e) {
    EXPECT_EQ(e.subject(), qfleet::ErrorSubject::initial_state) << e.what();
  }
}

TEST(LindbladErrors, DispatchAndMessagesInProcess) {
  auto message = [](const json& p) -> std::string {
    try {
      qj::evaluate(p);
    } catch (const qj::ProblemError& e) {
      return e.what();
    } catch (const qfleet::Error& e) {
      return std::string("library: ") + e.what();
    }
    return "no error";
  };
  json p = load_example();
  p["H0"] = json::parse("[[0, [0, 1]], [[0, 1], 0]]");
  EXPECT_EQ(message(p),
            "qfleet: H0: drift Hamiltonian H0 is not Hermitian: |H[1][0] - conj(H[0][1])| = 2.000000");
  EXPECT_EQ(message(json::parse(R"({"kind": "lindblad", "qubits": 2})")).rfind(
                "qfleet: unknown key \"qubits\"", 0),
            0u);
  EXPECT_EQ(message(json::parse(R"({"kind": "Lindblad"})")),
            "qfleet: kind: unknown problem kind \"Lindblad\" (supported kinds: \"circuit\", \"lindblad\")");
  // Each parser accepts its own kind only.
  try {
    qj::parse_circuit_problem(load_example());
    ADD_FAILURE() << "no error";
  } catch (const qj::ProblemError& e) {
    EXPECT_STREQ(e.what(), "qfleet: kind: expected \"circuit\", got \"lindblad\" (read it with parse_lindblad_problem)");
  }
  try {
    qj::parse_lindblad_problem(json::parse(R"({"kind": "circuit", "qubits": 1})"));
    ADD_FAILURE() << "no error";
  } catch (const qj::ProblemError& e) {
    EXPECT_STREQ(e.what(), "qfleet: kind: expected \"lindblad\", got \"circuit\"");
  }
  // Repeated keys are rejected by the reader, as for circuits.
  try {
    qj::parse_text(R"({"kind": "lindblad", "target": {"state": [1, 0], "state": [0, 1]}})", "t");
    ADD_FAILURE() << "no error";
  } catch (const qj::ProblemError& e) {
    EXPECT_STREQ(e.what(), "qfleet: t: invalid JSON: key \"state\" appears twice in the object at target");
  }
}

}  // namespace lindblad_cli_test
