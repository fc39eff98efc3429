// A compiled program shared by several threads: state-vector circuits, density-matrix
// circuits with channels and open systems (closed and with jumps, several solvers), each
// compiled once and called from four threads at once (forward, adjoint, states,
// samples), every result equal to the same call made alone, bit for bit. This binary is
// what the ThreadSanitizer tree runs (scripts/test.sh), where a data race in a program's
// caches or workspaces is reported even when the results happen to agree.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "threads/shared_calls.hpp"
#include "unit/harness.hpp"
#include "unit/open_harness.hpp"

namespace {

// The bytes of every result of one call.
using Bytes = std::vector<unsigned char>;

template <class T>
void append(Bytes& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

// Each of `calls` made alone, then from 4 threads x 6 rounds (shared_calls.hpp).
void expect_shared_calls_match_serial(const std::vector<std::function<Bytes()>>& calls, const std::string& what) {
  threads_tests::expect_shared_calls_match_serial(
      int(calls.size()), [&](int k) { return calls[std::size_t(k)](); },
      [](const Bytes& a, const Bytes& b) { return a == b; }, 6, what);
}

// forward, the fused adjoint, the states (state vectors) and 64 samples per element.
Bytes circuit_call(const qfleet::Program& p, const ref::Batch& b, const std::vector<double>& cot, bool states) {
  Bytes out;
  append(out, ref::q_forward<double>(p, b));
  const auto g = ref::q_vjp<double>(p, b, cot, /*fused=*/true);
  append(out, g.gi);
  append(out, g.gw);
  append(out, g.out);
  if (states) append(out, ref::q_states<double>(p, b));
  const ref::Run<double> run(b);
  std::vector<std::uint64_t> samples(b.B * 64, 0);
  p.sample<double>(run.args(b.B), {}, 64, 5, samples);
  append(out, samples);
  return out;
}

// Programs and their arguments live here so the calls can refer to them.
struct CircuitCase {
  std::unique_ptr<ref::Twin> twin;
  std::optional<qfleet::Program> program;  // (made by compile)
  ref::Batch batch;
  std::vector<double> cot;
};

TEST(Threads, StateVectorCircuitsSharedByFourThreadsMatchSerialCalls) {
  std::mt19937_64 rng(1);
  std::vector<CircuitCase> cases(4);
  for (int k = 0; k < 4; ++k) {  // four programs of different sizes, each shared by all threads
    auto& c = cases[std::size_t(k)];
    const int n = 2 + 2 * k;
    c.twin = std::make_unique<ref::Twin>(n);
    ref::random_circuit(*c.twin, rng, ref::RandomSpec{});
    qfleet::CompileOptions o;
    o.num_threads = k % 2 ? 2 : 0;
    c.program.emplace(qfleet::compile(c.twin->q, o));
    c.batch = ref::random_batch(rng, 5 + 11 * k, c.twin->r.n_inputs, c.twin->r.n_weights, k % 2);
    c.cot = ref::uniform_vec(rng, c.batch.B * c.twin->r.n_outputs(), -1, 1);
    EXPECT_LT(ref::max_abs_diff(ref::q_forward<double>(*c.program, c.batch), ref::ref_outputs(c.twin->r, c.batch)), 1e-10);
  }
  std::vector<std::function<Bytes()>> calls;
  for (const auto& c : cases) calls.push_back([&c] { return circuit_call(*c.program, c.batch, c.cot, true); });
  expect_shared_calls_match_serial(calls, "state vector");
}

TEST(Threads, DensityMatrixCircuitsSharedByFourThreadsMatchSerialCalls) {
  std::mt19937_64 rng(2);
  std::vector<CircuitCase> cases(3);
  for (int k = 0; k < 3; ++k) {
    auto& c = cases[std::size_t(k)];
    const int n = 2 + k;
    c.twin = std::make_unique<ref::Twin>(n);
    ref::random_circuit(*c.twin, rng, ref::RandomSpec{});
    // Channels after the gates make it a density-matrix program.
    c.twin->q.channel("Depolarizing", {0}, {0.05});
    c.twin->q.channel("AmplitudeDamping", {n - 1}, {0.1});
    c.twin->q.readout_error(0, 0.02, 0.03);
    qfleet::CompileOptions o;
    o.num_threads = k % 2 ? 2 : 0;
    c.program.emplace(qfleet::compile(c.twin->q, o));
    ASSERT_EQ(c.program->simulator(), qfleet::Simulator::density_matrix);
    c.batch = ref::random_batch(rng, 4 + 7 * k, c.twin->r.n_inputs, c.twin->r.n_weights, k % 2);
    c.cot = ref::uniform_vec(rng, c.batch.B * c.twin->r.n_outputs(), -1, 1);
  }
  std::vector<std::function<Bytes()>> calls;
  for (const auto& c : cases) calls.push_back([&c] { return circuit_call(*c.program, c.batch, c.cot, false); });
  expect_shared_calls_match_serial(calls, "density matrix");
}

// An open system: fidelity, leakage, expectations and final states forward, and the
// gradients w.r.t. amplitudes, drift coefficients and rates.
struct OpenCase {
  ref::Model model{2};
  std::optional<qfleet::OpenProgram> program;
  ref::TaskBatch batch;
  std::vector<double> cot_f, cot_l;
};

Bytes open_call(const OpenCase& c) {
  Bytes out;
  const auto w = ref::want_all(c.model);
  const auto f = ref::qforward<double>(*c.program, c.model, c.batch, w);
  append(out, f.fid);
  append(out, f.leak);
  append(out, f.exp);
  append(out, f.fin);
  const auto g = ref::qvjp<double>(*c.program, c.model, c.batch, c.cot_f, c.cot_l, w);
  append(out, g.g_amp);
  append(out, g.g_drift);
  append(out, g.g_rates);
  append(out, g.fid);
  return out;
}

TEST(Threads, OpenSystemsSharedByFourThreadsMatchSerialCalls) {
  std::mt19937_64 rng(3);
  const qfleet::Solver solvers[] = {qfleet::Solver::exact, qfleet::Solver::rk4, qfleet::Solver::exact};
  std::vector<OpenCase> cases(3);
  for (int k = 0; k < 3; ++k) {  // closed pure, open mixed (Uhlmann), open unitary
    auto& c = cases[std::size_t(k)];
    const auto& kind = ref::kProblemKinds[k == 0 ? 0 : k == 1 ? 4 : 5];
    c.model = ref::kind_model(kind, rng, 3 + k % 2);
    auto options = ref::solver_options(solvers[k]);
    options.num_threads = k % 2 ? 2 : 0;
    c.program.emplace(qfleet::compile(ref::build(c.model), options));
    c.batch = ref::random_batch(rng, c.model, 3 + 4 * std::size_t(k), true, k != 1, k == 2);
    c.cot_f = ref::uniform_vec(rng, c.batch.B, -1, 1);
    c.cot_l = ref::uniform_vec(rng, c.batch.B, -1, 1);
  }
  std::vector<std::function<Bytes()>> calls;
  for (const auto& c : cases) calls.push_back([&c] { return open_call(c); });
  expect_shared_calls_match_serial(calls, "open system");
}

}  // namespace
