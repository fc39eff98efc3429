// The execution shape and workspace of a state-vector call on the cpu. Compiled
// with baseline flags only.
#include "cpu/sv_cpu.hpp"

#include "cpu/cpu_isa.hpp"
#include "cpu/exec_shape.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "qfleet/error.hpp"

namespace qfleet::cpu {

namespace {

// Tiles of `lanes` samples pay off once they are mostly full; states above 2^12
// amplitudes no longer fit a core's L2 cache as a tile, so each sample is its own tile.
constexpr int kMaxLaneQubits = 12;

}  // namespace

template <class R>
void execute(const CpuIsa& cpu_isa, const detail::Plan& plan, const Call<R>& call) {
  const SvIsaKernels& isa = *cpu_isa.sv;
  const kern::SvPlan& kp = plan.view;
  const int wide = std::is_same_v<R, float> ? cpu_isa.lanes_f32 : cpu_isa.lanes_f64;
  const bool adjoint = call.cotangents != nullptr;
  const ExecShape shape = exec_shape(plan, call.batch, adjoint, wide, kMaxLaneQubits);
  const std::size_t n_tiles = shape.n_tiles;
  Exec<R> ex;
  ex.amplitude_parallel = shape.amplitude_parallel;
  ex.lanes = shape.lanes;
  ex.threads = shape.threads;

  const std::size_t shared = isa.shared_reals(kp, ex.lanes, adjoint);
  const std::size_t partials =
      (adjoint && call.grad_weights && call.reduce_weights) ? n_tiles * plan.n_weights : 0;
  const std::size_t per_thread = (isa.thread_reals(kp, ex.lanes, adjoint) + 15) / 16 * 16;
  const int slices = ex.amplitude_parallel ? 1 : ex.threads;
  const std::size_t total = shared + partials + per_thread * slices;
  ex.work = call_workspace<R>(
      total, [] { return std::string(", more than this machine's memory; use a smaller batch or fewer threads"); });
  ex.work_per_thread = per_thread;
  if constexpr (std::is_same_v<R, float>) {
    isa.run_f32(kp, call, ex);
  } else {
    isa.run_f64(kp, call, ex);
  }
}

template void execute<float>(const CpuIsa&, const detail::Plan&, const Call<float>&);
template void execute<double>(const CpuIsa&, const detail::Plan&, const Call<double>&);

}  // namespace qfleet::cpu
