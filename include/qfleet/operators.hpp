// The qubit operators open systems are built from (row-major d x d ComplexMatrix, as
// OpenSystem takes them): the Pauli matrices and the ladder operators, Kronecker
// products, an operator on one qubit of several, and scaling. The meta-control and
// reinforcement-learning apps define their control problems with these.
#pragma once

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "qfleet/open_system.hpp"

namespace qfleet::ops {

inline const ComplexMatrix kIdentity2 = {1, 0, 0, 1};
inline const ComplexMatrix kPauliX = {0, 1, 1, 0};
inline const ComplexMatrix kPauliY = {0, Complex(0, -1), Complex(0, 1), 0};
inline const ComplexMatrix kPauliZ = {1, 0, 0, -1};
inline const ComplexMatrix kLower = {0, 1, 0, 0};  // |0><1|: relaxation's jump
inline const ComplexMatrix kRaise = {0, 0, 1, 0};  // |1><0|

// The side d of a square d x d matrix stored as d^2 entries.
inline int side(const ComplexMatrix& m) {
  const int d = static_cast<int>(std::lround(std::sqrt(static_cast<double>(m.size()))));
  if (std::size_t(d) * std::size_t(d) != m.size()) {
    throw std::invalid_argument("ops: " + std::to_string(m.size()) + " entries are not a square matrix");
  }
  return d;
}

// a (x) b: the first factor on the leading (most significant) index.
inline ComplexMatrix kron(const ComplexMatrix& a, const ComplexMatrix& b) {
  const int da = side(a), db = side(b), d = da * db;
  ComplexMatrix m(std::size_t(d) * d);
  for (int i = 0; i < da; ++i)
    for (int j = 0; j < da; ++j)
      for (int k = 0; k < db; ++k)
        for (int l = 0; l < db; ++l)
          m[std::size_t(i * db + k) * d + (j * db + l)] = a[std::size_t(i) * da + j] * b[std::size_t(k) * db + l];
  return m;
}

inline ComplexMatrix scaled(ComplexMatrix m, Complex s) {
  for (auto& z : m) z *= s;
  return m;
}

// A one-qubit operator on qubit q of n (qubit 0 the first Kronecker factor).
inline ComplexMatrix on_qubit(const ComplexMatrix& op, int q, int n) {
  if (n < 1 || q < 0 || q >= n) {
    throw std::invalid_argument("ops::on_qubit: qubit " + std::to_string(q) + " of " + std::to_string(n));
  }
  ComplexMatrix m = q == 0 ? op : kIdentity2;
  for (int k = 1; k < n; ++k) m = kron(m, k == q ? op : kIdentity2);
  return m;
}

}  // namespace qfleet::ops
