// (b) qfleet::json_problem in-process: templates, gates, per-sample weights, complex64,
// states, samples, options and the parsing API, checked against the independent
// reference (tests/reference/circuit_json.hpp).
#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/json_problem.hpp"
#include "reference/circuit_json.hpp"

namespace evaluate_cli_test {

using nlohmann::json;
namespace qj = qfleet::json_problem;
namespace jref = ref::circuit_json;

// Splits the reference's flat outputs of one sample into the contract's keys.
struct Split {
  std::vector<double> expvals;
  std::vector<std::vector<double>> probs;  // per probs measurement
};

std::vector<std::vector<int>> probs_lists(const json& problem) {
  std::vector<std::vector<int>> lists;
  if (!problem.contains("probs")) return lists;
  const json& pr = problem["probs"];
  if (pr[0].is_array()) {
    for (const json& l : pr) lists.push_back(l.get<std::vector<int>>());
  } else {
    lists.push_back(pr.get<std::vector<int>>());
  }
  return lists;
}

void expect_row(const json& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i].get<double>(), want[i], tol) << what << "[" << i << "]";
}

// Checks expvals, probs and (if present) every gradient of `out` against the
// reference, for any "probs" shape.
void check(const json& problem, const json& out, double tol = 1e-10, double gtol = 1e-7) {
  const auto samples = jref::samples(problem);
  const std::size_t B = samples.size(), K = problem.value("observables", json::array()).size();
  const auto lists = probs_lists(problem);
  const bool nested = problem.contains("probs") && problem["probs"][0].is_array();
  ASSERT_EQ(out["batch"], B);
  ASSERT_EQ(out["qubits"], problem["qubits"]);
  ASSERT_EQ(out["expvals"].size(), B);
  // A per-measurement value of "probs"-shaped keys.
  auto meas = [&](const json& v, std::size_t m) -> const json& { return nested ? v[m] : v; };
  if (nested) {
    ASSERT_EQ(out["probs"].size(), lists.size());
  }
  for (std::size_t b = 0; b < B; ++b) {
    const std::string at = std::string("sample ") + std::to_string(b);
    const auto ref = jref::outputs(problem, samples[b]);
    expect_row(out["expvals"][b], std::vector<double>(ref.begin(), ref.begin() + K), tol,
               at + " expvals");
    std::size_t off = K;
    std::vector<std::size_t> offsets;
    for (std::size_t m = 0; m < lists.size(); ++m) {
      offsets.push_back(off);
      const std::size_t P = std::size_t{1} << lists[m].size();
      expect_row(meas(out["probs"], m)[b],
                 std::vector<double>(ref.begin() + off, ref.begin() + off + P), tol,
                 at + " probs " + std::to_string(m));
      off += P;
    }
    if (!problem.value("gradients", false)) {
      EXPECT_FALSE(out.contains("grad_inputs"));
      continue;
    }
    std::vector<std::vector<double>> jx, jw;
    jref::jacobians(problem, samples[b], jx, jw);
    ASSERT_EQ(out["grad_inputs"][b].size(), K);
    for (std::size_t k = 0; k < K; ++k) {
      expect_row(out["grad_inputs"][b][k], jx[k], gtol, at + " grad_inputs " + std::to_string(k));
      expect_row(out["grad_weights"][b][k], jw[k], gtol, at + " grad_weights " + std::to_string(k));
    }
    for (std::size_t m = 0; m < lists.size(); ++m) {
      const std::size_t P = std::size_t{1} << lists[m].size();
      ASSERT_EQ(meas(out["grad_probs_inputs"], m)[b].size(), P);
      for (std::size_t j = 0; j < P; ++j) {
        expect_row(meas(out["grad_probs_inputs"], m)[b][j], jx[offsets[m] + j], gtol,
                   at + " grad_probs_inputs");
        expect_row(meas(out["grad_probs_weights"], m)[b][j], jw[offsets[m] + j], gtol,
                   at + " grad_probs_weights");
      }
    }
  }
}

json eval_text(const std::string& text) {
  return qj::evaluate(qj::parse_text(text, "test"));
}

