// Flattens an OpenPlan into one relocatable blob read by the task body
// (kernels/open_task.hpp): the cpu executor reads it in host memory, the cuda
// backend uploads a copy once at compile time.
#include <algorithm>
#include <complex>

#include "core/blob.hpp"
#include "core/open_plan.hpp"
#include "kernels/open_workspace.hpp"

namespace qfleet::detail {

// The kernels name the public enums' values (kernels/open_view.hpp).
static_assert(kern::kTargetNone == int(OpenSystem::Target::None) &&
              kern::kTargetPure == int(OpenSystem::Target::Pure) &&
              kern::kTargetMixed == int(OpenSystem::Target::Mixed) &&
              kern::kTargetUnitary == int(OpenSystem::Target::Unitary));

namespace {

const double* add_matrix(Blob& blob, const CVec& m) {
  return blob.add(reinterpret_cast<const double*>(m.data()), 2 * m.size());  // (re, im) pairs
}

const double* add_matrices(Blob& blob, const std::vector<CVec>& ms) {
  CVec all;
  for (const CVec& m : ms) all.insert(all.end(), m.begin(), m.end());
  return add_matrix(blob, all);
}

const double* add_optional(Blob& blob, const CVec& m) { return m.empty() ? nullptr : add_matrix(blob, m); }

}  // namespace

kern::OpenView open_view_at(const kern::OpenView& off, const std::byte* base) {
  kern::OpenView v = off;
  auto at = [&](const auto* p) { return p == nullptr ? p : relocate(p, base); };
  v.durations = at(off.durations);
  v.a0 = at(off.a0);
  v.a_drift = at(off.a_drift);
  v.a_rate = at(off.a_rate);
  v.a_ctrl = at(off.a_ctrl);
  v.x0 = at(off.x0);
  v.fid_lam = at(off.fid_lam);
  v.leak_lam = at(off.leak_lam);
  v.target_psi = at(off.target_psi);
  v.target_mat = at(off.target_mat);
  v.sqrt_sigma = at(off.sqrt_sigma);
  v.subspace = at(off.subspace);
  v.observables = at(off.observables);
  v.g_pattern = at(off.g_pattern);
  v.jump_pattern = at(off.jump_pattern);
  v.jump_index = at(off.jump_index);
  v.jump_vstart = at(off.jump_vstart);
  v.jump_vals = at(off.jump_vals);
  return v;
}

void pack_open_plan(OpenPlan& p) {
  const OpenSystem& s = p.sys;
  kern::OpenView v;
  v.d = p.d;
  v.n = p.n;
  v.c = p.c;
  v.nseg = s.n_segments();
  v.nctrl = s.n_controls();
  v.ndrift = static_cast<int>(p.a_drift.size());
  v.nrate = static_cast<int>(p.a_rate.size());
  v.nobs = static_cast<int>(p.observables.size());
  v.nsub = static_cast<int>(p.subspace.size());
  v.closed = p.closed;
  v.gate = p.gate;
  v.solver = p.options.solver;
  v.target = static_cast<int>(s.target_kind());
  v.dt = p.options.dt;
  v.rtol = p.options.rtol;
  v.atol = p.options.atol;
  const SolverInfo& solver = solver_info(p.options.solver);
  if (solver.fixed_step) {
    for (double dur : s.segment_durations()) {
      v.fixed_steps = std::max(v.fixed_steps, static_cast<int>(kern::open_fixed_steps(dur, p.options.dt)));
    }
  }
  v.lindblad = p.lindblad;
  v.action = p.action;
  v.ng = p.lindblad ? static_cast<int>(p.a0.size()) : p.n * p.n;
  v.jump_nnz = static_cast<int>(p.jump_vals.size());
  // Work per task, for the cost model: a Pade exponential ~ 10 products of n x n
  // matrices (its Frechet derivative ~ 2.5x that), or stages x steps products with X
  // (Lindblad form: G rho, rho G^dag and each L rho L^dag on their nonzeros, per column block);
  // the action: its estimated Taylor products (forward; ~4x that backward).
  const double n = p.n, mm = 8.0 * n * n * n;
  double mx = 8.0 * n * n * p.c;
  if (p.lindblad) {
    const double blocks = p.gate ? p.c : 1;
    mx = 8.0 * blocks * 2.0 * p.d * double(p.a0.size() + p.jump_vals.size());
  }
  p.flops_forward = p.action ? p.action_products * mx : 0;
  p.flops_adjoint = p.action ? 4 * p.action_products * mx : 0;
  for (double dur : p.action ? std::vector<double>() : s.segment_durations()) {
    if (solver.stages == 0) {  // the exact exponential
      p.flops_forward += 10 * mm + mx;
      p.flops_adjoint += 25 * mm + 2 * mx;
    } else {
      // Adaptive solvers: ~20 steps a segment as a guess.
      const double steps = solver.fixed_step ? double(kern::open_fixed_steps(dur, p.options.dt)) : 20.0;
      const double stages = solver.stages;
      p.flops_forward += steps * stages * mx;
      p.flops_adjoint += 3 * steps * stages * mx;
    }
  }
  Blob blob;
  v.durations = blob.add(s.segment_durations());
  v.a0 = add_matrix(blob, p.a0);
  v.a_drift = add_matrices(blob, p.a_drift);
  v.a_rate = add_matrices(blob, p.a_rate);
  v.a_ctrl = add_matrices(blob, p.a_ctrl);
  v.x0 = add_matrix(blob, p.x0);
  v.fid_lam = add_optional(blob, p.fid_lam);
  v.fid_offset = p.fid_offset;
  v.leak_lam = add_optional(blob, p.leak_lam);
  v.leak_offset = p.leak_offset;
  v.target_psi = add_optional(blob, p.target_psi);
  v.target_mat = add_optional(blob, p.target_mat);
  v.sqrt_sigma = add_optional(blob, p.sqrt_sigma);
  v.subspace = blob.add(p.subspace);
  v.observables = add_matrices(blob, p.observables);
  if (p.lindblad) {
    v.g_pattern = blob.add(p.g_pattern);
    v.jump_pattern = blob.add(p.jump_pattern);
    v.jump_index = blob.add(p.jump_index);
    v.jump_vstart = blob.add(p.jump_vstart);
    v.jump_vals = add_matrix(blob, p.jump_vals);
  }
  p.blob = blob.take();
  p.offsets = v;
  p.view = open_view_at(v, p.blob.data());
}

}  // namespace qfleet::detail
