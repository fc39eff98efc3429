// (c) Every error path of the real binary: exit status 2, nothing on stdout, and
// one line "qfleet: error: ..." on stderr naming the problem. Plus the other
// subcommands and flags.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/version.hpp"
#include "run_cli.hpp"

namespace {

using nlohmann::json;
using qfleet_test::CliResult;
using qfleet_test::run_cli;

// A valid problem that the cases below break one way each.
json base() {
  return json::parse(R"({
    "kind": "circuit", "qubits": 2,
    "ops": [
      {"gate": "RX", "wires": [0], "params": [{"input": 0}]},
      {"gate": "RY", "wires": [1], "params": [{"weight": 0}]},
      {"gate": "CNOT", "wires": [0, 1]}
    ],
    "observables": [[[1.0, "Z0"], [0.5, "X1"]]],
    "inputs": [[0.1]],
    "weights": [0.2]
  })");
}

void expect_error(const CliResult& r, const std::string& needle, const std::string& what) {
  EXPECT_EQ(r.status, 2) << what << "\nstderr: " << r.err;
  EXPECT_EQ(r.out, "") << what;
  EXPECT_EQ(r.err.rfind("qfleet: error: ", 0), 0u) << what << "\nstderr: " << r.err;
  ASSERT_FALSE(r.err.empty()) << what;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1)
      << what << ": not exactly one line\nstderr: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << what << "\nexpected: " << needle << "\nstderr:   " << r.err;
}

CliResult run_eval_text(const std::string& text) {
  const std::string path = qfleet_test::write_temp(text);
  CliResult r = run_cli({"eval", path});
  std::remove(path.c_str());
  return r;
}

struct Case {
  std::string name;
  std::function<void(json&)> edit;
  std::string needle;
};

