// The tests' independent dense reference: every catalogue gate's matrix, typed out
// once from PennyLane's published definitions (not from qfleet's kernels), and the
// catalogue's wire and parameter counts written out independently.
//
// Conventions (PennyLane): a gate's matrix is indexed with its first wire most
// significant; controlled gates list their controls first.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dense.hpp"

namespace ref {

// |1..1><1..1| (x) U + (everything else) (x) identity, controls first.
inline Mat controlled(const Mat& u, int n_controls) {
  const Index d = u.rows() << n_controls;
  Mat m = eye(d);
  m.bottomRightCorner(u.rows(), u.cols()) = u;
  return m;
}

inline Mat RX(double t) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return mat2(c, -kI * s, -kI * s, c);
}
inline Mat RY(double t) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return mat2(c, -s, s, c);
}
inline Mat RZ(double t) { return mat2(std::exp(-kI * t / 2.0), 0, 0, std::exp(kI * t / 2.0)); }
inline Mat PhaseShift(double f) { return mat2(1, 0, 0, std::exp(kI * f)); }
// Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi).
inline Mat Rot(double f, double t, double w) { return RZ(w) * RY(t) * RZ(f); }
inline Mat U3(double t, double f, double l) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return mat2(c, -std::exp(kI * l) * s, std::exp(kI * f) * s, std::exp(kI * (f + l)) * c);
}
inline Mat Hadamard() {
  const double h = 1.0 / std::sqrt(2.0);
  return mat2(h, h, h, -h);
}
inline Mat SX() { return 0.5 * mat2(cd(1, 1), cd(1, -1), cd(1, -1), cd(1, 1)); }
inline Mat SWAP() {
  Mat m = Mat::Zero(4, 4);
  m(0, 0) = m(1, 2) = m(2, 1) = m(3, 3) = 1;
  return m;
}
inline Mat ISWAP() {
  Mat m = Mat::Zero(4, 4);
  m(0, 0) = m(3, 3) = 1;
  m(1, 2) = m(2, 1) = kI;
  return m;
}
// IsingXX(f) = cos(f/2) I - i sin(f/2) X(x)X, and likewise for YY.
inline Mat Ising(char p, double f) {
  return std::cos(f / 2) * eye(4) - kI * std::sin(f / 2) * kron(pauli(p), pauli(p));
}
inline Mat IsingZZ(double f) {
  Mat m = Mat::Zero(4, 4);
  m(0, 0) = m(3, 3) = std::exp(-kI * f / 2.0);
  m(1, 1) = m(2, 2) = std::exp(kI * f / 2.0);
  return m;
}

// The full matrix of a catalogue gate on its own wires (controls included).
inline Mat gate(std::string_view name, const std::vector<double>& p) {
  auto P = [&](std::size_t i) { return p.at(i); };
  if (name == "Identity") return eye(2);
  if (name == "Hadamard") return Hadamard();
  if (name == "PauliX") return pauli('X');
  if (name == "PauliY") return pauli('Y');
  if (name == "PauliZ") return pauli('Z');
  if (name == "S") return mat2(1, 0, 0, kI);
  if (name == "Adjoint(S)") return mat2(1, 0, 0, kI).adjoint();
  if (name == "T") return mat2(1, 0, 0, std::exp(kI * kPi / 4.0));
  if (name == "Adjoint(T)") return mat2(1, 0, 0, std::exp(kI * kPi / 4.0)).adjoint();
  if (name == "SX") return SX();
  if (name == "Adjoint(SX)") return SX().adjoint();
  if (name == "RX") return RX(P(0));
  if (name == "RY") return RY(P(0));
  if (name == "RZ") return RZ(P(0));
  if (name == "PhaseShift") return PhaseShift(P(0));
  if (name == "Rot") return Rot(P(0), P(1), P(2));
  if (name == "U3") return U3(P(0), P(1), P(2));
  if (name == "CNOT") return controlled(pauli('X'), 1);
  if (name == "CY") return controlled(pauli('Y'), 1);
  if (name == "CZ") return controlled(pauli('Z'), 1);
  if (name == "SWAP") return SWAP();
  if (name == "ISWAP") return ISWAP();
  if (name == "CRX") return controlled(RX(P(0)), 1);
  if (name == "CRY") return controlled(RY(P(0)), 1);
  if (name == "CRZ") return controlled(RZ(P(0)), 1);
  if (name == "CRot") return controlled(Rot(P(0), P(1), P(2)), 1);
  if (name == "ControlledPhaseShift") return controlled(PhaseShift(P(0)), 1);
  if (name == "IsingXX") return Ising('X', P(0));
  if (name == "IsingYY") return Ising('Y', P(0));
  if (name == "IsingZZ") return IsingZZ(P(0));
  if (name == "Toffoli") return controlled(pauli('X'), 2);
  if (name == "CSWAP") return controlled(SWAP(), 1);
  throw std::invalid_argument("reference: no matrix for gate " + std::string(name));
}

inline int gate_wires(std::string_view name) {
  static const char* two[] = {"CNOT", "CY", "CZ", "SWAP", "ISWAP", "CRX", "CRY", "CRZ", "CRot",
                              "ControlledPhaseShift", "IsingXX", "IsingYY", "IsingZZ"};
  for (const char* t : two)
    if (name == t) return 2;
  if (name == "Toffoli" || name == "CSWAP") return 3;
  return 1;
}
inline int gate_params(std::string_view name) {
  if (name == "Rot" || name == "U3" || name == "CRot") return 3;
  static const char* one[] = {"RX", "RY", "RZ", "PhaseShift", "CRX", "CRY", "CRZ",
                              "ControlledPhaseShift", "IsingXX", "IsingYY", "IsingZZ"};
  for (const char* t : one)
    if (name == t) return 1;
  return 0;
}

}  // namespace ref
