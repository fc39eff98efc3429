// Program behaviour (concurrent calls: tests/threads): copies, workspace reuse, large registers
// (one sample per tile and amplitude-parallel paths), empty and 1-qubit circuits.
#include <gtest/gtest.h>

#include <cstring>

#include "unit/expect_error.hpp"
#include "unit/harness.hpp"

namespace {

struct Results {
  std::vector<double> out, gi, gw, fused;
  std::vector<std::complex<double>> states;
  std::vector<std::uint64_t> samples;
  bool operator==(const Results& o) const {
    auto same = [](const auto& a, const auto& b) {
      return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
    };
    return same(out, o.out) && same(gi, o.gi) && same(gw, o.gw) && same(fused, o.fused) &&
           same(states, o.states) && same(samples, o.samples);
  }
};

Results run_all(const qfleet::Program& p, const ref::Batch& b, const std::vector<double>& cot) {
  Results r;
  r.out = ref::q_forward<double>(p, b);
  const auto g = ref::q_vjp<double>(p, b, cot, /*fused=*/true);
  r.gi = g.gi;
  r.gw = g.gw;
  r.fused = g.out;
  r.states = ref::q_states<double>(p, b);
  const ref::Run<double> run(b);
  r.samples.assign(b.B * 64, 0);
  p.sample<double>(run.args(b.B), {}, 64, 5, r.samples);
  return r;
}

TEST(Program, CopiesShareThePlanAndGiveTheSameResults) {
  std::mt19937_64 rng(2);
  ref::Twin t(4);
  ref::random_circuit(t, rng, ref::RandomSpec{});
  const qfleet::Program p = qfleet::compile(t.q);
  const qfleet::Program q = p;  // NOLINT(performance-unnecessary-copy-initialization)
  qfleet::Program r = qfleet::compile(t.q);
  r = p;
  EXPECT_EQ(&q.circuit(), &p.circuit());
  EXPECT_EQ(&r.circuit(), &p.circuit());
  const ref::Batch b = ref::random_batch(rng, 9, t.r.n_inputs, t.r.n_weights, false);
  EXPECT_EQ(ref::q_forward<double>(q, b), ref::q_forward<double>(p, b));
  EXPECT_EQ(ref::q_forward<double>(r, b), ref::q_forward<double>(p, b));
  EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(q, b), ref::ref_outputs(t.r, b)), 1e-10);
}

TEST(Program, KeepsItsOwnCopyOfTheCircuit) {
  qfleet::Circuit c(2);
  c.add("RX", {0}, {0.5}).expval("Z0");
  const qfleet::Program p = qfleet::compile(c);
  c.add("PauliX", {0}).expval("Z1");
  EXPECT_EQ(p.circuit().operations().size(), 1u);
  EXPECT_EQ(p.n_outputs(), 1);
  const auto out = p.forward<double>(qfleet::BatchArgs<double>{});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0], std::cos(0.5), 1e-15);
}

TEST(Program, ReusedWorkspacesCarryNothingBetweenCallsOrPrograms) {
  std::mt19937_64 rng(3);
  ref::Twin big(7), small(3);
  ref::random_circuit(big, rng, ref::RandomSpec{});
  ref::random_circuit(small, rng, ref::RandomSpec{});
  const qfleet::Program pb = qfleet::compile(big.q), ps = qfleet::compile(small.q);
  const ref::Batch bb = ref::random_batch(rng, 257, big.r.n_inputs, big.r.n_weights, true);
  const ref::Batch bs = ref::random_batch(rng, 5, small.r.n_inputs, small.r.n_weights, false);
  const auto cs = ref::uniform_vec(rng, bs.B * small.r.n_outputs(), -1, 1);
  const auto cb = ref::uniform_vec(rng, bb.B * big.r.n_outputs(), -1, 1);
  const Results first = run_all(ps, bs, cs);
  run_all(pb, bb, cb);  // grows this thread's workspace and fills it with other data
  EXPECT_TRUE(run_all(ps, bs, cs) == first);
  run_all(pb, bb.prefix(1), std::vector<double>(cb.begin(), cb.begin() + big.r.n_outputs()));
  EXPECT_TRUE(run_all(ps, bs, cs) == first);
  EXPECT_LT(ref::max_abs_diff(first.out, ref::ref_outputs(small.r, bs)), 1e-10);
}

