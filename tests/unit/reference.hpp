// An independent dense-matrix reference simulator for the qfleet tests.
//
// Everything here is written from PennyLane's published definitions, not from
// qfleet's kernels: each gate's matrix is typed out below, lifted to the full
// 2^n x 2^n space by a Kronecker product with the identity, and moved onto its
// wires by a basis permutation. Conventions (PennyLane): wire 0 is the most
// significant bit of a basis index; a gate's matrix is indexed with its first
// wire most significant; controlled gates list their controls first.
//
// The only things taken from qfleet are plain data types (qfleet::Param as a
// description of where a parameter comes from) and the circuit builder that the
// tests drive in parallel with this reference (see Twin in harness.hpp).
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qfleet/qfleet.hpp"

namespace ref {

using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;
inline constexpr double kPi = 3.14159265358979323846;
inline const cd kI{0.0, 1.0};

// ---------------------------------------------------------------------------
// Gate matrices (PennyLane definitions).

inline Mat m2(cd a, cd b, cd c, cd d) {
  Mat m(2, 2);
  m << a, b, c, d;
  return m;
}

inline Mat pauli(char p) {
  switch (p) {
    case 'X':
      return m2(0, 1, 1, 0);
    case 'Y':
      return m2(0, -kI, kI, 0);
    case 'Z':
      return m2(1, 0, 0, -1);
    default:
      return m2(1, 0, 0, 1);
  }
}

// Plain Kronecker product: (a (x) b)[ia*rb + ib, ja*cb + jb] = a[ia,ja] b[ib,jb].
inline Mat kron(const Mat& a, const Mat& b) {
  Mat k(a.rows() * b.rows(), a.cols() * b.cols());
  for (Eigen::Index ia = 0; ia < a.rows(); ++ia)
    for (Eigen::Index ja = 0; ja < a.cols(); ++ja)
      for (Eigen::Index ib = 0; ib < b.rows(); ++ib)
        for (Eigen::Index jb = 0; jb < b.cols(); ++jb)
          k(ia * b.rows() + ib, ja * b.cols() + jb) = a(ia, ja) * b(ib, jb);
  return k;
}

inline Mat eye(Eigen::Index d) { return Mat::Identity(d, d); }

// |1..1><1..1| (x) U + (everything else) (x) identity, controls first.
inline Mat controlled(const Mat& u, int n_controls) {
  const Eigen::Index d = u.rows() << n_controls;
  Mat m = eye(d);
  m.bottomRightCorner(u.rows(), u.cols()) = u;
  return m;
}

inline Mat RX(double t) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return m2(c, -kI * s, -kI * s, c);
}
inline Mat RY(double t) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return m2(c, -s, s, c);
}
inline Mat RZ(double t) { return m2(std::exp(-kI * t / 2.0), 0, 0, std::exp(kI * t / 2.0)); }
inline Mat PhaseShift(double f) { return m2(1, 0, 0, std::exp(kI * f)); }
// Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi).
inline Mat Rot(double f, double t, double w) { return RZ(w) * RY(t) * RZ(f); }
inline Mat U3(double t, double f, double l) {
  const double c = std::cos(t / 2), s = std::sin(t / 2);
  return m2(c, -std::exp(kI * l) * s, std::exp(kI * f) * s, std::exp(kI * (f + l)) * c);
}
inline Mat Hadamard() {
  const double h = 1.0 / std::sqrt(2.0);
  return m2(h, h, h, -h);
}
inline Mat SX() { return 0.5 * m2(cd(1, 1), cd(1, -1), cd(1, -1), cd(1, 1)); }
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
  if (name == "S") return m2(1, 0, 0, kI);
  if (name == "Adjoint(S)") return m2(1, 0, 0, kI).adjoint();
  if (name == "T") return m2(1, 0, 0, std::exp(kI * kPi / 4.0));
  if (name == "Adjoint(T)") return m2(1, 0, 0, std::exp(kI * kPi / 4.0)).adjoint();
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

// Wire and parameter counts of the catalogue, written out independently.
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

// ---------------------------------------------------------------------------
// Placing a k-wire matrix on wires of an n-qubit register.