TEST(CliEvaluate, TemplatesNestedProbsAndGradients) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 3,
    "ops": [
      {"template": "AngleEmbedding", "wires": [0, 1, 2], "rotation": "Y", "first_input": 1},
      {"template": "StronglyEntanglingLayers", "wires": [0, 1, 2], "layers": 2},
      {"template": "BasicEntanglerLayers", "wires": [2, 0, 1], "layers": 1, "rotation": "Z", "first_weight": 18},
      {"template": "StronglyEntanglingLayers", "wires": [1, 2], "layers": 1, "first_weight": 21,
       "ranges": [1], "imprimitive": "CZ"}
    ],
    "observables": [[[1.0, "Z0"]], [[0.3, "X0 Y1"], [-0.7, "Z1 Z2"], [0.2, "I"]]],
    "probs": [[0], [2, 1]],
    "inputs": [[9.0, 0.1, 0.2, 0.3], [9.0, -0.5, 1.1, 0.4], [9.0, 2.0, -1.0, 0.0]],
    "weights": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8,
                -0.3, 0.25, 0.5, 0.11, 0.22, 0.33, 0.44, 0.55, 0.66],
    "gradients": true
  })");
  const json out = qj::evaluate(p);
  check(p, out);
  // Input column 0 is read by nothing: kept (4 columns), with zero gradient.
  EXPECT_EQ(out["grad_inputs"][0][0].size(), 4u);
  EXPECT_EQ(out["grad_inputs"][1][1][0], 0.0);
  EXPECT_EQ(out["probs"].size(), 2u);        // one entry per measurement
  EXPECT_EQ(out["probs"][1][2].size(), 4u);  // [m][b][2^k]
}

TEST(CliEvaluate, AmplitudeEmbeddingWithPaddingAndNormalisation) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [
      {"template": "AmplitudeEmbedding", "wires": [0, 1], "n_features": 3, "normalize": true, "pad_with": 0.5},
      {"gate": "RY", "wires": [0], "params": [{"weight": 0}]},
      {"gate": "CNOT", "wires": [0, 1]},
      {"gate": "RX", "wires": [1], "params": [{"input": 1, "scale": 2.0}]}
    ],
    "observables": [[[1.0, "X0"], [0.5, "Z1"]]],
    "probs": [1],
    "inputs": [[0.3, 0.9, -0.4], [1.0, 0.2, 0.7]],
    "weights": [0.45],
    "gradients": true
  })");
  check(p, qj::evaluate(p));
}

TEST(CliEvaluate, AmplitudeEmbeddingOnSomeWiresWithoutNormalising) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 3,
    "ops": [
      {"template": "AmplitudeEmbedding", "wires": [2, 0], "first_input": 1},
      {"gate": "Hadamard", "wires": [1]},
      {"gate": "CRX", "wires": [1, 2], "params": [{"weight": 0}]}
    ],
    "observables": [[[1.0, "Z2"]], [[1.0, "Y0 X1"]]],
    "probs": [0, 1, 2],
    "inputs": [[7.0, 0.5, 0.5, 0.5, 0.5], [7.0, 0.6, 0.0, 0.0, 0.8]],
    "weights": [0.3],
    "gradients": true
  })");
  check(p, qj::evaluate(p));
}

TEST(CliEvaluate, CatalogueGatesAliasesAndQubitUnitary) {
  const double r = 1.0 / std::sqrt(2.0);
  json p = json::parse(R"({
    "kind": "circuit", "qubits": 3,
    "ops": [
      {"gate": "H", "wires": [0]},
      {"gate": "CX", "wires": [0, 2]},
      {"gate": "Rot", "wires": [1], "params": [0.2, {"weight": 0}, {"input": 0, "scale": -1.5}]},
      {"gate": "PhaseShift", "wires": [2], "params": [{"weight": 1}]},
      {"gate": "IsingZZ", "wires": [1, 2], "params": [{"weight": 2}]},
      {"gate": "CRY", "wires": [2, 0], "params": [{"input": 1}]},
      {"gate": "ControlledPhaseShift", "wires": [0, 1], "params": [0.9]},
      {"gate": "SWAP", "wires": [0, 2]},
      {"gate": "S", "wires": [1]},
      {"gate": "T", "wires": [0]},
      {"gate": "Toffoli", "wires": [0, 1, 2]},
      {"gate": "CZ", "wires": [1, 0]},
      {"gate": "CRZ", "wires": [0, 1], "params": [{"weight": 1, "scale": 0.5}]},
      {"gate": "PauliY", "wires": [1]}
    ],
    "observables": [[[1.0, "X0 X1"], [0.4, "Y2"]], [[1.0, "Z0 Y1 X2"]]],
    "probs": [2, 0],
    "inputs": [[0.7, -0.2], [1.3, 0.8]],
    "weights": [0.4, -1.1, 0.6],
    "gradients": true
  })");
  // A 2-wire unitary: H (x) RY(0.8) with a phase.
  json u = json::array();
  const auto ry = ref::RY(0.8);
  const std::complex<double> ph = std::exp(std::complex<double>(0, 0.3));
  for (int a = 0; a < 4; ++a) {
    json row = json::array();
    for (int c = 0; c < 4; ++c) {
      const double h = ((a >> 1) & (c >> 1)) ? -r : r;
      const std::complex<double> z = ph * h * ry(a & 1, c & 1);
      row.push_back({z.real(), z.imag()});
    }
    u.push_back(row);
  }
  p["ops"].push_back({{"gate", "QubitUnitary"}, {"wires", {2, 1}}, {"matrix", u}});
  p["ops"].push_back({{"gate", "QubitUnitary"},
                      {"wires", {0}},
                      {"matrix", json::parse("[[[0, 0], [1, 0]], [[1, 0], [0, 0]]]")}});
  check(p, qj::evaluate(p));
}

