// Random circuits from the whole catalogue (with templates, inputs, shared and
// per-sample weights, Pauli sums and probabilities) against the dense reference,
// on every instruction set and batch size around the tile width; complex64 against
// complex128; and results that do not depend on the thread count.
#include <gtest/gtest.h>

#include <cstring>

#include "unit/harness.hpp"

namespace {

struct Case {
  std::unique_ptr<ref::Twin> t;
  ref::Batch full;                 // 257 samples
  std::vector<ref::Vec> states;    // reference final state of each sample
  std::vector<double> outputs;     // reference outputs [257, n_outputs]
};

Case make_case(int n, bool per_sample, std::mt19937_64& rng, std::size_t B = 257) {
  Case c;
  c.t = std::make_unique<ref::Twin>(n);
  ref::RandomSpec spec;
  spec.items = 3 * n + 4;
  ref::random_circuit(*c.t, rng, spec);
  c.full = ref::random_batch(rng, B, c.t->r.n_inputs, c.t->r.n_weights, per_sample);
  for (std::size_t s = 0; s < B; ++s) {
    c.states.push_back(ref::state(c.t->r, c.full.xrow(s), c.full.wrow(s)));
    const auto o = ref::measure(c.t->r, c.states.back());
    c.outputs.insert(c.outputs.end(), o.begin(), o.end());
  }
  return c;
}

std::vector<double> prefix(const std::vector<double>& v, std::size_t rows, int cols) {
  return std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rows * cols));
}

double state_err(const std::vector<std::complex<double>>& got, const Case& c, std::size_t B) {
  const std::size_t dim = std::size_t{1} << c.t->r.n;
  double m = got.size() == B * dim ? 0.0 : INFINITY;
  for (std::size_t s = 0; s < B && m < INFINITY; ++s)
    for (std::size_t i = 0; i < dim; ++i) m = std::max(m, std::abs(got[s * dim + i] - c.states[s][i]));
  return m;
}

TEST(RandomCircuits, BuilderCountsInputsWeightsAndOutputsLikeTheReference) {
  std::mt19937_64 rng(3);
  for (int n = 1; n <= 7; ++n) {
    for (int rep = 0; rep < 5; ++rep) {
      ref::Twin t(n);
      ref::random_circuit(t, rng, ref::RandomSpec{});
      EXPECT_EQ(t.q.n_inputs(), t.r.n_inputs);
      EXPECT_EQ(t.q.n_weights(), t.r.n_weights);
      EXPECT_EQ(t.q.n_outputs(), t.r.n_outputs());
      EXPECT_EQ(t.q.operations().size(), t.r.ops.size());
      const qfleet::Program p = qfleet::compile(t.q);
      EXPECT_EQ(p.n_qubits(), n);
      EXPECT_EQ(p.n_inputs(), t.r.n_inputs);
      EXPECT_EQ(p.n_weights(), t.r.n_weights);
      EXPECT_EQ(p.n_outputs(), t.r.n_outputs());
      EXPECT_EQ(p.precision(), qfleet::Precision::complex128);
    }
  }
}

TEST(RandomCircuits, OutputsAndStatesMatchTheReferenceOnEveryIsaAndBatchSize) {
  std::mt19937_64 rng(1001);
  for (int n = 1; n <= 7; ++n) {
    for (int rep = 0; rep < 6; ++rep) {
      for (bool per_sample : {false, true}) {
        const Case c = make_case(n, per_sample, rng);
        const int K = c.t->r.n_outputs();
        for (const std::string& isa : qfleet::available_isas()) {
          qfleet::CompileOptions o;
          o.isa = isa;
          const qfleet::Program prog = qfleet::compile(c.t->q, o);
          for (std::size_t B : ref::batch_sizes(prog.lanes())) {
            SCOPED_TRACE("n=" + std::to_string(n) + " rep=" + std::to_string(rep) + " isa=" + isa +
                         " batch=" + std::to_string(B) + (per_sample ? " per-sample weights" : " shared weights"));
            const ref::Batch b = c.full.prefix(B);
            EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(prog, b), prefix(c.outputs, B, K)), 1e-10);
            EXPECT_LT(state_err(ref::q_states<double>(prog, b), c, B), 1e-10);
          }
        }
      }
    }
  }
}