TEST(CliErrors, BaseProblemIsValid) {
  const auto r = run_eval_text(base().dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(CliErrors, BadProblems) {
  const json qu = json::parse(
      R"({"gate": "QubitUnitary", "wires": [1], "matrix": [[[1, 0], [0, 0]], [[0, 0], [1, 0]]]})");
  const std::vector<Case> cases = {
      // kind and top-level keys
      {"kind missing", [](json& p) { p.erase("kind"); }, "missing key \"kind\""},
      {"lindblad",  // dispatched to the lindblad reader, which knows no circuit keys
       [](json& p) {
         p["kind"] = "lindblad";
         p["hamiltonian"] = 1;
       },
       "unknown key \"hamiltonian\"; allowed keys: kind, dim, H0"},
      {"unknown kind", [](json& p) { p["kind"] = "Circuit"; },
       "kind: unknown problem kind \"Circuit\""},
      {"kind type", [](json& p) { p["kind"] = 3; }, "kind: expected a string, got the number 3"},
      {"typo key", [](json& p) { p["gradient"] = true; },
       "unknown key \"gradient\" (did you mean \"gradients\"?); allowed keys: kind, qubits, ops"},
      {"unknown key", [](json& p) { p["hello"] = true; }, "unknown key \"hello\"; allowed keys:"},
      {"qubits missing", [](json& p) { p.erase("qubits"); }, "missing key \"qubits\""},
      {"qubits string", [](json& p) { p["qubits"] = "2"; },
       "qubits: expected an integer, got the string \"2\""},
      {"qubits fraction", [](json& p) { p["qubits"] = 2.5; },
       "qubits: expected an integer, got the number 2.5"},
      {"qubits zero", [](json& p) { p["qubits"] = 0; },
       "qubits: a circuit needs 1 to 62 qubits, got 0"},
      {"qubits huge", [](json& p) { p["qubits"] = 1e30; }, "qubits: expected an integer"},
      {"qubits too many for memory", [](json& p) { p["qubits"] = 50; }, "50-qubit state needs"},
      // ops
      {"ops type", [](json& p) { p["ops"] = json::object(); },
       "ops: expected a list of operations, got an object"},
      {"op type", [](json& p) { p["ops"][0] = 3; }, "ops[0]: expected an operation object"},
      {"gate unknown", [](json& p) { p["ops"][1]["gate"] = "RXX"; },
       "ops[1].gate: unknown gate 'RXX'; known gates:"},
      {"gate type", [](json& p) { p["ops"][1]["gate"] = 1; },
       "ops[1].gate: expected a string, got the number 1"},
      {"gate and template", [](json& p) { p["ops"][1]["template"] = "AngleEmbedding"; },
       "ops[1]: an operation needs exactly one of \"gate\", \"template\" or \"channel\""},
      {"neither gate nor template", [](json& p) { p["ops"][1] = json::object(); },
       "exactly one of"},
      {"op unknown key",
       [](json& p) {
         p["ops"][2]["wire"] = {0, 1};
       },
       "ops[2]: unknown key \"wire\" (did you mean \"wires\"?)"},
      {"wires missing", [](json& p) { p["ops"][2].erase("wires"); },
       "ops[2]: missing key \"wires\""},
      {"wires count", [](json& p) { p["ops"][2]["wires"] = {0}; },
       "ops[2]: CNOT acts on 2 wire(s), got 1 [0]"},
      {"wire range",
       [](json& p) {
         p["ops"][2]["wires"] = {0, 5};
       },
       "ops[2]: CNOT: wire 5 out of range for 2 qubits"},
      {"wire repeated",
       [](json& p) {
         p["ops"][2]["wires"] = {1, 1};
       },
       "wire 1 repeated"},
      {"wires type", [](json& p) { p["ops"][0]["wires"] = "0"; },
       "ops[0].wires: expected a list of wires, got the string \"0\""},
      {"wire type", [](json& p) { p["ops"][0]["wires"] = {true}; },
       "ops[0].wires[0]: expected an integer, got true"},
      {"param type", [](json& p) { p["ops"][0]["params"][0] = "x"; },
       "ops[0].params[0]: expected a number, {\"input\": i} or {\"weight\": j}, got the string "
       "\"x\""},
      {"param key typo",
       [](json& p) {
         p["ops"][1]["params"][0] = {{"wieght", 0}};
       },
       "ops[1].params[0]: unknown key \"wieght\" (did you mean \"weight\"?)"},
      {"param both",
       [](json& p) {
         p["ops"][1]["params"][0] = {{"weight", 0}, {"input", 0}};
       },
       "ops[1].params[0]: a parameter object needs exactly one of \"input\" or \"weight\""},
      {"param index negative",
       [](json& p) {
         p["ops"][0]["params"][0] = {{"input", -1}};
       },
       "ops[0].params[0].input: must be at least 0, got -1"},
      {"param scale type", [](json& p) { p["ops"][0]["params"][0]["scale"] = "2"; },
       "ops[0].params[0].scale: expected a number"},
      {"params count", [](json& p) { p["ops"][0]["params"].push_back(0.5); },
       "ops[0]: RX takes 1 parameter(s), got 2"},
      {"params missing", [](json& p) { p["ops"][0].erase("params"); },
       "ops[0]: RX takes 1 parameter(s), got 0"},
      {"params type", [](json& p) { p["ops"][0]["params"] = 0.5; },
       "ops[0].params: expected a list of parameters"},
      {"unitary ok but not unitary",
       [&](json& p) {
         json u = qu;
         u["matrix"][0][0] = {2, 0};
         p["ops"].push_back(u);
       },
       "ops[3]: QubitUnitary matrix is not unitary"},
      {"unitary entry",
       [&](json& p) {
         json u = qu;
         u["matrix"][0][1] = 0;
         p["ops"].push_back(u);
       },
       "ops[3].matrix[0][1]: expected a complex number as [re, im], got the number 0"},
      {"unitary entry size",
       [&](json& p) {
         json u = qu;
         u["matrix"][1][0] = {0, 0, 0};
         p["ops"].push_back(u);
       },
       "ops[3].matrix[1][0]: expected a complex number as [re, im], got an array of 3 element(s)"},
      {"unitary not square",
       [&](json& p) {
         json u = qu;
         u["matrix"][1].push_back({0, 0});
         p["ops"].push_back(u);
       },
       "ops[3].matrix[1]: the matrix must be square"},
      {"unitary size",
       [&](json& p) {
         json u = qu;
         u["wires"] = {0, 1};
         p["ops"].push_back(u);
       },
       "ops[3]: QubitUnitary on 2 wire(s) needs a 4x4 matrix"},
      {"unitary missing matrix",
       [&](json& p) {
         json u = qu;
         u.erase("matrix");
         p["ops"].push_back(u);
       },
       "ops[3]: missing key \"matrix\""},
      {"unitary params",
       [&](json& p) {
         json u = qu;
         u["params"] = json::array();
         p["ops"].push_back(u);
       },
       "ops[3]: QubitUnitary takes a \"matrix\", not \"params\""},
      {"matrix on RX", [&](json& p) { p["ops"][0]["matrix"] = qu["matrix"]; },
       "ops[0]: only QubitUnitary takes a \"matrix\""},
      // templates
      {"template unknown",
       [](json& p) {
         p["ops"].push_back({{"template", "Angle"}, {"wires", {0}}});
       },
       "ops[3].template: unknown template \"Angle\"; known templates: AngleEmbedding"},
      {"template key typo",
       [](json& p) {
         p["ops"].push_back(
             {{"template", "BasicEntanglerLayers"}, {"wires", {0, 1}}, {"layer", 1}});
       },
       "ops[3]: unknown key \"layer\" (did you mean \"layers\"?)"},
      {"template layers missing",
       [](json& p) {
         p["ops"].push_back({{"template", "StronglyEntanglingLayers"}, {"wires", {0, 1}}});
       },
       "ops[3]: missing key \"layers\""},
      {"rotation",
       [](json& p) {
         p["ops"].push_back({{"template", "AngleEmbedding"}, {"wires", {0}}, {"rotation", "W"}});
       },
       "ops[3].rotation: unknown rotation \"W\""},
      {"imprimitive",
       [](json& p) {
         p["ops"].push_back({{"template", "StronglyEntanglingLayers"},
                             {"wires", {0, 1}},
                             {"layers", 1},
                             {"imprimitive", "RX"}});
       },
       "ops[3]: StronglyEntanglingLayers: imprimitive must be a 2-wire gate without parameters, "
       "got RX"},
      {"ranges",
       [](json& p) {
         p["ops"].push_back({{"template", "StronglyEntanglingLayers"},
                             {"wires", {0, 1}},
                             {"layers", 2},
                             {"ranges", {1}}});
       },
       "ranges needs one entry per layer (2), got 1"},
      {"amplitude not first",
       [](json& p) {
         p["ops"].push_back({{"template", "AmplitudeEmbedding"}, {"wires", {0, 1}}});
       },
       "ops[3]: AmplitudeEmbedding prepares the state, so it must be the first operation"},
      {"amplitude norm (at run time)",
       [](json& p) {
         p["ops"] = json::array({{{"template", "AmplitudeEmbedding"}, {"wires", {0}}}});
         p["inputs"] = {{1.0, 1.0}};
         p.erase("weights");
       },
       "AmplitudeEmbedding: features of sample 0 have squared norm 2"},
      // measurements
      {"pauli letter", [](json& p) { p["observables"][0][0][1] = "Q0"; },
       "observables[0][0][1]: bad Pauli word 'Q0': unknown Pauli letter 'Q'"},
      {"pauli wire", [](json& p) { p["observables"][0][1][1] = "X5"; },
       "observables[0]: observable 'X5' names wire 5 but the circuit has 2 qubits"},
      {"term shape",
       [](json& p) {
         p["observables"][0][0] = {1.0, "Z0", 2};
       },
       "observables[0][0]: expected a term [coeff, \"X0 Z1\"], got an array of 3 element(s)"},
      {"term coeff", [](json& p) { p["observables"][0][0][0] = "1"; },
       "observables[0][0][0]: expected a number"},
      // A string is one Pauli word (as Python's expval("Z0")): a bad word is the word's error.
      {"observable as a bad word", [](json& p) { p["observables"][0] = "Q0"; },
       "observables[0]: bad Pauli word 'Q0': unknown Pauli letter 'Q'"},
      {"observable as a number", [](json& p) { p["observables"][0] = 3; },
       "observables[0]: expected an observable (a Pauli word \"X0 Z1\" or a list of [coeff, \"X0 Z1\"] "
       "terms), got the number 3"},
      {"empty observable", [](json& p) { p["observables"][0] = json::array(); },
       "observables[0]: an observable needs at least one [coeff, \"X0 Z1\"] term"},
      {"probs mixed",
       [](json& p) {
         p["probs"] = {0, {1}};
       },
       "probs: expected a list of wires like [0, 1]"},
      {"probs empty", [](json& p) { p["probs"] = json::array(); },
       "probs: expected a list of wires like [0, 1]"},
      {"probs wire", [](json& p) { p["probs"] = {9}; }, "probs: wire 9 out of range for 2 qubits"},
      {"probs nested wire",
       [](json& p) {
         p["probs"] = {{0}, {0, 0}};
       },
       "probs[1]: probs: wire 0 repeated"},
      // (json::array({...}): a braced list of one json is that json itself under Clang, a list under GCC)
      {"probs nested empty", [](json& p) { p["probs"] = json::array({json::array()}); },
       "probs needs at least one wire"},
      {"nothing to compute", [](json& p) { p.erase("observables"); },
       "nothing to compute: give \"observables\", \"probs\", \"states\": true or \"shots\""},
      {"gradients without measurements",
       [](json& p) {
         p.erase("observables");
         p["states"] = true;
         p["gradients"] = true;
       },
       "gradients: needs \"observables\" and/or \"probs\" to differentiate"},
      // batch data
      {"inputs ragged",
       [](json& p) {
         p["inputs"] = {{0.1}, {0.2, 0.3}};
       },
       "inputs[1]: has 2 values but row 0 has 1 (rows must have equal length)"},
      {"inputs empty", [](json& p) { p["inputs"] = json::array(); },
       "inputs: needs at least one row"},
      {"inputs flat",
       [](json& p) {
         p["inputs"] = {0.1, 0.2};
       },
       "inputs[0]: expected a row (a list of numbers), got the number 0.1"},
      {"inputs value", [](json& p) { p["inputs"][0][0] = nullptr; },
       "inputs[0][0]: expected a number, got null"},
      {"inputs missing", [](json& p) { p.erase("inputs"); },
       "missing key \"inputs\": the circuit reads 1 input column(s)"},
      {"inputs columns", [](json& p) { p["inputs"] = json::array({json::array()}); },
       "inputs: has 0 column(s) but the circuit reads 1 input column(s)"},
      {"weights missing", [](json& p) { p.erase("weights"); },
       "missing key \"weights\": the circuit reads 1 weight(s)"},
      {"weights short", [](json& p) { p["weights"] = json::array(); },
       "weights: has 0 value(s) but the circuit reads 1"},
      {"weights rows",
       [](json& p) {
         p["weights"] = {{0.1}, {0.2}, {0.3}};
       },
       "weights: has 3 rows (per-sample weights) but \"inputs\" has 1 rows"},
      {"weights mixed",
       [](json& p) {
         p["weights"] = {0.1, {0.2}};
       },
       "weights[1]: shared weights are a list of numbers"},
      {"weights type", [](json& p) { p["weights"] = 0.2; },
       "weights: expected a list of numbers (shared)"},
      // options
      {"precision", [](json& p) { p["precision"] = "complex32"; },
       "precision: expected \"complex64\" or \"complex128\", got \"complex32\""},
      {"threads", [](json& p) { p["threads"] = -1; }, "threads: must be at least 0, got -1"},
      {"isa", [](json& p) { p["isa"] = "sse9"; }, "instruction set 'sse9' is not available"},
      {"device", [](json& p) { p["device"] = "tpu"; },
       "device: expected \"cpu\", \"cuda\" or \"automatic\", got \"tpu\""},
      {"gradients", [](json& p) { p["gradients"] = "yes"; },
       "gradients: expected true or false, got the string \"yes\""},
      {"states", [](json& p) { p["states"] = 1; },
       "states: expected true or false, got the number 1"},
      {"shots zero", [](json& p) { p["shots"] = 0; }, "shots: must be at least 1, got 0"},
      {"shots too many", [](json& p) { p["shots"] = 100000000; },
       "more than the limit of 33554432"},
      {"seed alone", [](json& p) { p["seed"] = 3; }, "seed: only used with \"shots\""},
      {"seed negative",
       [](json& p) {
         p["shots"] = 3;
         p["seed"] = -3;
       },
       "seed: must be at least 0, got -3"},
      {"states too large",
       [](json& p) {
         p["qubits"] = 25;
         p["states"] = true;
       },
       "more than the limit"},
      // noise (docs/noisy.md)
      {"unknown channel", [](json& p) { p["ops"].push_back({{"channel", "Depol"}, {"wires", {0}}, {"params", {0.1}}}); },
       "ops[3].channel: unknown channel 'Depol'; known channels: Depolarizing"},
      {"channel strength", [](json& p) { p["ops"].push_back({{"channel", "BitFlip"}, {"wires", {1}}, {"params", {1.5}}}); },
       "ops[3]: BitFlip on wires [1]: p = 1.5 is outside [0, 1]"},
      {"gate and channel",
       [](json& p) { p["ops"].push_back({{"channel", "BitFlip"}, {"gate", "RX"}, {"wires", {1}}}); },
       "ops[3]: an operation needs exactly one of \"gate\", \"template\" or \"channel\""},
      {"kraus not trace preserving",
       [](json& p) {
         p["ops"].push_back(json::parse(R"({"channel": "Kraus", "wires": [0],
                                            "kraus": [[[[1, 0], [0, 0]], [[0, 0], [0.5, 0]]]]})"));
       },
       "ops[3]: Kraus operators are not trace preserving"},
      {"readout not stochastic",
       [](json& p) { p["readout_errors"] = json::parse(R"([{"wire": 1, "matrix": [[0.9, 0.1], [0.2, 0.8]]}])"); },
       "readout_errors[0]: readout error of wire 1: column 0 sums to 1.1"},
      {"unknown simulator", [](json& p) { p["simulator"] = "dm"; },
       "simulator: unknown simulator \"dm\"; expected \"automatic\", \"statevector\" or \"density_matrix\""},
      {"noise model qubits",
       [](json& p) {
         p["noise_model"] = json::parse(R"({"qubits": 1, "qubit_properties": [{"t1": 100}]})");
       },
       "noise_model: the circuit has 2 qubits but the noise model has 1"},
      {"noise model t2",
       [](json& p) {
         p["noise_model"] = json::parse(R"({"qubits": 2, "qubit_properties": [{"t1": 100}, {"t2": -1}]})");
       },
       "noise_model: noise model, qubit 1: t2 must be > 0 ns"},
      {"noise model gate name",
       [](json& p) {
         p["noise_model"] = json::parse(R"({"qubits": 2, "qubit_properties": [{}, {}],
                                            "gates": [{"gate": "cx", "wires": [0, 1]}]})");
       },
       "noise_model.gates[0].gate: unknown gate 'cx'"},
      {"noise model basis",
       [](json& p) {
         p["noise_model"] = json::parse(R"({"name": "dev", "qubits": 2, "qubit_properties": [{}, {}],
                                            "basis_gates": ["CNOT", "RZ"]})");
       },
       "operation 0 (RX on [0]): not a basis gate of device 'dev' (CNOT, RZ)"},
  };
  for (const Case& c : cases) {
    json p = base();
    c.edit(p);
    expect_error(run_eval_text(p.dump()), c.needle, c.name);
  }
}