TEST(CliEvaluate, PerSampleWeightsWithoutInputs) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [
      {"gate": "RX", "wires": [0], "params": [{"weight": 0}]},
      {"gate": "RY", "wires": [1], "params": [{"weight": 1}]},
      {"gate": "CNOT", "wires": [1, 0]}
    ],
    "observables": [[[1.0, "Z0"]], [[2.0, "X1"]]],
    "weights": [[0.1, 0.2], [0.3, -0.4], [1.5, 2.5]],
    "gradients": true
  })");
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["batch"], 3);
  EXPECT_FALSE(out.contains("probs"));
  EXPECT_EQ(out["grad_inputs"][2][1].size(), 0u);  // [B][K][0]
  check(p, out);
  // Shared weights are the per-sample Jacobians too, not summed over the batch.
  const auto pq = qj::parse_circuit_problem(p);
  EXPECT_TRUE(pq.per_sample_weights);
  EXPECT_EQ(pq.batch, 3u);
}

TEST(CliEvaluate, PerSampleWeightsWithInputs) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 1,
    "ops": [{"gate": "RX", "wires": [0], "params": [{"input": 0}]},
            {"gate": "RY", "wires": [0], "params": [{"weight": 0}]}],
    "observables": [[[1.0, "Z0"]]],
    "inputs": [[0.2], [0.4]],
    "weights": [[0.5], [-0.5]],
    "gradients": true
  })");
  check(p, qj::evaluate(p));
}

TEST(CliEvaluate, NoInputsNoWeightsIsBatchOne) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [{"gate": "Hadamard", "wires": [0]}, {"gate": "CNOT", "wires": [0, 1]}],
    "probs": [0, 1], "gradients": true
  })");
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["batch"], 1);
  EXPECT_EQ(out["expvals"], json::parse("[[]]"));  // no observables: [B][0]
  EXPECT_EQ(out["grad_inputs"], json::parse("[[]]"));
  EXPECT_EQ(out["grad_probs_weights"], json::parse("[[[],[],[],[]]]"));
  check(p, out);
}

TEST(CliEvaluate, Complex64) {
  json p = json::parse(R"({
    "kind": "circuit", "qubits": 3,
    "ops": [
      {"template": "AngleEmbedding", "wires": [0, 1, 2]},
      {"template": "BasicEntanglerLayers", "wires": [0, 1, 2], "layers": 2, "rotation": "RY"}
    ],
    "observables": [[[1.0, "Z0 Z1"], [0.5, "X2"]]],
    "probs": [1],
    "inputs": [[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]],
    "weights": [0.3, 0.1, -0.2, 0.7, 0.8, 0.9],
    "precision": "complex64",
    "gradients": true
  })");
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["precision"], "complex64");
  check(p, out, 2e-6, 2e-5);
  p["precision"] = "complex128";
  EXPECT_EQ(qj::evaluate(p)["precision"], "complex128");
}

