// Run-time choice of instruction set, execution shape and workspaces for the cpu
// backend. Compiled with baseline flags only.
#include "cpu/statevector_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "qfleet/error.hpp"

namespace qfleet::cpu {

#if defined(QFLEET_HAVE_AVX512)
extern const IsaKernels kKernels_avx512;
#endif
#if defined(QFLEET_HAVE_AVX2)
extern const IsaKernels kKernels_avx2;
#endif
extern const IsaKernels kKernels_baseline;

namespace {

bool cpu_has(const char* isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (std::string(isa) == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("fma");
  }
  if (std::string(isa) == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return std::string(isa) == "baseline";
}

// Threads only pay when each has enough work: an OpenMP region costs microseconds,
// and when other processes share the cores a region can wait a whole scheduler
// slice for a descheduled worker. ~0.5 MFLOP is 25-50 us of work for one core.
constexpr double kMinFlopsPerThread = 0.5e6;

// Tiles of `lanes` samples pay off once they are mostly full; states above 2^12
// amplitudes no longer fit a core's L2 cache as a tile, so each sample is its own tile.
constexpr int kMaxLaneQubits = 12;

}  // namespace

// QFLEET_ISA, when it names one of this machine's instruction sets, caps the table
// there: the process behaves as on a machine whose best is that one ("auto" picks
// it, wider ones are not offered), so a test run or a user can check the avx2 and
// baseline paths on an AVX-512 machine. (oneDNN's ONEDNN_MAX_CPU_ISA is the same
// idea.) A value this machine lacks leaves the table whole; select_isa refuses it.
namespace {
const char* isa_cap() {
  const char* env = std::getenv("QFLEET_ISA");
  return env != nullptr && *env != 0 ? env : nullptr;
}
}  // namespace

const std::vector<IsaKernels>& isa_table() {
  static const std::vector<IsaKernels> table = [] {
    std::vector<IsaKernels> t;
#if defined(QFLEET_HAVE_AVX512)
    if (cpu_has("avx512")) t.push_back(kKernels_avx512);
#endif
#if defined(QFLEET_HAVE_AVX2)
    if (cpu_has("avx2")) t.push_back(kKernels_avx2);
#endif
    t.push_back(kKernels_baseline);
    if (const char* cap = isa_cap()) {
      const auto it = std::find_if(t.begin(), t.end(), [cap](const IsaKernels& k) { return k.name == std::string(cap); });
      if (it != t.end()) t.erase(t.begin(), it);
    }
    return t;
  }();
  return table;
}

int select_isa(const std::string& name) {
  const auto& t = isa_table();
  const bool from_env = name == "auto" && isa_cap() != nullptr;
  const std::string want = from_env ? isa_cap() : name;
  if (want == "auto") return 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (want == t[i].name) return static_cast<int>(i);
  }
  std::string have;
  for (const auto& k : t) have += std::string(have.empty() ? "" : ", ") + k.name;
  std::string why = "instruction set '" + want + "'" + (from_env ? " (the environment variable QFLEET_ISA)" : "") +
                    " is not available on this machine/build (available: " + have + ")";
  if (!from_env && isa_cap() != nullptr && want != isa_cap()) {
    why += "; QFLEET_ISA=" + std::string(isa_cap()) + " limits this process to it and narrower ones";
  }
  throw Error(why);
}

template <class R>
void execute(const detail::Plan& plan, const Call<R>& call) {
  const IsaKernels& isa = isa_table()[plan.isa];
  const kern::SvPlan& kp = plan.view;
  const int wide = std::is_same_v<R, float> ? isa.lanes_f32 : isa.lanes_f64;
  const bool adjoint = call.cotangents != nullptr;
  const int max_threads = plan.num_threads > 0 ? plan.num_threads : omp_get_max_threads();
  const double flops =
      double(call.batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
  const int threads = static_cast<int>(std::clamp<double>(flops / kMinFlopsPerThread, 1.0, max_threads));

  Exec<R> ex;
  ex.amplitude_parallel = plan.n > kMaxLaneQubits && call.batch < std::size_t(threads) && threads > 1;
  ex.lanes = (plan.n <= kMaxLaneQubits && 2 * call.batch > std::size_t(wide)) ? wide : 1;
  const std::size_t n_tiles = (call.batch + ex.lanes - 1) / ex.lanes;
  ex.threads = ex.amplitude_parallel ? threads : static_cast<int>(std::min<std::size_t>(threads, n_tiles));

  const std::size_t shared = isa.shared_reals(kp, ex.lanes, adjoint);
  const std::size_t partials =
      (adjoint && call.grad_weights && call.reduce_weights) ? n_tiles * plan.n_weights : 0;
  const std::size_t per_thread = (isa.thread_reals(kp, ex.lanes, adjoint) + 15) / 16 * 16;
  const int slices = ex.amplitude_parallel ? 1 : ex.threads;
  const std::size_t total = shared + partials + per_thread * slices;
  if (static_cast<double>(total) * sizeof(R) > 0.9 * static_cast<double>(detail::physical_memory_bytes())) {
    throw Error("this call needs " + std::to_string(total * sizeof(R) >> 20) +
                " MiB of workspace, more than this machine's memory; use a smaller batch or fewer threads");
  }
  // Grow-only per-calling-thread workspace: a warm program allocates nothing.
  thread_local std::vector<R> workspace;
  if (workspace.size() < total) workspace.resize(total);
  ex.work = workspace.data();
  ex.work_per_thread = per_thread;
  if constexpr (std::is_same_v<R, float>) {
    isa.run_f32(kp, call, ex);
  } else {
    isa.run_f64(kp, call, ex);
  }
}

template void execute<float>(const detail::Plan&, const Call<float>&);
template void execute<double>(const detail::Plan&, const Call<double>&);

}  // namespace qfleet::cpu