TEST(RandomCircuits, Complex64AgreesWithComplex128) {
  std::mt19937_64 rng(2002);
  for (int n = 1; n <= 7; ++n) {
    const Case c = make_case(n, n % 2 == 1, rng);
    const int K = c.t->r.n_outputs();
    double scale = 1;  // outputs are bounded by the sum of |coefficients| (or 1 for probs)
    for (const auto& m : c.t->r.meas)
      for (const auto& term : m.terms) scale += std::abs(term.first);
    for (const std::string& isa : qfleet::available_isas()) {
      qfleet::CompileOptions o;
      o.isa = isa;
      o.precision = qfleet::Precision::complex64;
      const qfleet::Program p32 = qfleet::compile(c.t->q, o);
      o.precision = qfleet::Precision::complex128;
      const qfleet::Program p64 = qfleet::compile(c.t->q, o);
      ASSERT_EQ(p32.precision(), qfleet::Precision::complex64);
      for (std::size_t B : ref::batch_sizes(p32.lanes())) {
        SCOPED_TRACE("n=" + std::to_string(n) + " isa=" + isa + " batch=" + std::to_string(B));
        const ref::Batch b = c.full.prefix(B);
        const auto o32 = ref::q_forward<float>(p32, b);
        const auto o64 = ref::q_forward<double>(p64, b);
        EXPECT_LT(ref::max_abs_diff(o32, o64), 1e-4 * scale);
        EXPECT_LT(ref::max_abs_diff(o32, prefix(c.outputs, B, K)), 1e-4 * scale);
        const auto s32 = ref::q_states<float>(p32, b);
        const std::size_t dim = std::size_t{1} << n;
        double err = 0;
        for (std::size_t s = 0; s < B; ++s)
          for (std::size_t i = 0; i < dim; ++i)
            err = std::max(err, std::abs(std::complex<double>(s32[s * dim + i]) - c.states[s][i]));
        EXPECT_LT(err, 1e-4);
      }
    }
  }
}

template <class R>
bool bitwise_equal(const std::vector<R>& a, const std::vector<R>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(R)) == 0);
}

TEST(RandomCircuits, OneAndTwoThreadsGiveBitwiseIdenticalResults) {
  std::mt19937_64 rng(3003);
  for (int n : {2, 5, 7, 10}) {
    for (bool per_sample : {false, true}) {
      const Case c = make_case(n, per_sample, rng, n == 10 ? 37 : 257);
      for (const std::string& isa : qfleet::available_isas()) {
        qfleet::CompileOptions o;
        o.isa = isa;
        o.num_threads = 1;
        const qfleet::Program p1 = qfleet::compile(c.t->q, o);
        o.num_threads = 2;
        const qfleet::Program p2 = qfleet::compile(c.t->q, o);
        o.precision = qfleet::Precision::complex64;
        const qfleet::Program f2 = qfleet::compile(c.t->q, o);
        o.num_threads = 1;
        const qfleet::Program f1 = qfleet::compile(c.t->q, o);
        for (std::size_t B : {std::size_t(p1.lanes()) + 1, c.full.B}) {
          SCOPED_TRACE("n=" + std::to_string(n) + " isa=" + isa + " batch=" + std::to_string(B) +
                       (per_sample ? " per-sample weights" : " shared weights"));
          const ref::Batch b = c.full.prefix(B);
          EXPECT_TRUE(bitwise_equal(ref::q_forward<double>(p1, b), ref::q_forward<double>(p2, b)));
          EXPECT_TRUE(bitwise_equal(ref::q_states<double>(p1, b), ref::q_states<double>(p2, b)));
          EXPECT_TRUE(bitwise_equal(ref::q_forward<float>(f1, b), ref::q_forward<float>(f2, b)));
          // vjp: per-sample gradients and the batch-reduced shared-weight gradient.
          const std::size_t K = static_cast<std::size_t>(p1.n_outputs());
          // (its own generator: B depends on the ISA's lanes)
          std::mt19937_64 crng = ref::case_rng("RandomCircuits.Threads", {std::uint64_t(n), per_sample, B});
          const std::vector<double> cot = ref::uniform_vec(crng, B * K, -1, 1);
          std::vector<std::vector<double>> gi(2), gw(2), out(2);
          for (int k = 0; k < 2; ++k) {
            const qfleet::Program& p = k ? p2 : p1;
            const ref::Run<double> run(b);
            gi[k].assign(B * p.n_inputs(), -7.0);
            gw[k].assign((per_sample && B > 1 ? B : 1) * p.n_weights(), -7.0);
            out[k].assign(B * K, -7.0);
            p.vjp<double>(run.args(B), cot, {gi[k], gw[k]}, out[k]);
          }
          EXPECT_TRUE(bitwise_equal(gi[0], gi[1]));
          EXPECT_TRUE(bitwise_equal(gw[0], gw[1]));
          EXPECT_TRUE(bitwise_equal(out[0], out[1]));
        }
      }
    }
  }
}