TEST(CliEvaluate, StatesMatchTheReference) {
  for (const std::string prec : {"complex128", "complex64"}) {
    const json p = json::parse(R"({
      "kind": "circuit", "qubits": 3,
      "ops": [
        {"gate": "Hadamard", "wires": [1]},
        {"gate": "RX", "wires": [0], "params": [{"input": 0}]},
        {"gate": "CRZ", "wires": [1, 2], "params": [{"weight": 0}]},
        {"gate": "CNOT", "wires": [0, 2]},
        {"gate": "U3", "wires": [2], "params": [0.3, 0.2, 0.1]}
      ],
      "observables": [[[1.0, "Z2"]]],
      "inputs": [[0.3], [2.1]],
      "weights": [0.8],
      "states": true,
      "precision": ")" + prec + R"("
    })");
    const json out = qj::evaluate(p);
    const auto samples = jref::samples(p);
    ASSERT_EQ(out["states"].size(), 2u);
    for (std::size_t b = 0; b < 2; ++b) {
      const ref::Vec psi = jref::final_state(p, samples[b]);
      const json& st = out["states"][b];
      ASSERT_EQ(st.size(), 8u);
      const double tol = prec == "complex64" ? 1e-6 : 1e-12;
      for (int i = 0; i < 8; ++i) {
        ASSERT_EQ(st[i].size(), 2u);
        EXPECT_NEAR(st[i][0].get<double>(), psi(i).real(), tol) << prec << " b=" << b << " i=" << i;
        EXPECT_NEAR(st[i][1].get<double>(), psi(i).imag(), tol) << prec << " b=" << b << " i=" << i;
      }
      const double z2 = ref::expval(psi, jref::observable(json::parse(R"([[1.0, "Z2"]])")), 3);
      EXPECT_NEAR(out["expvals"][b][0].get<double>(), z2, tol);
    }
  }
}

TEST(CliEvaluate, StatesOnlyProblemNeedsNoMeasurement) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [{"gate": "RY", "wires": [0], "params": [{"input": 0}]}, {"gate": "CNOT", "wires": [0, 1]}],
    "inputs": [[0.7]], "states": true
  })");
  const json out = qj::evaluate(p);
  ASSERT_EQ(out["expvals"].size(), 1u);
  EXPECT_TRUE(out["expvals"][0].empty());
  EXPECT_FALSE(out.contains("probs"));
  const json& st = out["states"][0];  // RY(0.7)|0> then CNOT: cos(0.35)|00> + sin(0.35)|11>
  EXPECT_NEAR(st[0][0].get<double>(), std::cos(0.35), 1e-14);
  EXPECT_NEAR(st[3][0].get<double>(), std::sin(0.35), 1e-14);
  EXPECT_NEAR(std::abs(st[1][0].get<double>()) + std::abs(st[2][0].get<double>()), 0.0, 1e-14);
}

TEST(CliEvaluate, SamplesAreReproducibleWithASeed) {
  json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [{"gate": "RY", "wires": [0], "params": [{"input": 0}]},
            {"gate": "CNOT", "wires": [0, 1]},
            {"gate": "PauliX", "wires": [1]}],
    "probs": [0, 1],
    "inputs": [[1.1], [0.0], [3.14159265358979]],
    "shots": 4000, "seed": 12345
  })");
  const json a = qj::evaluate(p), again = qj::evaluate(p);
  ASSERT_EQ(a["samples"].size(), 3u);
  ASSERT_EQ(a["samples"][0].size(), 4000u);
  EXPECT_EQ(a["samples"], again["samples"]);
  // Input 0: |01> always (index 1); input pi: |10> always (index 2).
  for (const json& s : a["samples"][1]) EXPECT_EQ(s, 1);
  for (const json& s : a["samples"][2]) EXPECT_EQ(s, 2);
  // Sample 0 follows its probabilities: only outcomes 1 and 2, frequencies close.
  std::map<int, int> count;
  for (const json& s : a["samples"][0]) ++count[s.get<int>()];
  EXPECT_EQ(count[0] + count[3], 0);
  const double p2 = a["probs"][0][2].get<double>();
  EXPECT_NEAR(count[2] / 4000.0, p2, 0.04);
  // Another seed: another sequence; no seed: seed 0, still reproducible.
  p["seed"] = 54321;
  EXPECT_NE(qj::evaluate(p)["samples"][0], a["samples"][0]);
  p.erase("seed");
  EXPECT_EQ(qj::evaluate(p)["samples"], qj::evaluate(p)["samples"]);
  p["seed"] = 0;
  const json zero = qj::evaluate(p);
  p.erase("seed");
  EXPECT_EQ(qj::evaluate(p)["samples"], zero["samples"]);
  // Threads do not change the streams.
  p["threads"] = 1;
  EXPECT_EQ(qj::evaluate(p)["samples"], zero["samples"]);
}

