// An independent dense reference for qfleet's open-system engine (OpenSystem /
// OpenProgram), and the glue that drives both from one problem description.
//
// Written from the textbook definitions, not from qfleet's planner or kernels:
//   H(t) = H0 + sum_m c_m H0_m + sum_k u_k H_k (piecewise constant)
//   d rho/dt = -i[H, rho] + sum_j gamma_j (L_j rho L_j^dag - {L_j^dag L_j, rho}/2)
// The Liouvillian is assembled from Kronecker products with Eigen, in the
// column-stacking convention vec(A X B) = (B^T kron A) vec(X), and checked against
// the direct action of the Lindblad equation on a matrix (test_open_reference.cpp).
// Propagation: closed systems through the eigendecomposition of H (exp(-i H dt) =
// V exp(-i Lambda dt) V^dag), open systems through Eigen's matrix exponential of the
// Liouvillian; or plain RK4 / forward-Euler steps (ceil(duration/dt) equal steps per
// segment) for the fixed-step schemes.
// Figures of merit:
//   pure target:    |<phi|psi>|^2 (closed), <phi|rho|phi> (open)
//   mixed target:   Uhlmann (tr sqrt(sqrt(rho) sigma sqrt(rho)))^2, from Hermitian
//                   eigendecompositions (second and third constructions: Eigen's
//                   .sqrt(), and the spectrum of rho sigma)
//   target unitary: average gate fidelity by Nielsen's formula over the Weyl
//                   operator basis, F = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d+1))
//                   (second constructions: state fidelity averaged over a 2-design,
//                   and the Choi matrix)
//   leakage:        1 - population of the computational subspace
//                   (gates: 1 - tr(P E(P))/d_c; closed gates 1 - sum_{i,j in sub} |U_ij|^2/d_c)
// Gradients: central finite differences of the reference.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "qfleet/qfleet.hpp"

