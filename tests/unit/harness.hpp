// Test harness on top of the reference simulator: a builder that drives a
// qfleet::Circuit and a ref::Circuit in parallel, random circuits and batches,
// typed qfleet calls, reference gradients and comparison helpers.
#pragma once

#include <span>

#include "qfleet/qfleet.hpp"
#include "reference/random.hpp"
#include "reference/statevector.hpp"

namespace ref {

// ---------------------------------------------------------------------------
// Twin: drives a qfleet::Circuit and a ref::Circuit with the same calls. Gates go
// to both by name; templates are expanded by qfleet on one side and by the
// reference's own expansions (reference/statevector.hpp) on the other.

struct Twin {
  qfleet::Circuit q;
  Circuit r;
  explicit Twin(int n) : q(n) { r.n = n; }

  Twin& add(const std::string& name, const std::vector<int>& wires, const std::vector<qfleet::Param>& p = {}) {
    q.add(name, wires, p);
    r.add(name, wires, p);
    return *this;
  }
  Twin& unitary(const std::vector<int>& wires, const Mat& u) {
    q.qubit_unitary(wires, row_major(u));
    r.ops.push_back(Op{"QubitUnitary", wires, {}, u});
    return *this;
  }
  static qfleet::Rotation rot(char c) {
    return c == 'X' ? qfleet::Rotation::X : c == 'Y' ? qfleet::Rotation::Y : qfleet::Rotation::Z;
  }
  Twin& angle_embedding(const std::vector<int>& wires, char r_, int first_input = 0) {
    q.angle_embedding(wires, rot(r_), first_input);
    ref::angle_embedding(r, wires, r_, first_input);
    return *this;
  }
  Twin& amplitude_embedding(const std::vector<int>& wires, int n_features, int first_input, bool normalize,
                            std::optional<double> pad) {
    q.amplitude_embedding(wires, n_features, first_input, normalize, pad);
    r.amp = AmpEmb{wires, first_input, n_features, normalize, pad.value_or(0.0)};
    r.n_inputs = std::max(r.n_inputs, first_input + n_features);
    return *this;
  }
  Twin& basic_entangler(const std::vector<int>& wires, int layers, char r_, int first_weight = 0) {
    q.basic_entangler_layers(wires, layers, rot(r_), first_weight);
    ref::basic_entangler(r, wires, layers, r_, first_weight);
    return *this;
  }
  Twin& strongly_entangling(const std::vector<int>& wires, int layers, int first_weight = 0,
                            std::vector<int> ranges = {}, const std::string& imprimitive = "CNOT") {
    q.strongly_entangling_layers(wires, layers, first_weight, ranges, qfleet::gate_from_name(imprimitive));
    ref::strongly_entangling(r, wires, layers, first_weight, ranges, imprimitive);
    return *this;
  }
  Twin& expval(const std::vector<std::pair<double, Word>>& terms) {
    std::vector<std::pair<double, std::string>> t;
    for (const auto& [c, w] : terms) t.emplace_back(c, w.str());
    q.expval(qfleet::Observable::sum(t));
    r.meas.push_back(Meas{false, terms, {}});
    return *this;
  }
  Twin& expval(const Word& w) { return expval({{1.0, w}}); }
  Twin& probs(const std::vector<int>& wires) {
    q.probs(wires);
    r.meas.push_back(Meas{true, {}, wires});
    return *this;
  }
};


// A random Pauli word on distinct wires of an n-qubit register (maybe the identity).
inline Word random_word(std::mt19937_64& rng, int n, bool allow_identity = true) {
  const int k = randint(rng, allow_identity ? 0 : 1, std::min(n, 3));
  Word w;
  for (int wire : random_wires(rng, n, k)) w.f.emplace_back("XYZ"[randint(rng, 0, 2)], wire);
  return w;
}

// ---------------------------------------------------------------------------
// Batched data and comparisons.

struct Batch {
  std::size_t B = 1;
  int ni = 0, nw = 0;
  std::vector<double> x;  // [B, ni]
  std::vector<double> w;  // [nw] shared or [B, nw] per sample
  bool per_sample = false;
  const double* xrow(std::size_t b) const { return ni ? x.data() + b * ni : nullptr; }
  const double* wrow(std::size_t b) const {
    if (!nw) return nullptr;
    return per_sample ? w.data() + b * nw : w.data();
  }
  // The first `b` samples of this batch.
  Batch prefix(std::size_t b) const {
    Batch p = *this;
    p.B = b;
    p.x.resize(b * ni);
    if (per_sample) p.w.resize(b * nw);
    return p;
  }
  template <class R>
  std::vector<R> xs() const {
    return std::vector<R>(x.begin(), x.end());
  }
  template <class R>
  std::vector<R> ws() const {
    return std::vector<R>(w.begin(), w.end());
  }
};

inline Batch random_batch(std::mt19937_64& rng, std::size_t B, int ni, int nw, bool per_sample,
                          double lo = -kPi, double hi = kPi) {
  Batch b;
  b.B = B;
  b.ni = ni;
  b.nw = nw;
  b.per_sample = per_sample;
  b.x = uniform_vec(rng, B * ni, lo, hi);
  b.w = uniform_vec(rng, (per_sample ? B : 1) * nw, -kPi, kPi);
  return b;
}

template <class R>
struct Run {  // typed copies of a batch that outlive the qfleet spans pointing at them
  std::vector<R> x, w;
  explicit Run(const Batch& b) : x(b.xs<R>()), w(b.ws<R>()) {}
  qfleet::BatchArgs<R> args(std::size_t B) const {
    qfleet::BatchArgs<R> a;
    a.batch = B;
    a.inputs = x;
    a.weights = w;
    return a;
  }
};

inline std::vector<double> ref_outputs(const Circuit& c, const Batch& b) {
  std::vector<double> out;
  for (std::size_t s = 0; s < b.B; ++s) {
    const auto o = outputs(c, b.xrow(s), b.wrow(s));
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}
template <class R>
inline double max_abs_diff(const std::vector<R>& a, const std::vector<double>& b) {
  return max_abs_diff(std::vector<double>(a.begin(), a.end()), b);
}

inline double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double t : v) s += t * t;
  return std::sqrt(s);
}
// ||a - b|| / (||b|| + floor): a norm-wise relative error with a small absolute floor.
inline double rel_err(const std::vector<double>& got, const std::vector<double>& want, double floor = 1e-3) {
  if (got.size() != want.size()) return INFINITY;
  // summed in place, not through a vector of differences (g++ 13 warned -Wfree-nonheap-object
  // on that vector's inlined deallocation, a false positive)
  double s = 0;
  for (std::size_t i = 0; i < got.size(); ++i) s += (got[i] - want[i]) * (got[i] - want[i]);
  return std::sqrt(s) / (norm2(want) + floor);
}