// Bit of `wire` in basis index i of an n-qubit register (wire 0 = most significant).
inline int bit(std::uint64_t i, int wire, int n) { return static_cast<int>((i >> (n - 1 - wire)) & 1u); }

// The gate's wires first (in the gate's order), then every other wire ascending.
inline std::vector<int> wire_order(const std::vector<int>& wires, int n) {
  std::vector<int> order = wires;
  for (int w = 0; w < n; ++w)
    if (std::find(wires.begin(), wires.end(), w) == wires.end()) order.push_back(w);
  return order;
}

// Basis index i re-read with the wires in `order` (order[0] most significant).
inline std::uint64_t reorder(std::uint64_t i, const std::vector<int>& order, int n) {
  std::uint64_t j = 0;
  for (int t = 0; t < n; ++t) j = (j << 1) | static_cast<std::uint64_t>(bit(i, order[t], n));
  return j;
}

// The full 2^n x 2^n matrix: (local (x) I) in the reordered basis, permuted back.
inline Mat embed(const Mat& local, const std::vector<int>& wires, int n) {
  const int k = static_cast<int>(wires.size());
  const Mat K = kron(local, eye(Eigen::Index{1} << (n - k)));
  const std::vector<int> order = wire_order(wires, n);
  const std::uint64_t dim = std::uint64_t{1} << n;
  std::vector<std::uint64_t> pi(dim);
  for (std::uint64_t i = 0; i < dim; ++i) pi[i] = reorder(i, order, n);
  Mat full(dim, dim);
  for (std::uint64_t i = 0; i < dim; ++i)
    for (std::uint64_t j = 0; j < dim; ++j) full(i, j) = K(pi[i], pi[j]);
  return full;
}

// Same as embed(local, wires, n) * psi without forming the big matrix (for large n):
// in the reordered basis the state is a 2^k x 2^(n-k) matrix and the gate acts on its rows.
inline void apply(Vec& psi, const Mat& local, const std::vector<int>& wires, int n) {
  const int k = static_cast<int>(wires.size());
  const std::uint64_t dim = std::uint64_t{1} << n, cols = std::uint64_t{1} << (n - k);
  const std::vector<int> order = wire_order(wires, n);
  Mat V(Eigen::Index{1} << k, cols);
  std::vector<std::uint64_t> pi(dim);
  for (std::uint64_t i = 0; i < dim; ++i) {
    pi[i] = reorder(i, order, n);
    V(pi[i] / cols, pi[i] % cols) = psi[i];
  }
  const Mat R = local * V;
  for (std::uint64_t i = 0; i < dim; ++i) psi[i] = R(pi[i] / cols, pi[i] % cols);
}

// ---------------------------------------------------------------------------
// Reference circuits.

struct Word {  // a Pauli word: (letter, wire) factors; empty = identity
  std::vector<std::pair<char, int>> f;
  std::string str() const {
    if (f.empty()) return "I";
    std::string s;
    for (const auto& [l, w] : f) {
      if (!s.empty()) s.push_back(' ');
      s.push_back(l);
      s.append(std::to_string(w));
    }
    return s;
  }
};

inline Word word(std::vector<std::pair<char, int>> f) { return Word{std::move(f)}; }

struct Op {
  std::string name;
  std::vector<int> wires;
  std::vector<qfleet::Param> params;
  Mat unitary;  // QubitUnitary only
};

struct AmpEmb {
  std::vector<int> wires;
  int first_input = 0, n_features = 0;
  bool normalize = false;
  double pad = 0.0;
};

struct Meas {
  bool probs = false;
  std::vector<std::pair<double, Word>> terms;  // expval
  std::vector<int> wires;                      // probs
};

