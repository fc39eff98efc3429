// Sanity checks of the reference simulator itself (reference/statevector.hpp), against facts
// that can be read off by hand, so the other tests stand on something checked.
#include <gtest/gtest.h>

#include "qfleet/qfleet.hpp"
#include "reference/random.hpp"
#include "reference/statevector.hpp"

namespace {

using ref::cd;
using ref::Mat;
using ref::Vec;

double dist(const Mat& a, const Mat& b) { return (a - b).cwiseAbs().maxCoeff(); }

Vec basis(int n, std::uint64_t i) {
  Vec v = Vec::Zero(std::int64_t{1} << n);
  v[i] = 1;
  return v;
}

TEST(Reference, EveryCatalogueGateHasAUnitaryMatrixOfTheRightSize) {
  std::mt19937_64 rng(11);
  for (const auto& g : qfleet::kGateTable) {
    if (g.id == qfleet::Gate::QubitUnitary) continue;
    const std::string name(g.name);
    EXPECT_EQ(ref::gate_wires(name), g.wires) << name;
    EXPECT_EQ(ref::gate_params(name), g.params) << name;
    const Mat m = ref::gate(name, ref::uniform_vec(rng, 3, -3, 3));
    ASSERT_EQ(m.rows(), 1 << g.wires) << name;
    EXPECT_LT(dist(m.adjoint() * m, ref::eye(m.rows())), 1e-14) << name;
  }
}

TEST(Reference, RotMatchesPennyLanesExplicitForm) {
  const double f = 0.3, t = -1.1, w = 2.4;
  const cd i = ref::kI;
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  const Mat want = ref::mat2(std::exp(-i * (f + w) / 2.0) * c, -std::exp(i * (f - w) / 2.0) * s,
                           std::exp(-i * (f - w) / 2.0) * s, std::exp(i * (f + w) / 2.0) * c);
  EXPECT_LT(dist(ref::Rot(f, t, w), want), 1e-15);
}

TEST(Reference, RotationsAreExponentialsOfPaulis) {
  // exp(-i t P / 2) = cos(t/2) I - i sin(t/2) P.
  const double t = 0.77;
  for (char p : {'X', 'Y', 'Z'}) {
    const Mat want = std::cos(t / 2) * ref::eye(2) - ref::kI * std::sin(t / 2) * ref::pauli(p);
    EXPECT_LT(dist(ref::gate(std::string("R") + p, {t}), want), 1e-15) << p;
  }
  const Mat zz = std::cos(t / 2) * ref::eye(4) - ref::kI * std::sin(t / 2) * ref::kron(ref::pauli('Z'), ref::pauli('Z'));
  EXPECT_LT(dist(ref::IsingZZ(t), zz), 1e-15);
  // U3(t, f, l) = e^{i(f+l)/2} RZ(f) RY(t) RZ(l) (PennyLane's decomposition).
  const double f = -0.4, l = 1.9;
  EXPECT_LT(dist(ref::U3(t, f, l), std::exp(ref::kI * (f + l) / 2.0) * ref::RZ(f) * ref::RY(t) * ref::RZ(l)), 1e-15);
  // S^2 = Z, T^2 = S, SX^2 = X.
  EXPECT_LT(dist(ref::gate("S", {}) * ref::gate("S", {}), ref::pauli('Z')), 1e-15);
  EXPECT_LT(dist(ref::gate("T", {}) * ref::gate("T", {}), ref::gate("S", {})), 1e-15);
  EXPECT_LT(dist(ref::SX() * ref::SX(), ref::pauli('X')), 1e-15);
}

TEST(Reference, ControlledGatesActOnTheTargetWhenEveryControlIsOne) {
  // CNOT [control=0, target=1]: |10> -> |11>, |01> -> |01>.
  EXPECT_LT((ref::embed(ref::gate("CNOT", {}), {0, 1}, 2) * basis(2, 2) - basis(2, 3)).norm(), 1e-15);
  EXPECT_LT((ref::embed(ref::gate("CNOT", {}), {0, 1}, 2) * basis(2, 1) - basis(2, 1)).norm(), 1e-15);
  // CNOT [control=1, target=0]: |01> -> |11>.
  EXPECT_LT((ref::embed(ref::gate("CNOT", {}), {1, 0}, 2) * basis(2, 1) - basis(2, 3)).norm(), 1e-15);
  // Toffoli [2, 0, 1] on 3 qubits: flips wire 1 iff wires 2 and 0 are set: |101> -> |111>.
  EXPECT_LT((ref::embed(ref::gate("Toffoli", {}), {2, 0, 1}, 3) * basis(3, 5) - basis(3, 7)).norm(), 1e-15);
  EXPECT_LT((ref::embed(ref::gate("Toffoli", {}), {2, 0, 1}, 3) * basis(3, 4) - basis(3, 4)).norm(), 1e-15);
  // CSWAP [c=2, t1=0, t2=1]: |101> -> |011>.
  EXPECT_LT((ref::embed(ref::gate("CSWAP", {}), {2, 0, 1}, 3) * basis(3, 5) - basis(3, 3)).norm(), 1e-15);
  // PauliX on wire 0 of 3 flips the most significant bit.
  EXPECT_LT((ref::embed(ref::pauli('X'), {0}, 3) * basis(3, 0) - basis(3, 4)).norm(), 1e-15);
}

TEST(Reference, EmbeddingOnAdjacentAscendingWiresIsAKroneckerProduct) {
  std::mt19937_64 rng(5);
  const Mat u = ref::random_unitary(rng, 4);
  // I_2 (x) U (x) I_2 for wires {1, 2} of 4.
  const Mat want = ref::kron(ref::kron(ref::eye(2), u), ref::eye(2));
  EXPECT_LT(dist(ref::embed(u, {1, 2}, 4), want), 1e-15);
  // Reversed wires: U on [2, 1] = SWAP U SWAP on [1, 2].
  const Mat sw = ref::kron(ref::kron(ref::eye(2), ref::SWAP()), ref::eye(2));
  EXPECT_LT(dist(ref::embed(u, {2, 1}, 4), sw * want * sw), 1e-15);
}

TEST(Reference, MatrixFreeApplicationEqualsTheEmbeddedMatrix) {
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 5; ++n) {
    for (int k = 1; k <= std::min(n, 3); ++k) {
      const auto wires = ref::random_wires(rng, n, k);
      const Mat u = ref::random_unitary(rng, ref::Index{1} << k);
      Vec psi = Vec::Random(std::int64_t{1} << n);
      const Vec want = ref::embed(u, wires, n) * psi;
      ref::apply(psi, u, wires, n);
      EXPECT_LT((psi - want).norm(), 1e-13) << "n=" << n << " k=" << k;
    }
  }
}