// qfleet calls on a ref::Batch (complex128 when R = double, complex64 when float).
template <class R>
std::vector<R> q_forward(const qfleet::Program& p, const Batch& b) {
  const Run<R> run(b);
  std::vector<R> out(b.B * static_cast<std::size_t>(p.n_outputs()));
  p.forward<R>(run.args(b.B), std::span<R>(out));
  return out;
}
template <class R>
std::vector<std::complex<R>> q_states(const qfleet::Program& p, const Batch& b) {
  const Run<R> run(b);
  std::vector<std::complex<R>> out(b.B << p.n_qubits());
  p.states<R>(run.args(b.B), std::span<std::complex<R>>(out));
  return out;
}

// Largest |qfleet amplitude - reference amplitude| over the batch.
template <class R>
double max_state_diff(const std::vector<std::complex<R>>& got, const Circuit& c, const Batch& b,
                      bool dense = false) {
  const std::size_t dim = std::size_t{1} << c.n;
  if (got.size() != b.B * dim) return INFINITY;
  double m = 0;
  for (std::size_t s = 0; s < b.B; ++s) {
    const Vec want = state(c, b.xrow(s), b.wrow(s), dense);
    for (std::size_t i = 0; i < dim; ++i) {
      const cd g(got[s * dim + i].real(), got[s * dim + i].imag());
      m = std::max(m, std::abs(g - want[static_cast<Eigen::Index>(i)]));
    }
  }
  return m;
}