struct Circuit {
  int n = 1;
  std::optional<AmpEmb> amp;
  std::vector<Op> ops;
  std::vector<Meas> meas;
  int n_inputs = 0, n_weights = 0;
  int n_outputs() const {
    int k = 0;
    for (const auto& m : meas) k += m.probs ? (1 << m.wires.size()) : 1;
    return k;
  }
  void note(const qfleet::Param& p) {
    if (p.kind == qfleet::Param::Kind::Input) n_inputs = std::max(n_inputs, p.index + 1);
    if (p.kind == qfleet::Param::Kind::Weight) n_weights = std::max(n_weights, p.index + 1);
  }
  void add(std::string name, std::vector<int> wires, std::vector<qfleet::Param> params = {}) {
    for (const auto& p : params) note(p);
    ops.push_back(Op{std::move(name), std::move(wires), std::move(params), Mat()});
  }
};

inline double value(const qfleet::Param& p, const double* x, const double* w) {
  switch (p.kind) {
    case qfleet::Param::Kind::Input:
      return p.scale * x[p.index];
    case qfleet::Param::Kind::Weight:
      return p.scale * w[p.index];
    default:
      return p.value;
  }
}

// Templates, expanded the way PennyLane documents them.
inline std::string rot_name(char r) { return std::string("R") + r; }
inline void angle_embedding(Circuit& c, const std::vector<int>& wires, char r, int first_input) {
  for (std::size_t i = 0; i < wires.size(); ++i)
    c.add(rot_name(r), {wires[i]}, {qfleet::Param::input(first_input + static_cast<int>(i))});
}
inline void basic_entangler(Circuit& c, const std::vector<int>& wires, int layers, char r, int first_weight) {
  const int n = static_cast<int>(wires.size());
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < n; ++i) c.add(rot_name(r), {wires[i]}, {qfleet::Param::weight(first_weight + l * n + i)});
    if (n == 2) c.add("CNOT", {wires[0], wires[1]});
    if (n > 2)
      for (int i = 0; i < n; ++i) c.add("CNOT", {wires[i], wires[(i + 1) % n]});
  }
}
inline void strongly_entangling(Circuit& c, const std::vector<int>& wires, int layers, int first_weight,
                                std::vector<int> ranges = {}, const std::string& imprimitive = "CNOT") {
  const int n = static_cast<int>(wires.size());
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < n; ++i) {
      const int b = first_weight + 3 * (l * n + i);  // weights[l, i, 0..2]
      c.add("Rot", {wires[i]},
            {qfleet::Param::weight(b), qfleet::Param::weight(b + 1), qfleet::Param::weight(b + 2)});
    }
    if (n > 1) {
      const int r = ranges.empty() ? (l % (n - 1)) + 1 : ranges[l];
      for (int i = 0; i < n; ++i) c.add(imprimitive, {wires[i], wires[(i + r) % n]});
    }
  }
}

// The state before any gate: AmplitudeEmbedding's (padded, maybe normalised) features
// on its wires with every other wire |0>, or |0...0>.
inline Vec initial_state(const Circuit& c, const double* x) {
  const std::uint64_t dim = std::uint64_t{1} << c.n;
  Vec psi = Vec::Zero(dim);
  if (!c.amp) {
    psi[0] = 1;
    return psi;
  }
  const AmpEmb& a = *c.amp;
  const int k = static_cast<int>(a.wires.size());
  std::vector<double> v(std::size_t{1} << k, a.pad);
  for (int j = 0; j < a.n_features; ++j) v[j] = x[a.first_input + j];
  double nrm = 0;
  for (double t : v) nrm += t * t;
  nrm = a.normalize ? std::sqrt(nrm) : 1.0;
  for (std::size_t j = 0; j < v.size(); ++j) {
    std::uint64_t idx = 0;  // amplitude j: bit t of j (from the top) on wire a.wires[t]
    for (int t = 0; t < k; ++t)
      if ((j >> (k - 1 - t)) & 1u) idx |= std::uint64_t{1} << (c.n - 1 - a.wires[t]);
    psi[idx] = v[j] / nrm;
  }
  return psi;
}

inline Mat op_matrix(const Op& op, const double* x, const double* w) {
  if (op.name == "QubitUnitary") return op.unitary;
  std::vector<double> p;
  for (const auto& q : op.params) p.push_back(value(q, x, w));
  return gate(op.name, p);
}