// n = 13..16: more than 12 qubits runs one sample per tile; with 2 threads, a
// batch of 1 splits each state's amplitudes across the threads and a batch of 3
// runs samples in parallel. n = 12 is the last size with SIMD tiles of samples.
TEST(Program, LargeRegistersMatchTheReference) {
  std::mt19937_64 rng(4);
  for (int n = 12; n <= 16; ++n) {
    ref::Twin t(n);
    ref::RandomSpec s;
    s.items = n + 6;
    s.templates = false;
    ref::random_circuit(t, rng, s);
    const std::size_t lanes = static_cast<std::size_t>(qfleet::compile(t.q).lanes());
    // (its own generator: the batch size depends on the ISA's lanes)
    std::mt19937_64 brng = ref::case_rng("Program.LargeRegisters", {std::uint64_t(n)});
    const ref::Batch full = ref::random_batch(brng, n == 12 ? lanes + 1 : 3, t.r.n_inputs, t.r.n_weights, n % 2 == 0);
    std::vector<ref::Vec> want;
    std::vector<double> want_out;
    for (std::size_t b = 0; b < full.B; ++b) {
      want.push_back(ref::state(t.r, full.xrow(b), full.wrow(b)));
      const auto o = ref::measure(t.r, want.back());
      want_out.insert(want_out.end(), o.begin(), o.end());
    }
    for (int threads : {2, 1, 4}) {  // 4 threads on a batch of 3: amplitude-parallel again
      qfleet::CompileOptions o;
      o.num_threads = threads;
      const qfleet::Program p = qfleet::compile(t.q, o);
      std::vector<std::size_t> sizes = {1, 3};
      if (full.B > 3) sizes.push_back(full.B);
      for (std::size_t B : sizes) {
        SCOPED_TRACE("n=" + std::to_string(n) + " batch " + std::to_string(B) + " threads " + std::to_string(threads));
        const ref::Batch b = full.prefix(B);
        const auto out = ref::q_forward<double>(p, b);
        EXPECT_LT(ref::max_abs_diff(out, std::vector<double>(want_out.begin(), want_out.begin() + B * t.r.n_outputs())),
                  1e-10);
        const auto st = ref::q_states<double>(p, b);
        const std::size_t dim = std::size_t{1} << n;
        double err = 0;
        for (std::size_t s2 = 0; s2 < B; ++s2)
          for (std::size_t i = 0; i < dim; ++i) err = std::max(err, std::abs(st[s2 * dim + i] - want[s2][i]));
        EXPECT_LT(err, 1e-10);
      }
    }
  }
}

TEST(Program, LargeRegisterGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  const int n = 13;
  ref::Twin t(n);
  t.add("Hadamard", {0}).add("RY", {12}, {qfleet::Param::input(0, 1.3)});
  t.add("CRX", {12, 3}, {qfleet::Param::weight(0, -0.7)}).add("CNOT", {0, 7});
  t.add("Rot", {7}, {qfleet::Param::weight(1), qfleet::Param::input(1), 0.2});
  t.add("IsingYY", {3, 0}, {qfleet::Param::weight(2, 2.0)}).add("PhaseShift", {5}, {qfleet::Param::input(0)});
  t.add("Hadamard", {5}).add("CZ", {5, 7});
  t.expval({{0.5, ref::word({{'Y', 3}, {'X', 7}})}, {-1.0, ref::word({{'Z', 12}})}}).expval(ref::word({{'X', 5}}));
  t.probs({7, 0});
  for (bool per_sample : {false, true}) {
    const ref::Batch full = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, per_sample);
    for (std::size_t B : {std::size_t{1}, std::size_t{3}}) {
      const ref::Batch b = full.prefix(B);
      const auto cot = ref::uniform_vec(rng, B * t.r.n_outputs(), -1, 1);
      const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
      for (int threads : {2, 4}) {
        qfleet::CompileOptions o;
        o.num_threads = threads;
        const qfleet::Program p = qfleet::compile(t.q, o);
        for (const bool saved : {false, true}) {  // fused, and autograd's two calls
          const auto got = saved ? ref::q_vjp_saved<double>(p, b, cot) : ref::q_vjp<double>(p, b, cot, true);
          EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-4), 1e-6) << "batch " << B << " threads " << threads << saved;
          EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), 1e-4), 1e-6)
              << "batch " << B << " threads " << threads << saved;
          EXPECT_LT(ref::max_abs_diff(got.out, ref::ref_outputs(t.r, b)), 1e-10);
        }
      }
    }
  }
}