TEST(CliEvaluate, IsaAndThreadsOptions) {
  json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [{"template": "AngleEmbedding", "wires": [0, 1]},
            {"template": "StronglyEntanglingLayers", "wires": [0, 1], "layers": 1}],
    "observables": [[[1.0, "Z0 X1"]]],
    "inputs": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8], [0.9, 1.0]],
    "weights": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
    "gradients": true, "threads": 1, "isa": "baseline"
  })");
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["isa"], "baseline");
  check(p, out);
  for (const std::string& isa : qfleet::available_isas()) {
    p["isa"] = isa;
    p["threads"] = 2;
    const json o = qj::evaluate(p);
    EXPECT_EQ(o["isa"], isa);
    check(p, o);
  }
}

TEST(CliEvaluate, NullMeansDefault) {
  const json p = json::parse(R"({
    "kind": "circuit", "qubits": 2, "ops": null, "weights": null, "precision": null,
    "observables": [[[1.0, "Z1"]]], "gradients": null, "states": null, "shots": null
  })");
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["expvals"][0][0], 1.0);
  EXPECT_FALSE(out.contains("grad_inputs"));
  EXPECT_FALSE(out.contains("states"));
  EXPECT_FALSE(out.contains("samples"));
}

// What Python's builder takes, the JSON takes too: a Pauli word alone is the observable
// with coefficient 1 (expval("Z0")), and "automatic" is the one spelling ("auto", which
// qfleet once took, is refused naming it).
TEST(CliEvaluate, WordObservablesAndAutomaticAreWhatPythonTakes) {
  json p = json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [{"template": "AngleEmbedding", "wires": [0, 1]}],
    "observables": ["Z0", [[1.0, "Z0"]], "Z0 Z1"], "inputs": [[0.3, 1.1]],
    "device": "automatic", "simulator": "automatic"
  })");
  const json out = qj::evaluate(p);
  EXPECT_NEAR(out["expvals"][0][0].get<double>(), std::cos(0.3), 1e-14);  // <Z> after RX(0.3)
  EXPECT_EQ(out["expvals"][0][0], out["expvals"][0][1]);
  EXPECT_NEAR(out["expvals"][0][2].get<double>(), std::cos(0.3) * std::cos(1.1), 1e-14);
  p["observables"] = json::array({"Q0"});
  EXPECT_THROW(qj::evaluate(p), qj::ProblemError);
  p["observables"] = json::array({"Z0"});
  p["device"] = "autom";
  EXPECT_THROW(qj::evaluate(p), qj::ProblemError);
  p["device"] = "auto";
  try {
    qj::evaluate(p);
    ADD_FAILURE() << "device \"auto\" was taken";
  } catch (const qj::ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("\"auto\" is spelled \"automatic\""), std::string::npos) << e.what();
  }
}

