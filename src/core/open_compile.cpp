// Planning an OpenSystem: superoperators, initial state and figures of merit.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "kernels/dense.hpp"
#include "kernels/open_workspace.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

namespace {

using C = std::complex<double>;

// The superoperator of rho -> A rho B in column-stacking order:
// (B^T kron A)[(i + d j), (k + d l)] = A[i][k] B[l][j].
CVec left_right(int d, const CVec& a, const CVec& b) {
  const std::size_t n = std::size_t(d) * d;
  CVec s(n * n, C(0));
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j)
      for (int k = 0; k < d; ++k)
        for (int l = 0; l < d; ++l) s[(i + std::size_t(d) * j) * n + (k + std::size_t(d) * l)] = a[i * d + k] * b[l * d + j];
  return s;
}

CVec identity(int d) {
  CVec m(std::size_t(d) * d, C(0));
  for (int i = 0; i < d; ++i) m[std::size_t(i) * d + i] = 1;
  return m;
}

CVec adjoint(int d, const CVec& a) {
  CVec m(a.size());
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) m[std::size_t(j) * d + i] = std::conj(a[std::size_t(i) * d + j]);
  return m;
}

CVec matmul(int d, const CVec& a, const CVec& b) {
  CVec m(std::size_t(d) * d, C(0));
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k)
      for (int j = 0; j < d; ++j) m[std::size_t(i) * d + j] += a[std::size_t(i) * d + k] * b[std::size_t(k) * d + j];
  return m;
}

void axpy(CVec& y, C a, const CVec& x) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += a * x[i];
}

// Generator of a Hamiltonian term: -i H (closed) or -i (I kron H - H^T kron I) (open).
CVec hamiltonian_generator(int d, bool closed, const CVec& h) {
  if (closed) {
    CVec g = h;
    for (auto& z : g) z *= C(0, -1);
    return g;
  }
  const CVec id = identity(d);
  CVec g = left_right(d, h, id);
  axpy(g, -1.0, left_right(d, id, h));
  for (auto& z : g) z *= C(0, -1);
  return g;
}

// D[L] rho = L rho L^dag - {L^dag L, rho}/2.
CVec dissipator(int d, const CVec& l) {
  const CVec ld = adjoint(d, l), ldl = matmul(d, ld, l), id = identity(d);
  CVec g = left_right(d, l, ld);
  axpy(g, -0.5, left_right(d, ldl, id));
  axpy(g, -0.5, left_right(d, id, ldl));
  return g;
}

// vec(M) in column-stacking order.
CVec vec(int d, const CVec& m) {
  CVec v(m.size());
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) v[i + std::size_t(d) * j] = m[std::size_t(i) * d + j];
  return v;
}

CVec projector(int d, const std::vector<int>& levels) {
  CVec p(std::size_t(d) * d, C(0));
  for (int i : levels) p[std::size_t(i) * d + i] = 1;
  return p;
}

}  // namespace

void check_open_options(const OpenSystem& s, const OpenCompileOptions& o, int n) {
  if (o.num_threads < 0) throw Error("num_threads must be >= 0 (0 = OpenMP default)");
  const SolverInfo& solver = solver_info(o.solver);
  if (solver.stages == 0 && o.exact == ExactMethod::propagator && n > kMaxExactGenerator) {
    throw Error("the exact solver's propagator exponentiates the " + std::to_string(n) + "x" + std::to_string(n) +
                " generator of this d = " + std::to_string(s.dim()) + " system, above its limit of " +
                std::to_string(kMaxExactGenerator) + "; use exact: action (or automatic), or solver rk4 (with dt), "
                "dopri5 or tsit5",
                ErrorSubject::solver);
  }
  if (solver.fixed_step && (!std::isfinite(o.dt) || o.dt <= 0)) {
    throw Error(std::string(solver.name) + " needs a step dt > 0, got " + std::to_string(o.dt));
  }
  if (solver.adaptive && (!std::isfinite(o.rtol) || o.rtol <= 0 || !std::isfinite(o.atol) || o.atol <= 0)) {
    throw Error(std::string(solver.name) + " needs tolerances rtol > 0 and atol > 0");
  }
}

