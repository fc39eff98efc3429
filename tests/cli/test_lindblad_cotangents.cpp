// "kind": "lindblad" problems with "cotangents" (docs/cli.md, "Gradients"): the
// gradients of L = sum of cotangent * output are checked against central finite
// differences of the problem's own outputs (the problem evaluated again with each
// amplitude, drift coefficient, rate and segment duration moved by +-h, L formed
// here), never against the engine called with the same cotangents. Also: what
// "gradients": true alone now differentiates, the initial state's default, .npy
// cotangents and results, and every rejection as one line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"
#include "run_cli.hpp"

namespace lindblad_cotangents_test {

using nlohmann::json;
using qfleet_test::CliResult;
using qfleet_test::run_cli;
namespace qj = qfleet::json_problem;

// L = sum over the cotangents' keys of cotangent . output, entry by entry. The
// cotangents write every final-state entry as [re, im] like the output, so the sum
// over its two numbers is Re(conj(c) x).
double objective(const json& out, const json& cot) {
  double sum = 0;
  for (const auto& item : cot.items()) {
    const json c = item.value().flatten(), x = out.at(item.key()).flatten();
    EXPECT_EQ(c.size(), x.size()) << item.key();
    for (const auto& e : c.items()) sum += e.value().get<double>() * x.at(e.key()).get<double>();
  }
  return sum;
}

// Every number of the problem's `key` (amplitudes, drift_coeffs, rates, durations)
// moved by +-h: the central difference of L, against the result's grad_<key>.
void expect_gradients_are_differences(const json& problem, const json& got, const std::string& key,
                                      double h = 1e-5, double tol = 1e-7) {
  json p = problem;
  const json cot = p["cotangents"];
  p.erase("cotangents");
  const json grad = got.at("grad_" + key);
  const json args = p.at(key).flatten();  // "/0/1" -> value: the pointers of grad_<key> too
  ASSERT_EQ(grad.flatten().size(), args.size()) << key << ": " << grad.dump();
  for (const auto& item : args.items()) {
    const json::json_pointer ptr("/" + key + item.key());
    const double x = item.value().get<double>();
    p[ptr] = x + h;
    const double up = objective(qj::evaluate(p), cot);
    p[ptr] = x - h;
    const double down = objective(qj::evaluate(p), cot);
    p[ptr] = x;
    const double fd = (up - down) / (2 * h);
    const double g = grad[json::json_pointer(item.key())].get<double>();
    EXPECT_NEAR(g, fd, tol * std::max(1.0, std::abs(fd))) << "grad_" << key << item.key();
  }
}

void expect_all_gradients_are_differences(const json& problem) {
  const json got = qj::evaluate(problem);
  for (const char* key : {"amplitudes", "drift_coeffs", "rates", "durations"}) {
    if (!problem.contains(key)) continue;  // no such terms: an empty gradient
    SCOPED_TRACE(key);
    expect_gradients_are_differences(problem, got, key);
  }
}

// A qubit with a leakage level (d = 3): H0 = diag(0, 0, -0.3), controls (a + a^dag)/2
// and i(a^dag - a)/2, a detuning drift term, three segments.
json three_level() {
  return json::parse(R"({
    "kind": "lindblad", "dim": 3,
    "H0": [[0, 0, 0], [0, 0, 0], [0, 0, -0.3]],
    "drift_terms": [[[0, 0, 0], [0, 1, 0], [0, 0, 2]]],
    "controls": [
      [[0, 0.5, 0], [0.5, 0, 0.7071067811865476], [0, 0.7071067811865476, 0]],
      [[0, [0, -0.5], 0], [[0, 0.5], 0, [0, -0.7071067811865476]], [0, [0, 0.7071067811865476], 0]]
    ],
    "durations": [0.6, 0.9, 0.75],
    "target": {"state": [0, [0.6, 0.0], [0, 0.8]]},
    "observables": [[[0, 0, 0], [0, 1, 0], [0, 0, 2]], [[0, 1, 0], [1, 0, 0], [0, 0, 0]]],
    "subspace": [0, 1]
  })");
}

