// Structured operators in "kind": "lindblad" problems (docs/open_systems.md#structured-operators):
// a problem written with "pauli", "local" and "sum" operators gives the numbers of the same
// problem written with the d x d matrices built by the Eigen reference's Kronecker products, checked against the
// independent Eigen reference; and each malformed operator is a clear error naming its path.
#include <complex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/error.hpp"
#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"
#include "reference/dense.hpp"
#include "reference/lindblad_json.hpp"

namespace structured_ops_cli_test {

using nlohmann::json;
using ref::eye;
using ref::kron;
using ref::Mat;
using ref::pauli;
namespace qj = qfleet::json_problem;
namespace jref = ref::lindblad_json;

json as_json(const Mat& m) {
  json rows = json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    json row = json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back({m(i, j).real(), m(i, j).imag()});
    rows.push_back(row);
  }
  return rows;
}

const Mat kLower = ref::mat2(0, 1, 0, 0);  // sigma^- = |0><1|

// A qubit (subsystem 0) and a qutrit (subsystem 1): d = 6.
json base(json h0, json controls, json jumps, json subsystems) {
  json p = {{"kind", "lindblad"}, {"dim", 6}, {"H0", h0}, {"controls", controls}, {"jumps", jumps},
            {"n_segments", 3}, {"segment_duration", 0.4}, {"solver", "rk4"}, {"dt", 0.01}, {"gradients", true}};
  if (!subsystems.is_null()) p["subsystems"] = subsystems;
  p["amplitudes"] = json::parse("[[0.7, -0.4], [1.1, 0.2], [-0.3, 0.9]]");
  p["rates"] = {0.05, 0.02};
  json ps = json::array();
  for (int i = 0; i < 6; ++i) ps.push_back(i == 0 ? json{1.0, 0.0} : json{0.0, 0.0});
  p["psi0"] = ps;
  json tgt = json::array();
  for (int i = 0; i < 6; ++i) tgt.push_back(i == 4 ? json{1.0, 0.0} : json{0.0, 0.0});
  p["target"] = {{"state", tgt}};
  return p;
}

TEST(StructuredOperators, GiveTheNumbersOfTheDenseProblem) {
  Mat n3 = Mat::Zero(3, 3), a3 = Mat::Zero(3, 3);  // the qutrit's number and lowering operators
  n3(1, 1) = 1;
  n3(2, 2) = 2;
  a3(0, 1) = 1;
  a3(1, 2) = 1.4142135623730951;
  const Mat x3 = a3 + a3.adjoint();
  const json dense =
      base(as_json(0.3 * kron(pauli('Z'), eye(3)) + 0.1 * kron(eye(2), n3)),
           {as_json(kron(pauli('X'), eye(3))), as_json(kron(pauli('Y'), x3))},
           {as_json(kron(kLower, eye(3))), as_json(kron(eye(2), a3))}, nullptr);
  const json structured = base(
      json::parse(R"({"sum": [{"local": [[1, 0], [0, -1]], "on": [0], "coeff": 0.3},
                              {"local": [[0, 0, 0], [0, 1, 0], [0, 0, 2]], "on": [1], "coeff": [0.1, 0]}]})"),
      json::parse(R"([{"local": [[0, 1], [1, 0]], "on": [0]},
                      {"local": )" + as_json(kron(pauli('Y'), x3)).dump() + R"(, "on": [0, 1]}])"),
      json::parse(R"([{"local": [[0, 1], [0, 0]], "on": [0]},
                      {"local": [[0, 1, 0], [0, 0, 1.4142135623730951], [0, 0, 0]], "on": [1]}])"),
      json{2, 3});
  const json want = jref::evaluate(dense);
  const json got = qj::evaluate(structured), got_dense = qj::evaluate(dense);
  for (const char* key : {"fidelity", "grad_amplitudes", "grad_rates"}) {
    ASSERT_TRUE(got.contains(key)) << key;
    EXPECT_EQ(got[key], got_dense[key]) << key << ": structured and dense problems differ";
  }
  for (std::size_t b = 0; b < want["fidelity"].size(); ++b) {
    EXPECT_NEAR(got["fidelity"][b].get<double>(), want["fidelity"][b].get<double>(), 1e-10);
  }
}

