// local_operator and pauli_operator (qfleet/structured_ops.hpp) against the Eigen
// reference's Kronecker products and Pauli matrices (tests/reference/dense.hpp) and SWAP
// conjugation, and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "qfleet/operators.hpp"
#include "qfleet/structured_ops.hpp"
#include "reference/dense.hpp"
#include "unit/expect_error.hpp"

namespace {

using qfleet::Complex;
using qfleet::ComplexMatrix;
using ref::eye;
using ref::kron;
using ref::Mat;
using ref::pauli;

// Row-major d x d <-> the reference's Eigen matrices.
Mat to_mat(const ComplexMatrix& m) { return ref::from_row_major(m); }
ComplexMatrix from_mat(const Mat& a) {
  ComplexMatrix m(std::size_t(a.rows() * a.cols()));
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) m[std::size_t(i * a.cols() + j)] = a(i, j);
  return m;
}

double max_diff(const ComplexMatrix& got, const Mat& want) {
  EXPECT_EQ(got.size(), std::size_t(want.size()));
  if (got.size() != std::size_t(want.size())) return 1e300;
  return (to_mat(got) - want).cwiseAbs().maxCoeff();
}

TEST(StructuredOps, LocalOperatorIsTheKroneckerProductWithIdentities) {
  // Subsystems (2, 3, 2): an operator on the middle qutrit, and ones on the outer qubits.
  const Mat a = Mat::Random(3, 3), b = Mat::Random(2, 2), c = Mat::Random(6, 6);
  EXPECT_LT(max_diff(qfleet::local_operator(from_mat(a), {1}, {2, 3, 2}), kron(kron(eye(2), a), eye(2))), 1e-15);
  EXPECT_LT(max_diff(qfleet::local_operator(from_mat(b), {0}, {2, 3, 2}), kron(b, eye(6))), 1e-15);
  EXPECT_LT(max_diff(qfleet::local_operator(from_mat(b), {2}, {2, 3, 2}), kron(eye(6), b)), 1e-15);
  // Two adjacent subsystems in order equal kron on them.
  EXPECT_LT(max_diff(qfleet::local_operator(from_mat(c), {1, 2}, {2, 3, 2}), kron(eye(2), c)), 1e-15);
}

TEST(StructuredOps, LocalOperatorOnReversedSubsystemsIsTheSwapConjugate) {
  // c on (1, 0) of two qubits = SWAP c SWAP on (0, 1).
  const Mat c = Mat::Random(4, 4);
  Mat swap = Mat::Zero(4, 4);
  swap(0, 0) = swap(1, 2) = swap(2, 1) = swap(3, 3) = 1;
  EXPECT_LT(max_diff(qfleet::local_operator(from_mat(c), {1, 0}, {2, 2}), swap * c * swap), 1e-15);
}

TEST(StructuredOps, PauliSumsMatchThePauliMatrices) {
  // 0.5 X0 Z2 + (0.3 - 0.2i) Y1 + 2 (identity) on three qubits, qubit 0 most significant.
  const Complex c(0.3, -0.2);
  const Mat want = 0.5 * kron(kron(pauli('X'), eye(2)), pauli('Z')) + c * kron(kron(eye(2), pauli('Y')), eye(2)) +
                   2.0 * eye(8);
  EXPECT_LT(max_diff(qfleet::pauli_operator({{0.5, "X0 Z2"}, {c, "Y1"}, {2.0, ""}}, 3), want), 1e-15);
  EXPECT_LT(max_diff(qfleet::pauli_operator({{1.0, "X0 Y1"}}, 2), kron(pauli('X'), pauli('Y'))), 1e-15);
}

TEST(StructuredOps, BadInputIsAClearError) {
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(2)), {3}, {2, 2}), "subsystem 3", "[0, 2)");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(4)), {0, 0}, {2, 2}), "named twice");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(2)), {0}, {3, 2}), "3x3", "9 entries");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(2)), {}, {2}), "`on` is empty");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(2)), {0}, {2, 0}), "dimension 0");
  EXPECT_QFLEET_ERROR(qfleet::local_operator(from_mat(eye(2)), {0}, std::vector<int>(13, 2)), "4096");
  ComplexMatrix nan = from_mat(eye(2));
  nan[1] = Complex(std::nan(""), 0);
  EXPECT_QFLEET_ERROR(qfleet::local_operator(nan, {0}, {2}), "(0, 1)", "not finite");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "X3"}}, 2), "qubit 3", "2 qubit");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "Q0"}}, 2), "Q");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{1.0, "X0"}}, 13), "[1, 12]");
  EXPECT_QFLEET_ERROR(qfleet::pauli_operator({{Complex(INFINITY, 0), "X0"}}, 1), "not finite");
}

}  // namespace

// qfleet/operators.hpp against matrices written out by hand, placed by local_operator
// as the apps place them: X on qubit 0 of 2 is X (x) I (it flips the leading index),
// Z on qubit 1 is diag(1, -1, 1, -1); Y = i X Z; the ladder operators are |0><1| and
// |1><0|.
TEST(Operators, PauliAndLadderOperators) {
  using qfleet::Complex;
  using qfleet::ComplexMatrix;
  namespace ops = qfleet::ops;
  const ComplexMatrix x0 = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0};
  EXPECT_EQ(qfleet::local_operator(ops::kPauliX, {0}, {2, 2}), x0);
  const ComplexMatrix z1 = {1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1};
  EXPECT_EQ(qfleet::local_operator(ops::kPauliZ, {1}, {2, 2}), z1);
  EXPECT_EQ(ops::kIdentity2, (ComplexMatrix{1, 0, 0, 1}));
  EXPECT_EQ(ops::scaled({0, -1, 1, 0}, Complex(0, 1)), ops::kPauliY);  // i (X Z), X Z = [[0, -1], [1, 0]]
  EXPECT_EQ(ops::kLower, (ComplexMatrix{0, 1, 0, 0})) << "|0><1| has its 1 in row 0, column 1";
  EXPECT_EQ(ops::kRaise, (ComplexMatrix{0, 0, 1, 0})) << "|1><0| has its 1 in row 1, column 0";
}
