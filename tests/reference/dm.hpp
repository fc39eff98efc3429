// The tests' independent dense reference for noisy circuits: density matrices
// evolved as rho -> U rho U^dag (gates embedded by reference/statevector.hpp) and
// rho -> sum_k K_k rho K_k^dag with each channel's Kraus operators written from
// PennyLane's documentation (not qfleet's superoperators). Measurements with readout
// error are computed the way a device measures: rotate into the Pauli word's
// eigenbasis, take the marginal probabilities, push them through the assignment
// matrices, average the eigenvalues. Shares no code with qfleet's kernels.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "reference/statevector.hpp"

namespace ref {

// Kraus operators of a catalogue channel (PennyLane's definitions).
inline std::vector<Mat> kraus_of(const std::string& name, const std::vector<double>& p) {
  const Mat I = eye(2), X = pauli('X'), Y = pauli('Y'), Z = pauli('Z');
  if (name == "Depolarizing") {
    return {std::sqrt(1 - p[0]) * I, std::sqrt(p[0] / 3) * X, std::sqrt(p[0] / 3) * Y, std::sqrt(p[0] / 3) * Z};
  }
  if (name == "BitFlip") return {std::sqrt(1 - p[0]) * I, std::sqrt(p[0]) * X};
  if (name == "PhaseFlip") return {std::sqrt(1 - p[0]) * I, std::sqrt(p[0]) * Z};
  if (name == "PauliChannel") {
    return {std::sqrt(1 - p[0] - p[1] - p[2]) * I, std::sqrt(p[0]) * X, std::sqrt(p[1]) * Y, std::sqrt(p[2]) * Z};
  }
  if (name == "AmplitudeDamping") return {mat2(1, 0, 0, std::sqrt(1 - p[0])), mat2(0, std::sqrt(p[0]), 0, 0)};
  if (name == "PhaseDamping") return {mat2(1, 0, 0, std::sqrt(1 - p[0])), mat2(0, 0, 0, std::sqrt(p[0]))};
  if (name == "GeneralizedAmplitudeDamping") {
    const double g = p[0], q = p[1];
    // p is the excited population of the thermal state the channel relaxes towards.
    return {std::sqrt(1 - q) * mat2(1, 0, 0, std::sqrt(1 - g)), std::sqrt(1 - q) * mat2(0, std::sqrt(g), 0, 0),
            std::sqrt(q) * mat2(std::sqrt(1 - g), 0, 0, 1), std::sqrt(q) * mat2(0, 0, std::sqrt(g), 0)};
  }
  if (name == "ThermalRelaxation") {
    // (pe, t1, t2, tg), t2 <= 2 t1: amplitude damping towards |0> and |1> weighted by
    // (1-pe, pe), then the extra dephasing that brings coherences to exp(-tg/t2).
    const double pe = p[0], t1 = p[1], t2 = p[2], tg = p[3];
    const double e1 = std::exp(-tg / t1), e2 = std::exp(-tg / t2), g = 1 - e1;
    // After generalized amplitude damping the coherence is sqrt(e1); dephase the rest.
    const double lam = 1 - (e2 * e2) / e1;  // phase damping with sqrt(1-lam) = e2 / sqrt(e1)
    std::vector<Mat> gad = kraus_of("GeneralizedAmplitudeDamping", {g, pe});
    std::vector<Mat> pd = kraus_of("PhaseDamping", {lam});
    std::vector<Mat> out;
    for (const Mat& a : pd)
      for (const Mat& b : gad) out.push_back(a * b);
    return out;
  }
  if (name == "TwoQubitDepolarizing") {
    std::vector<Mat> out;
    const char P[4] = {'I', 'X', 'Y', 'Z'};
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        const Mat A = a == 0 ? I : pauli(P[a]), B = b == 0 ? I : pauli(P[b]);
        out.push_back(std::sqrt(a == 0 && b == 0 ? 1 - p[0] : p[0] / 15) * kron(A, B));
      }
    }
    return out;
  }
  throw std::runtime_error("reference: no channel " + name);
}

struct DmRefOp {
  bool channel = false;
  Op gate;                  // gates
  std::string name;         // channels
  std::vector<int> wires;   // channels
  std::vector<qfleet::Param> params;
  std::vector<Mat> kraus;   // Kraus channels (given operators)
};

struct DmCircuit {
  Circuit base;  // n, amplitude embedding, expval / probs measurements, input / weight counts
  std::vector<DmRefOp> ops;
  std::vector<std::array<double, 4>> readout;  // per wire, or empty
  int n_purity = 0;
  int n_outputs() const { return base.n_outputs() + n_purity; }
};