TEST(StructuredOperators, PauliStringsOnQubits) {
  // Two qubits (subsystems default to qubits for dim 4): H0 = 0.5 X0 X1 - 0.2 Z1, a Y0 control,
  // sigma^- jumps as (X + iY) / 2 written as Pauli sums.
  json p = {{"kind", "lindblad"}, {"dim", 4}, {"n_segments", 2}, {"segment_duration", 0.5}, {"solver", "exact"},
            {"gradients", true}, {"amplitudes", json::parse("[[0.4], [-0.8]]")}, {"rates", {0.1, 0.05}}};
  p["psi0"] = json::parse("[1.0, 0.0, 0.0, 0.0]");
  p["target"] = json::parse(R"({"state": [0.0, 0.0, 0.0, 1.0]})");
  json dense = p, paulis = p;
  dense["H0"] = as_json(0.5 * kron(pauli('X'), pauli('X')) - 0.2 * kron(eye(2), pauli('Z')));
  // (json::array: a braced list of one json is that json itself under Clang, a list under GCC)
  dense["controls"] = json::array({as_json(kron(pauli('Y'), eye(2)))});
  dense["jumps"] = {as_json(kron(kLower, eye(2))), as_json(kron(eye(2), kLower))};
  paulis["H0"] = json::parse(R"({"pauli": [[0.5, "X0 X1"], [-0.2, "Z1"]]})");
  paulis["controls"] = json::parse(R"([{"pauli": "Y0"}])");
  paulis["jumps"] = json::parse(R"([{"pauli": [[0.5, "X0"], [[0, 0.5], "Y0"]]},
                                   {"pauli": [[0.5, "X1"], [[0, 0.5], "Y1"]]}])");
  const json want = jref::evaluate(dense), got = qj::evaluate(paulis);
  ASSERT_TRUE(got.contains("fidelity") && want.contains("fidelity")) << got.dump() << "\n" << want.dump();
  ASSERT_EQ(got["fidelity"].size(), want["fidelity"].size()) << got.dump() << "\n" << want.dump();
  for (std::size_t b = 0; b < want["fidelity"].size(); ++b) {
    EXPECT_NEAR(got["fidelity"][b].get<double>(), want["fidelity"][b].get<double>(), 1e-10);
  }
  EXPECT_EQ(got["fidelity"], qj::evaluate(dense)["fidelity"]);
}

std::string error_of(const json& p) {
  try {
    qj::evaluate(p);
  } catch (const qfleet::Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(StructuredOperators, MalformedOperatorsAreClearErrors) {
  const json x0 = json::parse(R"({"local": [[0, 1], [1, 0]], "on": [0]})");
  const json lower0 = json::parse(R"({"local": [[0, 1], [0, 0]], "on": [0]})");
  const json ok = base(json::parse(R"({"local": [[1, 0], [0, -1]], "on": [0]})"), {x0, x0}, {lower0, lower0}, nullptr);
  json fine = ok;
  fine["subsystems"] = json{2, 3};
  ASSERT_EQ(error_of(fine), "<no error>");
  struct Case {
    const char* key;
    const char* value;
    const char* needle;
  } cases[] = {
      {"H0", R"({"pauli": "Z0"})", "Pauli strings need a system of qubits"},  // d = 6
      {"H0", R"({"local": [[1, 0], [0, 1]]})", "missing key \"on\""},
      {"H0", R"({"local": [[1, 0], [0, 1]], "on": [5]})", "on[0]"},
      {"H0", R"({"local": [[1, 0], [0, 1]], "on": [1]})", "3x3"},
      {"H0", R"({"local": [[1, 0], [0, 1]], "on": [0], "pauli": "Z0"})", "exactly one of"},
      {"H0", R"({"sum": []})", "H0.sum: is empty"},
      {"H0", R"({"locl": [[1]]})", "did you mean \"local\""},
      {"H0", R"({"pauli": [[1, 2]]})", "H0.pauli[0]"},
      {"subsystems", "[2, 2]", "multiply to 4 but dim is 6"},
      {"H0", R"({"sum": [{"sum": [{"sum": [{"sum": [{"sum": [{"sum": [{"pauli": "Z0"}]}]}]}]}]}]})",
       "nest at most 4 deep"},
  };
  for (const Case& c : cases) {
    json p = ok;
    p["subsystems"] = json{2, 3};
    p[c.key] = json::parse(c.value);
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find(c.needle), std::string::npos) << c.value << "\nmessage: " << msg;
  }
}

}  // namespace structured_ops_cli_test
