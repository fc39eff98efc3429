// Matrices of the catalogue's gates and their parameter derivatives, written once
// for host and device. For a controlled gate only the target block is produced:
// the kernels apply it on the subspace where every control is |1>.
//
// Definitions follow PennyLane exactly (docs/gates.md lists them):
//   RX(t) = exp(-i t X/2), RY, RZ likewise; PhaseShift(f) = diag(1, e^{if});
//   Rot(f,t,w) = RZ(w) RY(t) RZ(f); U3(t,f,l) = [[c, -e^{il}s],[e^{if}s, e^{i(f+l)}c]];
//   IsingXX(f) = exp(-i f XX/2), IsingYY, IsingZZ likewise.
#pragma once

#include <cmath>

#include "kernels/complex.hpp"
#include "kernels/types.hpp"
#include "qfleet/gates.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Dimension of the block a gate's kernel applies (2^(wires - controls)).
QFLEET_HD constexpr int block_dim(int wires, int controls) { return 1 << (wires - controls); }

// The catalogue's parameter count and block dimension of gate g, as switches made
// from QFLEET_GATE_TABLE rather than reads of kGateTable: that array lives in host
// memory, and nvcc (with --expt-relaxed-constexpr) compiles a device-side read of it
// at a run-time index into a trap, which killed every circuit kernel's adjoint on
// the first GPU run (2026-11-24). tests/cuda/test_ptx_has_no_trap checks the PTX.
QFLEET_HD constexpr int gate_param_count(Gate g) {
  switch (g) {
#define QFLEET_GATE_PARAMS(id, name, w, p, c) \
  case Gate::id:                              \
    return p;
    QFLEET_GATE_TABLE(QFLEET_GATE_PARAMS)
#undef QFLEET_GATE_PARAMS
  }
  return 0;
}
QFLEET_HD constexpr int gate_block_dim(Gate g) {
  switch (g) {
#define QFLEET_GATE_BLOCK(id, name, w, p, c) \
  case Gate::id:                             \
    return block_dim(w, c);
    QFLEET_GATE_TABLE(QFLEET_GATE_BLOCK)
#undef QFLEET_GATE_BLOCK
  }
  return 1;
}

namespace detail {
template <class T>
QFLEET_HD inline void set_diag2(Cx<T>* m, Cx<T> a, Cx<T> b) {
  m[0] = a;
  m[1] = {0, 0};
  m[2] = {0, 0};
  m[3] = b;
}
template <class T>
QFLEET_HD inline void set2(Cx<T>* m, Cx<T> a, Cx<T> b, Cx<T> c, Cx<T> d) {
  m[0] = a;
  m[1] = b;
  m[2] = c;
  m[3] = d;
}
template <class T>
QFLEET_HD inline void zero(Cx<T>* m, int n) {
  for (int i = 0; i < n; ++i) m[i] = {0, 0};
}
}  // namespace detail

