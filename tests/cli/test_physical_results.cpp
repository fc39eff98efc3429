// Results that are not physical are refused, and messages stay one short line: the
// real binary on problems whose fixed step is unstable, whose .npy inputs overflow the
// solver, whose file names hold a NUL, and whose keys, values or syntax errors are
// megabytes long (docs/reliability.md, "Results that are not physical" and "Every
// failure is one line").
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace {

using nlohmann::json;
using qfleet_test::CliResult;
using qfleet_test::run_cli;

void expect_one_line(const CliResult& r, const std::string& needle, const std::string& what) {
  EXPECT_EQ(r.status, 2) << what << "\nstderr: " << r.err.substr(0, 2000);
  EXPECT_EQ(r.out, "") << what;
  EXPECT_EQ(r.err.rfind("qfleet: error: ", 0), 0u) << what << "\nstderr: " << r.err.substr(0, 2000);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1)
      << what << ": not exactly one line\nstderr: " << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << what << "\nexpected: " << needle << "\nstderr:   " << r.err.substr(0, 2000);
}

CliResult eval_text(const std::string& text) {
  const std::string path = qfleet_test::write_temp(text);
  CliResult r = run_cli({"eval", path});
  std::remove(path.c_str());
  return r;
}

// A qubit driven by u X for 4 time units from |0>, measured against |1>: the closed form
// is sin^2(4 u) (Rabi).
json rabi(double u) {
  return json{{"kind", "lindblad"},
              {"dim", 2},
              {"controls", json::parse("[[[0, 1], [1, 0]]]")},
              {"psi0", json::parse("[1, 0]")},
              {"target", {{"state", json::parse("[0, 1]")}}},
              {"n_segments", 4},
              {"segment_duration", 1.0},
              {"amplitudes", json::array({json::array({u}), json::array({u}), json::array({u}),
                                          json::array({u})})}};
}

TEST(PhysicalResults, AnUnstableFixedStepIsRefusedNamingTheSolverAndDt) {
  // Before: status 0 with fidelities of 6.78e15 (rk4) and 2.5e9 (euler).
  json p = rabi(100);
  p["solver"] = "rk4";
  p["dt"] = 0.5;
  expect_one_line(eval_text(p.dump()),
                  "the rk4 step dt = 0.5 is too large for task 0: its fidelity is", "rk4");
  p = rabi(1e5);
  p["solver"] = "euler";
  p["dt"] = 0.5;
  expect_one_line(eval_text(p.dump()), "the euler step dt = 0.5 is too large", "euler");
  // The step the message suggests for u = 100 (0.1 / ||H||_1 = 0.001) runs and agrees
  // with the closed form.
  p = rabi(100);
  p["solver"] = "rk4";
  p["dt"] = 0.001;
  const CliResult r = eval_text(p.dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NEAR(json::parse(r.out)["fidelity"][0].get<double>(), std::pow(std::sin(400.0), 2), 2e-3);
}

TEST(PhysicalResults, NpyInputsThatOverflowTheSolverAreNamed) {
  // Before: the message named the largest numbers written in the problem (here the
  // segment duration), not the amplitudes of the .npy file that overflowed.
  const std::string a = qfleet_test::npy_file({4, 1}, std::vector<double>(4, 1e300));
  json p = rabi(0);
  p["amplitudes"] = {{"npy", a}};
  expect_one_line(eval_text(p.dump()), "the largest magnitudes: amplitudes 1e+300",
                  "npy amplitudes");
  std::remove(a.c_str());
}

TEST(Messages, ANulInAFileNameIsShownEscaped) {
  // Before: the message ended at the NUL ("output_npy: file file"), and the file name that
  // reached the system was cut there too.
  json p = rabi(1);
  p["output_npy"] = std::string("file\0a", 6);
  expect_one_line(eval_text(p.dump()), "output_npy: \"file\\u0000a\" holds a NUL character",
                  "output_npy");
  p = rabi(1);
  p["amplitudes"] = {{"npy", std::string("in\0x.npy", 8)}};
  expect_one_line(eval_text(p.dump()), "amplitudes.npy: \"in\\u0000x.npy\" holds a NUL character",
                  "npy name");
}

TEST(Messages, EchoedInputIsCappedAtAFewHundredBytes) {
  // Before: each of these echoed its 6 MB on the one line.
  const std::string big(6000000, 'x');
  json p = rabi(1);
  p[big] = 1;
  const std::string cases[][3] = {
      {p.dump(), "...\" (6000000 bytes); allowed keys", "a key"},
      {json{{"kind", big}}.dump(), "(6000000 bytes)", "a value"},
      {"{\"kind\": \"" + big, "bytes)", "an unterminated string"},
      {"{\"kind\": " + std::string(6000000, '1') + "}", "bytes)", "a number too large"},
      // Echoes the readers do not cap themselves: the whole line is cut in its middle.
      {json{{"kind", "circuit"}, {"qubits", 1}, {"ops", {{{"gate", big}, {"wires", {0}}}}}}.dump(),
       "bytes in all) ...", "a gate name"},
      {json{{"kind", "circuit"},
            {"qubits", 1},
            {"ops", json::array()},
            {"observables", {{{1.0, big}}}}}
           .dump(),
       "bytes in all) ...", "a Pauli word"},
  };
  for (const auto& [text, needle, what] : cases) {
    const CliResult r = eval_text(text);
    expect_one_line(r, needle, what);
    EXPECT_LT(r.err.size(), 1100u) << what;
  }
}

}  // namespace
