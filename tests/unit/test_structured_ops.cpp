// local_operator and pauli_operator (qfleet/structured_ops.hpp) against matrices
// built here by explicit Kronecker products, SWAP conjugation and the Pauli matrices,
// and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "qfleet/structured_ops.hpp"
#include "unit/expect_error.hpp"

namespace {

using qfleet::Complex;
using qfleet::ComplexMatrix;

ComplexMatrix kron(const ComplexMatrix& a, int na, const ComplexMatrix& b, int nb) {
  ComplexMatrix m(std::size_t(na * nb) * std::size_t(na * nb));
  for (int i = 0; i < na; ++i)
    for (int j = 0; j < na; ++j)
      for (int k = 0; k < nb; ++k)
        for (int l = 0; l < nb; ++l)
          m[std::size_t((i * nb + k) * na * nb + j * nb + l)] = a[std::size_t(i * na + j)] * b[std::size_t(k * nb + l)];
  return m;
}

ComplexMatrix eye(int n) {
  ComplexMatrix m(std::size_t(n * n));
  for (int i = 0; i < n; ++i) m[std::size_t(i * n + i)] = 1;
  return m;
}

ComplexMatrix matmul(const ComplexMatrix& a, const ComplexMatrix& b, int n) {
  ComplexMatrix m(std::size_t(n * n));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) m[std::size_t(i * n + j)] += a[std::size_t(i * n + k)] * b[std::size_t(k * n + j)];
  return m;
}

ComplexMatrix random_matrix(int n, unsigned seed) {
  ComplexMatrix m(std::size_t(n * n));
  for (std::size_t i = 0; i < m.size(); ++i) {
    seed = seed * 1103515245u + 12345u;
    const double re = double(seed % 1000) / 500.0 - 1.0;
    seed = seed * 1103515245u + 12345u;
    m[i] = Complex(re, double(seed % 1000) / 500.0 - 1.0);
  }
  return m;
}

double max_diff(const ComplexMatrix& a, const ComplexMatrix& b) {
  EXPECT_EQ(a.size(), b.size());
  double e = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

const ComplexMatrix kX = {0, 1, 1, 0}, kY = {0, Complex(0, -1), Complex(0, 1), 0}, kZ = {1, 0, 0, -1};

TEST(StructuredOps, LocalOperatorIsTheKroneckerProductWithIdentities) {
  // Subsystems (2, 3, 2): an operator on the middle qutrit, and one on the two outer ones.
  const ComplexMatrix a = random_matrix(3, 1);
  EXPECT_LT(max_diff(qfleet::local_operator(a, {1}, {2, 3, 2}), kron(kron(eye(2), 2, a, 3), 6, eye(2), 2)), 1e-15);
  const ComplexMatrix b = random_matrix(2, 2);
  EXPECT_LT(max_diff(qfleet::local_operator(b, {0}, {2, 3, 2}), kron(b, 2, eye(6), 6)), 1e-15);
  EXPECT_LT(max_diff(qfleet::local_operator(b, {2}, {2, 3, 2}), kron(eye(6), 6, b, 2)), 1e-15);
  // Two adjacent subsystems in order equal kron on them.
  const ComplexMatrix c = random_matrix(6, 3);
  EXPECT_LT(max_diff(qfleet::local_operator(c, {1, 2}, {2, 3, 2}), kron(eye(2), 2, c, 6)), 1e-15);
}

TEST(StructuredOps, LocalOperatorOnReversedSubsystemsIsTheSwapConjugate) {
  // c on (1, 0) of two qubits = SWAP c SWAP on (0, 1).
  const ComplexMatrix c = random_matrix(4, 7);
  const ComplexMatrix swap = {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  EXPECT_LT(max_diff(qfleet::local_operator(c, {1, 0}, {2, 2}), matmul(matmul(swap, c, 4), swap, 4)), 1e-15);
}

TEST(StructuredOps, PauliSumsMatchThePauliMatrices) {
  // 0.5 X0 Z2 + (0.3 - 0.2i) Y1 + 2 (identity) on three qubits, qubit 0 most significant.
  const ComplexMatrix got = qfleet::pauli_operator({{0.5, "X0 Z2"}, {Complex(0.3, -0.2), "Y1"}, {2.0, ""}}, 3);
  ComplexMatrix want = kron(kron(kX, 2, eye(2), 2), 4, kZ, 2);
  const ComplexMatrix y1 = kron(kron(eye(2), 2, kY, 2), 4, eye(2), 2);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * want[i] + Complex(0.3, -0.2) * y1[i];
  for (int i = 0; i < 8; ++i) want[std::size_t(i * 8 + i)] += 2.0;
  EXPECT_LT(max_diff(got, want), 1e-15);
  // XY on one qubit pair equals the product of the single-qubit words.
  EXPECT_LT(max_diff(qfleet::pauli_operator({{1.0, "X0 Y1"}}, 2), kron(kX, 2, kY, 2)), 1e-15);
}

TEST(StructuredOps, BadInputIsAClearError) {
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(2), {3}, {2, 2}), "subsystem 3", "[0, 2)");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(4), {0, 0}, {2, 2}), "named twice");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(2), {0}, {3, 2}), "3x3", "9 entries");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(2), {}, {2}), "`on` is empty");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(2), {0}, {2, 0}), "dimension 0");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(eye(2), {0}, std::vector<int>(13, 2)), "4096");
  ComplexMatrix nan = eye(2);
  nan[1] = Complex(std::nan(""), 0);
  EXPECT_QFLEET_ERROR(qfleet::local_operator(nan, {0}, {2}), "(0, 1)", "not finite");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "X3"}}, 2), "qubit 3", "2 qubit");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "Q0"}}, 2), "Q");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "X0"}}, 13), "[1, 12]");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{Complex(INFINITY, 0), "X0"}}, 1), "not finite");
}

}  // namespace