namespace oref {

using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;
using Index = Eigen::Index;
inline constexpr double kPi = 3.14159265358979323846;
inline const cd kI{0.0, 1.0};

// ---------------------------------------------------------------------------
// Linear algebra helpers.

inline Mat eye(Index d) { return Mat::Identity(d, d); }

// (a kron b)[ia*rb + ib, ja*cb + jb] = a[ia,ja] b[ib,jb].
inline Mat kron(const Mat& a, const Mat& b) {
  Mat k(a.rows() * b.rows(), a.cols() * b.cols());
  for (Index ia = 0; ia < a.rows(); ++ia)
    for (Index ja = 0; ja < a.cols(); ++ja) k.block(ia * b.rows(), ja * b.cols(), b.rows(), b.cols()) = a(ia, ja) * b;
  return k;
}

// Column stacking: vec(X)[i + d j] = X[i, j].
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

// Row-major std::vector <-> Eigen.
inline std::vector<cd> rm(const Mat& m) {
  std::vector<cd> v(static_cast<std::size_t>(m.size()));
  for (Index i = 0; i < m.rows(); ++i)
    for (Index j = 0; j < m.cols(); ++j) v[static_cast<std::size_t>(i * m.cols() + j)] = m(i, j);
  return v;
}
inline std::vector<cd> stdvec(const Vec& v) { return std::vector<cd>(v.data(), v.data() + v.size()); }
inline Mat from_rm(const cd* p, Index rows, Index cols) {
  Mat m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = p[i * cols + j];
  return m;
}

inline Mat mat2(cd a, cd b, cd c, cd d) {
  Mat m(2, 2);
  m << a, b, c, d;
  return m;
}
inline Mat pauli_x() { return mat2(0, 1, 1, 0); }
inline Mat pauli_y() { return mat2(0, -kI, kI, 0); }
inline Mat pauli_z() { return mat2(1, 0, 0, -1); }
inline Mat ket_bra(Index d, Index i, Index j) {
  Mat m = Mat::Zero(d, d);
  m(i, j) = 1;
  return m;
}
inline Vec basis(Index d, Index i) {
  Vec v = Vec::Zero(d);
  v(i) = 1;
  return v;
}
// Lowering operator of a d-level oscillator: a|n> = sqrt(n)|n-1>.
inline Mat lowering(Index d) {
  Mat a = Mat::Zero(d, d);
  for (Index n = 1; n < d; ++n) a(n - 1, n) = std::sqrt(double(n));
  return a;
}

// ---------------------------------------------------------------------------
// Random objects.

inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline cd gauss(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  const double re = n(rng);
  return {re, n(rng)};
}
inline Mat random_matrix(std::mt19937_64& rng, Index r, Index c, double scale = 1.0) {
  Mat m(r, c);
  for (Index i = 0; i < r; ++i)
    for (Index j = 0; j < c; ++j) m(i, j) = scale * gauss(rng);
  return m;
}
inline Mat random_hermitian(std::mt19937_64& rng, Index d, double scale = 1.0) {
  Mat g = random_matrix(rng, d, d, scale / std::sqrt(double(d)));
  return 0.5 * (g + g.adjoint());
}
inline Vec random_state(std::mt19937_64& rng, Index d) {
  Vec v = random_matrix(rng, d, 1);
  return v / v.norm();
}
// A full-rank density matrix: (1 - mix) W W^dag / tr + mix I/d.
inline Mat random_density(std::mt19937_64& rng, Index d, double mix = 0.2) {
  Mat w = random_matrix(rng, d, d);
  Mat r = w * w.adjoint();
  r /= r.trace().real();
  r = (1 - mix) * r + mix * eye(d) / double(d);
  return 0.5 * (r + r.adjoint());
}
inline Mat random_unitary(std::mt19937_64& rng, Index d) {
  Eigen::HouseholderQR<Mat> qr(random_matrix(rng, d, d));
  return qr.householderQ() * eye(d);
}

// ---------------------------------------------------------------------------
// Generators and propagators.

// Superoperator of X -> A X B (column stacking).
inline Mat sandwich(const Mat& a, const Mat& b) { return kron(b.transpose(), a); }

inline Mat liouvillian(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates) {
  const Mat id = eye(h.rows());
  Mat lv = -kI * (sandwich(h, id) - sandwich(id, h));
  for (std::size_t j = 0; j < jumps.size(); ++j) {
    const Mat& l = jumps[j];
    const Mat ldl = l.adjoint() * l;
    lv += rates[j] * (sandwich(l, l.adjoint()) - 0.5 * sandwich(ldl, id) - 0.5 * sandwich(id, ldl));
  }
  return lv;
}

// The Lindblad right-hand side acting directly on a matrix (for checking the above).
inline Mat lindblad_rhs(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates, const Mat& x) {
  Mat r = -kI * (h * x - x * h);
  for (std::size_t j = 0; j < jumps.size(); ++j) {
    const Mat& l = jumps[j];
    r += rates[j] * (l * x * l.adjoint() - 0.5 * (l.adjoint() * l * x + x * l.adjoint() * l));
  }
  return r;
}

// exp(-i H t) from the eigendecomposition of the Hermitian H.
inline Mat unitary_of(const Mat& h, double t) {
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (h + h.adjoint()));
  Vec ph(h.rows());
  for (Index i = 0; i < h.rows(); ++i) ph(i) = std::exp(-kI * es.eigenvalues()(i) * t);
  return es.eigenvectors() * ph.asDiagonal() * es.eigenvectors().adjoint();
}

enum class Scheme { Exact, RK4, Euler };

// Fixed-step integration of dX/dt = A X over `duration` in ceil(duration/dt) equal steps.
inline Mat fixed_steps(const Mat& a, Mat x, double duration, double dt, Scheme s) {
  const long m = std::max(1L, static_cast<long>(std::ceil(duration / dt)));
  const double h = duration / double(m);
  for (long i = 0; i < m; ++i) {
    if (s == Scheme::Euler) {
      x = x + h * (a * x);
    } else {
      const Mat k1 = a * x;
      const Mat k2 = a * (x + (h / 2) * k1);
      const Mat k3 = a * (x + (h / 2) * k2);
      const Mat k4 = a * (x + h * k3);
      x = x + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
  }
  return x;
}

// ---------------------------------------------------------------------------
// Figures of merit.

inline Mat psd_sqrt(const Mat& a) {
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (a + a.adjoint()));
  Eigen::VectorXd s = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * s.cast<cd>().asDiagonal() * es.eigenvectors().adjoint();
}

