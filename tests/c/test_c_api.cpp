// The C adapter (qfleet/qfleet_c.h): every call gives what qfleet::Program gives for
// the same JSON, bit for bit, and every misuse (bad JSON, wrong lengths, NULL handles,
// complex64) returns a status and a message instead of crashing or writing past a buffer.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "qfleet/json_problem.hpp"
#include "qfleet/program.hpp"
#include "qfleet/qfleet_c.h"
#include "qfleet/version.hpp"

namespace c_api_test {

// One input, three weights, two expectation values and four probabilities.
const std::string kStateVector = R"({"kind": "circuit", "qubits": 2, "ops": [
  {"gate": "RY", "wires": [0], "params": [{"input": 0}]},
  {"gate": "RX", "wires": [1], "params": [{"weight": 0}]},
  {"gate": "CNOT", "wires": [0, 1]},
  {"gate": "RY", "wires": [1], "params": [{"weight": 1, "scale": 0.5}]},
  {"gate": "RZ", "wires": [0], "params": [{"weight": 2}]},
  {"gate": "RX", "wires": [0], "params": [0.3]}],
  "observables": [[[0.5, "Z0 Z1"], [-0.8, "X1"]], [[1.0, "Y0"]]], "probs": [0, 1]})";

// The same gates with noise channels (a density-matrix program) and a readout error.
const std::string kDensityMatrix = R"({"kind": "circuit", "qubits": 2, "ops": [
  {"gate": "RY", "wires": [0], "params": [{"input": 0}]},
  {"channel": "Depolarizing", "wires": [0], "params": [0.05]},
  {"gate": "RX", "wires": [1], "params": [{"weight": 0}]},
  {"gate": "CNOT", "wires": [0, 1]},
  {"channel": "AmplitudeDamping", "wires": [1], "params": [0.1]},
  {"gate": "RY", "wires": [1], "params": [{"weight": 1, "scale": 0.5}]},
  {"gate": "RZ", "wires": [0], "params": [{"weight": 2}]}],
  "readout_errors": [{"wire": 1, "p1_given_0": 0.02, "p0_given_1": 0.05}],
  "observables": [[[0.5, "Z0 Z1"], [-0.8, "X1"]], [[1.0, "Y0"]]], "probs": [0, 1]})";

struct ProgramDeleter {
  void operator()(qfleet_program* p) const { qfleet_free(p); }
};
using Handle = std::unique_ptr<qfleet_program, ProgramDeleter>;

Handle compile_c(const std::string& json) {
  qfleet_program* p = nullptr;
  const qfleet_status s = qfleet_compile(json.data(), json.size(), &p);
  EXPECT_EQ(s, QFLEET_OK) << qfleet_last_error();
  return Handle(p);
}

// The engine's own program of the same text, compiled as the PyTorch adapter does.
qfleet::Program compile_direct(const std::string& json) {
  const auto p = qfleet::json_problem::parse_circuit_problem(qfleet::json_problem::parse_text(json), true);
  return qfleet::compile(p.circuit, p.options);
}

// A batch of three samples with per-sample weights, and the same inputs with shared weights.
struct Batch {
  std::size_t batch = 3;
  std::vector<double> inputs = {0.4, 1.2, -0.7};
  std::vector<double> per_sample = {0.7, -0.9, 0.2, 0.1, 0.3, -1.4, 2.2, 0.5, 0.05};
  std::vector<double> shared = {0.7, -0.9, 0.2};
};

qfleet::BatchArgs<double> args_of(const Batch& b, const std::vector<double>& w) {
  return {b.batch, b.inputs, w};
}

// A buffer with a sentinel after its `n` values, to see that nothing past them is written.
struct Guarded {
  std::vector<double> v;
  explicit Guarded(std::size_t n) : v(n + 1, 0.0) { v[n] = 12345.0; }
  double* data() { return v.data(); }
  std::size_t size() const { return v.size() - 1; }
  bool intact() const { return v.back() == 12345.0; }
  std::vector<double> values() const { return {v.begin(), v.end() - 1}; }
};

class CApi : public ::testing::TestWithParam<const std::string*> {};

