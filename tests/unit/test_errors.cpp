// Bad input: every rejected call throws qfleet::Error whose message names the
// problem, and nothing is lost (the circuit and the output buffers are untouched).
#include <gtest/gtest.h>

#include <limits>

#include "unit/expect_error.hpp"
#include "unit/harness.hpp"

namespace {

using qfleet::Param;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Summary of a circuit's operations, to check that a rejected call changed nothing.
std::string ops_str(const qfleet::Circuit& c) {
  std::string s = std::to_string(c.n_inputs()) + "/" + std::to_string(c.n_weights()) + "/" +
                  std::to_string(c.measurements().size()) + ":";
  for (const auto& op : c.operations()) {
    s += std::to_string(static_cast<int>(op.gate)) + testing::PrintToString(op.wires) + "(";
    for (const auto& p : op.params)
      s += std::to_string(static_cast<int>(p.kind)) + "," + std::to_string(p.index) + "," + std::to_string(p.value) + ";";
    s += ")";
  }
  return s;
}

TEST(Errors, GateBuilderRejectsBadGatesWithClearMessages) {
  qfleet::Circuit c(3);
  EXPECT_QFLEET_ERROR(c.add("Foo", {0}), "unknown gate", "Foo");
  EXPECT_QFLEET_ERROR(c.add("rx", {0}, {0.1}), "unknown gate");  // names are case-sensitive
  EXPECT_QFLEET_ERROR(c.add("CNOT", {0}), "CNOT", "2 wire");
  EXPECT_QFLEET_ERROR(c.add("Hadamard", {0, 1}), "1 wire");
  EXPECT_QFLEET_ERROR(c.add("Toffoli", {0, 1}), "3 wire");
  EXPECT_QFLEET_ERROR(c.add("RX", {3}, {0.1}), "out of range", "3");
  EXPECT_QFLEET_ERROR(c.add("RX", {-1}, {0.1}), "out of range", "-1");
  EXPECT_QFLEET_ERROR(c.add("CNOT", {0, 7}), "out of range");
  EXPECT_QFLEET_ERROR(c.add("CNOT", {1, 1}), "repeated");
  EXPECT_QFLEET_ERROR(c.add("Toffoli", {0, 2, 0}), "repeated");
  EXPECT_QFLEET_ERROR(c.add("RX", {0}), "parameter", "1");
  EXPECT_QFLEET_ERROR(c.add("Rot", {0}, {0.1, 0.2}), "parameter", "3");
  EXPECT_QFLEET_ERROR(c.add("Hadamard", {0}, {0.1}), "parameter");
  EXPECT_QFLEET_ERROR(c.add("RX", {0}, {kNaN}), "finite");
  EXPECT_QFLEET_ERROR(c.add("CRZ", {0, 1}, {kInf}), "finite");
  EXPECT_QFLEET_ERROR(c.add("U3", {0}, {0.1, -kInf, 0.2}), "finite");
  EXPECT_QFLEET_ERROR(c.add("RX", {0}, {Param::input(-1)}), "index");
  EXPECT_QFLEET_ERROR(c.add("RX", {0}, {Param::weight(-2)}), "index");
  EXPECT_QFLEET_ERROR(c.add("RX", {0}, {Param::weight(0, kNaN)}), "scale", "finite");
  EXPECT_QFLEET_ERROR(c.add(qfleet::Gate::QubitUnitary, {0}), "matrix");
  EXPECT_TRUE(c.operations().empty());
  EXPECT_EQ(c.n_inputs(), 0);
  EXPECT_EQ(c.n_weights(), 0);
}

TEST(Errors, QubitUnitaryMustBeAUnitaryOfTheRightSize) {
  qfleet::Circuit c(2);
  std::mt19937_64 rng(1);
  const auto u2 = ref::row_major(ref::random_unitary(rng, 2));
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0}, {1, 0, 0, 2}), "not unitary");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0}, {1, 1, 0, 1}), "not unitary");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0, 1}, u2), "matrix", "16");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0}, {1, 0, 0}), "matrix");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0}, {1, 0, 0, {kNaN, 0}}), "finite");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({0, 1, 2}, {}), "1 or 2 wires");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({}, {}), "1 or 2 wires");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({2}, u2), "out of range");
  EXPECT_QFLEET_ERROR(c.qubit_unitary({1, 1}, ref::row_major(ref::eye(4))), "repeated");
  EXPECT_TRUE(c.operations().empty());
  EXPECT_NO_THROW(c.qubit_unitary({1}, u2));
}