namespace {

// Memory: refuses a system whose generators and per-thread states would not fit.
void check_open_memory(const OpenSystem& s, const OpenCompileOptions& o, bool gate, bool action, bool lindblad) {
  const int d = s.dim(), n = s.closed() ? d : d * d;
  // Dense n x n generators (A0, each drift term, rate and control) plus, per
  // thread, a few n x n work matrices and the state at every segment boundary. The
  // Lindblad form holds d x d matrices. Step solvers and the action keep per thread
  // the n x c state at every segment boundary and every step of a segment (the
  // backward pass's checkpoints; the action also one Taylor step's terms).
  const double state = double(n) * (gate ? n : 1);
  if (action) {
    const double nn = double(n) * n, matrices = 1.0 + s.n_drift_terms() + s.n_jumps() + s.n_controls();
    // 64: the first store of Taylor step starts (it grows when a segment needs more).
    const double per_thread = state * (s.n_segments() + 64 + double(kern::taylor_work_states()) + 4);
    const double bytes = 16.0 * ((lindblad ? 0.0 : (matrices + 2) * nn) + 2 * per_thread);
    const double phys = double(physical_memory_bytes());
    if (bytes > 0.8 * phys) {
      throw Error("the exact solver's action on this d = " + std::to_string(d) + " " +
                  (gate ? "gate problem" : "system") + " needs about " + std::to_string(bytes / (1 << 30)) +
                  " GiB (" + std::to_string(s.n_segments()) + " segment states, " +
                  std::to_string(kern::taylor_work_states()) + " Taylor terms and 64 step starts of " +
                  std::to_string(static_cast<long long>(state)) + " entries per thread" +
                  (lindblad ? std::string() : ", dense generators") + "), more than this machine's " +
                  std::to_string(phys / (1 << 30)) + " GiB");
    }
  } else if (lindblad) {
    double steps = 64;  // the adaptive solvers' first step store (it grows when needed)
    if (solver_info(o.solver).fixed_step) {
      steps = 0;
      for (double dur : s.segment_durations()) steps = std::max(steps, double(kern::open_fixed_steps(dur, o.dt)));
    }
    const double bytes = 16.0 * 2 * state * (s.n_segments() + steps + 40);
    const double phys = double(physical_memory_bytes());
    if (bytes > 0.8 * phys) {
      throw Error("this d = " + std::to_string(d) + " " + (gate ? "gate problem" : "system") + " needs about " +
                  std::to_string(bytes / (1 << 30)) + " GiB of states (" + std::to_string(s.n_segments()) +
                  " segments, " + std::to_string(static_cast<long long>(steps)) +
                  " steps per segment), more than this machine's " + std::to_string(phys / (1 << 30)) + " GiB");
    }
  } else {
    const double nn = double(n) * n;
    const double matrices = 1.0 + s.n_drift_terms() + s.n_jumps() + s.n_controls();
    const double per_thread = 12 * nn + state * (s.n_segments() + 4);
    const double bytes = 16.0 * (matrices * nn + 2 * per_thread);
    const double phys = double(physical_memory_bytes());
    if (bytes > 0.8 * phys) {
      throw Error("this d = " + std::to_string(d) + " system needs about " + std::to_string(bytes / (1 << 30)) +
                  " GiB (dense " + std::to_string(n) + "x" + std::to_string(n) + " generators), more than this machine's " +
                  std::to_string(phys / (1 << 30)) + " GiB" +
                  (s.closed() ? std::string() : "; form lindblad on a step solver needs no superoperators"));
    }
  }
}

// The initial state X0: the identity (gate problems), psi (closed) or vec(rho).
CVec initial_state(const OpenSystem& s, bool closed, bool gate) {
  const int d = s.dim(), n = closed ? d : d * d;
  if (gate) return identity(n);
  if (closed) {
    if (s.initial_kind() == OpenSystem::Initial::Density) {
      throw Error("a closed system (no jump operators) propagates a pure state: use initial_state(psi), "
                  "or add a jump operator to propagate a density matrix");
    }
    return s.initial_pure_state();
  }
  CVec rho;
  if (s.initial_kind() == OpenSystem::Initial::Density) {
    rho = s.initial_density_matrix();
  } else {
    const CVec& psi = s.initial_pure_state();
    rho.assign(std::size_t(d) * d, C(0));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) rho[std::size_t(i) * d + j] = psi[i] * std::conj(psi[j]);
  }
  return vec(d, rho);
}