TEST_P(CApi, SizesAreTheProgramsSizes) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  EXPECT_EQ(qfleet_n_qubits(h.get()), p.n_qubits());
  EXPECT_EQ(qfleet_n_inputs(h.get()), p.n_inputs());
  EXPECT_EQ(qfleet_n_weights(h.get()), p.n_weights());
  EXPECT_EQ(qfleet_n_outputs(h.get()), p.n_outputs());
  EXPECT_EQ(qfleet_is_density_matrix(h.get()), p.simulator() == qfleet::Simulator::density_matrix ? 1 : 0);
  EXPECT_EQ(std::string(qfleet_isa(h.get())), p.isa());
}

TEST_P(CApi, ForwardEqualsTheProgram) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  const Batch b;
  for (const auto* w : {&b.per_sample, &b.shared}) {
    Guarded out(b.batch * p.n_outputs());
    ASSERT_EQ(qfleet_forward(h.get(), b.batch, b.inputs.data(), b.inputs.size(), w->data(), w->size(), out.data(),
                             out.size()),
              QFLEET_OK)
        << qfleet_last_error();
    EXPECT_STREQ(qfleet_last_error(), "");
    EXPECT_EQ(out.values(), p.forward(args_of(b, *w)));
    EXPECT_TRUE(out.intact());
  }
}

TEST_P(CApi, VjpEqualsTheProgram) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  const Batch b;
  std::vector<double> cot(b.batch * p.n_outputs());
  for (std::size_t i = 0; i < cot.size(); ++i) cot[i] = 0.25 * double(i % 5) - 0.4;
  for (const auto* w : {&b.per_sample, &b.shared}) {
    Guarded gi(b.inputs.size()), gw(w->size());
    gw.v[0] = 99.0;  // overwritten, not added to
    ASSERT_EQ(qfleet_vjp(h.get(), b.batch, b.inputs.data(), b.inputs.size(), w->data(), w->size(), cot.data(),
                         cot.size(), gi.data(), gi.size(), gw.data(), gw.size()),
              QFLEET_OK)
        << qfleet_last_error();
    std::vector<double> want_i(b.inputs.size()), want_w(w->size());
    p.vjp<double>(args_of(b, *w), cot, qfleet::Gradients<double>{want_i, want_w});
    EXPECT_EQ(gi.values(), want_i);
    EXPECT_EQ(gw.values(), want_w);
    EXPECT_TRUE(gi.intact() && gw.intact());
  }
  // One gradient alone: the other is skipped with NULL.
  Guarded gw(b.shared.size());
  ASSERT_EQ(qfleet_vjp(h.get(), b.batch, b.inputs.data(), b.inputs.size(), b.shared.data(), b.shared.size(),
                       cot.data(), cot.size(), nullptr, 0, gw.data(), gw.size()),
            QFLEET_OK)
      << qfleet_last_error();
  std::vector<double> want_w(b.shared.size());
  p.vjp<double>(args_of(b, b.shared), cot, qfleet::Gradients<double>{{}, want_w});
  EXPECT_EQ(gw.values(), want_w);
}

TEST_P(CApi, JacobianEqualsTheProgram) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  const Batch b;
  const std::size_t rows = b.batch * p.n_outputs();
  for (const auto* w : {&b.per_sample, &b.shared}) {
    Guarded ji(rows * p.n_inputs()), jw(rows * p.n_weights());
    ASSERT_EQ(qfleet_jacobian(h.get(), b.batch, b.inputs.data(), b.inputs.size(), w->data(), w->size(), ji.data(),
                              ji.size(), jw.data(), jw.size()),
              QFLEET_OK)
        << qfleet_last_error();
    std::vector<double> want_i(ji.size()), want_w(jw.size());
    p.jacobian<double>(args_of(b, *w), want_i, want_w);
    EXPECT_EQ(ji.values(), want_i);
    EXPECT_EQ(jw.values(), want_w);
    EXPECT_TRUE(ji.intact() && jw.intact());
  }
}