inline qfleet::Param random_param(std::mt19937_64& rng, int ni, int nw) {
  const int kind = randint(rng, 0, 2);
  if (kind == 1 && ni > 0) return qfleet::Param::input(randint(rng, 0, ni - 1), random_scale(rng));
  if (kind == 2 && nw > 0) return qfleet::Param::weight(randint(rng, 0, nw - 1), random_scale(rng));
  return qfleet::Param(uniform(rng, -kPi, kPi));
}

// Options for random_circuit.
struct RandomSpec {
  int items = 12;       // gates and templates
  int ni = 4, nw = 4;   // index ranges for gate inputs and weights
  bool amplitude = true;   // maybe start with an AmplitudeEmbedding (normalize=true)
  bool templates = true;   // mix in Angle/BasicEntangler/StronglyEntangling templates
  bool measure = true;     // add random expvals and probs
};

// Random gates from the whole catalogue on random wires with parameters that are
// constants, scaled inputs or scaled weights (indices may repeat), some templates,
// then weighted Pauli sums (identity and Y terms included) and probs over random
// wire subsets in random order.
inline void random_circuit(Twin& t, std::mt19937_64& rng, const RandomSpec& s) {
  const int n = t.r.n;
  if (s.amplitude && randint(rng, 0, 2) == 0) {
    const int k = randint(rng, 1, std::min(n, 4));
    const auto wires = random_wires(rng, n, k);
    const int nf = randint(rng, std::max(1, (1 << k) - 2), 1 << k);
    std::optional<double> pad;
    if (nf < (1 << k) || randint(rng, 0, 1)) pad = uniform(rng, -1, 1);
    t.amplitude_embedding(wires, nf, randint(rng, 0, 2), /*normalize=*/true, pad);
  }
  std::vector<std::string> names;
  for (const auto& g : qfleet::kGateTable) names.emplace_back(g.name);
  for (int it = 0; it < s.items; ++it) {
    if (s.templates && randint(rng, 0, 9) == 0) {
      const int k = randint(rng, 1, n);
      const auto wires = random_wires(rng, n, k);
      switch (randint(rng, 0, 2)) {
        case 0:
          t.angle_embedding(wires, "XYZ"[randint(rng, 0, 2)], randint(rng, 0, s.ni));
          break;
        case 1:
          t.basic_entangler(wires, randint(rng, 1, 2), "XYZ"[randint(rng, 0, 2)], randint(rng, 0, s.nw));
          break;
        default:
          t.strongly_entangling(wires, randint(rng, 1, 2), randint(rng, 0, s.nw));
          break;
      }
      continue;
    }
    const std::string& name = names[randint(rng, 0, static_cast<int>(names.size()) - 1)];
    if (name == "QubitUnitary") {
      const int k = randint(rng, 1, std::min(n, 2));
      t.unitary(random_wires(rng, n, k), random_unitary(rng, Index{1} << k));
      continue;
    }
    const int k = gate_wires(name);
    if (k > n) {
      --it;
      continue;
    }
    std::vector<qfleet::Param> p;
    for (int j = 0; j < gate_params(name); ++j) p.push_back(random_param(rng, s.ni, s.nw));
    t.add(name, random_wires(rng, n, k), p);
  }
  if (!s.measure) return;
  const int n_obs = randint(rng, 1, 3);
  for (int o = 0; o < n_obs; ++o) {
    std::vector<std::pair<double, Word>> terms;
    const int nt = randint(rng, 1, 3);
    for (int j = 0; j < nt; ++j) terms.emplace_back(uniform(rng, -2, 2), random_word(rng, n));
    t.expval(terms);
  }
  const int n_probs = randint(rng, 1, 2);
  for (int p = 0; p < n_probs; ++p) t.probs(random_wires(rng, n, randint(rng, 1, std::min(n, 3))));
}

