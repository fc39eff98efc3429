// Test harness on top of the open-system reference (reference/lindblad.hpp): random
// models and batches, the qfleet OpenSystem built from a reference Model through the
// public builder, typed qfleet calls, and comparisons of qfleet's outputs with the
// reference's. The open-system counterpart of harness.hpp.
#pragma once

#include <gtest/gtest.h>

#include <complex>
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "qfleet/qfleet.hpp"
#include "reference/lindblad.hpp"
#include "reference/random.hpp"

namespace ref {

inline TaskBatch random_batch(std::mt19937_64& rng, const Model& m, std::size_t B, bool amp_pt, bool drift_pt,
                          bool rates_pt, bool per_task_initial = false, double amp_scale = 1.0) {
  TaskBatch b;
  b.B = B;
  b.amp_pt = amp_pt;
  b.drift_pt = drift_pt;
  b.rates_pt = rates_pt;
  b.amps = uniform_vec(rng, (amp_pt ? B : 1) * m.n_amp(), -amp_scale, amp_scale);
  b.drift = uniform_vec(rng, (drift_pt ? B : 1) * m.drift_terms.size(), -1.0, 1.0);
  b.rates = uniform_vec(rng, (rates_pt ? B : 1) * m.jumps.size(), 0.05, 0.5);
  if (per_task_initial) {
    for (std::size_t i = 0; i < B; ++i) {
      const std::vector<cd> s = m.closed() ? stdvec(random_state(rng, m.d)) : row_major(random_density(rng, m.d));
      b.initial.insert(b.initial.end(), s.begin(), s.end());
    }
  }
  return b;
}

// Builds the qfleet system of a model through the public builder.
inline qfleet::OpenSystem build(const Model& m) {
  qfleet::OpenSystem s(m.d);
  s.drift(row_major(m.h0));
  for (const auto& h : m.drift_terms) s.drift_term(row_major(h));
  for (const auto& h : m.controls) s.control(row_major(h));
  for (const auto& l : m.jumps) s.jump(row_major(l));
  for (const auto& o : m.observables) s.observable(row_major(o));
  s.durations(m.durations);
  switch (m.init) {
    case Init::Density:
      s.initial_density(row_major(m.rho0));
      break;
    case Init::Pure:
      s.initial_state(stdvec(m.psi0));
      break;
    case Init::Gate:
      s.propagate_gate();
      break;
  }
  switch (m.target) {
    case Target::None:
      break;
    case Target::Pure:
      s.target_state(stdvec(m.target_psi));
      break;
    case Target::Mixed:
      s.target_density(row_major(m.target_mat));
      break;
    case Target::Unitary:
      s.target_unitary(row_major(m.target_mat));
      break;
  }
  if (!m.subspace.empty()) s.computational_subspace(m.subspace);
  return s;
}

// A random model: Hermitian H0, drift terms and controls of norm ~1, jumps of norm ~0.5-1.
struct Spec {
  int d = 3, n_seg = 3, n_ctrl = 2, n_drift = 1, n_jumps = 1, n_obs = 1;
  Init init = Init::Pure;
  Target target = Target::None;
  bool leakage = false;  // computational subspace = all levels but the last
  double seg_lo = 0.15, seg_hi = 0.4;
};

inline Model random_model(std::mt19937_64& rng, const Spec& sp) {
  Model m(sp.d);
  const Index d = sp.d;
  m.h0 = random_hermitian(rng, d);
  for (int i = 0; i < sp.n_drift; ++i) m.drift_terms.push_back(random_hermitian(rng, d));
  for (int i = 0; i < sp.n_ctrl; ++i) m.controls.push_back(random_hermitian(rng, d));
  for (int i = 0; i < sp.n_jumps; ++i) m.jumps.push_back(random_matrix(rng, d, d, 0.6 / std::sqrt(double(d))));
  if (sp.init != Init::Gate)
    for (int i = 0; i < sp.n_obs; ++i) m.observables.push_back(random_hermitian(rng, d));
  for (int k = 0; k < sp.n_seg; ++k) m.durations.push_back(uniform(rng, sp.seg_lo, sp.seg_hi));
  m.init = sp.init;
  if (sp.init == Init::Density) m.rho0 = random_density(rng, d);
  if (sp.init == Init::Pure) m.psi0 = random_state(rng, d);
  m.target = sp.target;
  if (sp.target == Target::Pure) m.target_psi = random_state(rng, d);
  if (sp.target == Target::Mixed) m.target_mat = random_density(rng, d);
  if (sp.target == Target::Unitary) m.target_mat = random_unitary(rng, d);
  if (sp.leakage)
    for (int i = 0; i + 1 < sp.d; ++i) m.subspace.push_back(i);
  return m;
}

// A solver's options as the cross-backend tests run it: the fixed-step solvers at
// dt = 0.0437, the adaptive ones at rtol = atol = tol.
inline qfleet::OpenCompileOptions solver_options(qfleet::Solver s, double tol = 1e-10) {
  qfleet::OpenCompileOptions o;
  o.solver = s;
  if (qfleet::solver_info(s).fixed_step) o.dt = 0.0437;
  if (qfleet::solver_info(s).adaptive) o.rtol = o.atol = tol;
  return o;
}

// The reference scheme a solver's results are held to: its own fixed-step scheme, or
// the exact propagator (the adaptive solvers, within their tolerance).
inline Scheme scheme_of(qfleet::Solver s) {
  return s == qfleet::Solver::rk4 ? Scheme::RK4 : s == qfleet::Solver::euler ? Scheme::Euler : Scheme::Exact;
}

// The six problem kinds the gradient and cuda tests sweep: closed/open x pure,
// mixed (Uhlmann) and unitary targets. Every mixed-target case starts from a
// full-rank density matrix (or is closed), so the Uhlmann fidelity is smooth and
// its finite differences are accurate.
struct ProblemKind {
  const char* name;
  bool closed;
  Init init;
  Target target;
};
inline constexpr ProblemKind kProblemKinds[] = {
    {"closed_pure", true, Init::Pure, Target::Pure},      {"closed_mixed", true, Init::Pure, Target::Mixed},
    {"closed_unitary", true, Init::Gate, Target::Unitary}, {"open_pure", false, Init::Pure, Target::Pure},
    {"open_mixed", false, Init::Density, Target::Mixed},  {"open_unitary", false, Init::Gate, Target::Unitary},
};

// A random model of a kind: 2 controls, 1 drift term, 2 jumps (open), 1 observable, leakage.
inline Model kind_model(const ProblemKind& c, std::mt19937_64& rng, int d = 3, int n_seg = 3) {
  Spec sp;
  sp.d = d;
  sp.n_seg = n_seg;
  sp.n_ctrl = 2;
  sp.n_drift = 1;
  sp.n_jumps = c.closed ? 0 : 2;
  sp.n_obs = 1;
  sp.init = c.init;
  sp.target = c.target;
  sp.leakage = true;
  return random_model(rng, sp);
}

// n qubits with local terms, as a user writes them: qubit frequencies and a ZZ
// chain in H0, a detuning drift term, X and Y drives on every qubit, and relaxation
// (sigma-) and dephasing (Z) on every qubit: O(d) nonzeros per operator.
inline Mat local(int n, int q, const Mat& op) {
  Mat m = eye(1);
  for (int i = 0; i < n; ++i) m = kron(m, i == q ? op : eye(2));
  return m;
}

inline Model local_qubits(int n, Init init, Target target, int n_seg = 3) {
  const Mat x = mat2(0, 1, 1, 0), y = mat2(0, -kI, kI, 0), z = mat2(1, 0, 0, -1), lower = mat2(0, 1, 0, 0);
  Model m(Index(1) << n);
  m.h0 = Mat::Zero(m.d, m.d);
  for (int q = 0; q < n; ++q) {
    m.h0 += (0.3 + 0.1 * q) * local(n, q, z);
    if (q + 1 < n) m.h0 += 0.05 * local(n, q, z) * local(n, q + 1, z);
    m.controls.push_back(local(n, q, x));
    m.controls.push_back(local(n, q, y));
    m.jumps.push_back(local(n, q, lower));
    m.jumps.push_back(local(n, q, z));
  }
  m.drift_terms.push_back(local(n, 0, z));
  if (init != Init::Gate) m.observables.push_back(local(n, n - 1, z));
  for (int k = 0; k < n_seg; ++k) m.durations.push_back(0.21 + 0.05 * k);
  m.init = init;
  m.target = target;
  std::mt19937_64 rng(77);
  if (init == Init::Pure) m.psi0 = random_state(rng, m.d);
  if (target == Target::Pure) m.target_psi = random_state(rng, m.d);
  if (target == Target::Unitary) m.target_mat = random_unitary(rng, m.d);
  for (Index i = 0; i + 1 < m.d; ++i) m.subspace.push_back(int(i));
  return m;
}

// Typed copies of a batch, kept alive while qfleet holds spans into them.
template <class R>
struct QArgs {
  std::vector<R> amps, drift, rates;
  std::vector<std::complex<R>> initial;
  std::size_t B;
  explicit QArgs(const TaskBatch& b)
      : amps(b.amps.begin(), b.amps.end()), drift(b.drift.begin(), b.drift.end()),
        rates(b.rates.begin(), b.rates.end()), B(b.B) {
    for (const cd& z : b.initial) initial.emplace_back(R(z.real()), R(z.imag()));
  }
  qfleet::TaskArgs<R> args() const {
    qfleet::TaskArgs<R> a;
    a.batch = B;
    a.amplitudes = amps;
    a.drift_coeffs = drift;
    a.rates = rates;
    a.initial = initial;
    return a;
  }
};

struct Want {
  bool fid = false, leak = false, exp = false, fin = false;
};
inline Want want_all(const Model& m) {
  return {m.target != Target::None, !m.subspace.empty(), !m.observables.empty(), true};
}

template <class R>
struct QOut {
  std::vector<R> fid, leak, exp;
  std::vector<std::complex<R>> fin;
  std::vector<R> g_amp, g_drift, g_rates;