TEST(CliErrors, InputsThatOverflowTheSolverAreRefused) {
  // Finite but huge: the propagator overflows. Refused (status 2) with the input's name,
  // not returned as nulls with status 0.
  json p = json::parse(R"({"kind": "lindblad", "dim": 2, "controls": [[[0, 0.5], [0.5, 0]]],
                           "amplitudes": [[1e300], [0.5]], "segment_duration": 0.7,
                           "psi0": [1, 0], "target": {"state": [0, 1]}})");
  expect_error(run_eval_text(p.dump()), "is not finite: the inputs overflow the solver (the largest magnitudes: amplitudes 1e+300",
               "amplitude overflow");
  p["amplitudes"] = json::parse("[[1.0], [0.5]]");
  p["segment_duration"] = 1e300;
  expect_error(run_eval_text(p.dump()), "the largest magnitudes: segment_duration 1e+300", "duration overflow");
  p["segment_duration"] = 0.7;
  const CliResult ok = run_eval_text(p.dump());
  EXPECT_EQ(ok.status, 0) << ok.err;
  // With the arrays in .npy files: refused the same way, and no file of NaN is written.
  p["amplitudes"] = json::parse("[[1e300], [0.5]]");
  p["output_npy"] = "overflow";
  const std::string problem = qfleet_test::write_temp(p.dump());
  const auto dir = std::filesystem::path(problem).parent_path();
  auto written = [&] {  // overflow.<key>.npy files beside the problem
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind("overflow.", 0) == 0) names.push_back(e.path().string());
    return names;
  };
  for (const auto& f : written()) std::filesystem::remove(f);
  expect_error(run_cli({"eval", problem}),
               "fidelity (value 0 of its .npy, not written): is not finite: the inputs overflow the solver", "npy");
  EXPECT_TRUE(written().empty()) << written().front();
  std::remove(problem.c_str());
}