// Largest |amplitude difference| of B final states (B x 2^n, row-major) from the reference's.
inline double max_state_err(const std::vector<std::complex<double>>& got, const Twin& t, const Batch& b) {
  const std::size_t dim = std::size_t{1} << t.r.n;
  double m = 0;
  for (std::size_t s = 0; s < b.B; ++s) {
    const Vec want = state(t.r, b.xrow(s), b.wrow(s));
    for (std::size_t i = 0; i < dim; ++i) m = std::max(m, std::abs(got[s * dim + i] - want[i]));
  }
  return m;
}

// Batch sizes around the tile width: 1, 3, lanes-1, lanes, lanes+1, 257.
inline std::vector<std::size_t> batch_sizes(int lanes) {
  std::vector<std::size_t> v = {1, 3, std::size_t(lanes) - 1, std::size_t(lanes), std::size_t(lanes) + 1, 257};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove(v.begin(), v.end(), std::size_t{0}), v.end());
  return v;
}


// Reference gradients of sum_{b,k} cot[b,k] out[b,k] by finite differences:
// gi [B, ni]; gw_ps [B, nw] (each sample's own weights); gw_shared [nw] = sum over b.
struct RefGrad {
  std::vector<double> gi, gw_ps, gw_shared;
};
inline RefGrad ref_gradient(const Circuit& c, const Batch& b, const std::vector<double>& cot) {
  RefGrad g;
  const std::size_t K = static_cast<std::size_t>(c.n_outputs());
  g.gw_shared.assign(b.nw, 0.0);
  for (std::size_t s = 0; s < b.B; ++s) {
    std::vector<double> x(b.xrow(s), b.xrow(s) + b.ni), w(b.wrow(s), b.wrow(s) + b.nw), gx, gw;
    fd_gradient(c, x, w, cot.data() + s * K, gx, gw);
    g.gi.insert(g.gi.end(), gx.begin(), gx.end());
    g.gw_ps.insert(g.gw_ps.end(), gw.begin(), gw.end());
    for (int j = 0; j < b.nw; ++j) g.gw_shared[j] += gw[j];
  }
  return g;
}

template <class R>
struct QGrad {
  std::vector<double> gi, gw, out;
};
// Program::vjp on a batch; gw has the shape qfleet documents for the weights given
// ([nw] shared, [B, nw] per sample). With fused, the forward outputs come back too.
template <class R>
QGrad<R> q_vjp(const qfleet::Program& p, const Batch& b, const std::vector<double>& cot, bool fused = false) {
  const Run<R> run(b);
  const std::vector<R> c(cot.begin(), cot.end());
  std::vector<R> gi(b.B * b.ni, R(-99)), gw((b.per_sample && b.B > 1 ? b.B : 1) * b.nw, R(-99));
  std::vector<R> out(fused ? b.B * p.n_outputs() : 0);
  p.vjp<R>(run.args(b.B), c, qfleet::Gradients<R>{gi, gw}, out);
  return QGrad<R>{{gi.begin(), gi.end()}, {gw.begin(), gw.end()}, {out.begin(), out.end()}};
}

// vjp in two calls, as autograd runs it: forward() saving the final states, then
// vjp_saved() resuming from them (outputs: the forward call's).
template <class R>
QGrad<R> q_vjp_saved(const qfleet::Program& p, const Batch& b, const std::vector<double>& cot) {
  const Run<R> run(b);
  const std::vector<R> c(cot.begin(), cot.end());
  std::vector<R> gi(b.B * b.ni, R(-99)), gw((b.per_sample && b.B > 1 ? b.B : 1) * b.nw, R(-99));
  std::vector<R> out(b.B * p.n_outputs()), saved(p.saved_size(b.B));
  p.forward<R>(run.args(b.B), out, saved);
  p.vjp_saved<R>(run.args(b.B), saved, c, qfleet::Gradients<R>{gi, gw});
  return QGrad<R>{{gi.begin(), gi.end()}, {gw.begin(), gw.end()}, {out.begin(), out.end()}};
}

// The reference gradient matching the weights' layout in b.
inline const std::vector<double>& ref_gw(const RefGrad& g, const Batch& b) {
  return b.per_sample && b.B > 1 ? g.gw_ps : g.gw_shared;
}