TEST(Errors, TemplatesRejectBadArgumentsBeforeAddingAnything) {
  qfleet::Circuit c(3);
  c.add("Hadamard", {0}, {}).add("RY", {2}, {Param::weight(1)});
  const std::string before = ops_str(c);
  EXPECT_QFLEET_ERROR(c.angle_embedding({0, 3}), "out of range");
  EXPECT_QFLEET_ERROR(c.angle_embedding({0, 1, 0}), "repeated");
  EXPECT_QFLEET_ERROR(c.angle_embedding({0}, qfleet::Rotation::X, -1), "first_input");
  EXPECT_QFLEET_ERROR(c.basic_entangler_layers({0, 1}, -1), "layers");
  EXPECT_QFLEET_ERROR(c.basic_entangler_layers({0, 5}, 1), "out of range");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({0, 1, 2}, 2, 0, {1}), "ranges", "2");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({0, 1, 2}, 1, 0, {3}), "range");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({0, 1, 2}, 1, 0, {0}), "range");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({0, 1}, 1, 0, {}, qfleet::Gate::CRX), "imprimitive");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({0, 1}, 1, 0, {}, qfleet::Gate::Hadamard), "imprimitive");
  EXPECT_QFLEET_ERROR(c.strongly_entangling_layers({1, 1}, 1), "repeated");
  EXPECT_EQ(ops_str(c), before);
}

TEST(Errors, AmplitudeEmbeddingRules) {
  {
    qfleet::Circuit c(2);
    c.add("Hadamard", {0});
    const std::string before = ops_str(c);
    EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 4), "first");
    EXPECT_EQ(ops_str(c), before);
    EXPECT_FALSE(c.amplitude_embedding_spec().has_value());
  }
  qfleet::Circuit c(2);
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 5, 0, true), "features", "5");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 0, 0, true), "features");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 3, 0, true), "pad");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 3, 0, true, kNaN), "pad", "finite");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 2}, 4), "out of range");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({}, 1), "wire");
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({0, 1}, 4, -1), "first_input");
  EXPECT_FALSE(c.amplitude_embedding_spec().has_value());
  EXPECT_EQ(c.n_inputs(), 0);
  c.amplitude_embedding({1, 0}, 4, 0, /*normalize=*/false);
  EXPECT_QFLEET_ERROR(c.amplitude_embedding({1, 0}, 4), "first");  // only once
  c.expval("Z0");
  const qfleet::Program p = qfleet::compile(c);
  std::vector<double> out(1, -3.0);
  const std::vector<double> bad = {0.5, 0.5, 0.5, 0.6};  // squared norm 1.11
  EXPECT_QFLEET_ERROR((p.forward<double>({1, bad, {}}, out)), "norm", "normalize");
  EXPECT_EQ(out[0], -3.0);
  const std::vector<double> good = {0.5, 0.5, 0.5, 0.5};
  EXPECT_NO_THROW((p.forward<double>({1, good, {}}, out)));
  // normalize=true cannot normalise an all-zero sample.
  qfleet::Circuit z(1);
  z.amplitude_embedding({0}, 2, 0, true).expval("Z0");
  const qfleet::Program pz = qfleet::compile(z);
  const std::vector<double> zeros = {0.0, 0.0};
  EXPECT_QFLEET_ERROR((pz.forward<double>({1, zeros, {}}, out)), "zero");
}