// Cotangents of every output, two tasks: a final state of `rows` x `cols` entries
// ([re, im] pairs; cols = 0 for a state vector of `rows` entries).
json all_cotangents(std::size_t rows, std::size_t cols) {
  json fin = json::array();
  for (int b = 0; b < 2; ++b) {
    json task = json::array();
    for (std::size_t r = 0; r < rows; ++r) {
      auto entry = [&](std::size_t c) {
        return json::array({0.1 * double(r + 1) - 0.05 * b, 0.03 * double(c + 1) - 0.02});
      };
      if (cols == 0) {
        task.push_back(entry(r));
        continue;
      }
      json row = json::array();
      for (std::size_t c = 0; c < cols; ++c) row.push_back(entry(c));
      task.push_back(row);
    }
    fin.push_back(task);
  }
  return json{{"fidelity", {0.7, -1.3}},
              {"leakage", {1.1, 0.4}},
              {"expvals", json::parse("[[[0.2, -0.1], [0.5, 0.3], [-0.4, 0.1], [0.3, 0.6]],"
                                      " [[0.0, 0.2], [-0.2, 0.1], [0.6, -0.5], [0.1, 0.4]]]")},
              {"final_state", fin}};
}

TEST(LindbladCotangents, ClosedSystemGradientsAreDifferencesOfTheOutputs) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]], [[0.9, 0.0], [1.0, 0.3], [1.2, -0.2]]]");
  p["drift_coeffs"] = {0.05};  // shared
  p["psi0"] = json::parse("[[0.6, 0], [0, 0.8], 0]");
  p["cotangents"] = all_cotangents(3, 0);
  expect_all_gradients_are_differences(p);
  const json got = qj::evaluate(p);
  EXPECT_EQ(got["grad_amplitudes"].size(), 2u);  // per task, like amplitudes
  EXPECT_EQ(got["grad_durations"].size(), 3u);   // [n_seg], shared
  EXPECT_EQ(got["grad_rates"], json::array());   // no jumps
}

TEST(LindbladCotangents, OpenSystemGradientsAreDifferencesOfTheOutputs) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");  // shared
  p["drift_coeffs"] = json::parse("[[0.05], [-0.1]]");                     // per task: B = 2
  p["jumps"] = json::parse(R"([[[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]],
                                 [[0, 0, 0], [0, 1, 0], [0, 0, 2]]])");  // decay, dephasing
  p["rates"] = {0.03, 0.01};
  p["rho0"] = json::parse("[[0.7, [0.1, 0.2], 0], [[0.1, -0.2], 0.3, 0], [0, 0, 0]]");
  // Not Hermitian: only its Hermitian part counts, as for the outputs it multiplies.
  p["cotangents"] = all_cotangents(3, 3);
  expect_all_gradients_are_differences(p);
}

TEST(LindbladCotangents, OpenGateSuperoperatorCotangent) {
  // A damped qubit's channel: the cotangent of the [d^2][d^2] superoperator alone.
  json p = json::parse(R"({"kind": "lindblad", "dim": 2, "gate": true,
      "controls": [[[0, 0.5], [0.5, 0]]], "amplitudes": [[1.2], [0.7]], "durations": [0.8, 0.5],
      "jumps": [[[0, 1], [0, 0]]], "rates": [[0.1], [0.3]]})");
  json fin = json::array();
  for (int b = 0; b < 2; ++b) {
    json s = json::array();
    for (int r = 0; r < 4; ++r) {
      json row = json::array();
      for (int c = 0; c < 4; ++c) row.push_back(json::array({0.1 * (r - c) + 0.2 * b, 0.05 * (r + c)}));
      s.push_back(row);
    }
    fin.push_back(s);
  }
  p["cotangents"] = {{"final_state", fin}};
  expect_all_gradients_are_differences(p);
}

// "gradients": true alone is the unit cotangent on the fidelity (with a target), else
// on the leakage, and now reports grad_durations too.
TEST(LindbladCotangents, GradientsAloneAreUnitCotangents) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_coeffs"] = {0.05};
  p["jumps"] = json::parse("[[[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]]]");
  p["rates"] = json::parse("[[0.02], [0.08]]");
  json alone = p, explicit_cot = p;
  alone["gradients"] = true;
  explicit_cot["cotangents"] = {{"fidelity", {1, 1}}};
  explicit_cot["gradients"] = true;  // allowed with cotangents
  const json a = qj::evaluate(alone), b = qj::evaluate(explicit_cot);
  ASSERT_TRUE(a.contains("grad_durations")) << a.dump();
  EXPECT_EQ(a, b);

  alone.erase("target");
  explicit_cot.erase("target");
  explicit_cot["cotangents"] = {{"leakage", {1, 1}}};
  EXPECT_EQ(qj::evaluate(alone), qj::evaluate(explicit_cot));
  // The unit fidelity cotangent's gradients are the differences of the fidelities' sum.
  p["cotangents"] = {{"fidelity", {1, 1}}};
  expect_all_gradients_are_differences(p);
}