// A circuit on n >= 3 qubits with two runs of constant permutation gates the planner
// fuses (kern::PermRun): a CNOT ring (ops n..2n-1, no phases), then Y, S, T, CZ, CY,
// iSWAP, SWAP, Toffoli and a QubitUnitary permutation with phases (ops 2n+1..2n+9),
// cut by a Hadamard, two X (too short a run) and parameterised gates around; inputs
// 0..2, weights 0..n.
inline void permutation_runs_circuit(Twin& t, int n) {
  for (int w = 0; w < n; ++w) t.add("RY", {w}, {qfleet::Param::input(w % 3)});
  for (int w = 0; w < n; ++w) t.add("CNOT", {w, (w + 1) % n});
  t.add("RX", {0}, {qfleet::Param::weight(0)});
  t.add("PauliY", {0}).add("S", {n - 1}).add("T", {0}).add("CZ", {0, n - 1}).add("CY", {n - 1, 0});
  t.add("ISWAP", {0, n - 1}).add("SWAP", {n - 1, 0}).add("Toffoli", {2, 0, 1});
  Mat u = Mat::Zero(4, 4);  // |0> -> i|2>, |1> -> |0>, |2> -> -|3>, |3> -> e^{i/3}|1>
  u(2, 0) = kI;
  u(0, 1) = 1.0;
  u(3, 2) = -1.0;
  u(1, 3) = std::polar(1.0, 1.0 / 3);
  t.unitary({n - 1, 0}, u);
  t.add("Hadamard", {1});
  t.add("PauliX", {0}).add("PauliX", {1});
  for (int w = 0; w < n; ++w) t.add("RZ", {w}, {qfleet::Param::weight(1 + w)});
  t.expval({{0.8, word({{'Z', 0}})}, {-0.5, word({{'X', n - 1}, {'Y', 0}})}});
  t.probs({n - 1});
}

// Runs of diagonal gates (kern::OpDesc::diag_first) for n >= 3 qubits: after a layer of
// RY, a run of ten (ops n .. n + 9: parameterised ones between constant ones, so no three
// constants in a row make a permutation run instead), a Hadamard, a lone RZ (no run), an
// RX, then a ring of IsingZZ sharing one weight (ops n + 13 .. 2n + 12, a QAOA cost
// layer), then RX on every wire.
inline void diagonal_runs_circuit(Twin& t, int n) {
  for (int w = 0; w < n; ++w) t.add("RY", {w}, {qfleet::Param::input(w % 3)});
  t.add("RZ", {0}, {qfleet::Param::weight(0)}).add("S", {2});
  t.add("PhaseShift", {1}, {qfleet::Param::input(1)}).add("CZ", {0, 1});
  t.add("CRZ", {0, 2}, {qfleet::Param::weight(1, 0.7)});
  Mat d = Mat::Zero(4, 4);  // a diagonal QubitUnitary
  d(0, 0) = std::polar(1.0, 0.3);
  d(1, 1) = kI;
  d(2, 2) = std::polar(1.0, -1.1);
  d(3, 3) = -1.0;
  t.unitary({2, 0}, d);
  t.add("ControlledPhaseShift", {n - 1, 1}, {qfleet::Param::input(0)});
  t.add("RZ", {n - 1}, {0.4}).add("IsingZZ", {1, n - 1}, {qfleet::Param::weight(2)});
  t.add("Rot", {2}, {0.2, 0.0, -0.6});  // constant, three parameters, diagonal at theta = 0
  t.add("Hadamard", {1}).add("RZ", {0}, {qfleet::Param::weight(3)}).add("RX", {0}, {qfleet::Param::input(2)});
  for (int w = 0; w < n; ++w) t.add("IsingZZ", {w, (w + 1) % n}, {qfleet::Param::weight(4)});
  for (int w = 0; w < n; ++w) t.add("RX", {w}, {qfleet::Param::weight(5 + w)});
  t.expval({{0.8, word({{'Z', 0}})}, {-0.5, word({{'X', n - 1}, {'Y', 0}})}});
  t.probs({n - 1});
}

}  // namespace ref
