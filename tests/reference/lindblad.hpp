// The tests' independent dense reference for open (and closed) quantum systems,
// written from the textbook definitions, not from qfleet's planner or kernels:
//   H(t) = H0 + sum_m c_m H0_m + sum_k u_k H_k (piecewise constant)
//   d rho/dt = -i[H, rho] + sum_j gamma_j (L_j rho L_j^dag - {L_j^dag L_j, rho}/2)
// The Liouvillian is assembled from Kronecker products with Eigen, in the
// column-stacking convention vec(A X B) = (B^T kron A) vec(X), and checked against
// the direct action of the Lindblad equation on a matrix (test_open_reference.cpp).
// Propagation: closed systems through the eigendecomposition of H (exp(-i H dt) =
// V exp(-i Lambda dt) V^dag), open systems through Eigen's matrix exponential of the
// Liouvillian; or plain RK4 / forward-Euler steps (ceil(duration/dt) equal steps per
// segment) for the fixed-step schemes.
// Figures of merit (fidelity.hpp for the mixed and gate ones):
//   pure target:    |<phi|psi>|^2 (closed), <phi|rho|phi> (open)
//   mixed target:   <psi|sigma|psi> (closed), Uhlmann (open)
//   target unitary: average gate fidelity (Nielsen's formula, Weyl basis)
//   leakage:        1 - population of the computational subspace
//                   (gates: 1 - tr(P E(P))/d_c; closed gates 1 - sum_{i,j in sub} |U_ij|^2/d_c)
// Gradients: central finite differences of the reference.
// Plain Eigen; shares no code with qfleet.
#pragma once

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <vector>

#include "dense.hpp"
#include "fidelity.hpp"

namespace ref {

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
// A problem: the model, one task's arguments, and what one task produces.

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
    out.final_state = row_major(x);
  } else if (closed) {
    out.final_state = stdvec(x.col(0));
  } else {
    rho = unvec(x.col(0), d);
    out.final_state = row_major(rho);
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
// Batches of tasks (qfleet's TaskArgs layout: each argument shared or per task).

struct TaskBatch {
  std::size_t B = 1;
  bool amp_pt = false, drift_pt = false, rates_pt = false;
  std::vector<double> amps, drift, rates;  // per task [B, ...] or shared
  std::vector<cd> initial;                 // empty, [B, d, d] (open) or [B, d] (closed)

  Task task(const Model& m, std::size_t b) const {
    Task t;
    auto slice = [b](const std::vector<double>& v, bool per_task, std::size_t n) {
      const auto from = v.begin() + std::ptrdiff_t(per_task ? b * n : 0);
      return std::vector<double>(from, from + std::ptrdiff_t(n));
    };
    t.amps = slice(amps, amp_pt, m.n_amp());
    t.drift = slice(drift, drift_pt, m.drift_terms.size());
    t.rates = slice(rates, rates_pt, m.jumps.size());
    if (!initial.empty()) {
      const Index d = m.d;
      if (m.closed()) {
        t.psi0 = Vec(Eigen::Map<const Vec>(initial.data() + b * d, d));
      } else {
        t.rho0 = from_row_major(initial.data() + b * d * d, d, d);
      }
    }
    return t;
  }
};

inline std::vector<Out> simulate_batch(const Model& m, const TaskBatch& b, Scheme s = Scheme::Exact,
                                       double dt = 0) {
  std::vector<Out> out;
  for (std::size_t i = 0; i < b.B; ++i) out.push_back(simulate(m, b.task(m, i), s, dt));
  return out;
}

// ---------------------------------------------------------------------------
// Reference gradients: central differences of sum_b (cot_f[b] F_b + cot_l[b] leak_b)
// (either cotangent may be empty), task by task so that other tasks add no rounding.

struct Grads {
  std::vector<double> amps, drift, rates;
};

inline Grads fd_grads(const Model& m, const TaskBatch& b, const std::vector<double>& cot_f,
                      const std::vector<double>& cot_l, Scheme s = Scheme::Exact, double dt = 0, double h = 1e-5) {
  auto objective = [&](const TaskBatch& bb, std::size_t task) {
    const Out o = simulate(m, bb.task(m, task), s, dt);
    double v = 0;
    if (!cot_f.empty()) v += cot_f[task] * o.fidelity;
    if (!cot_l.empty()) v += cot_l[task] * o.leakage;
    return v;
  };
  auto diff = [&](std::vector<double> TaskBatch::*field, bool per_task, std::size_t len) {
    const std::vector<double>& base = b.*field;
    std::vector<double> g(base.size(), 0.0);
    for (std::size_t i = 0; i < base.size(); ++i) {
      TaskBatch plus = b, minus = b;
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
  gr.amps = diff(&TaskBatch::amps, b.amp_pt, m.n_amp());
  gr.drift = diff(&TaskBatch::drift, b.drift_pt, m.drift_terms.size());
  gr.rates = diff(&TaskBatch::rates, b.rates_pt, m.jumps.size());
  return gr;
}

}  // namespace ref