  void size(const Model& m, std::size_t B, Want w) {
    if (w.fid) fid.assign(B, R(-7));
    if (w.leak) leak.assign(B, R(-7));
    if (w.exp) exp.assign(B * (m.durations.size() + 1) * m.observables.size(), R(-7));
    if (w.fin) fin.assign(B * m.final_size(), std::complex<R>(R(-7), R(-7)));
  }
  qfleet::TaskOutputs<R> outputs() {
    qfleet::TaskOutputs<R> o;
    o.fidelity = fid;
    o.leakage = leak;
    o.expvals = exp;
    o.final_state = fin;
    return o;
  }
};

template <class R>
QOut<R> qforward(const qfleet::OpenProgram& p, const Model& m, const TaskBatch& b, Want w) {
  QArgs<R> a(b);
  QOut<R> o;
  o.size(m, b.B, w);
  p.forward<R>(a.args(), o.outputs());
  return o;
}

// vjp with cotangents (either may be empty) and the forward outputs of the same pass.
// o's gradient buffers sized like a's arguments, filled with a sentinel (-7) a call must
// overwrite, as the spans a vjp writes.
template <class R>
qfleet::TaskGradients<R> gradient_buffers(QOut<R>& o, const QArgs<R>& a) {
  o.g_amp.assign(a.amps.size(), R(-7));
  o.g_drift.assign(a.drift.size(), R(-7));
  o.g_rates.assign(a.rates.size(), R(-7));
  qfleet::TaskGradients<R> g;
  g.amplitudes = o.g_amp;
  g.drift_coeffs = o.g_drift;
  g.rates = o.g_rates;
  return g;
}

template <class R>
QOut<R> qvjp(const qfleet::OpenProgram& p, const Model& m, const TaskBatch& b, const std::vector<double>& cot_f,
             const std::vector<double>& cot_l, Want w = {}) {
  QArgs<R> a(b);
  QOut<R> o;
  o.size(m, b.B, w);
  const qfleet::TaskGradients<R> g = gradient_buffers(o, a);
  const std::vector<R> cf(cot_f.begin(), cot_f.end()), cl(cot_l.begin(), cot_l.end());
  p.vjp<R>(a.args(), std::span<const R>(cf), std::span<const R>(cl), g, o.outputs());
  return o;
}

// ---------------------------------------------------------------------------
// Comparisons.

inline double mag(double x) { return std::abs(x); }
inline double mag(float x) { return std::abs(double(x)); }
template <class T>
double mag(const std::complex<T>& z) {
  return std::abs(std::complex<double>(z));
}
inline std::complex<double> widen(const std::complex<float>& z) { return {z.real(), z.imag()}; }
inline std::complex<double> widen(const std::complex<double>& z) { return z; }
inline double widen(double x) { return x; }
inline double widen(float x) { return x; }

// |got - want| <= atol + rtol |want| elementwise, with the worst offender reported.
template <class A, class B>
::testing::AssertionResult all_close(const std::vector<A>& got, const std::vector<B>& want, double atol,
                                     double rtol = 0.0) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  }
  double worst = 0;
  std::size_t at = 0;
  bool bad = false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = mag(widen(got[i]) - widen(want[i]));
    const double allowed = atol + rtol * mag(widen(want[i]));
    if (!(err <= allowed)) {
      if (!bad || err - allowed > worst) {
        worst = err - allowed;
        at = i;
      }
      bad = true;
    }
  }
  if (!bad) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "worst at index " << at << ": got " << widen(got[at]) << ", want "
                                       << widen(want[at]) << " (|diff| = " << mag(widen(got[at]) - widen(want[at]))
                                       << ", atol " << atol << ", rtol " << rtol << ")";
}