TEST_P(CApi, FinalStatesEqualTheProgram) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  const Batch b;
  const bool dm = p.simulator() == qfleet::Simulator::density_matrix;
  const std::size_t d = std::size_t{1} << p.n_qubits(), n = b.batch * (dm ? d * d : d);
  Guarded got(2 * n);  // interleaved (re, im)
  const auto call = dm ? qfleet_density_matrices : qfleet_states;
  ASSERT_EQ(call(h.get(), b.batch, b.inputs.data(), b.inputs.size(), b.shared.data(), b.shared.size(), got.data(), n),
            QFLEET_OK)
      << qfleet_last_error();
  std::vector<std::complex<double>> want(n);
  if (dm) {
    p.density_matrices<double>(args_of(b, b.shared), want);
  } else {
    p.states<double>(args_of(b, b.shared), want);
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(got.v[2 * i], want[i].real()) << i;
    EXPECT_EQ(got.v[2 * i + 1], want[i].imag()) << i;
  }
  EXPECT_TRUE(got.intact());
  // The other kind of final state is the engine's error, not a crash.
  const auto other = dm ? qfleet_states : qfleet_density_matrices;
  std::vector<double> buf(2 * b.batch * d * d);
  EXPECT_EQ(other(h.get(), b.batch, b.inputs.data(), b.inputs.size(), b.shared.data(), b.shared.size(), buf.data(),
                  b.batch * (dm ? d : d * d)),
            QFLEET_ERROR_ENGINE);
  EXPECT_NE(std::string(qfleet_last_error()), "");
}

TEST_P(CApi, SamplesEqualTheProgram) {
  const Handle h = compile_c(*GetParam());
  const qfleet::Program p = compile_direct(*GetParam());
  const Batch b;
  const std::size_t shots = 257;
  for (const std::vector<int>& wires : {std::vector<int>{}, std::vector<int>{1}, std::vector<int>{1, 0}}) {
    std::vector<std::uint64_t> got(b.batch * shots + 1, 777), want(b.batch * shots);
    ASSERT_EQ(qfleet_sample(h.get(), b.batch, b.inputs.data(), b.inputs.size(), b.per_sample.data(),
                            b.per_sample.size(), wires.data(), wires.size(), shots, 2024, got.data(), want.size()),
              QFLEET_OK)
        << qfleet_last_error();
    p.sample<double>(args_of(b, b.per_sample), wires, shots, 2024, want);
    EXPECT_EQ(std::vector<std::uint64_t>(got.begin(), got.end() - 1), want);
    EXPECT_EQ(got.back(), 777u);
  }
}

TEST_P(CApi, AnEmptyBatchDoesNothing) {
  const Handle h = compile_c(*GetParam());
  const Batch b;
  EXPECT_EQ(qfleet_forward(h.get(), 0, nullptr, 0, b.shared.data(), b.shared.size(), nullptr, 0), QFLEET_OK)
      << qfleet_last_error();
  EXPECT_EQ(qfleet_vjp(h.get(), 0, nullptr, 0, b.shared.data(), b.shared.size(), nullptr, 0, nullptr, 0, nullptr, 0),
            QFLEET_OK)
      << qfleet_last_error();
  // An empty batch still has shapes: one input row is one too many.
  EXPECT_EQ(qfleet_forward(h.get(), 0, b.inputs.data(), 1, b.shared.data(), b.shared.size(), nullptr, 0),
            QFLEET_ERROR_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Simulators, CApi, ::testing::Values(&kStateVector, &kDensityMatrix),
                         [](const auto& p) { return p.param == &kStateVector ? "statevector" : "density"; });

TEST(CApiErrors, VersionAndAbi) {
  EXPECT_STREQ(qfleet_version(), QFLEET_VERSION_STRING);
  EXPECT_EQ(qfleet_abi_version(), QFLEET_C_ABI_VERSION);
  EXPECT_EQ(qfleet_cuda_device_count(), qfleet::cuda_device_count());
  EXPECT_EQ(qfleet_built_with_cuda(), qfleet::built_with_cuda() ? 1 : 0);
}

TEST(CApiErrors, BadJsonIsAnErrorWithItsPosition) {
  const std::string bad = "{\"kind\": \"circuit\",\n \"qubits\": 2,,\n}";
  qfleet_program* p = reinterpret_cast<qfleet_program*>(&p);  // must come back NULL
  EXPECT_EQ(qfleet_compile(bad.data(), bad.size(), &p), QFLEET_ERROR_ENGINE);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(qfleet_last_error()).find("line 2"), std::string::npos) << qfleet_last_error();

  const std::string unknown_gate = R"({"kind": "circuit", "qubits": 1, "ops": [{"gate": "RQ", "wires": [0]}]})";
  EXPECT_EQ(qfleet_compile(unknown_gate.data(), unknown_gate.size(), &p), QFLEET_ERROR_ENGINE);
  EXPECT_NE(std::string(qfleet_last_error()).find("ops[0]"), std::string::npos) << qfleet_last_error();
  // Only json_len bytes are read: the text need not end with a NUL.
  EXPECT_EQ(qfleet_compile(kStateVector.data(), 10, &p), QFLEET_ERROR_ENGINE);
  EXPECT_EQ(qfleet_compile(nullptr, 5, &p), QFLEET_ERROR_ARGUMENT);
  EXPECT_EQ(qfleet_compile(kStateVector.data(), kStateVector.size(), nullptr), QFLEET_ERROR_ARGUMENT);
}