TEST(LindbladCotangents, RealEntriesAndPairsAreTheSame) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_coeffs"] = {0.05};
  p["psi0"] = json::parse("[1, 0, 0]");
  json numbers = p;
  p["cotangents"] = {{"final_state", json::parse("[[[0.5, 0], [-0.2, 0], [0.1, 0]]]")}};
  numbers["cotangents"] = {{"final_state", json::parse("[[0.5, -0.2, 0.1]]")}};
  EXPECT_EQ(qj::evaluate(p), qj::evaluate(numbers));
}

TEST(LindbladCotangents, ParsedProblemHoldsThem) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]], [[0.9, 0.0], [1.0, 0.3], [1.2, -0.2]]]");
  p["drift_coeffs"] = {0.05};
  p["cotangents"] = all_cotangents(3, 0);
  const qj::LindbladProblem lp = qj::parse_lindblad_problem(p);
  EXPECT_EQ(lp.gradient_of, qj::LindbladProblem::GradientOf::cotangents);
  EXPECT_EQ(lp.cotangents.fidelity, (std::vector<double>{0.7, -1.3}));
  EXPECT_EQ(lp.cotangents.expvals.size(), 16u);  // [2][4][2], row-major
  EXPECT_EQ(lp.cotangents.expvals[2], 0.5);
  ASSERT_EQ(lp.cotangents.final_state.size(), 6u);
  EXPECT_EQ(lp.cotangents.final_state[4], qfleet::Complex(0.1 * 2 - 0.05, 0.03 * 2 - 0.02));  // task 1, entry 1

  // The model alone (a program's system, its data given per call): cotangents are not read.
  json model = p;
  model.erase("amplitudes");
  const qj::LindbladProblem m = qj::parse_lindblad_problem(model, /*model_only=*/true);
  EXPECT_EQ(m.gradient_of, qj::LindbladProblem::GradientOf::none);
  EXPECT_TRUE(m.cotangents.fidelity.empty());
}

// No psi0, rho0 or gate: the pure state |0>.
TEST(LindbladCotangents, InitialStateDefaultsToZero) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_coeffs"] = {0.05};
  p["gradients"] = true;
  json with = p;
  with["psi0"] = {1, 0, 0};
  EXPECT_EQ(qj::evaluate(p), qj::evaluate(with));  // closed: state vectors

  p["jumps"] = json::parse("[[[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]]]");
  p["rates"] = {0.05};
  with = p;
  with["psi0"] = {1, 0, 0};
  const json open = qj::evaluate(p);
  EXPECT_EQ(open, qj::evaluate(with));  // open: density matrices
  EXPECT_EQ(open["expvals"][0][0], json::array({0.0, 0.0}));  // <n> and <X01> of |0><0|
}

// ------------------------------------------------------------- .npy files ---

// The numbers of a nested list in C order.
void flatten_into(const json& j, std::vector<double>& out) {
  if (!j.is_array()) {
    out.push_back(j.get<double>());
    return;
  }
  for (const json& e : j) flatten_into(e, out);
}
std::vector<double> flat(const json& j) {
  std::vector<double> v;
  flatten_into(j, v);
  return v;
}

TEST(LindbladCotangents, NpyCotangentsEqualJsonCotangents) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]], [[0.9, 0.0], [1.0, 0.3], [1.2, -0.2]]]");
  p["drift_coeffs"] = {0.05};
  p["psi0"] = json::parse("[[0.6, 0], [0, 0.8], 0]");
  p["cotangents"] = all_cotangents(3, 0);
  const json want = qj::evaluate(p);
  const json& c = p["cotangents"];
  using qfleet_test::npy_file;
  std::vector<std::string> files = {npy_file({2}, flat(c["fidelity"])), npy_file({2}, flat(c["leakage"])),
                                    npy_file({2, 4, 2}, flat(c["expvals"])),
                                    npy_file({2, 3, 2}, flat(c["final_state"]))};  // [re, im] pairs
  json n = p;
  n["cotangents"] = {{"fidelity", {{"npy", files[0]}}},
                     {"leakage", {{"npy", files[1]}}},
                     {"expvals", {{"npy", files[2]}}},
                     {"final_state", {{"npy", files[3]}}}};
  EXPECT_EQ(qj::evaluate(n), want);
  // A real final-state cotangent: the shape of the state itself.
  std::vector<double> re;
  for (const json& task : c["final_state"])
    for (const json& z : task) re.push_back(z[0].get<double>());
  files.push_back(qfleet_test::npy_file({2, 3}, re));
  n["cotangents"]["final_state"] = {{"npy", files.back()}};
  json pairs = p;
  for (json& task : pairs["cotangents"]["final_state"])
    for (json& z : task) z[1] = 0.0;
  EXPECT_EQ(qj::evaluate(n), qj::evaluate(pairs));
  for (const std::string& f : files) std::remove(f.c_str());
}

