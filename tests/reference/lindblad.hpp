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
Mat sandwich(const Mat& a, const Mat& b);

Mat liouvillian(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates);

// The Lindblad right-hand side acting directly on a matrix (for checking the above).
Mat lindblad_rhs(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates, const Mat& x);

// exp(-i H t) from the eigendecomposition of the Hermitian H.
Mat unitary_of(const Mat& h, double t);

enum class Scheme { Exact, RK4, Euler };

// Fixed-step integration of dX/dt = A X over `duration` in ceil(duration/dt) equal steps.
Mat fixed_steps(const Mat& a, Mat x, double duration, double dt, Scheme s);

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
Out simulate(const Model& m, const Task& t, Scheme scheme = Scheme::Exact, double dt = 0);

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

std::vector<Out> simulate_batch(const Model& m, const TaskBatch& b, Scheme s = Scheme::Exact,
                                       double dt = 0);

// ---------------------------------------------------------------------------
// Reference gradients: central differences of sum_b (cot_f[b] F_b + cot_l[b] leak_b)
// (either cotangent may be empty), task by task so that other tasks add no rounding.

struct Grads {
  std::vector<double> amps, drift, rates;
};

Grads fd_grads(const Model& m, const TaskBatch& b, const std::vector<double>& cot_f,
                      const std::vector<double>& cot_l, Scheme s = Scheme::Exact, double dt = 0, double h = 1e-5);

}  // namespace ref