TEST(CliErrors, BadJson) {
  expect_error(run_eval_text("{\"kind\": \"circuit\",\n  \"qubits\": 2,,\n}"),
               "invalid JSON: parse error at line 2, column 15", "syntax");
  expect_error(run_eval_text(""),
               "invalid JSON: parse error at line 1, column 1: syntax error while parsing value",
               "empty");
  expect_error(run_eval_text("{\"kind\": \"circuit\"} x"),
               "invalid JSON: parse error at line 1, column 21", "trailing");
  expect_error(run_eval_text("[1, 2]"), "a problem must be a JSON object, got an array", "array");
  expect_error(run_eval_text("{\"kind\": \"circuit\", \"qubits\": 1e999}"),
               "invalid JSON:", "overflow");
  expect_error(run_eval_text("{\"kind\": \"circ\xff\"}"), "invalid JSON: parse error", "utf-8");
  expect_error(run_eval_text("{\"kind\": \"circuit\", \"qubits\": 2, \"qubits\": 2}"),
               "invalid JSON: key \"qubits\" appears twice in the top-level object", "duplicate");
  expect_error(
      run_eval_text(
          R"({"kind": "circuit", "qubits": 2, "ops": [{"gate": "X", "wires": [0], "wires": [1]}]})"),
      "invalid JSON: key \"wires\" appears twice in the object at ops[0]", "duplicate nested");
  // Deep nesting: rejected, not a stack overflow.
  expect_error(run_eval_text(std::string(200000, '[') + std::string(200000, ']')),
               "a problem must be a JSON object", "deep");
  std::string deep = R"({"kind": "circuit", "qubits": 1, "observables": [[[1, "Z0"]]], "inputs": )";
  deep.append(200000, '[');
  deep.append(200000, ']');
  deep += "}";
  expect_error(run_eval_text(deep), "inputs[0][0]: expected a number, got an array", "deep inputs");
}