// Figures of merit: the subspace, observables, the target as a linear functional where
// it is one (fid_lam, fid_offset) and the leakage's (leak_lam, leak_offset).
void plan_figures_of_merit(const OpenSystem& s, OpenPlan& p) {
  const int d = p.d, n = p.n;
  const bool closed = p.closed, gate = p.gate;
  p.subspace = s.subspace();
  p.observables = s.observables();
  switch (s.target_kind()) {
    case OpenSystem::Target::None:
      break;
    case OpenSystem::Target::Pure:
      p.target_psi = s.target_pure_state();
      if (!closed) {
        CVec proj(std::size_t(d) * d);
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < d; ++j) proj[std::size_t(i) * d + j] = p.target_psi[i] * std::conj(p.target_psi[j]);
        p.fid_lam = vec(d, proj);  // <psi|rho|psi> = Re <vec(|psi><psi|), vec(rho)>
      }
      break;
    case OpenSystem::Target::Mixed:
      p.target_mat = s.target_matrix();  // sqrt(sigma) is computed when the executor first needs it
      break;
    case OpenSystem::Target::Unitary:
      p.target_mat = s.target_matrix();
      if (!closed) {
        // F_avg = (d F_pro + 1)/(d + 1), F_pro = Re tr(S_U^dag S)/d^2, S_U = conj(U) kron U.
        const CVec su = left_right(d, s.target_matrix(), adjoint(d, s.target_matrix()));
        p.fid_lam = su;
        for (auto& z : p.fid_lam) z /= double(d) * (d + 1);
        p.fid_offset = 1.0 / (d + 1);
      }
      break;
  }
  if (!p.subspace.empty() && !closed) {
    const CVec vp = vec(d, projector(d, p.subspace));
    if (gate) {
      // leak = 1 - tr(P E(P))/d_c = 1 - Re <vec(P) vec(P)^dag, S>/d_c
      p.leak_lam.assign(std::size_t(n) * n, C(0));
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) p.leak_lam[std::size_t(i) * n + j] = -vp[i] * std::conj(vp[j]) / double(p.subspace.size());
    } else {
      p.leak_lam = vp;  // leak = 1 - sum_{i in sub} rho_ii
      for (auto& z : p.leak_lam) z = -z;
    }
    p.leak_offset = 1.0;
  }
}

}  // namespace

