// The tests' independent dense reference, part 1: the linear algebra every other
// reference file stands on (Eigen types, Kronecker products, Pauli matrices,
// column stacking, row-major conversions).
//
// The reference (tests/reference/) is written from textbook and PennyLane
// definitions and shares no code with qfleet's kernels: it uses Eigen, nlohmann::json
// (the JSON readers) and qfleet's plain data types (qfleet::Param) only.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <cstddef>
#include <vector>

namespace ref {

using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;
using Index = Eigen::Index;
inline constexpr double kPi = 3.14159265358979323846;
inline const cd kI{0.0, 1.0};

inline Mat eye(Index d) { return Mat::Identity(d, d); }

inline Mat mat2(cd a, cd b, cd c, cd d) {
  Mat m(2, 2);
  m << a, b, c, d;
  return m;
}

// X, Y, Z; any other letter is the identity (an "I" factor of a Pauli word).
inline Mat pauli(char p) {
  switch (p) {
    case 'X':
      return mat2(0, 1, 1, 0);
    case 'Y':
      return mat2(0, -kI, kI, 0);
    case 'Z':
      return mat2(1, 0, 0, -1);
    default:
      return eye(2);
  }
}

// (a kron b)[ia*rb + ib, ja*cb + jb] = a[ia,ja] b[ib,jb].
inline Mat kron(const Mat& a, const Mat& b) {
  Mat k(a.rows() * b.rows(), a.cols() * b.cols());
  for (Index ia = 0; ia < a.rows(); ++ia)
    for (Index ja = 0; ja < a.cols(); ++ja) k.block(ia * b.rows(), ja * b.cols(), b.rows(), b.cols()) = a(ia, ja) * b;
  return k;
}

inline Vec basis(Index d, Index i) {
  Vec v = Vec::Zero(d);
  v(i) = 1;
  return v;
}
// A row-major d x d matrix (qfleet's ComplexMatrix layout) as an Eigen matrix.
inline Mat from_row_major(const std::vector<cd>& m) {
  const auto n = static_cast<Index>(std::lround(std::sqrt(double(m.size()))));
  Mat a(n, n);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j) a(i, j) = m[std::size_t(i * n + j)];
  return a;
}
inline Mat ket_bra(Index d, Index i, Index j) {
  Mat m = Mat::Zero(d, d);
  m(i, j) = 1;
  return m;
}
// The projector onto the listed basis levels.
inline Mat projector(Index d, const std::vector<int>& levels) {
  Mat p = Mat::Zero(d, d);
  for (int i : levels) p(i, i) = 1;
  return p;
}
// Lowering operator of a d-level oscillator: a|n> = sqrt(n)|n-1>.
inline Mat lowering(Index d) {
  Mat a = Mat::Zero(d, d);
  for (Index n = 1; n < d; ++n) a(n - 1, n) = std::sqrt(double(n));
  return a;
}

// Column stacking: vec(X)[i + d j] = X[i, j], so that vec(A X B) = (B^T kron A) vec(X).
inline Vec vec(const Mat& x) {
  Vec v(x.size());
  for (Index j = 0; j < x.cols(); ++j) v.segment(j * x.rows(), x.rows()) = x.col(j);
  return v;
}
inline Mat unvec(const Vec& v, Index d) {
  Mat x(d, d);
  for (Index j = 0; j < d; ++j) x.col(j) = v.segment(j * d, d);
  return x;
}

// Row-major std::vector <-> Eigen (qfleet's buffers are row-major).
inline std::vector<cd> row_major(const Mat& m) {
  std::vector<cd> v(static_cast<std::size_t>(m.size()));
  for (Index i = 0; i < m.rows(); ++i)
    for (Index j = 0; j < m.cols(); ++j) v[static_cast<std::size_t>(i * m.cols() + j)] = m(i, j);
  return v;
}
inline Mat from_row_major(const cd* p, Index rows, Index cols) {
  Mat m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = p[i * cols + j];
  return m;
}
inline std::vector<cd> stdvec(const Vec& v) { return std::vector<cd>(v.data(), v.data() + v.size()); }

}  // namespace ref