// Writes the block of gate g with parameters p (row-major, block_dim^2 entries).
// QubitUnitary's block is data, not a formula: callers fill it themselves.
template <class T>
QFLEET_HD inline void gate_block(Gate g, const T* p, Cx<T>* m) {
  using detail::set2;
  using detail::set_diag2;
  const T h = T(0.70710678118654752440);
  const Cx<T> zero{0, 0}, one{1, 0}, i1{0, 1};
  switch (g) {
    case Gate::Identity:
      set_diag2(m, one, one);
      return;
    case Gate::Hadamard:
      set2(m, {h, 0}, {h, 0}, {h, 0}, {-h, 0});
      return;
    case Gate::PauliX:
    case Gate::CNOT:
    case Gate::Toffoli:
      set2(m, zero, one, one, zero);
      return;
    case Gate::PauliY:
    case Gate::CY:
      set2(m, zero, {0, -1}, i1, zero);
      return;
    case Gate::PauliZ:
    case Gate::CZ:
      set_diag2(m, one, {-1, 0});
      return;
    case Gate::S:
      set_diag2(m, one, i1);
      return;
    case Gate::Sdg:
      set_diag2(m, one, {0, -1});
      return;
    case Gate::T:
      set_diag2(m, one, {h, h});
      return;
    case Gate::Tdg:
      set_diag2(m, one, {h, -h});
      return;
    case Gate::SX:
      set2(m, {T(0.5), T(0.5)}, {T(0.5), T(-0.5)}, {T(0.5), T(-0.5)}, {T(0.5), T(0.5)});
      return;
    case Gate::SXdg:
      set2(m, {T(0.5), T(-0.5)}, {T(0.5), T(0.5)}, {T(0.5), T(0.5)}, {T(0.5), T(-0.5)});
      return;
    case Gate::RX:
    case Gate::CRX: {
      const T c = std::cos(p[0] / 2), s = std::sin(p[0] / 2);
      set2(m, {c, 0}, {0, -s}, {0, -s}, {c, 0});
      return;
    }
    case Gate::RY:
    case Gate::CRY: {
      const T c = std::cos(p[0] / 2), s = std::sin(p[0] / 2);
      set2(m, {c, 0}, {-s, 0}, {s, 0}, {c, 0});
      return;
    }
    case Gate::RZ:
    case Gate::CRZ:
      set_diag2(m, expi<T>(-p[0] / 2), expi<T>(p[0] / 2));
      return;
    case Gate::PhaseShift:
    case Gate::ControlledPhaseShift:
      set_diag2(m, one, expi<T>(p[0]));
      return;
    case Gate::Rot:
    case Gate::CRot: {
      // RZ(w) RY(t) RZ(f)
      const T c = std::cos(p[1] / 2), s = std::sin(p[1] / 2);
      const T sum = (p[0] + p[2]) / 2, dif = (p[0] - p[2]) / 2;
      set2(m, c * expi<T>(-sum), -s * expi<T>(dif), s * expi<T>(-dif), c * expi<T>(sum));
      return;
    }
    case Gate::U3: {
      const T c = std::cos(p[0] / 2), s = std::sin(p[0] / 2);
      set2(m, {c, 0}, -s * expi<T>(p[2]), s * expi<T>(p[1]), c * expi<T>(p[1] + p[2]));
      return;
    }
    case Gate::SWAP:
    case Gate::CSWAP:
      detail::zero(m, 16);
      m[0] = m[6] = m[9] = m[15] = one;
      return;
    case Gate::ISWAP:
      detail::zero(m, 16);
      m[0] = m[15] = one;
      m[6] = m[9] = i1;
      return;
    case Gate::IsingXX:
    case Gate::IsingYY: {
      const T c = std::cos(p[0] / 2), s = std::sin(p[0] / 2);
      const T corner = g == Gate::IsingXX ? -s : s;  // <00|..|11> = -i s for XX, +i s for YY
      detail::zero(m, 16);
      m[0] = m[5] = m[10] = m[15] = {c, 0};
      m[3] = m[12] = {0, corner};
      m[6] = m[9] = {0, -s};
      return;
    }
    case Gate::IsingZZ: {
      detail::zero(m, 16);
      m[0] = m[15] = expi<T>(-p[0] / 2);
      m[5] = m[10] = expi<T>(p[0] / 2);
      return;
    }
    case Gate::QubitUnitary:
      return;
  }
}

// Whether gate g is a one-parameter group U(t) = exp(t K): every one-parameter gate of
// the catalogue (the Pauli rotations, their controlled and two-qubit forms, the phase
// gates). Then dU/dt = K U(t) with K the derivative at t = 0, a constant block, so an
// executor can form per-sample derivatives from per-sample blocks without the
// trigonometry (tests/unit/test_gate_generators.cpp checks the identity).
QFLEET_HD constexpr bool one_parameter_group(Gate g) {
  switch (g) {
    case Gate::RX:
    case Gate::RY:
    case Gate::RZ:
    case Gate::PhaseShift:
    case Gate::CRX:
    case Gate::CRY:
    case Gate::CRZ:
    case Gate::ControlledPhaseShift:
    case Gate::IsingXX:
    case Gate::IsingYY:
    case Gate::IsingZZ:
      return true;
    default:
      return false;
  }
}

// Derivative of gate g's block with respect to parameter j.
// Pauli rotations exp(-i t P/2) (and Rot, a product of them, per parameter)
// satisfy dU/dt = U(t + pi) / 2 exactly; the phase gates and U3 are written out.
template <class T>
QFLEET_HD inline void gate_block_derivative(Gate g, const T* p, int j, Cx<T>* m) {
  const T pi = T(3.14159265358979323846);
  switch (g) {
    case Gate::PhaseShift:
    case Gate::ControlledPhaseShift: {
      const Cx<T> e = expi<T>(p[0]);
      detail::set_diag2(m, {0, 0}, {-e.im, e.re});
      return;
    }
    case Gate::U3: {
      const T c = std::cos(p[0] / 2), s = std::sin(p[0] / 2);
      const Cx<T> el = expi<T>(p[2]), ef = expi<T>(p[1]), efl = expi<T>(p[1] + p[2]);
      const Cx<T> i1{0, 1};
      if (j == 0) {
        detail::set2(m, {-s / 2, 0}, (-c / 2) * el, (c / 2) * ef, (-s / 2) * efl);
      } else if (j == 1) {
        detail::set2(m, {0, 0}, {0, 0}, s * (i1 * ef), c * (i1 * efl));
      } else {
        detail::set2(m, {0, 0}, -s * (i1 * el), {0, 0}, c * (i1 * efl));
      }
      return;
    }
    default: {
      T q[kMaxGateParams] = {0, 0, 0};
      const int np = gate_param_count(g);
      for (int k = 0; k < np; ++k) q[k] = p[k];
      q[j] += pi;
      gate_block(g, q, m);
      const int d = gate_block_dim(g);
      for (int k = 0; k < d * d; ++k) m[k] = T(0.5) * m[k];
      return;
    }
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