TEST(Errors, ObservablesAndMeasurementsAreValidated) {
  qfleet::Circuit c(3);
  EXPECT_QFLEET_ERROR(c.expval("Z3"), "wire", "3");
  EXPECT_QFLEET_ERROR(c.expval(qfleet::Observable::sum({{1.0, "X0"}, {2.0, "Y0 Z5"}})), "wire");
  EXPECT_QFLEET_ERROR(c.expval("Q0"), "Pauli", "Q");
  EXPECT_QFLEET_ERROR(c.expval("X"), "Pauli", "wire");
  EXPECT_QFLEET_ERROR(c.expval("X0 X0"), "Pauli", "twice");
  EXPECT_QFLEET_ERROR(c.expval("X-1"), "Pauli");
  EXPECT_QFLEET_ERROR(qfleet::PauliWord::parse("Z0 Y2 Z2"), "twice");
  EXPECT_QFLEET_ERROR(qfleet::Observable::sum({{kNaN, "Z0"}}), "finite");
  EXPECT_QFLEET_ERROR(qfleet::Observable::sum({}), "term");
  EXPECT_QFLEET_ERROR(c.expval(qfleet::Observable{}), "term");
  EXPECT_QFLEET_ERROR(c.probs({0, 3}), "out of range");
  EXPECT_QFLEET_ERROR(c.probs({2, 2}), "repeated");
  EXPECT_QFLEET_ERROR(c.probs({}), "wire");
  EXPECT_TRUE(c.measurements().empty());
}

TEST(Errors, CompileRejectsBadCircuitsAndOptions) {
  // Without measurements a circuit still compiles for states()/sample(), but
  // forward, vjp and jacobian name the missing measurement.
  qfleet::Circuit none(2);
  none.add("Hadamard", {0});
  const qfleet::Program bare = qfleet::compile(none);
  const qfleet::BatchArgs<double> bare_args{1, {}, {}};
  std::vector<double> nothing;
  EXPECT_QFLEET_ERROR(bare.forward(bare_args, std::span<double>(nothing)), "no measurement");
  EXPECT_QFLEET_ERROR(bare.vjp(bare_args, std::span<const double>(nothing), qfleet::Gradients<double>{}),
                      "no measurement");
  EXPECT_QFLEET_ERROR(bare.jacobian(bare_args, std::span<double>(nothing), std::span<double>(nothing)),
                      "no measurement");
  std::vector<std::complex<double>> psi(4);
  bare.states(bare_args, std::span<std::complex<double>>(psi));
  const double h = 1.0 / std::sqrt(2.0);  // H on wire 0 of |00>: (|00> + |10>)/sqrt(2)
  EXPECT_NEAR(psi[0].real(), h, 1e-15);
  EXPECT_NEAR(psi[2].real(), h, 1e-15);
  EXPECT_NEAR(std::abs(psi[1]) + std::abs(psi[3]), 0.0, 1e-15);

  qfleet::Circuit big(40);
  big.add("Hadamard", {0}).expval("Z0");
  EXPECT_QFLEET_ERROR(qfleet::compile(big), "memory", "40");
  qfleet::Circuit biggest(62);
  biggest.expval("Z61");
  EXPECT_QFLEET_ERROR(qfleet::compile(biggest), "memory");

  qfleet::Circuit c(2);
  c.expval("Z0");
  qfleet::CompileOptions o;
  o.isa = "sse9000";
  EXPECT_QFLEET_ERROR(qfleet::compile(c, o), "sse9000", "available");
  o = {};
  o.num_threads = -1;
  EXPECT_QFLEET_ERROR(qfleet::compile(c, o), "num_threads");
  o = {};
  o.device = qfleet::Device::cuda;
#if defined(QFLEET_WITH_CUDA)  // this test binary's build configured the CUDA backend
  EXPECT_TRUE(qfleet::built_with_cuda());
#else
  EXPECT_FALSE(qfleet::built_with_cuda());
  EXPECT_EQ(qfleet::cuda_device_count(), 0);
#endif
  if (qfleet::cuda_device_count() == 0) {
    // Which of the two reasons, said plainly.
    if (qfleet::built_with_cuda()) {
      EXPECT_QFLEET_ERROR(qfleet::compile(c, o), "'cuda'", "no CUDA device is visible");
    } else {
      EXPECT_QFLEET_ERROR(qfleet::compile(c, o), "'cuda'", "no CUDA backend");
    }
  }

  EXPECT_QFLEET_ERROR(qfleet::Circuit(0), "qubits", "0");
  EXPECT_QFLEET_ERROR(qfleet::Circuit(-3), "qubits");
  EXPECT_QFLEET_ERROR(qfleet::Circuit(63), "qubits");
  EXPECT_QFLEET_ERROR(c.reserve_inputs(-1), "reserve_inputs");
  EXPECT_QFLEET_ERROR(c.reserve_weights(-1), "reserve_weights");
}