TEST(Program, EmptyCircuitMeasuresTheZeroState) {
  for (int n : {1, 3, 13}) {
    qfleet::Circuit c(n);
    c.expval("Z0").expval(qfleet::Observable::sum({{0.5, "X0"}, {2.0, "I"}})).probs({n - 1});
    c.reserve_inputs(2).reserve_weights(1);
    const qfleet::Program p = qfleet::compile(c);
    EXPECT_EQ(p.n_outputs(), 4);
    const std::vector<double> x = {0.1, 0.2, 0.3, 0.4}, w = {0.5};
    const qfleet::BatchArgs<double> a{2, x, w};
    const auto out = p.forward<double>(a);
    const std::vector<double> want = {1, 2, 1, 0, 1, 2, 1, 0};
    EXPECT_LT(ref::max_abs_diff(out, want), 1e-15) << "n=" << n;
    std::vector<std::complex<double>> st(2 << n, {9, 9});
    p.states<double>(a, st);
    for (std::size_t i = 0; i < st.size(); ++i)
      EXPECT_EQ(st[i], std::complex<double>(i % (std::size_t{1} << n) == 0 ? 1.0 : 0.0, 0.0));
    std::vector<double> cot(8, 1.0), gi(4, 9.0), gw(1, 9.0);
    p.vjp<double>(a, cot, {gi, gw});
    EXPECT_EQ(gi, std::vector<double>(4, 0.0));
    EXPECT_EQ(gw, std::vector<double>(1, 0.0));
  }
}

TEST(Program, SingleQubitCircuitsMatchTheReferenceForwardAndGradient) {
  std::mt19937_64 rng(6);
  for (int rep = 0; rep < 6; ++rep) {
    ref::Twin t(1);
    ref::RandomSpec s;
    s.items = 6;
    ref::random_circuit(t, rng, s);
    for (const std::string& isa : qfleet::available_isas()) {
      qfleet::CompileOptions o;
      o.isa = isa;
      const qfleet::Program p = qfleet::compile(t.q, o);
      for (std::size_t B : ref::batch_sizes(p.lanes())) {
        // (its own generator: the batch sizes depend on the ISA's lanes)
        std::mt19937_64 brng = ref::case_rng("Program.SingleQubit", {std::uint64_t(rep), B});
        const ref::Batch b = ref::random_batch(brng, B, t.r.n_inputs, t.r.n_weights, rep % 2);
        EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(p, b), ref::ref_outputs(t.r, b)), 1e-12);
        if (B > 20) continue;
        const auto cot = ref::uniform_vec(brng, B * t.r.n_outputs(), -1, 1);
        const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
        const auto got = ref::q_vjp<double>(p, b, cot);
        EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-4), 1e-6);
        EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), 1e-4), 1e-6);
      }
    }
  }
}