// Flattened reference outputs of a batch.
struct Flat {
  std::vector<double> fid, leak, exp;
  std::vector<cd> fin;
};
inline Flat flatten(const std::vector<Out>& outs) {
  Flat f;
  for (const Out& o : outs) {
    f.fid.push_back(o.fidelity);
    f.leak.push_back(o.leakage);
    f.exp.insert(f.exp.end(), o.expvals.begin(), o.expvals.end());
    f.fin.insert(f.fin.end(), o.final_state.begin(), o.final_state.end());
  }
  return f;
}

// Every requested qfleet output against the reference, to atol (+ rtol relative).
template <class R>
void expect_outputs(const QOut<R>& q, const std::vector<Out>& ref, Want w, double atol, double rtol,
                    const std::string& what) {
  const Flat f = flatten(ref);
  if (w.fid) {
    EXPECT_TRUE(all_close(q.fid, f.fid, atol, rtol)) << what << ": fidelity";
  }
  if (w.leak) {
    EXPECT_TRUE(all_close(q.leak, f.leak, atol, rtol)) << what << ": leakage";
  }
  if (w.exp) {
    EXPECT_TRUE(all_close(q.exp, f.exp, atol, rtol)) << what << ": expvals";
  }
  if (w.fin) {
    EXPECT_TRUE(all_close(q.fin, f.fin, atol, rtol)) << what << ": final_state";
  }
}

}  // namespace ref