// Uhlmann fidelity (tr sqrt(sqrt(sigma) rho sqrt(sigma)))^2 from Hermitian eigendecompositions.
inline double uhlmann(const Mat& rho, const Mat& sigma) {
  const Mat s = psd_sqrt(sigma);
  const Mat m = s * rho * s;
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (m + m.adjoint()), Eigen::EigenvaluesOnly);
  // Eigenvalues at rounding level (rank-deficient arguments) count as 0: their square
  // roots would otherwise add ~sqrt(eps) each.
  const double cut = 1e-13 * std::max(1e-300, es.eigenvalues().maxCoeff());
  double t = 0;
  for (Index i = 0; i < m.rows(); ++i) t += es.eigenvalues()(i) > cut ? std::sqrt(es.eigenvalues()(i)) : 0.0;
  return t * t;
}
// The same with Eigen's general matrix square root (full-rank arguments only).
inline double uhlmann_sqrtm(const Mat& rho, const Mat& sigma) {
  const Mat sr = rho.sqrt();
  const Mat m = sr * sigma * sr;
  const Mat r = m.sqrt();
  const double t = r.trace().real();
  return t * t;
}
// The same from the spectrum of rho sigma (similar to sqrt(rho) sigma sqrt(rho)).
inline double uhlmann_spectrum(const Mat& rho, const Mat& sigma) {
  Eigen::ComplexEigenSolver<Mat> es(rho * sigma, false);
  double top = 1e-300, t = 0;
  for (Index i = 0; i < rho.rows(); ++i) top = std::max(top, es.eigenvalues()(i).real());
  for (Index i = 0; i < rho.rows(); ++i) {
    const double ev = es.eigenvalues()(i).real();
    t += ev > 1e-13 * top ? std::sqrt(ev) : 0.0;
  }
  return t * t;
}

using Channel = std::function<Mat(const Mat&)>;

// Weyl (clock-and-shift) operators X^a Z^b, a unitary operator basis with tr(P^dag Q) = d delta.
inline Mat weyl(Index d, Index a, Index b) {
  Mat x = Mat::Zero(d, d), z = Mat::Zero(d, d);
  for (Index j = 0; j < d; ++j) {
    x((j + 1) % d, j) = 1;
    z(j, j) = std::exp(2.0 * kPi * kI * double(j) / double(d));
  }
  Mat p = eye(d);
  for (Index i = 0; i < a; ++i) p = p * x;
  for (Index i = 0; i < b; ++i) p = p * z;
  return p;
}

// Nielsen (2002): F_avg = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d + 1)).
inline double avg_fidelity_weyl(const Channel& e, const Mat& u, Index d) {
  cd s = 0;
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) {
      const Mat p = weyl(d, a, b);
      s += (u * p.adjoint() * u.adjoint() * e(p)).trace();
    }
  return (s.real() + double(d * d)) / (double(d * d) * double(d + 1));
}

// Average over a 2-design of <psi|U^dag E(|psi><psi|) U|psi>: the six Pauli
// eigenstates (d = 2) or the d + 1 mutually unbiased bases (odd prime d).
inline double avg_fidelity_design(const Channel& e, const Mat& u, Index d) {
  std::vector<Vec> states;
  if (d == 2) {
    const double r = 1 / std::sqrt(2.0);
    states = {basis(2, 0), basis(2, 1)};
    for (cd ph : {cd(1), cd(-1), kI, -kI}) {
      Vec v(2);
      v << r, r * ph;
      states.push_back(v);
    }
  } else {
    for (Index i = 0; i < d; ++i) states.push_back(basis(d, i));
    for (Index k = 0; k < d; ++k)
      for (Index m = 0; m < d; ++m) {
        Vec v(d);
        for (Index j = 0; j < d; ++j)
          v(j) = std::exp(2.0 * kPi * kI * double(k * j * j + m * j) / double(d)) / std::sqrt(double(d));
        states.push_back(v);
      }
  }
  double s = 0;
  for (const Vec& v : states) {
    const Vec w = u * v;
    s += (w.adjoint() * e(v * v.adjoint()) * w)(0, 0).real();
  }
  return s / double(states.size());
}

// Via the Choi matrix J = sum_ij |i><j| kron E(|i><j|): F_pro = <<U|J|U>>/d^2.
inline double avg_fidelity_choi(const Channel& e, const Mat& u, Index d) {
  Mat j = Mat::Zero(d * d, d * d);
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) j += kron(ket_bra(d, a, b), e(ket_bra(d, a, b)));
  Vec phi = Vec::Zero(d * d);
  for (Index a = 0; a < d; ++a) phi += kron(basis(d, a), u * basis(d, a));
  const double fpro = (phi.adjoint() * j * phi)(0, 0).real() / double(d * d);
  return (double(d) * fpro + 1) / double(d + 1);
}

