// The one-qubit operators open systems are built from (row-major 2 x 2 ComplexMatrix,
// as OpenSystem takes them): the Pauli matrices and the ladder operators, and scaling.
// local_operator and pauli_operator (structured_ops.hpp) place them on qubits of
// several. The meta-control and reinforcement-learning apps define their control
// problems with these.
#pragma once

#include "qfleet/open_system.hpp"

namespace qfleet::ops {

inline const ComplexMatrix kIdentity2 = {1, 0, 0, 1};
inline const ComplexMatrix kPauliX = {0, 1, 1, 0};
inline const ComplexMatrix kPauliY = {0, Complex(0, -1), Complex(0, 1), 0};
inline const ComplexMatrix kPauliZ = {1, 0, 0, -1};
inline const ComplexMatrix kLower = {0, 1, 0, 0};  // |0><1|: relaxation's jump
inline const ComplexMatrix kRaise = {0, 0, 1, 0};  // |1><0|

inline ComplexMatrix scaled(ComplexMatrix m, Complex s) {
  for (auto& z : m) z *= s;
  return m;
}

}  // namespace qfleet::ops
