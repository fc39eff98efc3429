// (a) The real binary on the worked example docs/examples/circuit.json, every
// number checked against the independent reference in tests/reference/ (never
// against qfleet itself); and the output shown in docs/cli.md kept in sync.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reference/circuit_json.hpp"
#include "run_cli.hpp"

namespace example_cli_test {

using nlohmann::json;
using qfleet_test::run_cli;
using qfleet_test::source_path;
namespace jref = ref::circuit_json;

const std::string kExample = "docs/examples/circuit.json";

json load_example() {
  return json::parse(qfleet_test::read_file(source_path(kExample)));
}

void expect_near_all(const json& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].is_number()) << what << "[" << i << "]";
    EXPECT_NEAR(got[i].get<double>(), want[i], tol) << what << "[" << i << "]";
  }
}

// Checks a result of the example against the reference: values to 1e-12, gradients
// (finite differences of the reference) to 1e-7.
void check_against_reference(const json& problem, const json& out) {
  const int n = problem["qubits"].get<int>();
  const auto samples = jref::samples(problem);
  const std::size_t K = problem["observables"].size();
  const std::size_t P = std::size_t{1} << problem["probs"].size();
  ASSERT_EQ(out["qubits"], n);
  ASSERT_EQ(out["batch"], samples.size());
  ASSERT_EQ(out["precision"], "complex128");
  ASSERT_TRUE(out["isa"].is_string());
  ASSERT_EQ(out["expvals"].size(), samples.size());
  ASSERT_EQ(out["probs"].size(), samples.size());
  for (std::size_t b = 0; b < samples.size(); ++b) {
    const std::string at = std::string("sample ") + std::to_string(b);
    const std::vector<double> ref = jref::outputs(problem, samples[b]);
    ASSERT_EQ(ref.size(), K + P);
    expect_near_all(out["expvals"][b], std::vector<double>(ref.begin(), ref.begin() + K), 1e-12,
                    at + " expvals");
    expect_near_all(out["probs"][b], std::vector<double>(ref.begin() + K, ref.end()), 1e-12,
                    at + " probs");

    std::vector<std::vector<double>> jx, jw;
    jref::jacobians(problem, samples[b], jx, jw);
    ASSERT_EQ(out["grad_inputs"][b].size(), K);
    ASSERT_EQ(out["grad_weights"][b].size(), K);
    for (std::size_t k = 0; k < K; ++k) {
      expect_near_all(out["grad_inputs"][b][k], jx[k], 1e-7,
                      at + " grad_inputs[" + std::to_string(k) + "]");
      expect_near_all(out["grad_weights"][b][k], jw[k], 1e-7,
                      at + " grad_weights[" + std::to_string(k) + "]");
    }
    ASSERT_EQ(out["grad_probs_inputs"][b].size(), P);
    ASSERT_EQ(out["grad_probs_weights"][b].size(), P);
    for (std::size_t j = 0; j < P; ++j) {
      expect_near_all(out["grad_probs_inputs"][b][j], jx[K + j], 1e-7, at + " grad_probs_inputs");
      expect_near_all(out["grad_probs_weights"][b][j], jw[K + j], 1e-7, at + " grad_probs_weights");
    }
  }
}

TEST(CliExample, HasWhatTheDocPromises) {
  const json p = load_example();
  EXPECT_EQ(p["kind"], "circuit");
  EXPECT_GE(p["qubits"].get<int>(), 2);
  EXPECT_LE(p["qubits"].get<int>(), 3);
  EXPECT_EQ(p["inputs"].size(), 2u);  // batch 2
  EXPECT_EQ(p["gradients"], true);
  ASSERT_EQ(p["observables"].size(), 1u);
  EXPECT_EQ(p["observables"][0].size(), 2u);  // two terms
  EXPECT_TRUE(p.contains("probs"));
  EXPECT_FALSE(p["weights"].empty());
}

TEST(CliExample, EveryNumberMatchesTheReference) {
  const json problem = load_example();
  const auto r = run_cli({"eval", source_path(kExample)});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "default output is one line";
  check_against_reference(problem, json::parse(r.out));
}

TEST(CliExample, StdinAndIndentGiveTheSameNumbers) {
  const std::string text = qfleet_test::read_file(source_path(kExample));
  const auto from_file = run_cli({"eval", source_path(kExample)});
  const auto from_stdin = run_cli({"eval", "-", "--indent", "2"}, text);
  ASSERT_EQ(from_stdin.status, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.err, "");
  EXPECT_EQ(json::parse(from_stdin.out), json::parse(from_file.out));  // exact: full precision
  check_against_reference(json::parse(text), json::parse(from_stdin.out));
}

// docs/cli.md shows the example's output between <!-- example-output:begin/end -->.
TEST(CliExample, OutputShownInTheDocIsCurrent) {
  const std::string doc = qfleet_test::read_file(source_path("docs/cli.md"));
  const std::string block = qfleet_test::doc_block(doc, "example-output");
  ASSERT_FALSE(block.empty()) << "docs/cli.md: no example-output block";
  json shown = json::parse(block);
  const json problem = load_example();
  check_against_reference(problem, shown);  // the doc's numbers are right...

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
    const json a = actual[item.key()].flatten(), s = item.value().flatten();
    if (!s.is_object()) {
      EXPECT_EQ(a, s) << item.key();
      continue;
    }
    ASSERT_EQ(a.size(), s.size()) << item.key();
    for (const auto& leaf : s.items()) {
      ASSERT_TRUE(a.contains(leaf.key())) << item.key() << leaf.key();
      if (leaf.value().is_number()) {
        EXPECT_NEAR(a[leaf.key()].get<double>(), leaf.value().get<double>(), 1e-12)
            << item.key() << leaf.key();
      } else {
        EXPECT_EQ(a[leaf.key()], leaf.value()) << item.key() << leaf.key();
      }
    }
  }
}

}  // namespace example_cli_test
