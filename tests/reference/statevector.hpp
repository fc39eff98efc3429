// The tests' independent dense reference: a plain state-vector simulator. A gate's
// matrix (gates.hpp) is lifted to the full 2^n x 2^n space by a Kronecker product
// with the identity and moved onto its wires by a basis permutation; templates are
// expanded the way PennyLane documents them; measurements are Pauli-sum expectation
// values and marginal probabilities; gradients are finite differences.
//
// Conventions (PennyLane): wire 0 is the most significant bit of a basis index.
// Shares no code with qfleet's kernels: qfleet::Param is used only as the plain
// description of where a gate parameter comes from.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dense.hpp"
#include "gates.hpp"
#include "qfleet/circuit.hpp"

namespace ref {

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
  const Mat K = kron(local, eye(Index{1} << (n - k)));
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
  Mat V(Index{1} << k, cols);
  std::vector<std::uint64_t> pi(dim);
  for (std::uint64_t i = 0; i < dim; ++i) {
    pi[i] = reorder(i, order, n);
    V(pi[i] / cols, pi[i] % cols) = psi[i];
  }
  const Mat R = local * V;
  for (std::uint64_t i = 0; i < dim; ++i) psi[i] = R(pi[i] / cols, pi[i] % cols);
}

// ---------------------------------------------------------------------------
// Circuits.

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

// ---------------------------------------------------------------------------
// Measurements.

inline double expval(const Vec& psi, const std::vector<std::pair<double, Word>>& terms, int n) {
  double e = 0;
  for (const auto& [coef, word] : terms) {
    Vec q = psi;
    for (const auto& [l, wire] : word.f) apply(q, pauli(l), {wire}, n);
    e += coef * psi.dot(q).real();  // Eigen's dot conjugates the first argument
  }
  return e;
}

// Marginal probabilities on `wires` (first wire most significant).
inline std::vector<double> probs(const Vec& psi, const std::vector<int>& wires, int n) {
  std::vector<double> p(std::size_t{1} << wires.size(), 0.0);
  for (Index i = 0; i < psi.size(); ++i) {
    std::uint64_t o = 0;
    for (int w : wires) o = (o << 1) | static_cast<std::uint64_t>(bit(static_cast<std::uint64_t>(i), w, n));
    p[o] += std::norm(psi[i]);
  }
  return p;
}

// qfleet's documented output order: every expectation value, then every probs entry.
inline std::vector<double> measure(const Circuit& c, const Vec& psi) {
  std::vector<double> out;
  for (const Meas& m : c.meas)
    if (!m.probs) out.push_back(expval(psi, m.terms, c.n));
  for (const Meas& m : c.meas) {
    if (m.probs) {
      const auto p = probs(psi, m.wires, c.n);
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  return out;
}

inline std::vector<double> outputs(const Circuit& c, const double* x, const double* w) {
  return measure(c, state(c, x, w));
}

// ---------------------------------------------------------------------------
// Gradients.

// d outputs[k] / d x[i] and d outputs[k] / d w[j] for one sample (jx[k][i], jw[k][j]),
// by the 5-point central difference
//   f'(t) ~ (-f(t+2h) + 8 f(t+h) - 8 f(t-h) + f(t-2h)) / (12 h),
// whose error is h^4/30 |f^(5)| + O(eps/h): about 1e-12 for h = 1e-3 here.
inline void jacobian(const Circuit& c, std::vector<double> x, std::vector<double> w,
                     std::vector<std::vector<double>>& jx, std::vector<std::vector<double>>& jw, double h = 1e-3) {
  const std::size_t K = static_cast<std::size_t>(c.n_outputs());
  auto column = [&](double& t, std::size_t i, std::vector<std::vector<double>>& jac) {
    const double t0 = t;
    auto at = [&](double s) {
      t = t0 + s;
      return outputs(c, x.data(), w.data());
    };
    const auto f2 = at(2 * h), f1 = at(h), fm1 = at(-h), fm2 = at(-2 * h);
    t = t0;
    for (std::size_t k = 0; k < K; ++k) jac[k][i] = (-f2[k] + 8 * f1[k] - 8 * fm1[k] + fm2[k]) / (12 * h);
  };
  jx.assign(K, std::vector<double>(x.size()));
  jw.assign(K, std::vector<double>(w.size()));
  for (std::size_t i = 0; i < x.size(); ++i) column(x[i], i, jx);
  for (std::size_t j = 0; j < w.size(); ++j) column(w[j], j, jw);
}

// Gradient of sum_k cot[k] * outputs[k] for one sample with respect to that
// sample's inputs x and weights w: the cotangent times the jacobian above.
inline void fd_gradient(const Circuit& c, const std::vector<double>& x, const std::vector<double>& w,
                        const double* cot, std::vector<double>& gx, std::vector<double>& gw, double h = 1e-3) {
  std::vector<std::vector<double>> jx, jw;
  jacobian(c, x, w, jx, jw, h);
  auto contract = [&](const std::vector<std::vector<double>>& jac, std::size_t m, std::vector<double>& g) {
    g.assign(m, 0.0);
    for (std::size_t k = 0; k < jac.size(); ++k)
      for (std::size_t i = 0; i < m; ++i) g[i] += cot[k] * jac[k][i];
  };
  contract(jx, x.size(), gx);
  contract(jw, w.size(), gw);
}

}  // namespace ref