TEST(Program, ReportsItsIsaAndShape) {
  const auto isas = qfleet::available_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.back(), "baseline");
  qfleet::Circuit c(2);
  c.add("RX", {0}, {qfleet::Param::input(3)}).add("RY", {1}, {qfleet::Param::weight(1)}).expval("Z0").probs({1, 0});
  qfleet::CompileOptions o;
  o.isa = "automatic";
  const qfleet::Program p = qfleet::compile(c, o);
  EXPECT_EQ(p.isa(), isas.front());  // the best, or QFLEET_ISA's (which caps the list)
  EXPECT_EQ(p.n_qubits(), 2);
  EXPECT_EQ(p.n_inputs(), 4);
  EXPECT_EQ(p.n_weights(), 2);
  EXPECT_EQ(p.n_outputs(), 5);
  for (const std::string& isa : isas) {
    o.isa = isa;
    o.precision = qfleet::Precision::complex128;
    const qfleet::Program a = qfleet::compile(c, o);
    o.precision = qfleet::Precision::complex64;
    const qfleet::Program b = qfleet::compile(c, o);
    EXPECT_EQ(a.isa(), isa);
    EXPECT_EQ(b.isa(), isa);
    EXPECT_GE(a.lanes(), 1);
    EXPECT_GE(b.lanes(), a.lanes());  // as many floats as doubles fit a vector
  }
}

TEST(Program, ConvenienceForwardEqualsTheSpanForm) {
  std::mt19937_64 rng(7);
  ref::Twin t(3);
  ref::random_circuit(t, rng, ref::RandomSpec{});
  const qfleet::Program p = qfleet::compile(t.q);
  const ref::Batch b = ref::random_batch(rng, 6, t.r.n_inputs, t.r.n_weights, true);
  const ref::Run<double> run(b);
  std::vector<double> out(6 * p.n_outputs());
  p.forward<double>(run.args(6), std::span<double>(out));
  EXPECT_EQ(p.forward<double>(run.args(6)), out);
  EXPECT_LT(ref::max_abs_diff(out, ref::ref_outputs(t.r, b)), 1e-10);
}

// Saved states: a density-matrix program has none (vjp_saved runs vjp and gives the
// reference gradient); wrong sizes are clear errors.
TEST(Program, SavedStatesOnlyWhereACallCanResume) {
  std::mt19937_64 rng(11);
  ref::Twin t(2);
  t.add("RX", {0}, {qfleet::Param::input(0)}).add("CNOT", {0, 1}).add("RY", {1}, {qfleet::Param::weight(0)});
  t.expval(ref::word({{'Z', 1}}));
  const ref::Batch b = ref::random_batch(rng, 3, t.r.n_inputs, t.r.n_weights, false);
  const auto cot = ref::uniform_vec(rng, 3, -1, 1);
  const ref::RefGrad want = ref::ref_gradient(t.r, b, cot);
  qfleet::CompileOptions dm;
  dm.simulator = qfleet::Simulator::density_matrix;
  const qfleet::Program mixed = qfleet::compile(t.q, dm);
  EXPECT_EQ(mixed.saved_size(3), 0u);
  const auto got = ref::q_vjp_saved<double>(mixed, b, cot);
  EXPECT_LE(ref::rel_err(got.gi, want.gi, 1e-4), 1e-6);
  EXPECT_LE(ref::rel_err(got.gw, ref::ref_gw(want, b), 1e-4), 1e-6);
  const ref::Run<double> run(b);
  std::vector<double> out(3), saved(24), cot3(cot), gw(1);
  EXPECT_QFLEET_ERROR(mixed.forward<double>(run.args(3), out, saved), "cannot save states", "density matrices");
  const qfleet::Program sv = qfleet::compile(t.q);
  EXPECT_EQ(sv.saved_size(3), 24u);  // 3 x 2^2 complex
  std::vector<double> short_saved(23);
  EXPECT_QFLEET_ERROR(sv.forward<double>(run.args(3), out, short_saved), "saved", "24");
  EXPECT_QFLEET_ERROR(sv.vjp_saved<double>(run.args(3), short_saved, cot3, qfleet::Gradients<double>{{}, gw}),
                      "saved", "24");
}

}  // namespace
