// The cpu device's rows of the executor registry (core/executor.hpp): each
// instruction set this machine runs (cpu_isa.hpp) x each model kind, and the cost
// model's cpu side. The cpu runs every model it is given: its rows support all.
#include <omp.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/executor.hpp"
#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "cpu/cpu_isa.hpp"

namespace qfleet::cpu {
namespace {

using detail::CallRef;
using detail::Executor;
using detail::Model;
using detail::ModelKind;

// Measured (`git show 41c2817:docs/benchmarks.md`, "Scaling": 20-30 GFLOP/s per thread on the lanes
// path, 1.6 us for one 4-qubit sample).
constexpr double kCpuFlopsPerThread = 20e9;  // the lane kernels' sustained rate per thread
constexpr double kCpuCallSeconds = 2e-6;     // argument checks, workspace, waking the pool

const CpuIsa& isa_of(const Executor& e) { return *static_cast<const CpuIsa*>(e.context); }
int threads_of(const Model& m) { return m.num_threads > 0 ? m.num_threads : omp_get_max_threads(); }

std::string runs_every_model(const Executor&, const Model&) { return {}; }

double estimate_seconds(const Executor&, const Model& m, std::size_t batch, bool adjoint, std::size_t) {
  return kCpuCallSeconds + detail::call_flops(m, batch, adjoint) / (kCpuFlopsPerThread * threads_of(m));
}

// The call record of `c` in precision R (the row's kind decides the record type).
template <class Record>
const Record& record(const CallRef& c) {
  return *static_cast<const Record*>(c.record);
}

void run_sv(const Executor& e, const Model& m, const CallRef& c) {
  const auto& p = static_cast<const detail::Plan&>(m);
  if (c.f32) return execute(isa_of(e), p, record<Call<float>>(c));
  execute(isa_of(e), p, record<Call<double>>(c));
}
void run_dm(const Executor& e, const Model& m, const CallRef& c) {
  const auto& p = static_cast<const detail::Plan&>(m);
  if (c.f32) return execute_dm(isa_of(e), p, record<Call<float>>(c));
  execute_dm(isa_of(e), p, record<Call<double>>(c));
}
void run_open(const Executor& e, const Model& m, const CallRef& c) {
  const auto& p = static_cast<const detail::OpenPlan&>(m);
  if (c.f32) return execute_open(isa_of(e), p, record<OpenCall<float>>(c));
  execute_open(isa_of(e), p, record<OpenCall<double>>(c));
}

int lanes_of(const Executor& e, const Model& m) {
  return m.precision == Precision::complex64 ? e.lanes_f32 : e.lanes_f64;
}

std::string describe_sv(const Executor& e, const Model& m, std::size_t, bool) {
  return "cpu " + std::string(e.isa) + ": " + std::to_string(lanes_of(e, m)) + " samples per SIMD tile, up to " +
         std::to_string(threads_of(m)) + " threads";
}
std::string describe_dm(const Executor& e, const Model& m, std::size_t, bool) {
  const int n = static_cast<const detail::Plan&>(m).n;
  return "cpu " + std::string(e.isa) + ": density matrices, " + std::to_string(n <= 6 ? lanes_of(e, m) : 1) +
         " sample(s) per SIMD tile, up to " + std::to_string(threads_of(m)) + " threads";
}
std::string describe_open(const Executor& e, const Model& m, std::size_t, bool) {
  const auto& p = static_cast<const detail::OpenPlan&>(m);
  return "cpu " + std::string(e.isa) + ": a task per thread, up to " + std::to_string(threads_of(m)) + " threads" +
         (p.action ? ", exact solver by the action of the exponential (Taylor steps)" : "") +
         (p.lindblad ? ", generator in Lindblad form" : "");
}

Executor row(const CpuIsa& isa, ModelKind kind) {
  const auto [run, describe] = [kind] {
    using Run = decltype(Executor::run);
    using Describe = decltype(Executor::describe);
    switch (kind) {
      case ModelKind::statevector: return std::pair<Run, Describe>{&run_sv, &describe_sv};
      case ModelKind::density_matrix: return std::pair<Run, Describe>{&run_dm, &describe_dm};
      case ModelKind::open_system: break;
    }
    return std::pair<Run, Describe>{&run_open, &describe_open};
  }();
  return {.kind = kind,
          .device = "cpu",
          .isa = isa.name,
          .context = &isa,
          .host = true,
          .lanes_f32 = isa.lanes_f32,
          .lanes_f64 = isa.lanes_f64,
          .supports = &runs_every_model,
          .prepare = nullptr,  // (host rows run on host buffers: no resident copy)
          .estimate_seconds = &estimate_seconds,
          .run = run,
          .describe = describe};
}

}  // namespace
}  // namespace qfleet::cpu

namespace qfleet::detail {

std::vector<Executor> cpu_executors() {
  std::vector<Executor> v;
  for (const cpu::CpuIsa* isa : cpu::isa_table()) {
    for (ModelKind kind : kModelKinds) v.push_back(cpu::row(*isa, kind));
  }
  return v;
}

const Executor& cpu_executor(ModelKind kind, const std::string& isa) {
  const cpu::CpuIsa* want = cpu::isa_table()[cpu::select_isa(isa)];
  for (const Executor& e : executors()) {
    if (e.kind == kind && e.context == want) return e;
  }
  throw Error("no cpu executor for " + std::string(model_kind_name(kind)));  // every isa has all kinds
}

}  // namespace qfleet::detail
