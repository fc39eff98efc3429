// Gate matrices: every catalogue gate, on every wire placement of 1..4 qubits,
// applied to a random complex state, against the dense reference (reference/statevector.hpp).
#include <gtest/gtest.h>

#include "unit/harness.hpp"

namespace {

struct GateCase {
  std::string name;
  int wires;
  int params;
};

// Every row of qfleet::kGateTable; QubitUnitary once on 1 wire and once on 2.
std::vector<GateCase> catalogue() {
  std::vector<GateCase> v;
  for (const auto& g : qfleet::kGateTable) {
    if (g.id == qfleet::Gate::QubitUnitary) {
      v.push_back({"QubitUnitary", 1, 0});
      v.push_back({"QubitUnitary", 2, 0});
    } else {
      v.push_back({std::string(g.name), ref::gate_wires(g.name), ref::gate_params(g.name)});
    }
  }
  return v;
}

// Every ordered choice of k distinct wires out of n: first, last, middle,
// controls above and below the targets, adjacent and not.
std::vector<std::vector<int>> placements(int n, int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> cur;
  auto rec = [&](auto&& self) -> void {
    if (static_cast<int>(cur.size()) == k) {
      out.push_back(cur);
      return;
    }
    for (int w = 0; w < n; ++w) {
      if (std::find(cur.begin(), cur.end(), w) != cur.end()) continue;
      cur.push_back(w);
      self(self);
      cur.pop_back();
    }
  };
  rec(rec);
  return out;
}

enum class Source { Constant, Input, SharedWeight, PerSampleWeight };
const char* source_name(Source s) {
  switch (s) {
    case Source::Constant:
      return "constant";
    case Source::Input:
      return "input";
    case Source::SharedWeight:
      return "shared weight";
    default:
      return "per-sample weight";
  }
}

// A circuit that prepares a random complex state on n qubits (AmplitudeEmbedding of
// per-sample real features, then RX RY RZ with random angles on each wire), applies
// `gc` on `wires` with parameters from `src`, and measures <Z0>. Inputs are laid
// out as [features (2^n), gate inputs]; returns the batch to run it with.
ref::Batch build(ref::Twin& t, const GateCase& gc, const std::vector<int>& wires, Source src,
                 std::mt19937_64& rng, std::size_t B) {
  const int n = t.r.n;
  const int nf = 1 << n;
  t.amplitude_embedding(ref::wire_order({}, n), nf, 0, /*normalize=*/true, {});
  for (int w = 0; w < n; ++w) {
    t.add("RX", {w}, {ref::uniform(rng, -ref::kPi, ref::kPi)});
    t.add("RY", {w}, {ref::uniform(rng, -ref::kPi, ref::kPi)});
    t.add("RZ", {w}, {ref::uniform(rng, -ref::kPi, ref::kPi)});
  }
  std::vector<qfleet::Param> p;
  for (int j = 0; j < gc.params; ++j) {
    switch (src) {
      case Source::Constant:
        p.emplace_back(ref::uniform(rng, -2 * ref::kPi, 2 * ref::kPi));
        break;
      case Source::Input:
        p.push_back(qfleet::Param::input(nf + j, ref::random_scale(rng)));
        break;
      default:
        p.push_back(qfleet::Param::weight(j, ref::random_scale(rng)));
        break;
    }
  }
  if (gc.name == "QubitUnitary") {
    t.unitary(wires, ref::random_unitary(rng, ref::Index{1} << gc.wires));
  } else {
    t.add(gc.name, wires, p);
  }
  t.expval(ref::word({{'Z', 0}}));
  ref::Batch b = ref::random_batch(rng, B, t.r.n_inputs, t.r.n_weights, src == Source::PerSampleWeight);
  for (std::size_t s = 0; s < B; ++s) {  // features away from zero so every sample has a norm
    for (int j = 0; j < nf; ++j) {
      double& v = b.x[s * b.ni + j];
      v = (v < 0 ? -1 : 1) * (0.1 + std::abs(v) / ref::kPi);
    }
  }
  return b;
}

// Each case is drawn once and run on every ISA (the draws do not depend on which
// ISAs the machine has).
TEST(GateMatrices, EveryGateOnEveryPlacementMatchesTheReferenceInComplex128) {
  std::mt19937_64 rng(20240601);
  int checked = 0;
  for (const GateCase& gc : catalogue()) {
    for (int n = gc.wires; n <= 4; ++n) {
      for (const auto& wires : placements(n, gc.wires)) {
        for (Source src : {Source::Constant, Source::Input, Source::SharedWeight, Source::PerSampleWeight}) {
          if (gc.params == 0 && src != Source::Constant) continue;
          ref::Twin t(n);
          const ref::Batch b = build(t, gc, wires, src, rng, 5);
          for (const std::string& isa : qfleet::available_isas()) {
            qfleet::CompileOptions o;
            o.isa = isa;
            const qfleet::Program prog = qfleet::compile(t.q, o);
            ASSERT_EQ(prog.isa(), isa);
            const double err = ref::max_state_diff(ref::q_states<double>(prog, b), t.r, b, /*dense=*/true);
            EXPECT_LT(err, 1e-12) << gc.name << " on wires " << testing::PrintToString(wires) << " of " << n
                                  << " qubits, parameters from " << source_name(src) << ", isa " << isa;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(GateMatrices, EveryGateOnEveryPlacementMatchesTheReferenceInComplex64) {
  std::mt19937_64 rng(77);
  for (const GateCase& gc : catalogue()) {
    for (int n = gc.wires; n <= 4; ++n) {
      for (const auto& wires : placements(n, gc.wires)) {
        const Source src = gc.params ? Source::Input : Source::Constant;
        ref::Twin t(n);
        const ref::Batch b = build(t, gc, wires, src, rng, 9);
        for (const std::string& isa : qfleet::available_isas()) {
          qfleet::CompileOptions o;
          o.isa = isa;
          o.precision = qfleet::Precision::complex64;
          const qfleet::Program prog = qfleet::compile(t.q, o);
          // float: ~10 operations on unit-norm states, each rounding at 6e-8.
          const double err = ref::max_state_diff(ref::q_states<float>(prog, b), t.r, b, /*dense=*/true);
          EXPECT_LT(err, 2e-6) << gc.name << " on wires " << testing::PrintToString(wires) << " of " << n
                               << " qubits, isa " << isa;
        }
      }
    }
  }
}

TEST(GateNames, CanonicalNamesAndDocumentedAliasesResolve) {
  for (const auto& g : qfleet::kGateTable) EXPECT_EQ(qfleet::gate_from_name(g.name), g.id) << g.name;
  const std::pair<const char*, qfleet::Gate> aliases[] = {  // docs/gates.md
      {"Sdg", qfleet::Gate::Sdg},  {"Tdg", qfleet::Gate::Tdg},       {"SXdg", qfleet::Gate::SXdg},
      {"CX", qfleet::Gate::CNOT},  {"I", qfleet::Gate::Identity},    {"H", qfleet::Gate::Hadamard},
      {"X", qfleet::Gate::PauliX}, {"Y", qfleet::Gate::PauliY},      {"Z", qfleet::Gate::PauliZ},
      {"U", qfleet::Gate::U3},     {"CPhase", qfleet::Gate::ControlledPhaseShift}};
  for (const auto& [name, id] : aliases) EXPECT_EQ(qfleet::gate_from_name(name), id) << name;
  // The adjoint gates are spelled the PennyLane way.
  qfleet::Circuit c(1);
  c.add("Adjoint(S)", {0}).add("Adjoint(T)", {0}).add("Adjoint(SX)", {0});
  ASSERT_EQ(c.operations().size(), 3u);
  EXPECT_EQ(c.operations()[0].gate, qfleet::Gate::Sdg);
  EXPECT_EQ(c.operations()[1].gate, qfleet::Gate::Tdg);
  EXPECT_EQ(c.operations()[2].gate, qfleet::Gate::SXdg);
}

TEST(GateNames, AddByNameAndByEnumRecordTheSameOperation) {
  qfleet::Circuit a(3), b(3);
  a.add("CRot", {2, 0}, {0.1, qfleet::Param::input(1, 2.0), qfleet::Param::weight(3, -1.0)});
  b.add(qfleet::Gate::CRot, {2, 0}, {0.1, qfleet::Param::input(1, 2.0), qfleet::Param::weight(3, -1.0)});
  ASSERT_EQ(a.operations().size(), 1u);
  ASSERT_EQ(b.operations().size(), 1u);
  EXPECT_EQ(a.operations()[0].gate, b.operations()[0].gate);
  EXPECT_EQ(a.operations()[0].wires, b.operations()[0].wires);
  EXPECT_EQ(a.n_inputs(), 2);
  EXPECT_EQ(a.n_weights(), 4);
  EXPECT_EQ(b.n_inputs(), 2);
  EXPECT_EQ(b.n_weights(), 4);
}

}  // namespace