TEST(LindbladCotangents, GradDurationsWrittenAsNpy) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_coeffs"] = {0.05};
  p["cotangents"] = {{"fidelity", {0.5}}, {"leakage", {2.0}}};
  const json want = qj::evaluate(p);
  p["output_npy"] = "cot";
  const std::string path = qfleet_test::write_temp(p.dump());
  const CliResult r = run_cli({"eval", path});
  std::remove(path.c_str());
  ASSERT_EQ(r.status, 0) << r.err;
  const json got = json::parse(r.out);
  const json& g = got["grad_durations"];
  EXPECT_EQ(g["shape"], json::array({3}));
  EXPECT_EQ(g["dtype"], "float64");
  const std::string file = g["npy"].get<std::string>();
  const std::string bytes = qfleet_test::read_file(file);
  ASSERT_GE(bytes.size(), 3 * sizeof(double));
  for (std::size_t k = 0; k < 3; ++k) {  // the data ends the file
    double v = 0;
    bytes.copy(reinterpret_cast<char*>(&v), sizeof v, bytes.size() - (3 - k) * sizeof v);
    EXPECT_EQ(v, want["grad_durations"][k].get<double>()) << k;
  }
  for (const char* key : {"fidelity", "leakage", "final_state", "expvals", "grad_amplitudes", "grad_drift_coeffs",
                          "grad_rates", "grad_durations"}) {
    ASSERT_TRUE(got.contains(key)) << key;
    std::remove(got[key]["npy"].get<std::string>().c_str());
  }
}

// ----------------------------------------------------------------- errors ---

struct Case {
  std::string name;
  std::function<void(json&)> edit;
  std::string message;  // the whole line after "qfleet: error: "
};

