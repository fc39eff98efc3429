// The cost model behind Device::automatic, cpu side (docs/architecture.md,
// "Choosing the device"); the device side is the backend's estimate_seconds.
#include <algorithm>

#include "core/backend.hpp"
#include "core/open_plan.hpp"
#include "core/plan.hpp"

namespace qfleet::detail {

// Measured (docs/benchmarks.md, "Scaling": 20-30 GFLOP/s per thread on the lanes
// path, 1.6 us for one 4-qubit sample).
namespace {
constexpr double kCpuFlopsPerThread = 20e9;  // the lane kernels' sustained rate per thread
constexpr double kCpuCallSeconds = 2e-6;     // argument checks, workspace, OpenMP fork

double cpu_seconds(double flops, int threads) {
  return kCpuCallSeconds + flops / (kCpuFlopsPerThread * std::max(threads, 1));
}
}  // namespace

double call_flops(const Plan& plan, std::size_t batch, bool adjoint) {
  return double(batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
}
double call_flops(const OpenPlan& plan, std::size_t batch, bool adjoint) {
  return double(batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
}
double estimate_cpu_seconds(const Plan& plan, std::size_t batch, bool adjoint, int threads) {
  return cpu_seconds(call_flops(plan, batch, adjoint), threads);
}
double estimate_cpu_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, int threads) {
  return cpu_seconds(call_flops(plan, batch, adjoint), threads);
}

}  // namespace qfleet::detail