TEST(Reference, ExpvalAndProbsOfKnownStates) {
  // |psi> = (|0> + i|1>)/sqrt2 on wire 1 of 2, wire 0 in |1>: <Y1> = 1, <Z0> = -1, <X1> = 0.
  Vec psi = Vec::Zero(4);
  psi[2] = 1 / std::sqrt(2.0);
  psi[3] = ref::kI / std::sqrt(2.0);
  EXPECT_NEAR(ref::expval(psi, {{1.0, ref::word({{'Y', 1}})}}, 2), 1.0, 1e-15);
  EXPECT_NEAR(ref::expval(psi, {{1.0, ref::word({{'Z', 0}})}}, 2), -1.0, 1e-15);
  EXPECT_NEAR(ref::expval(psi, {{1.0, ref::word({{'X', 1}})}}, 2), 0.0, 1e-15);
  EXPECT_NEAR(ref::expval(psi, {{0.5, ref::word({})}, {2.0, ref::word({{'Z', 0}, {'Y', 1}})}}, 2), -1.5, 1e-15);
  const auto p = ref::probs(psi, {1, 0}, 2);  // outcome = (wire1, wire0): |10>,|11> -> 01, 11
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NEAR(p[1], 0.5, 1e-15);
  EXPECT_NEAR(p[3], 0.5, 1e-15);
  EXPECT_NEAR(p[0] + p[2], 0.0, 1e-15);
}

TEST(Reference, TemplatesExpandLikePennyLane) {
  ref::Circuit c;
  c.n = 3;
  ref::basic_entangler(c, {0, 1, 2}, 1, 'Y', 0);
  ASSERT_EQ(c.ops.size(), 6u);
  EXPECT_EQ(c.ops[3].wires, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.ops[5].wires, (std::vector<int>{2, 0}));
  ref::Circuit s;
  s.n = 4;
  ref::strongly_entangling(s, {0, 1, 2, 3}, 2, 0);
  ASSERT_EQ(s.ops.size(), 16u);
  EXPECT_EQ(s.ops[4].wires, (std::vector<int>{0, 1}));   // layer 0: range 1
  EXPECT_EQ(s.ops[12].wires, (std::vector<int>{0, 2}));  // layer 1: range 2
  EXPECT_EQ(s.ops[9].params[2].index, 3 * 5 + 2);        // weights[1, 1, 2]
  EXPECT_EQ(s.n_weights, 24);
}

}  // namespace