// ---------------------------------------------------------------------------
// The problem description shared by the reference and the qfleet builder.

enum class Init { Density, Pure, Gate };
enum class Target { None, Pure, Mixed, Unitary };

struct Model {
  int d = 2;
  Mat h0;
  std::vector<Mat> drift_terms, controls, jumps, observables;
  std::vector<double> durations;
  Init init = Init::Pure;
  Mat rho0;
  Vec psi0;
  Target target = Target::None;
  Vec target_psi;
  Mat target_mat;
  std::vector<int> subspace;

  explicit Model(int dim = 2) : d(dim), h0(Mat::Zero(dim, dim)), psi0(basis(dim, 0)) {}
  bool closed() const { return jumps.empty(); }
  bool gate() const { return init == Init::Gate; }
  int n_seg() const { return int(durations.size()); }
  int n_ctrl() const { return int(controls.size()); }
  std::size_t n_amp() const { return std::size_t(n_seg()) * controls.size(); }
  // Per task, in complex numbers: rho (d x d), psi (d), S (d^2 x d^2) or U (d x d).
  std::size_t final_size() const {
    if (gate()) return closed() ? std::size_t(d) * d : std::size_t(d) * d * d * d;
    return closed() ? std::size_t(d) : std::size_t(d) * d;
  }
  std::size_t state_size() const { return closed() ? std::size_t(d) : std::size_t(d) * d; }
};

struct Task {
  std::vector<double> amps, drift, rates;  // [n_seg * n_ctrl], [n_drift], [n_jumps]
  std::optional<Mat> rho0;
  std::optional<Vec> psi0;
};

struct Out {
  double fidelity = std::numeric_limits<double>::quiet_NaN();
  double leakage = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> expvals;     // [n_seg + 1, n_obs]
  std::vector<cd> final_state;     // row-major
  Mat x;                           // the propagated state: psi, vec(rho), U or S
};

inline Mat projector(Index d, const std::vector<int>& levels) {
  Mat p = Mat::Zero(d, d);
  for (int i : levels) p(i, i) = 1;
  return p;
}