OpenPlan* build_open_plan(const OpenSystem& s, const OpenCompileOptions& o) {
  const int d = s.dim();
  if (s.n_segments() == 0) throw Error("no time grid: call segments(n_seg, total_time) or durations(...)");
  const bool gate = s.initial_kind() == OpenSystem::Initial::Gate;
  if (s.target_kind() == OpenSystem::Target::Unitary && !gate) {
    throw Error("a target unitary needs the gate problem: call propagate_gate()");
  }
  if (gate && (s.target_kind() == OpenSystem::Target::Pure || s.target_kind() == OpenSystem::Target::Mixed)) {
    throw Error("a gate problem is measured against a target unitary, not a target state");
  }
  if (gate && s.n_observables() > 0) {
    throw Error("observables are measured on states; this is a gate problem (propagate_gate)");
  }
  const bool closed = s.closed();
  const int n = closed ? d : d * d;
  check_open_options(s, o, n);
  const ExactChoice exact = choose_exact_method(s, o, gate);
  const bool lindblad = choose_lindblad_form(s, o, exact.action);

  check_open_memory(s, o, gate, exact.action, lindblad);

  auto plan = std::make_unique<OpenPlan>(s);
  OpenPlan& p = *plan;
  p.d = d;
  p.closed = closed;
  p.gate = gate;
  p.n = n;
  p.c = gate ? n : 1;
  p.precision = o.precision;
  p.num_threads = o.num_threads;
  p.options = o;
  p.action = exact.action;
  p.action_products = exact.products;
  if (lindblad) {
    plan_lindblad_form(p);
  } else {
    p.a0 = hamiltonian_generator(d, closed, s.h0());
    for (const auto& h : s.drift_terms()) p.a_drift.push_back(hamiltonian_generator(d, closed, h));
    for (const auto& h : s.controls()) p.a_ctrl.push_back(hamiltonian_generator(d, closed, h));
    for (const auto& l : s.jumps()) p.a_rate.push_back(dissipator(d, l));
  }

  p.x0 = initial_state(s, closed, gate);
  plan_figures_of_merit(s, p);
  return plan.release();
}

void check_density(const CVec& rho, int d, const std::string& what, double tol, ErrorSubject subject) {
  Complex tr = 0;
  double herm = 0, scale = 1;
  for (int i = 0; i < d; ++i) {
    tr += rho[std::size_t(i) * d + i];
    for (int j = 0; j < d; ++j) {
      herm = std::max(herm, std::abs(rho[std::size_t(i) * d + j] - std::conj(rho[std::size_t(j) * d + i])));
      scale = std::max(scale, std::abs(rho[std::size_t(i) * d + j]));
    }
  }
  if (herm > tol * scale) throw Error(what + " is not Hermitian", subject);
  if (std::abs(tr - 1.0) > tol * d)
    throw Error(what + " must have trace 1, got " + std::to_string(tr.real()), subject);
  std::vector<kern::Cx<double>> a(std::size_t(d) * d), v(a.size()), work(kern::hermitian_eig_work(d));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = {rho[i].real(), rho[i].imag()};
  std::vector<double> ev(d);
  kern::hermitian_eig(d, a.data(), ev.data(), v.data(), work.data());
  if (ev[0] < -std::max(tol, 1e-10)) {
    throw Error(what + " is not positive semidefinite (smallest eigenvalue " + std::to_string(ev[0]) + ")",
                subject);
  }
}

// The parts of planning that need the dense kernels: positivity of the initial
// density matrix and of a mixed target, and sqrt(sigma) for the Uhlmann fidelity.
void finish_open_plan(OpenPlan& p) {
  const OpenSystem& s = p.sys;
  const int d = p.d;
  if (s.initial_kind() == OpenSystem::Initial::Density && !p.closed) {
    check_density(s.initial_density_matrix(), d, "initial density matrix", 1e-8, ErrorSubject::initial_state);
  }
  if (s.target_kind() == OpenSystem::Target::Mixed) {
    check_density(s.target_matrix(), d, "target density matrix", 1e-8, ErrorSubject::target);
    if (!p.closed) {
      std::vector<kern::Cx<double>> a(std::size_t(d) * d), r(a.size()), work(kern::sqrtm_psd_work(d));
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = {s.target_matrix()[i].real(), s.target_matrix()[i].imag()};
      kern::sqrtm_psd(d, a.data(), r.data(), work.data());
      p.sqrt_sigma.resize(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) p.sqrt_sigma[i] = {r[i].re, r[i].im};
    }
  }
}

}  // namespace qfleet::detail
