// Uploading a plan to a CUDA device, and the cost model for Device::automatic.
#include "core/cuda_resident.hpp"

#include <algorithm>
#include <cmath>

#include "core/sv_pack.hpp"
#include "qfleet/error.hpp"
#if defined(QFLEET_WITH_CUDA)
#include "cuda/sv_cuda.hpp"
#endif

namespace qfleet::detail {

CudaResident::~CudaResident() {
#if defined(QFLEET_WITH_CUDA)
  gpu::free_device(blob);
#endif
}

std::shared_ptr<const CudaResident> make_cuda_resident(const Plan& plan) {
#if defined(QFLEET_WITH_CUDA)
  if (gpu::device_count() == 0) {
    throw Error("device 'cuda' was asked for, but no CUDA device is visible to this process "
                "(no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them); use device 'cpu' or 'automatic'");
  }
  const int dev = gpu::current_device();
  const gpu::DeviceProps props = gpu::device_props(dev);
  const double real_bytes = plan.precision == Precision::complex64 ? 4.0 : 8.0;
  const double per_circuit = std::ldexp(2.0 * 2.0 * real_bytes, plan.n);  // psi and lam
  if (per_circuit > 0.9 * static_cast<double>(props.total_mem)) {
    throw Error("a " + std::to_string(plan.n) + "-qubit circuit's adjoint needs " + gib(per_circuit) +
                " on the GPU, but " + props.name + " has " + gib(double(props.total_mem)) + "; use device 'cpu'");
  }
  const PackedSvPlan packed = pack_sv_plan(plan);
  auto r = std::make_shared<CudaResident>();
  r->device = dev;
  r->blob = gpu::malloc_device(packed.blob.size());
  gpu::copy_to_device(r->blob, packed.blob.data(), packed.blob.size());
  r->view = packed.view_at(static_cast<const std::byte*>(r->blob));
  r->sm_count = props.sm_count;
  r->smem_optin = props.smem_optin;
  r->total_mem = props.total_mem;
  r->name = props.name;
  return r;
#else
  (void)plan;
  throw Error("device 'cuda' was asked for, but this build of qfleet has no CUDA backend "
              "(configure with nvcc on PATH and -DQFLEET_ENABLE_CUDA=ON); use device 'cpu'");
#endif
}

// The cpu constants are measured (docs/benchmarks.md, "Scaling": 20-30 GFLOP/s per
// thread on the lanes path, 1.6 us for one 4-qubit sample); the cuda ones are
// estimates: no GPU was available when this model was written (docs/architecture.md
// says so and how to re-measure them).
namespace {
constexpr double kCpuFlopsPerThread = 20e9;    // the lane kernels' sustained rate per thread
constexpr double kCpuCallSeconds = 2e-6;       // argument checks, workspace, OpenMP fork
constexpr double kGpuFlops = 2e12;             // sustained by the fused kernels on an H100-class GPU
constexpr double kGpuCallSeconds = 25e-6;      // launch + two copies + stream synchronisation
constexpr double kPcieBytesPerSecond = 12e9;   // pageable host memory both ways
}  // namespace

double estimate_cpu_seconds(const Plan& plan, std::size_t batch, bool adjoint, int threads) {
  const double flops = double(batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
  return kCpuCallSeconds + flops / (kCpuFlopsPerThread * std::max(threads, 1));
}

double estimate_cuda_seconds(const Plan& plan, std::size_t batch, bool adjoint, std::size_t bytes_moved) {
  const double flops = double(batch) * (plan.flops_forward + (adjoint ? plan.flops_adjoint : 0.0));
  return kGpuCallSeconds + double(bytes_moved) / kPcieBytesPerSecond + flops / kGpuFlops;
}

}  // namespace qfleet::detail