inline Mat density(const DmCircuit& c, const double* x, const double* w) {
  const Vec psi0 = initial_state(c.base, x);
  Mat rho = psi0 * psi0.adjoint();
  for (const DmRefOp& op : c.ops) {
    if (!op.channel) {
      const Mat U = embed(op_matrix(op.gate, x, w), op.gate.wires, c.base.n);
      rho = U * rho * U.adjoint();
      continue;
    }
    std::vector<double> p;
    for (const auto& q : op.params) p.push_back(value(q, x, w));
    const std::vector<Mat> ks = op.kraus.empty() ? kraus_of(op.name, p) : op.kraus;
    Mat next = Mat::Zero(rho.rows(), rho.cols());
    for (const Mat& K : ks) {
      const Mat E = embed(K, op.wires, c.base.n);
      next += E * rho * E.adjoint();
    }
    rho = next;
  }
  return rho;
}

inline std::array<double, 4> readout_of(const DmCircuit& c, int wire) {
  return c.readout.empty() ? std::array<double, 4>{1, 0, 0, 1} : c.readout[std::size_t(wire)];
}

// Marginal probabilities of rho on `wires` pushed through their assignment matrices.
inline std::vector<double> measured_probs(const DmCircuit& c, const Mat& rho, const std::vector<int>& wires) {
  const int n = c.base.n;
  std::vector<double> p(std::size_t{1} << wires.size(), 0.0);
  for (Index i = 0; i < rho.rows(); ++i) {
    std::uint64_t o = 0;
    for (int wv : wires) o = (o << 1) | static_cast<std::uint64_t>(bit(static_cast<std::uint64_t>(i), wv, n));
    p[o] += rho(i, i).real();
  }
  // The full assignment matrix (kron of the wires' 2 x 2 ones) times p.
  Mat A = Mat::Identity(1, 1);
  for (int wv : wires) {
    const auto a = readout_of(c, wv);
    A = kron(A, mat2(a[0], a[1], a[2], a[3]));
  }
  std::vector<double> q(p.size(), 0.0);
  for (std::size_t r = 0; r < p.size(); ++r)
    for (std::size_t s = 0; s < p.size(); ++s) q[r] += A(Index(r), Index(s)).real() * p[s];
  return q;
}

// <word> as a device measures it: diagonalise (X: H, Y: H S^dag), read the word's wires.
inline double measured_word(const DmCircuit& c, const Mat& rho, const Word& word) {
  const int n = c.base.n;
  Mat r = rho;
  std::vector<int> wires;
  for (const auto& [l, wire] : word.f) {
    Mat D = eye(2);
    if (l == 'X') D = Hadamard();
    if (l == 'Y') D = Hadamard() * mat2(1, 0, 0, -kI);
    const Mat E = embed(D, {wire}, n);
    r = E * r * E.adjoint();
    wires.push_back(wire);
  }
  if (wires.empty()) return r.trace().real();
  const auto p = measured_probs(c, r, wires);
  double e = 0;
  for (std::size_t o = 0; o < p.size(); ++o) e += ((__builtin_popcountll(o) & 1) ? -1.0 : 1.0) * p[o];
  return e;
}

// qfleet's output order: expectation values, probabilities, purities.
inline std::vector<double> dm_outputs(const DmCircuit& c, const double* x, const double* w) {
  const Mat rho = density(c, x, w);
  std::vector<double> out;
  for (const Meas& m : c.base.meas) {
    if (m.probs) continue;
    double e = 0;
    for (const auto& [coef, word] : m.terms) e += coef * measured_word(c, rho, word);
    out.push_back(e);
  }
  for (const Meas& m : c.base.meas) {
    if (!m.probs) continue;
    const auto p = measured_probs(c, rho, m.wires);
    out.insert(out.end(), p.begin(), p.end());
  }
  for (int k = 0; k < c.n_purity; ++k) out.push_back((rho * rho).trace().real());
  return out;
}

// Gradient of sum_k cot[k] outputs[k] by the 5-point central difference (as ref::jacobian).
inline void dm_fd_gradient(const DmCircuit& c, std::vector<double> x, std::vector<double> w, const double* cot,
                              std::vector<double>& gx, std::vector<double>& gw, double h = 1e-4) {
  auto f = [&] {
    const auto o = dm_outputs(c, x.data(), w.data());
    double s = 0;
    for (std::size_t k = 0; k < o.size(); ++k) s += cot[k] * o[k];
    return s;
  };
  auto d = [&](double& t) {
    const double t0 = t;
    t = t0 + 2 * h;
    const double f2 = f();
    t = t0 + h;
    const double f1 = f();
    t = t0 - h;
    const double fm1 = f();
    t = t0 - 2 * h;
    const double fm2 = f();
    t = t0;
    return (-f2 + 8 * f1 - 8 * fm1 + fm2) / (12 * h);
  };
  gx.assign(x.size(), 0.0);
  gw.assign(w.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) gx[i] = d(x[i]);
  for (std::size_t j = 0; j < w.size(); ++j) gw[j] = d(w[j]);
}

}  // namespace ref