TEST(RandomCircuits, ProbsOutcomeIndexTakesTheFirstListedWireAsMostSignificant) {
  // |psi> = |1> (x) |0> (x) (|0> + |1>)/sqrt2: probs([2, 0]) puts wire 2 in the high bit.
  qfleet::Circuit c(3);
  c.add("PauliX", {0}).add("Hadamard", {2}).probs({2, 0}).probs({0, 1, 2});
  const qfleet::Program p = qfleet::compile(c);
  const auto out = p.forward<double>(qfleet::BatchArgs<double>{});
  ASSERT_EQ(out.size(), 12u);
  const double h = 0.5;
  const std::vector<double> want = {0, h, 0, h, /* [0,1,2]: */ 0, 0, 0, 0, h, h, 0, 0};
  EXPECT_LT(ref::max_abs_diff(out, want), 1e-15);
}

TEST(RandomCircuits, ExpvalOutputsComeBeforeProbsWhateverTheOrderTheyWereAdded) {
  qfleet::Circuit c(2);
  c.add("RX", {0}, {0.7}).probs({0}).expval("Z0").probs({1}).expval(qfleet::Observable::sum({{2.0, "I"}}));
  const qfleet::Program p = qfleet::compile(c);
  const auto out = p.forward<double>(qfleet::BatchArgs<double>{});
  ASSERT_EQ(out.size(), 6u);
  const double c2 = std::cos(0.35) * std::cos(0.35);
  const std::vector<double> want = {std::cos(0.7), 2.0, c2, 1 - c2, 1, 0};
  EXPECT_LT(ref::max_abs_diff(out, want), 1e-15);
}

TEST(PauliWords, ParseFactorsIdentityAndPrintBack) {
  const auto w = qfleet::PauliWord::parse("X0 Z2 Y5");
  const std::vector<std::pair<char, int>> want = {{'X', 0}, {'Z', 2}, {'Y', 5}};
  EXPECT_EQ(w.factors, want);
  EXPECT_EQ(w.max_wire(), 5);
  EXPECT_EQ(qfleet::PauliWord::parse(w.str()).factors, want);
  for (const char* id : {"I", "", "I0", "  "}) {
    EXPECT_TRUE(qfleet::PauliWord::parse(id).factors.empty()) << "'" << id << "'";
    EXPECT_EQ(qfleet::PauliWord::parse(id).max_wire(), -1);
  }
  // The identity word and a sum with it measure as documented.
  qfleet::Circuit c(2);
  c.add("RY", {1}, {0.9}).expval("I").expval(qfleet::Observable::sum({{-0.5, "I"}, {2.0, "Z1"}, {1.5, "X1 Z0"}}));
  const auto out = qfleet::compile(c).forward<double>(qfleet::BatchArgs<double>{});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0], 1.0, 1e-15);
  EXPECT_NEAR(out[1], -0.5 + 2.0 * std::cos(0.9) + 1.5 * std::sin(0.9), 1e-15);
}

}  // namespace
