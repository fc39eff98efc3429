// The compiled form of an OpenSystem. Everything the executor reads is here,
// flattened to row-major complex<double> matrices; the executor casts to its
// precision once per call.
//
// Every problem becomes one linear ODE with a piecewise-constant generator,
//   dX/dt = A(t) X,   A = A0 + sum_m c_m A_m + sum_j gamma_j D_j + sum_k u_k B_k,
// on an n x c state X:
//   closed system, pure state:   n = d,   c = 1, A = -i H,  X = psi
//   closed system, gate:         n = d,   c = d, X = U
//   open system, density matrix: n = d^2, c = 1, A = Liouvillian, X = vec(rho) (column stacking)
//   open system, gate:           n = d^2, c = d^2, X = the channel's superoperator
#pragma once

#include <atomic>
#include <complex>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "kernels/open_view.hpp"
#include "qfleet/error.hpp"
#include "qfleet/open_system.hpp"

namespace qfleet::detail {

using CVec = std::vector<std::complex<double>>;

// Largest generator the exact solver's propagator exponentiates (open d = 16 -> 256).
inline constexpr int kMaxExactGenerator = 256;
// Smallest generator for which the exact solver may take the action automatically:
// below it the propagator's n x n products are a few hundred multiply-adds, its
// kernels are specialised (n = 2, 4, 16) and identical segments reuse it.
inline constexpr int kActionMinGenerator = 64;

struct OpenPlan : Model {
  explicit OpenPlan(const OpenSystem& s) : Model(ModelKind::open_system), sys(s) {}
  OpenSystem sys;
  int d = 0;
  bool closed = true;
  bool gate = false;
  int n = 0;  // generator dimension
  int c = 0;  // state columns
  OpenCompileOptions options;

  CVec a0;                    // n x n
  std::vector<CVec> a_drift;  // per drift term, n x n
  std::vector<CVec> a_rate;   // per jump operator: its dissipator, n x n
  std::vector<CVec> a_ctrl;   // per control, n x n
  CVec x0;                    // n x c initial state

  // Lindblad form (options.form; kernels/lindblad_action.hpp): a0, a_drift, a_rate
  // and a_ctrl hold the G terms (-i H, -1/2 L^dag L) as values on g_pattern's
  // nonzeros, and each jump operator is a sparse matrix of its own.
  bool lindblad = false;
  // The exact solver by the action of the exponential (options.exact; kernels/expm_action.hpp).
  bool action = false;
  double action_products = 0;  // the cost model's Taylor products per task (forward pass)
  std::vector<int> g_pattern;     // kern::SparsePattern ints
  std::vector<int> jump_pattern;  // the jumps' patterns, one after another
  std::vector<int> jump_index;    // where jump j's pattern starts
  std::vector<int> jump_vstart;   // where jump j's values start in jump_vals
  CVec jump_vals;

  // Linear figures of merit: value = offset + Re <lam, X_N> (Frobenius, conjugate-linear
  // in lam), whose gradient with respect to X_N is lam. Used for open-system pure and
  // unitary targets and all leakages of open systems.
  CVec fid_lam;
  double fid_offset = 0.0;
  CVec leak_lam;
  double leak_offset = 0.0;
  // Closed systems and the mixed target use these instead.
  CVec target_psi;     // d
  CVec target_mat;     // d x d: target unitary (closed gate) / sigma (closed mixed)
  CVec sqrt_sigma;     // d x d: sqrt of the mixed target (open, Uhlmann)
  std::vector<int> subspace;
  std::vector<CVec> observables;  // d x d each

  // The flat form the task body reads (open_pack.cpp): every array above in one blob.
  std::vector<std::byte> blob;
  kern::OpenView offsets;  // pointers hold byte offsets into blob
  kern::OpenView view;     // pointers into blob (host)
  // (Model's flops_forward / flops_adjoint: per task, set by open_pack.cpp.)
  mutable std::atomic<std::uint64_t> computed{0}, reused{0}, calls{0};
};

// Fills blob, offsets and view from the plan's arrays.
void pack_open_plan(OpenPlan& p);
// The view with its pointers relocated to a copy of the blob at base.
kern::OpenView open_view_at(const kern::OpenView& offsets, const std::byte* base);

OpenPlan* build_open_plan(const OpenSystem& s, const OpenCompileOptions& o);
// Whether an open system on a step solver is applied in Lindblad form (options.form;
// automatic compares operation counts and memory), and if so fills the plan's
// Lindblad-form arrays (core/open_lindblad.cpp).
// `action`: the exact solver runs by its action, where the Lindblad form applies too.
bool choose_lindblad_form(const OpenSystem& s, const OpenCompileOptions& o, bool action);
// The exact solver's method (options.exact; automatic compares the propagator's
// operation count with the action's at a norm estimated with unit coefficients) and
// the estimated Taylor products per task.
struct ExactChoice {
  bool action = false;
  double products = 0;
};
ExactChoice choose_exact_method(const OpenSystem& s, const OpenCompileOptions& o, bool gate);
void plan_lindblad_form(OpenPlan& p);
void finish_open_plan(OpenPlan& p);
// After a call of a fixed-step solver (rk4, euler) whose outputs are host memory:
// throws qfleet::Error naming the solver and dt where a fidelity, leakage, state entry
// or expectation value lies outside its physical range (an unstable step;
// core/open_stability.cpp). Other solvers: nothing.
template <class R>
void check_fixed_step_results(const OpenPlan& p, const TaskArgs<R>& a, const TaskOutputs<R>& o);
// The view a call runs with: `v`, where a fixed-step solver (rk4, euler) takes as many
// steps per segment as the call's longest segment needs (durations given per call in
// host memory; the workspace is sized by it).
template <class R>
kern::OpenView open_call_view(const kern::OpenView& v, const kern::OpenTaskCall<R>& c);
// The 1-norm (largest column sum of moduli) of a d x d row-major matrix.
double norm1(int d, const CVec& m);
// Throws qfleet::Error unless rho (d x d, row-major) is Hermitian, of trace 1 and PSD.
void check_density(const CVec& rho, int d, const std::string& what, double tol,
                   ErrorSubject subject = ErrorSubject::unspecified);

}  // namespace qfleet::detail