// Final state for one sample; `dense` multiplies by the full embedded matrices.
inline Vec state(const Circuit& c, const double* x, const double* w, bool dense = false) {
  Vec psi = initial_state(c, x);
  for (const Op& op : c.ops) {
    const Mat m = op_matrix(op, x, w);
    if (dense) {
      psi = embed(m, op.wires, c.n) * psi;
    } else {
      apply(psi, m, op.wires, c.n);
    }
  }
  return psi;
}

inline double expval(const Vec& psi, const std::vector<std::pair<double, Word>>& terms, int n) {
  double e = 0;
  for (const auto& [coef, word] : terms) {
    Vec q = psi;
    for (const auto& [l, wire] : word.f) apply(q, pauli(l), {wire}, n);
    e += coef * psi.dot(q).real();  // Eigen's dot conjugates the first argument
  }
  return e;
}

inline std::vector<double> probs(const Vec& psi, const std::vector<int>& wires, int n) {
  std::vector<double> p(std::size_t{1} << wires.size(), 0.0);
  for (Eigen::Index i = 0; i < psi.size(); ++i) {
    std::uint64_t o = 0;
    for (int w : wires) o = (o << 1) | static_cast<std::uint64_t>(bit(static_cast<std::uint64_t>(i), w, n));
    p[o] += std::norm(psi[i]);
  }
  return p;
}

inline std::vector<double> measure(const Circuit& c, const Vec& psi) {
  std::vector<double> out;
  for (const Meas& m : c.meas) {
    if (m.probs) {
      const auto p = probs(psi, m.wires, c.n);
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  std::vector<double> ev;
  for (const Meas& m : c.meas)
    if (!m.probs) ev.push_back(expval(psi, m.terms, c.n));
  // qfleet's documented output order: expectation values, then probabilities.
  ev.insert(ev.end(), out.begin(), out.end());
  return ev;
}

inline std::vector<double> outputs(const Circuit& c, const double* x, const double* w) {
  return measure(c, state(c, x, w));
}

// Gradient of sum_k cot[k] * outputs[k] for one sample with respect to that
// sample's inputs x and weights w, by the 5-point central difference
//   f'(t) ~ (-f(t+2h) + 8 f(t+h) - 8 f(t-h) + f(t-2h)) / (12 h),
// whose error is h^4/30 |f^(5)| + O(eps/h): about 1e-12 for h = 1e-3 here.
inline void fd_gradient(const Circuit& c, std::vector<double> x, std::vector<double> w, const double* cot,
                        std::vector<double>& gx, std::vector<double>& gw, double h = 1e-3) {
  auto f = [&]() {
    const auto o = outputs(c, x.data(), w.data());
    double s = 0;
    for (std::size_t k = 0; k < o.size(); ++k) s += cot[k] * o[k];
    return s;
  };
  auto diff = [&](double& t) {
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
  for (std::size_t i = 0; i < x.size(); ++i) gx[i] = diff(x[i]);
  for (std::size_t j = 0; j < w.size(); ++j) gw[j] = diff(w[j]);
}

// ---------------------------------------------------------------------------
// Random data.

inline Mat random_unitary(int k, std::mt19937_64& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  const Eigen::Index d = Eigen::Index{1} << k;
  Mat a(d, d);
  for (Eigen::Index i = 0; i < d; ++i)
    for (Eigen::Index j = 0; j < d; ++j) a(i, j) = cd(g(rng), g(rng));
  Eigen::HouseholderQR<Mat> qr(a);
  return qr.householderQ() * eye(d);
}

inline std::vector<std::complex<double>> row_major(const Mat& m) {
  std::vector<std::complex<double>> v;
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v.push_back(m(i, j));
  return v;
}

inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline int randint(std::mt19937_64& rng, int lo, int hi) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline std::vector<double> uniform_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& t : v) t = uniform(rng, lo, hi);
  return v;
}
// k distinct wires out of n, in random order.
inline std::vector<int> random_wires(std::mt19937_64& rng, int n, int k) {
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  return all;
}
// A scale away from zero: +-[0.5, 2].
inline double random_scale(std::mt19937_64& rng) {
  return (rng() & 1 ? 1.0 : -1.0) * uniform(rng, 0.5, 2.0);
}

}  // namespace ref