TEST(CliErrors, MessagesStayOnOneLine) {
  json p = base();
  p["ops"][0]["gate"] = "R\nX\t";
  expect_error(run_eval_text(p.dump()), "unknown gate 'R\\nX\\x09'", "control characters");
  p = base();
  p["hel\nlo"] = 1;
  expect_error(run_eval_text(p.dump()), "unknown key \"hel\\nlo\"", "key with newline");
}

TEST(CliErrors, FilesAndStdin) {
  expect_error(run_cli({"eval", "/nonexistent/problem.json"}),
               "cannot open /nonexistent/problem.json: No such file or directory", "missing file");
  expect_error(run_cli({"eval", QFLEET_SOURCE_DIR}), "it is a directory", "directory");
  expect_error(run_cli({"eval", "-"}, std::string("{\"kind\": ")),
               "<stdin>: invalid JSON: parse error at line 1", "stdin");
  expect_error(run_cli({"eval", "-"}), "<stdin>: invalid JSON", "empty stdin");
  const auto ok = run_cli({"eval", "-"}, base().dump());
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
}

TEST(CliErrors, Usage) {
  expect_error(run_cli({}), "no subcommand given (run 'qfleet --help' for usage)", "no subcommand");
  expect_error(run_cli({"gates", "info"}), "not expected: info", "two subcommands");
  expect_error(run_cli({"evaluate"}), "unknown subcommand 'evaluate' (known: demo, eval, gates, info",
               "unknown subcommand");
  expect_error(run_cli({"eval"}), "FILE is required", "no file");
  expect_error(run_cli({"eval", "a.json", "b.json"}), "not expected: b.json", "two files");
  expect_error(run_cli({"eval", "--indent", "x", "a.json"}), "--indent", "bad indent");
  expect_error(run_cli({"gates", "--bogus"}), "--bogus", "unknown flag");
  expect_error(run_cli({"--bogus"}), "--bogus", "unknown top-level flag");
}