TEST(CApiErrors, Complex64IsRefused) {
  std::string json = kStateVector;
  json.insert(1, R"("precision": "complex64", )");
  qfleet_program* p = nullptr;
  EXPECT_EQ(qfleet_compile(json.data(), json.size(), &p), QFLEET_ERROR_ENGINE);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(qfleet_last_error()).find("complex128"), std::string::npos) << qfleet_last_error();
}

TEST(CApiErrors, NullProgram) {
  double x = 0, y = 0;
  EXPECT_EQ(qfleet_forward(nullptr, 1, &x, 1, nullptr, 0, &y, 1), QFLEET_ERROR_ARGUMENT);
  EXPECT_NE(std::string(qfleet_last_error()).find("NULL"), std::string::npos) << qfleet_last_error();
  EXPECT_EQ(qfleet_sample(nullptr, 1, &x, 1, nullptr, 0, nullptr, 0, 1, 0, nullptr, 1), QFLEET_ERROR_ARGUMENT);
  EXPECT_EQ(qfleet_n_qubits(nullptr), -1);
  EXPECT_EQ(qfleet_n_outputs(nullptr), -1);
  EXPECT_EQ(qfleet_is_density_matrix(nullptr), -1);
  EXPECT_STREQ(qfleet_isa(nullptr), "");
  qfleet_free(nullptr);
}

TEST(CApiErrors, WrongLengthsAreRefusedBeforeAnythingIsWritten) {
  const Handle h = compile_c(kStateVector);
  const Batch b;
  const std::size_t k = std::size_t(qfleet_n_outputs(h.get()));
  Guarded out(b.batch * k);
  auto forward = [&](std::size_t batch, std::size_t ni, std::size_t nw, std::size_t no) {
    const qfleet_status s =
        qfleet_forward(h.get(), batch, b.inputs.data(), ni, b.per_sample.data(), nw, out.data(), no);
    EXPECT_TRUE(out.intact());
    return s;
  };
  EXPECT_EQ(forward(b.batch, 2, 9, 3 * k), QFLEET_ERROR_ARGUMENT);  // inputs
  EXPECT_NE(std::string(qfleet_last_error()).find("inputs has 2 values, expected 3"), std::string::npos)
      << qfleet_last_error();
  EXPECT_EQ(forward(b.batch, 3, 8, 3 * k), QFLEET_ERROR_ARGUMENT);  // weights: neither shared nor per sample
  EXPECT_NE(std::string(qfleet_last_error()).find("weights has 8 values"), std::string::npos) << qfleet_last_error();
  EXPECT_EQ(forward(b.batch, 3, 9, 3 * k - 1), QFLEET_ERROR_ARGUMENT);  // outputs one short
  EXPECT_NE(std::string(qfleet_last_error()).find("outputs has"), std::string::npos) << qfleet_last_error();
  EXPECT_EQ(forward(b.batch, 3, 9, 3 * k), QFLEET_OK);
  EXPECT_STREQ(qfleet_last_error(), "");  // a success clears the message

  // A NULL buffer with a length, a batch whose sizes overflow, a gradient of the wrong shape.
  EXPECT_EQ(qfleet_forward(h.get(), b.batch, nullptr, 3, b.shared.data(), 3, out.data(), 3 * k),
            QFLEET_ERROR_ARGUMENT);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_EQ(qfleet_forward(h.get(), huge, b.inputs.data(), 3, b.shared.data(), 3, out.data(), 3 * k),
            QFLEET_ERROR_ARGUMENT);
  std::vector<double> cot(3 * k), gw(9);
  EXPECT_EQ(qfleet_vjp(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, cot.data(), cot.size(), nullptr, 0,
                       gw.data(), 9),
            QFLEET_ERROR_ARGUMENT);  // shared weights have a shared gradient
  EXPECT_EQ(qfleet_vjp(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, cot.data(), cot.size() - 1, nullptr,
                       0, gw.data(), 3),
            QFLEET_ERROR_ARGUMENT);
  std::vector<double> jac(3 * k * 3);
  EXPECT_EQ(qfleet_jacobian(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, jac.data(), 1, nullptr, 0),
            QFLEET_ERROR_ARGUMENT);
  std::vector<double> states(2 * 3 * 4);
  EXPECT_EQ(qfleet_states(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, states.data(), 11),
            QFLEET_ERROR_ARGUMENT);
}