// A small program with 2 inputs and 2 weights, 2 outputs.
struct Small {
  qfleet::Program p;
  Small() : p(make()) {}
  static qfleet::Program make() {
    qfleet::Circuit c(2);
    c.add("RX", {0}, {Param::input(0)}).add("RY", {1}, {Param::input(1)});
    c.add("CRZ", {0, 1}, {Param::weight(0)}).add("RX", {1}, {Param::weight(1)});
    c.expval("Z0").expval("Y1");
    return qfleet::compile(c);
  }
};

TEST(Errors, CallsRejectNonFiniteData) {
  const Small s;
  const std::size_t B = 3;
  std::vector<double> x(B * 2, 0.3), w(2, 0.1), cot(B * 2, 1.0), out(B * 2, 42.0);
  std::vector<double> gi(B * 2, 42.0), gw(2, 42.0);
  for (double bad : {kNaN, kInf, -kInf}) {
    x[3] = bad;
    EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x, w}, out)), "non-finite", "inputs");
    x[3] = 0.3;
    w[1] = bad;
    EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x, w}, out)), "non-finite", "weights");
    EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, cot, {gi, gw})), "non-finite", "weights");
    w[1] = 0.1;
    cot[5] = bad;
    EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, cot, {gi, gw}, out)), "non-finite", "cotangents");
    cot[5] = 1.0;
  }
  // float data too
  qfleet::Circuit c(1);
  c.add("RX", {0}, {Param::input(0)}).expval("Z0");
  qfleet::CompileOptions o;
  o.precision = qfleet::Precision::complex64;
  const qfleet::Program pf = qfleet::compile(c, o);
  const std::vector<float> xf = {std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> of(1, 42.0f);
  EXPECT_QFLEET_ERROR((pf.forward<float>({1, xf, {}}, of)), "non-finite", "inputs");
  // Nothing was written by any rejected call.
  for (double v : out) EXPECT_EQ(v, 42.0);
  for (double v : gi) EXPECT_EQ(v, 42.0);
  for (double v : gw) EXPECT_EQ(v, 42.0);
  EXPECT_EQ(of[0], 42.0f);
}

TEST(Errors, CallsRejectSpansOfTheWrongSize) {
  const Small s;
  const std::size_t B = 3;
  std::vector<double> x(B * 2, 0.3), w(2, 0.1), wps(B * 2, 0.1), cot(B * 2, 1.0), out(B * 2, 42.0);
  std::vector<double> gi(B * 2, 42.0), gw(2, 42.0);
  const std::vector<double> x_short(B * 2 - 1, 0.3), w_odd(3, 0.1), out_long(B * 2 + 1, 42.0);
  std::vector<double> out_short(B * 2 - 1, 42.0);
  EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x_short, w}, out)), "inputs", "expected");
  // the message names both accepted shapes: shared [2] and per sample [3, 2] = 6 values
  EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x, w_odd}, out)), "weights", "expected", "2", "6", "shared",
                      "per sample");
  EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x, {}}, out)), "weights", "expected");
  EXPECT_QFLEET_ERROR((s.p.forward<double>({B, x, w}, out_short)), "outputs", "expected");
  EXPECT_QFLEET_ERROR((s.p.forward<double>({0, {}, w}, out)), "batch");
  EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, std::span<const double>(cot).first(5), {gi, gw})), "cotangents",
                      "expected");
  EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, cot, {std::span<double>(gi).first(4), gw})), "grad_inputs");
  // per-sample weights need per-sample weight gradients, and shared ones shared.
  EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, wps}, cot, {gi, gw})), "grad_weights", "expected");
  std::vector<double> gw_ps(B * 2, 42.0);
  EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, cot, {gi, gw_ps})), "grad_weights", "expected");
  EXPECT_QFLEET_ERROR((s.p.vjp<double>({B, x, w}, cot, {gi, gw}, out_short)), "outputs", "expected");
  std::vector<double> ji(B * 2 * 2), jw(B * 2 * 2 + 1);
  EXPECT_QFLEET_ERROR((s.p.jacobian<double>({B, x, w}, ji, jw)), "jac_weights", "expected");
  std::vector<std::complex<double>> st(B * 4 - 1);
  EXPECT_QFLEET_ERROR((s.p.states<double>({B, x, w}, st)), "states", "expected");
  std::vector<std::uint64_t> smp(B * 10 - 1, 7);
  EXPECT_QFLEET_ERROR((s.p.sample<double>({B, x, w}, {}, 10, 1, smp)), "samples", "expected");
  smp.assign(B * 10, 7);
  EXPECT_QFLEET_ERROR((s.p.sample<double>({B, x, w}, {2}, 10, 1, smp)), "out of range");
  EXPECT_QFLEET_ERROR((s.p.sample<double>({B, x, w}, {1, 1}, 10, 1, smp)), "repeated");
  for (auto v : smp) EXPECT_EQ(v, 7u);
  for (double v : out) EXPECT_EQ(v, 42.0);
  for (double v : gi) EXPECT_EQ(v, 42.0);
  for (double v : gw) EXPECT_EQ(v, 42.0);
  for (double v : gw_ps) EXPECT_EQ(v, 42.0);
}

