// The backend matrix (ggml's test-backend-ops rule): every gate of the catalogue,
// both measurement kinds and every output (forward, states, input and weight
// gradients with shared and per-sample weights), on every backend this build and
// machine have — the cpu executor on each instruction set, the cuda bodies emulated
// on the CPU in their launch shapes (group, registers, interleaved; unit/group_emu.hpp),
// and the cuda backend itself where a GPU is visible: the executor registry's
// statevector rows, so a new row joins by itself — in both precisions, at batch
// sizes around the SIMD width and the warp (1, L-1, L, L+1, 31, 32, 33), against one
// reference: the dense simulator and its finite differences (tests/reference/).
// BackendMatrix.ListsTheWholeCatalogue fails when the library grows a gate or a
// measurement kind the matrix does not run. (Density matrices have theirs in
// test_dm.cpp, open systems in test_open_matrix.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "unit/group_emu.hpp"
#include "unit/harness.hpp"
#include "unit/matrix_rows.hpp"
#include "unit/vjp_bound.hpp"

namespace {

// What the matrix runs, by name; the catalogue test compares these with the library.
const std::vector<std::string> kMeasurements = {"expval", "probs"};

struct Result {
  std::vector<double> out, gi, gw;
  std::vector<std::complex<double>> states;  // empty where the backend does not return them here
};

// One backend: runs the circuit's forward (+ states) and its vjp in precision R.
struct Backend {
  std::string name;
  int lanes;  // its batch granularity (SIMD lanes or the warp); 0: only 1 and 33
             // (the group shape runs one sample per group: no batch boundary inside)
  // The CPU emulation of the cuda bodies starts a std::thread per simulated GPU thread
  // (CI time): there every batch size runs the fused forward + vjp with shared weights
  // in complex128, and B = 33 adds per-sample weights, the states and complex64.
  bool emulated = false;
  std::function<Result(const qfleet::Circuit&, const ref::Batch&, const std::vector<double>&, bool c64)> run;
};

template <class R>
Result run_program(const qfleet::Program& p, const ref::Batch& b, const std::vector<double>& cot) {
  Result r;
  const std::vector<R> out = ref::q_forward<R>(p, b);
  r.out.assign(out.begin(), out.end());
  for (const auto& z : ref::q_states<R>(p, b)) r.states.emplace_back(z.real(), z.imag());
  const auto g = ref::q_vjp<R>(p, b, cot);
  r.gi = g.gi;
  r.gw = g.gw;
  return r;
}

// The vjp call returns the fused forward outputs too (as the cuda backend's does).
template <class R>
Result run_emulated(const emu::Runner<R>& run, const ref::Batch& b, const std::vector<double>& cot) {
  Result r;
  if (b.B == 33) r.states = run.states(b);
  const auto g = run.vjp(b, cot);
  r.out = g.out;
  r.gi = g.gi;
  r.gw = g.gw;
  return r;
}

std::vector<Backend> backends() {
  std::vector<Backend> v;
  // The registry's statevector rows: each cpu instruction set, and cuda where a GPU is
  // visible (its bodies are emulated below either way).
  for (const qfleet::detail::Executor* row : qfleet_test::matrix_rows(qfleet::detail::ModelKind::statevector)) {
    v.push_back({row->host ? "cpu " + std::string(row->isa) : std::string(row->device), row->lanes_f64, false,
                 [row](const qfleet::Circuit& c, const ref::Batch& b, const std::vector<double>& cot, bool c64) {
                   qfleet::CompileOptions o = qfleet_test::on_row(qfleet::CompileOptions{}, *row);
                   o.precision = c64 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
                   const qfleet::Program p = qfleet::compile(c, o);
                   return c64 ? run_program<float>(p, b, cot) : run_program<double>(p, b, cot);
                 }});
  }
  // The cuda bodies on the CPU: a group of 2 threads per sample (warp/block/global),
  // the register body (n <= 5) on warps of 2^3 lanes, one circuit each, and
  // interleaved tiles of 32 samples. (Emulated warps sync by futexes, so the matrix
  // keeps them small; GroupBody.* in test_sv_group.cpp runs groups of 1..16, 32-lane
  // warps holding several circuits and tiles of 4 and 32 on random circuits.)
  struct EmuShape {
    const char* name;
    int G, warp, tile, lanes;
  };
  for (const EmuShape s : {EmuShape{"emulated cuda group", 2, 0, 0, 0}, EmuShape{"emulated cuda registers", 0, 8, 0, 0},
                           EmuShape{"emulated cuda interleaved", 1, 0, 32, 32}}) {
    v.push_back({s.name, s.lanes, true, [s](const qfleet::Circuit& c, const ref::Batch& b, const std::vector<double>& cot,
                                 bool c64) {
                   qfleet::CompileOptions o;
                   o.precision = c64 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
                   const qfleet::detail::Plan plan = qfleet::detail::build_plan(c, o);
                   if (c64) {
                     emu::Runner<float> r{plan, s.G, s.warp};
                     r.tile = s.tile;
                     return run_emulated(r, b, cot);
                   }
                   emu::Runner<double> r{plan, s.G, s.warp};
                   r.tile = s.tile;
                   return run_emulated(r, b, cot);
                 }});
  }
  // QFLEET_MATRIX_BACKEND=avx2 (a part of a name) runs only the matching backends.
  if (const char* only = std::getenv("QFLEET_MATRIX_BACKEND"); only != nullptr && *only != 0) {
    std::erase_if(v, [only](const Backend& be) { return be.name.find(only) == std::string::npos; });
  }
  return v;
}

std::vector<std::size_t> batches_around(int lanes) {  // (1, L-1, L, L+1, 31, 32, 33)
  if (lanes == 0) return {1, 33};
  std::vector<std::size_t> v = {1, std::size_t(lanes) - 1, std::size_t(lanes), std::size_t(lanes) + 1, 31, 32, 33};
  v.erase(std::remove(v.begin(), v.end(), std::size_t{0}), v.end());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// A 3-qubit circuit around `gate`: parameters from inputs and weights, an expval of a
// Pauli sum and probabilities (both measurement kinds).
void build_case(ref::Twin& t, const qfleet::GateInfo& g, std::mt19937_64& rng) {
  const int n = t.r.n;
  for (int w = 0; w < n; ++w) t.add("RY", {w}, {qfleet::Param::input(w)});
  const std::string name(g.name);
  if (name == "QubitUnitary") {
    t.unitary(ref::random_wires(rng, n, 1), ref::random_unitary(rng, 2));
    t.unitary(ref::random_wires(rng, n, 2), ref::random_unitary(rng, 4));
  } else {
    std::vector<qfleet::Param> p;
    for (int j = 0; j < g.params; ++j) {
      p.push_back(j % 2 == 0 ? qfleet::Param::weight(j, 0.8) : qfleet::Param::input(j % n, -1.1));
    }
    t.add(name, ref::random_wires(rng, n, ref::gate_wires(name)), p);
  }
  t.add("RX", {n - 1}, {qfleet::Param::weight(g.params + 1)});
  t.expval({{0.6, ref::word({{'X', 0}, {'Z', 2}})}, {-0.9, ref::word({{'Y', 1}})}});
  t.probs(ref::random_wires(rng, n, 2));
}

// Every case draws from a generator seeded by its own identity (gate, batch size,
// weights' layout), so a machine with other instruction sets, lane widths or no GPU
// checks the same numbers for the cases it shares with this one. Gradients are held
// to the error model of unit/vjp_bound.hpp: complex64 results against the
// double-precision reference with a bound that grows with what each entry sums.
TEST(BackendMatrix, EveryGateMeasurementAndOutputOnEveryBackendPrecisionAndBatch) {
  const std::vector<Backend> bes = backends();
  std::set<std::size_t> all_batches;
  for (const Backend& be : bes) {
    for (std::size_t B : batches_around(be.lanes)) all_batches.insert(B);
  }
  int cases = 0;
  std::map<std::string, int> per_backend;
  double worst[2] = {0, 0};  // the largest error/bound ratio seen, complex128 and complex64
  for (const auto& g : qfleet::kGateTable) {
    ref::Twin t(3);
    std::mt19937_64 circuit_rng = ref::case_rng(g.name);
    build_case(t, g, circuit_rng);
    for (bool per_sample : {false, true}) {
      for (std::size_t B : all_batches) {
        std::mt19937_64 rng = ref::case_rng(g.name, {B, per_sample});
        const ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::vector<double> cot = ref::uniform_vec(rng, B * std::size_t(t.r.n_outputs()), -1, 1);
        const std::vector<double> want = ref::ref_outputs(t.r, b);
        const ref::RefGrad grad = ref::ref_gradient(t.r, b, cot);
        for (const Backend& be : bes) {
          const auto mine = batches_around(be.lanes);
          if (std::find(mine.begin(), mine.end(), B) == mine.end()) continue;
          for (bool c64 : {false, true}) {
            if (be.emulated && B != 33 && (c64 || per_sample)) continue;
            SCOPED_TRACE(std::string(g.name) + " on " + be.name + (c64 ? ", complex64" : ", complex128") +
                         ", B = " + std::to_string(B) + (per_sample ? ", per-sample weights" : ", shared weights"));
            const Result r = be.run(t.q, b, cot, c64);
            // complex64: ~10 roundings of 6e-8 per amplitude of unit-norm states; outputs
            // are bounded by 1.5 (the Pauli sum's |coefficients|) and 1 (probabilities).
            EXPECT_LT(ref::max_abs_diff(r.out, want), c64 ? 2e-5 : 1e-10) << "forward";
            if (!r.states.empty() || !be.emulated) {
              EXPECT_LT(ref::max_state_err(r.states, t, b), c64 ? 2e-6 : 1e-12) << "states";
            }
            const ref::VjpBound bound = ref::vjp_bound(t.r, b, cot, ref::unit_roundoff(c64));
            const double ri = ref::bound_ratio(r.gi, grad.gi, bound.gi);
            const double rw = ref::bound_ratio(r.gw, ref::ref_gw(grad, b), bound.gw);
            EXPECT_LE(ri, 1.0) << "grad_inputs: error / bound";
            EXPECT_LE(rw, 1.0) << "grad_weights: error / bound";
            worst[c64] = std::max({worst[c64], ri, rw});
            ++cases;
            ++per_backend[be.name];
          }
        }
      }
    }
  }
  std::string names;
  for (const Backend& be : bes) names += " [" + be.name + "]";
  std::printf("backend matrix: %d cases on%s%s; largest gradient error / bound: %.3g (complex128), %.3g (complex64)\n",
              cases, names.c_str(),
              qfleet::cuda_device_count() > 0 ? "" : " (cuda itself: no GPU visible, its bodies emulated above)",
              worst[0], worst[1]);
  for (const Backend& be : bes) {  // every gate in both precisions, at least
    EXPECT_GE(per_backend[be.name], 2 * int(std::size(qfleet::kGateTable))) << be.name;
  }
}

// The error model must still see a real mistake: in every gate's case, on the cpu
// backend in both precisions, a 1 % error in the largest derivative (input or weight
// gradient) takes the result outside the bound.
TEST(BackendMatrix, TheGradientBoundCatchesAOnePercentErrorInOneDerivative) {
  int checked = 0;
  for (const auto& g : qfleet::kGateTable) {
    ref::Twin t(3);
    std::mt19937_64 circuit_rng = ref::case_rng(g.name);
    build_case(t, g, circuit_rng);
    for (bool per_sample : {false, true}) {
      for (std::size_t B : {std::size_t(1), std::size_t(33)}) {
        std::mt19937_64 rng = ref::case_rng(g.name, {B, per_sample});
        const ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, per_sample);
        const std::vector<double> cot = ref::uniform_vec(rng, B * std::size_t(t.r.n_outputs()), -1, 1);
        const ref::RefGrad grad = ref::ref_gradient(t.r, b, cot);
        for (bool c64 : {false, true}) {
          SCOPED_TRACE(std::string(g.name) + (c64 ? ", complex64" : ", complex128") + ", B = " + std::to_string(B) +
                       (per_sample ? ", per-sample weights" : ", shared weights"));
          qfleet::CompileOptions o;
          o.precision = c64 ? qfleet::Precision::complex64 : qfleet::Precision::complex128;
          const qfleet::Program p = qfleet::compile(t.q, o);
          const Result r = c64 ? run_program<float>(p, b, cot) : run_program<double>(p, b, cot);
          const ref::VjpBound bound = ref::vjp_bound(t.r, b, cot, ref::unit_roundoff(c64));
          const std::vector<double>& want_w = ref::ref_gw(grad, b);
          ASSERT_LE(ref::bound_ratio(r.gi, grad.gi, bound.gi), 1.0);
          ASSERT_LE(ref::bound_ratio(r.gw, want_w, bound.gw), 1.0);
          // the largest derivative, wherever it is
          const auto largest = [](const std::vector<double>& v) {
            return std::max_element(v.begin(), v.end(), [](double a, double c) { return std::abs(a) < std::abs(c); });
          };
          const bool in_inputs = std::abs(*largest(grad.gi)) >= std::abs(*largest(want_w));
          std::vector<double> gi = r.gi, gw = r.gw;
          std::vector<double>& wrong = in_inputs ? gi : gw;
          const std::vector<double>& want = in_inputs ? grad.gi : want_w;
          const std::size_t j = std::size_t(largest(want) - want.begin());
          wrong[j] += 0.01 * want[j];
          EXPECT_GT(in_inputs ? ref::bound_ratio(gi, grad.gi, bound.gi) : ref::bound_ratio(gw, want_w, bound.gw), 1.0)
              << (in_inputs ? "input" : "weight") << " gradient entry " << j << " = " << want[j];
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// ggml's rule: an op the matrix does not run fails here. Gates join by themselves
// (the matrix iterates the catalogue, and the reference throws for a gate it lacks);
// measurement kinds are listed in kMeasurements and built by build_case: a new
// qfleet::Measurement::Kind must join both before this passes.
TEST(BackendMatrix, ListsTheWholeCatalogue) {
  EXPECT_EQ(kMeasurements.size(), std::size_t(qfleet::Measurement::Kind::Probs) + 1);
  std::mt19937_64 rng(5);
  for (const auto& g : qfleet::kGateTable) {
    ref::Twin t(3);
    build_case(t, g, rng);
    std::set<qfleet::Measurement::Kind> kinds;
    for (const auto& m : t.q.measurements()) kinds.insert(m.kind);
    EXPECT_EQ(kinds.size(), kMeasurements.size()) << g.name;
    const ref::Batch b = ref::random_batch(rng, 1, t.r.n_inputs, t.r.n_weights, false);
    EXPECT_NO_THROW((void)ref::ref_outputs(t.r, b)) << g.name << ": the reference has no matrix for it";
  }
}

}  // namespace