TEST(CliEvaluate, ParseCircuitProblemExposesTheCircuit) {
  const auto p = qj::parse_circuit_problem(json::parse(R"({
    "kind": "circuit", "qubits": 3,
    "ops": [{"template": "BasicEntanglerLayers", "wires": [0, 1, 2], "layers": 2}],
    "observables": [[[1.0, "Z0"]], [[1.0, "Z1"]]],
    "probs": [[0, 1], [2]],
    "inputs": [[1, 2], [3, 4]],
    "weights": [1, 2, 3, 4, 5, 6, 7],
    "precision": "complex64", "threads": 3, "isa": "baseline",
    "gradients": true, "states": true, "shots": 10, "seed": 18446744073709551615
  })"));
  EXPECT_EQ(p.circuit.n_qubits(), 3);
  EXPECT_EQ(p.circuit.operations().size(), 12u);  // 2 x (3 RX + 3 CNOT)
  EXPECT_EQ(p.circuit.measurements().size(), 4u);
  EXPECT_EQ(p.circuit.n_inputs(), 2);   // reserved: the columns given
  EXPECT_EQ(p.circuit.n_weights(), 7);  // 6 read + 1 reserved
  EXPECT_EQ(p.batch, 2u);
  EXPECT_EQ(p.n_inputs, 2);
  EXPECT_EQ(p.n_weights, 7);
  EXPECT_EQ(p.inputs, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_FALSE(p.per_sample_weights);
  EXPECT_EQ(p.n_observables, 2);
  EXPECT_TRUE(p.probs_nested);
  EXPECT_EQ(p.probs, (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(p.options.precision, qfleet::Precision::complex64);
  EXPECT_EQ(p.options.num_threads, 3);
  EXPECT_EQ(p.options.isa, "baseline");
  EXPECT_TRUE(p.gradients);
  EXPECT_TRUE(p.states);
  EXPECT_EQ(p.shots, 10u);
  EXPECT_EQ(p.seed, 18446744073709551615ULL);
  const json out = qj::evaluate(p);
  EXPECT_EQ(out["samples"][1].size(), 10u);
  EXPECT_EQ(out["states"][1].size(), 8u);
}

TEST(CliEvaluate, ErrorsAreProblemErrorsWithPaths) {
  auto message = [](const std::string& text) -> std::string {
    try {
      eval_text(text);
    } catch (const qj::ProblemError& e) {
      return e.what();
    } catch (const qfleet::Error& e) {
      return std::string("library: ") + e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(R"({"kind": "lindbladd", "qubits": 2})"),
            "qfleet: kind: unknown problem kind \"lindbladd\" (supported kinds: \"circuit\", "
            "\"lindblad\")");
  EXPECT_EQ(message(R"({"kind": "lindblad", "qubits": 2})")
                .rfind("qfleet: unknown key \"qubits\"; allowed keys: kind, dim, H0,", 0),
            0u);
  EXPECT_EQ(
      message(
          R"({"kind": "circuit", "qubits": 1, "observables": [[[1, "Z0"]]], "ops": [{"gate": "RX",
              "wires": [0], "params": [{"wieght": 0}]}]})"),
      "qfleet: ops[0].params[0]: unknown key \"wieght\" (did you mean \"weight\"?); allowed keys: "
      "input, "
      "weight, scale");
  EXPECT_EQ(message(R"({"kind": "circuit", "qubits": 1, "observables": [[[1, "Z3"]]]})"),
            "qfleet: observables[0]: observable 'Z3' names wire 3 but the circuit has 1 qubits");
  EXPECT_EQ(message("{\"kind\": \"circuit\",\n \"qubits\": 1, \"qubits\": 2}"),
            "qfleet: test: invalid JSON: key \"qubits\" appears twice in the top-level object");
  EXPECT_EQ(
      message(R"({"kind": "circuit", "qubits": 1, "ops": [{"gate": "RX", "wires": [0],
              "params": [{"input": 0, "input": 1}]}]})"),
      "qfleet: test: invalid JSON: key \"input\" appears twice in the object at ops[0].params[0]");
  // Errors while running (not while parsing) are qfleet::Error too.
  EXPECT_EQ(
      message(R"({"kind": "circuit", "qubits": 1, "observables": [[[1, "Z0"]]], "isa": "sse1"})")
          .rfind("library: qfleet: instruction set 'sse1'", 0),
      0u);
}

TEST(CliEvaluate, DumpKeepsFullPrecision) {
  const json v =
      json::parse(R"({"a": [[0.1, 0.30000000000000004, 1e-300], [-0.0, 5, 123456789012345678]],
                                 "b": {"c": [], "d": {}}, "e": "x\ny", "f": [true, null]})");
  for (int indent : {-1, 0, 2, 4}) {
    const std::string s = qj::dump(v, indent);
    EXPECT_EQ(json::parse(s), v) << s;
    if (indent < 0) {
      EXPECT_EQ(s.find('\n'), std::string::npos);
    }
  }
  EXPECT_EQ(qj::dump(json::parse("[[1, 2], [3]]"), 2), "[\n  [1, 2],\n  [3]\n]");
  EXPECT_EQ(qj::dump(json::parse(R"({"a": [{"x": 1, "y": "z"}], "b": 2})"), 2),
            "{\n  \"a\": [\n    {\"x\": 1, \"y\": \"z\"}\n  ],\n  \"b\": 2\n}");
  EXPECT_EQ(qj::dump(json(0.1 + 0.2)), "0.30000000000000004");
}

TEST(CliEvaluate, GateCatalogueListsEveryGate) {
  const json g = qj::gate_catalogue();
  ASSERT_EQ(g.size(), qfleet::kGateTable.size());
  std::map<std::string, json> by_name;
  for (const json& e : g) {
    EXPECT_EQ(e.size(), 4u);
    by_name[e["name"].get<std::string>()] = e;
  }
  EXPECT_EQ(by_name["CRot"],
            json::parse(R"({"name": "CRot", "wires": 2, "params": 3, "controls": 1})"));
  EXPECT_EQ(by_name["Toffoli"]["controls"], 2);
  EXPECT_EQ(by_name["QubitUnitary"]["wires"], 0);
}

}  // namespace evaluate_cli_test
