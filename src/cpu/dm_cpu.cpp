// Density-matrix execution on the cpu: the tile width, the checkpoint segments of the adjoint sweep and the workspace.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu/cpu_isa.hpp"
#include "cpu/dm_cpu.hpp"
#include "cpu/exec_shape.hpp"
#include "qfleet/error.hpp"

namespace qfleet::cpu {

namespace {

// Tiles of several samples while a density matrix (4^n amplitudes) fits a core's
// L2 cache as a tile: n <= 6, like the state vector's 12 qubits.
constexpr int kMaxLaneQubits = 6;

}  // namespace

template <class R>
void execute_dm(const CpuIsa& cpu_isa, const detail::Plan& plan, const Call<R>& call) {
  const detail::DmCompiled& mp = *plan.dm;
  kern::DmPlan kp = mp.view;
  kp.max_probs_k = std::max(kp.max_probs_k, call.extra_k);
  const DmIsaKernels& isa = *cpu_isa.dm;
  const int wide = std::is_same_v<R, float> ? cpu_isa.lanes_f32 : cpu_isa.lanes_f64;
  const bool adjoint = call.cotangents != nullptr;
  const ExecShape shape = exec_shape(plan, call.batch, adjoint, wide, kMaxLaneQubits);
  const std::size_t n_tiles = shape.n_tiles;
  DmExec<R> ex;
  ex.amplitude_parallel = shape.amplitude_parallel;
  ex.lanes = shape.lanes;
  ex.threads = shape.threads;
  const int slices = ex.amplitude_parallel ? 1 : ex.threads;

  // The adjoint keeps one state per parameterised op when that fits in half of the
  // memory; otherwise segments of ~sqrt(slots) ops, each rerun once from its checkpoint.
  const double budget = 0.5 * static_cast<double>(detail::physical_memory_bytes());
  const double tile_state = std::ldexp(double(sizeof(R)) * 2 * ex.lanes, 2 * plan.n);
  std::vector<int> begin{0, kp.n_ops};
  ex.segments.per_segment = kp.n_slots;
  // QFLEET_DM_MAX_STORED=k caps the states kept per segment (a memory knob, and how
  // the tests reach the checkpointed path on small circuits).
  const char* cap_env = std::getenv("QFLEET_DM_MAX_STORED");
  const int cap = cap_env != nullptr ? std::atoi(cap_env) : 0;
  if (adjoint && kp.n_slots > 1 &&
      ((kp.n_slots + 2) * tile_state * slices > budget || (cap > 0 && cap < kp.n_slots))) {
    int per = static_cast<int>(std::ceil(std::sqrt(double(kp.n_slots))));
    if (cap > 0) per = std::min(per, cap);
    begin = detail::cut_dm_segments(kp, per);
    ex.segments.per_segment = per;
  }
  ex.segments.count = static_cast<int>(begin.size()) - 1;
  ex.segments.begin = begin.data();

  const std::size_t partials =
      (adjoint && call.grad_weights && call.reduce_weights) ? (n_tiles * plan.n_weights + 15) / 16 * 16 : 0;
  const std::size_t per_thread = (isa.thread_reals(kp, ex.lanes, adjoint, ex.segments) + 15) / 16 * 16;
  const std::size_t shared = (isa.shared_reals(kp, ex.lanes, adjoint) + 15) / 16 * 16;
  const std::size_t total = shared + partials + per_thread * std::size_t(slices);
  ex.work = call_workspace<R>(total, [&] {
    return " (" + std::to_string(slices) + " thread(s) x " + std::to_string(ex.lanes) + " sample(s), " +
           std::to_string(ex.segments.per_segment + ex.segments.count + 2) +
           " density matrices each), more than this machine's memory; use fewer threads";
  });
  ex.work_per_thread = per_thread;
  if constexpr (std::is_same_v<R, float>) {
    isa.run_f32(kp, call, ex);
  } else {
    isa.run_f64(kp, call, ex);
  }
}

template void execute_dm<float>(const CpuIsa&, const detail::Plan&, const Call<float>&);
template void execute_dm<double>(const CpuIsa&, const detail::Plan&, const Call<double>&);

}  // namespace qfleet::cpu