TEST(LindbladCotangents, BadCotangentsExitWithStatus2AndOneLine) {
  json base = three_level();
  base["amplitudes"] = json::parse("[[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]], [[0.9, 0.0], [1.0, 0.3], [1.2, -0.2]]]");
  base["drift_coeffs"] = {0.05};
  base["cotangents"] = all_cotangents(3, 0);
  std::vector<std::string> files;  // .npy files the cases write
  auto npy = [&files](const std::vector<std::size_t>& shape, const std::vector<double>& values) {
    files.push_back(qfleet_test::npy_file(shape, values));
    return json{{"npy", files.back()}};
  };
  const std::vector<Case> cases = {
      {"not an object", [](json& p) { p["cotangents"] = {1, 1}; },
       "cotangents: expected an object of the outputs' cotangents, e.g. {\"fidelity\": [1]}, got an array of 2 "
       "element(s)"},
      {"unknown key", [](json& p) { p["cotangents"]["fidelty"] = {1, 1}; },
       "cotangents: unknown key \"fidelty\" (did you mean \"fidelity\"?); allowed keys: fidelity, leakage, expvals, "
       "final_state"},
      {"empty", [](json& p) { p["cotangents"] = json::object(); },
       "cotangents: is empty; give at least one of \"fidelity\", \"leakage\", \"expvals\" and \"final_state\""},
      {"gradients false", [](json& p) { p["gradients"] = false; },
       "cotangents: asks for gradients, but \"gradients\" is false (leave it out or set it to true)"},
      {"fidelity without target", [](json& p) { p.erase("target"); },
       "cotangents.fidelity: needs a \"target\" (it gives the fidelity)"},
      {"leakage without subspace", [](json& p) { p.erase("subspace"); },
       "cotangents.leakage: needs a \"subspace\" (it gives the leakage)"},
      {"expvals without observables", [](json& p) { p.erase("observables"); },
       "cotangents.expvals: needs \"observables\" (they give the expvals)"},
      {"fidelity length", [](json& p) { p["cotangents"]["fidelity"] = {1, 1, 1}; },
       "cotangents.fidelity: expected a list of 2 values, one per task, got 3"},
      {"fidelity shared", [](json& p) { p["cotangents"]["fidelity"] = 1; },
       "cotangents.fidelity: expected a list of 2 values, one per task, got the number 1"},
      {"leakage string", [](json& p) { p["cotangents"]["leakage"][1] = "1"; },
       "cotangents.leakage[1]: expected a number, got the string \"1\""},
      {"expvals boundaries", [](json& p) { p["cotangents"]["expvals"][1].erase(3); },
       "cotangents.expvals[1]: expected a list of 4 segment boundaries (n_seg + 1), got 3"},
      {"expvals observables", [](json& p) { p["cotangents"]["expvals"][0][2] = {1}; },
       "cotangents.expvals[0][2]: expected a list of 2 values, one per observable, got 1"},
      {"final state entries", [](json& p) { p["cotangents"]["final_state"][1].erase(0); },
       "cotangents.final_state[1]: expected a list of 3 entries, got 2"},
      {"final state entry", [](json& p) { p["cotangents"]["final_state"][0][2] = {1, 2, 3}; },
       "cotangents.final_state[0][2]: expected a number or a complex number as [re, im], got an array of 3 "
       "element(s)"},
      {"final state tasks", [](json& p) { p["cotangents"]["final_state"].erase(1); },
       "cotangents.final_state: expected a list of 2 tasks, got 1"},
      {"final state density shape",
       [](json& p) {
         p["jumps"] = json::parse("[[[0, 1, 0], [0, 0, 0], [0, 0, 0]]]");
         p["rates"] = {0.1};
       },
       "cotangents.final_state[0][0]: expected a list of 3 entries, got 2"},
      {"npy shape",
       [&](json& p) { p["cotangents"]["expvals"] = npy({2, 3, 2}, std::vector<double>(12, 0.5)); },
       "cotangents.expvals: the .npy array has shape (2, 3, 2); expected (2, 4, 2)"},
      {"npy complex shape",
       [&](json& p) { p["cotangents"]["final_state"] = npy({2, 3, 3}, std::vector<double>(18, 0)); },
       "cotangents.final_state: the .npy array has shape (2, 3, 3); expected (2, 3) or, as [re, im] pairs, "
       "(2, 3, 2)"},
      {"npy length", [&](json& p) { p["cotangents"]["leakage"] = npy({3}, {1, 2, 3}); },
       "cotangents.leakage: the .npy array has shape (3,); expected (2,)"},
  };
  for (const Case& c : cases) {
    json p = base;
    c.edit(p);
    const std::string path = qfleet_test::write_temp(p.dump());
    const CliResult r = run_cli({"eval", path});
    std::remove(path.c_str());
    EXPECT_EQ(r.status, 2) << c.name << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << c.name;
    EXPECT_EQ(r.err, "qfleet: error: " + c.message + "\n") << c.name;
  }
  for (const std::string& f : files) std::remove(f.c_str());
}

// Values a JSON text cannot hold, from programs that build problems in memory.
TEST(LindbladCotangents, NonFiniteCotangentsAreRejected) {
  json p = three_level();
  p["amplitudes"] = json::parse("[[1.1, 0.2], [1.3, -0.1], [0.8, 0.4]]");
  p["drift_coeffs"] = {0.05};
  const json all = all_cotangents(3, 0);  // two tasks' worth; this problem has one
  p["cotangents"] = {{"expvals", {all["expvals"][0]}}, {"final_state", {all["final_state"][0]}}};
  EXPECT_NO_THROW(qj::evaluate(p));
  auto message = [](const json& q) -> std::string {
    try {
      qj::evaluate(q);
    } catch (const qj::ProblemError& e) {
      return e.path() + " | " + e.what();
    }
    return "no error";
  };
  json q = p;
  q["cotangents"]["expvals"][0][1][0] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(message(q).rfind("cotangents.expvals[0][1][0] | qfleet: cotangents.expvals[0][1][0]: must be finite", 0),
            0u)
      << message(q);
  q = p;
  q["cotangents"]["final_state"][0][2][1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message(q).rfind("cotangents.final_state[0][2][1] | ", 0), 0u) << message(q);
}

}  // namespace lindblad_cotangents_test