TEST(Errors, CallsRejectTheOtherPrecision) {
  const Small s;  // complex128
  const std::vector<float> x(2, 0.3f), w(2, 0.1f);
  std::vector<float> out(2, 42.0f);
  EXPECT_QFLEET_ERROR((s.p.forward<float>({1, x, w}, out)), "complex128", "complex64");
  std::vector<std::complex<float>> st(4);
  EXPECT_QFLEET_ERROR((s.p.states<float>({1, x, w}, st)), "complex128");
  qfleet::Circuit c(1);
  c.expval("Z0");
  qfleet::CompileOptions o;
  o.precision = qfleet::Precision::complex64;
  const qfleet::Program pf = qfleet::compile(c, o);
  std::vector<double> od(1, 42.0);
  EXPECT_QFLEET_ERROR((pf.forward<double>({}, od)), "complex64", "complex128");
  EXPECT_EQ(out[0], 42.0f);
  EXPECT_EQ(od[0], 42.0);
}

TEST(Errors, NothingIsLostAfterARejectedAddOrCall) {
  qfleet::Circuit c(3);
  c.add("RX", {0}, {Param::input(2)}).add("CNOT", {0, 2}).expval("Z0");
  const std::string before = ops_str(c);
  EXPECT_THROW(c.add("RX", {0}, {Param::input(5), 0.1}), qfleet::Error);  // wrong count, big index
  EXPECT_THROW(c.add("CRX", {0, 0}, {Param::weight(9)}), qfleet::Error);
  EXPECT_THROW(c.add("RY", {4}, {Param::weight(9)}), qfleet::Error);
  EXPECT_THROW(c.add("RY", {1}, {kNaN}), qfleet::Error);
  EXPECT_THROW(c.expval("X9"), qfleet::Error);
  EXPECT_EQ(ops_str(c), before);
  EXPECT_EQ(c.n_inputs(), 3);
  EXPECT_EQ(c.n_weights(), 0);
  // the circuit still works after the rejected calls
  const qfleet::Program p = qfleet::compile(c);
  const std::vector<double> x = {0.0, 0.0, 0.4};
  std::vector<double> out(1, 42.0);
  std::vector<double> bad = {0.0, kNaN, 0.4};
  EXPECT_THROW((p.forward<double>({1, bad, {}}, out)), qfleet::Error);
  EXPECT_EQ(out[0], 42.0);
  std::vector<std::complex<double>> st(8, {42.0, 42.0});
  EXPECT_THROW((p.states<double>({1, bad, {}}, st)), qfleet::Error);
  for (const auto& z : st) EXPECT_EQ(z, std::complex<double>(42.0, 42.0));
  p.forward<double>({1, x, {}}, out);
  EXPECT_NEAR(out[0], std::cos(0.4), 1e-15);
}

}  // namespace