// Simulates one task of a model.
inline Out simulate(const Model& m, const Task& t, Scheme scheme = Scheme::Exact, double dt = 0) {
  const Index d = m.d;
  const bool closed = m.closed(), gate = m.gate();
  Mat hs = m.h0;
  for (std::size_t i = 0; i < m.drift_terms.size(); ++i) hs += t.drift[i] * m.drift_terms[i];

  Mat x;
  if (gate) {
    x = eye(closed ? d : d * d);
  } else if (closed) {
    x = t.psi0 ? *t.psi0 : m.psi0;
  } else {
    Mat rho = t.rho0 ? *t.rho0 : (m.init == Init::Density ? m.rho0 : Mat(m.psi0 * m.psi0.adjoint()));
    x = vec(rho);
  }
  Out out;
  const std::size_t nobs = m.observables.size();
  out.expvals.assign((m.durations.size() + 1) * nobs, 0.0);
  auto record = [&](std::size_t k) {
    if (gate) return;
    for (std::size_t o = 0; o < nobs; ++o) {
      const Mat& ob = m.observables[o];
      const double v = closed ? (x.adjoint() * ob * x)(0, 0).real() : (ob * unvec(x.col(0), d)).trace().real();
      out.expvals[k * nobs + o] = v;
    }
  };
  record(0);
  for (int k = 0; k < m.n_seg(); ++k) {
    Mat h = hs;
    for (int i = 0; i < m.n_ctrl(); ++i) h += t.amps[std::size_t(k) * m.n_ctrl() + i] * m.controls[i];
    const double dur = m.durations[k];
    if (scheme == Scheme::Exact) {
      if (closed) {
        x = unitary_of(h, dur) * x;
      } else {
        const Mat a = dur * liouvillian(h, m.jumps, t.rates);
        const Mat p = a.exp();
        x = p * x;
      }
    } else {
      const Mat a = closed ? Mat(-kI * h) : liouvillian(h, m.jumps, t.rates);
      x = fixed_steps(a, x, dur, dt, scheme);
    }
    record(std::size_t(k) + 1);
  }
  out.x = x;

  // The channel (gates) or the final state.
  Channel e;
  Mat rho;
  if (gate) {
    if (closed) {
      e = [x](const Mat& in) -> Mat { return x * in * x.adjoint(); };
    } else {
      e = [x, d](const Mat& in) -> Mat { return unvec(x * vec(in), d); };
    }
    out.final_state = rm(x);
  } else if (closed) {
    out.final_state = stdvec(x.col(0));
  } else {
    rho = unvec(x.col(0), d);
    out.final_state = rm(rho);
  }

  switch (m.target) {
    case Target::None:
      break;
    case Target::Pure:
      if (closed) {
        out.fidelity = std::norm((m.target_psi.adjoint() * x)(0, 0));
      } else {
        out.fidelity = (m.target_psi.adjoint() * rho * m.target_psi)(0, 0).real();
      }
      break;
    case Target::Mixed:
      if (closed) {
        const Vec psi = x.col(0);
        out.fidelity = (psi.adjoint() * m.target_mat * psi)(0, 0).real();
      } else {
        out.fidelity = uhlmann(rho, m.target_mat);
      }
      break;
    case Target::Unitary:
      out.fidelity = avg_fidelity_weyl(e, m.target_mat, d);
      break;
  }
  if (!m.subspace.empty()) {
    const Mat p = projector(d, m.subspace);
    const double dc = double(m.subspace.size());
    if (gate && closed) {
      double kept = 0;
      for (int i : m.subspace)
        for (int j : m.subspace) kept += std::norm(x(i, j));
      out.leakage = 1 - kept / dc;
    } else if (gate) {
      out.leakage = 1 - (p * e(p)).trace().real() / dc;
    } else if (closed) {
      out.leakage = 1 - (x.adjoint() * p * x)(0, 0).real();
    } else {
      out.leakage = 1 - (p * rho).trace().real();
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Batches (the TaskArgs layout) and the qfleet side.

struct Batch {
  std::size_t B = 1;
  bool amp_pt = false, drift_pt = false, rates_pt = false;
  std::vector<double> amps, drift, rates;  // per task [B, ...] or shared
  std::vector<cd> initial;                 // empty, [B, d, d] (open) or [B, d] (closed)

  Task task(const Model& m, std::size_t b) const {
    Task t;
    const std::size_t na = m.n_amp(), nd = m.drift_terms.size(), nr = m.jumps.size();
    t.amps.assign(amps.begin() + std::ptrdiff_t(amp_pt ? b * na : 0), amps.begin() + std::ptrdiff_t((amp_pt ? b * na : 0) + na));
    t.drift.assign(drift.begin() + std::ptrdiff_t(drift_pt ? b * nd : 0), drift.begin() + std::ptrdiff_t((drift_pt ? b * nd : 0) + nd));
    t.rates.assign(rates.begin() + std::ptrdiff_t(rates_pt ? b * nr : 0), rates.begin() + std::ptrdiff_t((rates_pt ? b * nr : 0) + nr));
    if (!initial.empty()) {
      const Index d = m.d;
      if (m.closed()) {
        t.psi0 = Vec(Eigen::Map<const Vec>(initial.data() + b * d, d));
      } else {
        t.rho0 = from_rm(initial.data() + b * d * d, d, d);
      }
    }
    return t;
  }
};

inline std::vector<double> uniform_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) x = uniform(rng, lo, hi);
  return v;
}

inline Batch random_batch(std::mt19937_64& rng, const Model& m, std::size_t B, bool amp_pt, bool drift_pt,
                          bool rates_pt, bool per_task_initial = false, double amp_scale = 1.0) {
  Batch b;
  b.B = B;
  b.amp_pt = amp_pt;
  b.drift_pt = drift_pt;
  b.rates_pt = rates_pt;
  b.amps = uniform_vec(rng, (amp_pt ? B : 1) * m.n_amp(), -amp_scale, amp_scale);
  b.drift = uniform_vec(rng, (drift_pt ? B : 1) * m.drift_terms.size(), -1.0, 1.0);
  b.rates = uniform_vec(rng, (rates_pt ? B : 1) * m.jumps.size(), 0.05, 0.5);
  if (per_task_initial) {
    for (std::size_t i = 0; i < B; ++i) {
      const std::vector<cd> s = m.closed() ? stdvec(random_state(rng, m.d)) : rm(random_density(rng, m.d));
      b.initial.insert(b.initial.end(), s.begin(), s.end());
    }
  }
  return b;
}

inline std::vector<Out> simulate_batch(const Model& m, const Batch& b, Scheme s = Scheme::Exact, double dt = 0) {
  std::vector<Out> out;
  for (std::size_t i = 0; i < b.B; ++i) out.push_back(simulate(m, b.task(m, i), s, dt));
  return out;
}

// Builds the qfleet system of a model through the public builder.
inline qfleet::OpenSystem build(const Model& m) {
  qfleet::OpenSystem s(m.d);
  s.drift(rm(m.h0));
  for (const auto& h : m.drift_terms) s.drift_term(rm(h));
  for (const auto& h : m.controls) s.control(rm(h));
  for (const auto& l : m.jumps) s.jump(rm(l));
  for (const auto& o : m.observables) s.observable(rm(o));
  s.durations(m.durations);
  switch (m.init) {
    case Init::Density:
      s.initial_density(rm(m.rho0));
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
      s.target_density(rm(m.target_mat));
      break;
    case Target::Unitary:
      s.target_unitary(rm(m.target_mat));
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

// Typed copies of a batch, kept alive while qfleet holds spans into them.
template <class R>
struct QArgs {
  std::vector<R> amps, drift, rates;
  std::vector<std::complex<R>> initial;
  std::size_t B;
  explicit QArgs(const Batch& b)
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
QOut<R> qforward(const qfleet::OpenProgram& p, const Model& m, const Batch& b, Want w) {
  QArgs<R> a(b);
  QOut<R> o;
  o.size(m, b.B, w);
  p.forward<R>(a.args(), o.outputs());
  return o;
}

// vjp with cotangents (either may be empty) and the forward outputs of the same pass.
template <class R>
QOut<R> qvjp(const qfleet::OpenProgram& p, const Model& m, const Batch& b, const std::vector<double>& cot_f,
             const std::vector<double>& cot_l, Want w = {}) {
  QArgs<R> a(b);
  QOut<R> o;
  o.size(m, b.B, w);
  o.g_amp.assign(a.amps.size(), R(-7));
  o.g_drift.assign(a.drift.size(), R(-7));
  o.g_rates.assign(a.rates.size(), R(-7));
  const std::vector<R> cf(cot_f.begin(), cot_f.end()), cl(cot_l.begin(), cot_l.end());
  qfleet::TaskGradients<R> g;
  g.amplitudes = o.g_amp;
  g.drift_coeffs = o.g_drift;
  g.rates = o.g_rates;
  p.vjp<R>(a.args(), std::span<const R>(cf), std::span<const R>(cl), g, o.outputs());
  return o;
}

// ---------------------------------------------------------------------------
// Reference gradients: central differences of sum_b (cot_f[b] F_b + cot_l[b] leak_b).

struct Grads {
  std::vector<double> amps, drift, rates;
};

inline Grads fd_grads(const Model& m, const Batch& b, const std::vector<double>& cot_f,
                      const std::vector<double>& cot_l, Scheme s = Scheme::Exact, double dt = 0, double h = 1e-5) {
  auto objective = [&](const Batch& bb, std::size_t task) {
    const Out o = simulate(m, bb.task(m, task), s, dt);
    double v = 0;
    if (!cot_f.empty()) v += cot_f[task] * o.fidelity;
    if (!cot_l.empty()) v += cot_l[task] * o.leakage;
    return v;
  };
  auto diff = [&](std::vector<double> Batch::*field, bool per_task, std::size_t len) {
    const std::vector<double>& base = b.*field;
    std::vector<double> g(base.size(), 0.0);
    for (std::size_t i = 0; i < base.size(); ++i) {
      Batch plus = b, minus = b;
      (plus.*field)[i] += h;
      (minus.*field)[i] -= h;
      double acc = 0;
      for (std::size_t task = 0; task < b.B; ++task) {
        if (per_task && task != i / len) continue;
        acc += objective(plus, task) - objective(minus, task);
      }
      g[i] = acc / (2 * h);
    }
    return g;
  };
  Grads gr;
  gr.amps = diff(&Batch::amps, b.amp_pt, m.n_amp());
  gr.drift = diff(&Batch::drift, b.drift_pt, m.drift_terms.size());
  gr.rates = diff(&Batch::rates, b.rates_pt, m.jumps.size());
  return gr;
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

}  // namespace oref