TEST(CliCommands, VersionHelpGatesInfo) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, std::string("qfleet ") + QFLEET_VERSION_STRING + "\n");
  EXPECT_EQ(r.err, "");

  r = run_cli({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("eval"), std::string::npos);
  r = run_cli({"eval", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("FILE"), std::string::npos);

  r = run_cli({"gates"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json gates = json::parse(r.out);
  ASSERT_TRUE(gates.is_array());
  bool cnot = false;
  for (const json& g : gates) {
    EXPECT_EQ(g.size(), 4u);
    if (g["name"] == "CNOT") {
      cnot = true;
      EXPECT_EQ(g, json::parse(R"({"name": "CNOT", "wires": 2, "params": 0, "controls": 1})"));
    }
  }
  EXPECT_TRUE(cnot);
  EXPECT_EQ(json::parse(run_cli({"gates", "--indent", "2"}).out), gates);

  r = run_cli({"info", "--indent", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json info = json::parse(r.out);
  EXPECT_EQ(info["version"], QFLEET_VERSION_STRING);
  ASSERT_TRUE(info["isas"].is_array());
  EXPECT_FALSE(info["isas"].empty());
  EXPECT_EQ(info["isas"].back(), "baseline");
  EXPECT_GE(info["openmp_threads"].get<int>(), 1);
  EXPECT_EQ(info["openmp"]["threads"], info["openmp_threads"]);
  EXPECT_TRUE(info["openmp"]["proc_bind"].is_string());
  EXPECT_GE(info["openmp"]["places"].get<int>(), 0);
  EXPECT_GE(info["cuda_devices"].get<int>(), 0);
  ASSERT_TRUE(info["cuda_backend"].is_boolean());
  if (!info["cuda_backend"].get<bool>()) {
    EXPECT_EQ(info["cuda_devices"].get<int>(), 0);
  }
}

}  // namespace

// QFLEET_ISA makes the process behave as on a machine whose best instruction set is
// the one named: `info` lists it and the narrower ones, a problem asking for a wider
// one is refused naming the variable, and a value this machine lacks is a clear error.
TEST(CliErrors, QfleetIsaCapsTheInstructionSets) {
  auto with_isa = [](const std::string& isa, const std::vector<std::string>& args) {
    std::vector<std::string> a = {"QFLEET_ISA=" + isa, QFLEET_CLI_PATH};
    a.insert(a.end(), args.begin(), args.end());
    return qfleet_test::run_program("env", a);
  };
  const CliResult base_info = with_isa("baseline", {"info"});
  ASSERT_EQ(base_info.status, 0) << base_info.err;
  EXPECT_EQ(json::parse(base_info.out)["isas"], json::parse(R"(["baseline"])"));
  const json all = json::parse(run_cli({"info"}).out)["isas"];
  if (all.size() > 1) {  // a wider instruction set than baseline is here: asking for it is refused
    json p = base();
    p["isa"] = all.front();
    const std::string path = qfleet_test::write_temp(p.dump());
    expect_error(with_isa("baseline", {"eval", path}),
                 "is not available on this machine/build (available: baseline); QFLEET_ISA=baseline limits",
                 "a wider ISA than QFLEET_ISA");
    std::remove(path.c_str());
  }
  const std::string path = qfleet_test::write_temp(base().dump());
  expect_error(with_isa("avx9", {"eval", path}), "instruction set 'avx9' (the environment variable QFLEET_ISA)",
               "an unknown QFLEET_ISA");
  std::remove(path.c_str());
}