TEST(CApiErrors, SamplingArguments) {
  const Handle h = compile_c(kStateVector);
  const Batch b;
  std::vector<std::uint64_t> out(b.batch * 4);
  const int bad_wire[] = {2};
  EXPECT_EQ(qfleet_sample(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, bad_wire, 1, 4, 1, out.data(),
                          out.size()),
            QFLEET_ERROR_ARGUMENT);
  EXPECT_NE(std::string(qfleet_last_error()).find("wire 2 is not in [0, 2)"), std::string::npos)
      << qfleet_last_error();
  const int twice[] = {0, 0};
  EXPECT_EQ(qfleet_sample(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, twice, 2, 4, 1, out.data(),
                          out.size()),
            QFLEET_ERROR_ENGINE);
  EXPECT_EQ(qfleet_sample(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, nullptr, 0, 0, 1, out.data(), 0),
            QFLEET_ERROR_ARGUMENT);
  EXPECT_EQ(qfleet_sample(h.get(), b.batch, b.inputs.data(), 3, b.shared.data(), 3, nullptr, 0, 5, 1, out.data(),
                          out.size()),
            QFLEET_ERROR_ARGUMENT);
}

TEST(CApiErrors, EngineRefusalsComeBackAsMessages) {
  const Handle h = compile_c(kStateVector);
  const Batch b;
  std::vector<double> x = b.inputs, out(3 * std::size_t(qfleet_n_outputs(h.get())));
  x[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(qfleet_forward(h.get(), b.batch, x.data(), 3, b.shared.data(), 3, out.data(), out.size()),
            QFLEET_ERROR_ENGINE);
  EXPECT_NE(std::string(qfleet_last_error()).find("non-finite"), std::string::npos) << qfleet_last_error();
  // A circuit without measurements compiles (for states and samples) but has no forward.
  const std::string bare =
      R"({"kind": "circuit", "qubits": 1, "ops": [{"gate": "H", "wires": [0]}], "states": true})";
  const Handle s = compile_c(bare);
  EXPECT_EQ(qfleet_n_outputs(s.get()), 0);
  EXPECT_EQ(qfleet_forward(s.get(), 1, nullptr, 0, nullptr, 0, nullptr, 0), QFLEET_ERROR_ENGINE);
  EXPECT_NE(std::string(qfleet_last_error()).find("no measurement"), std::string::npos) << qfleet_last_error();
}

TEST(CApiErrors, TheMessageBelongsToTheCallingThread) {
  double x = 0, y = 0;
  ASSERT_EQ(qfleet_forward(nullptr, 1, &x, 1, nullptr, 0, &y, 1), QFLEET_ERROR_ARGUMENT);
  const std::string mine = qfleet_last_error();
  std::string theirs = "unset";
  std::thread([&] {
    theirs = qfleet_last_error();  // nothing failed on this thread yet
    const std::string bad = "{";
    qfleet_program* p = nullptr;
    (void)qfleet_compile(bad.data(), bad.size(), &p);
  }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(std::string(qfleet_last_error()), mine);
}

}  // namespace c_api_test
