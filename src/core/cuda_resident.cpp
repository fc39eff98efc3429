// Uploading a plan to a CUDA device, and the cost model for Device::automatic.
#include "core/cuda_resident.hpp"

#include <algorithm>
#include <cmath>

#include "core/cuda_call.hpp"
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

OpenCudaResident::~OpenCudaResident() {
#if defined(QFLEET_WITH_CUDA)
  gpu::free_device(blob);
#endif
}

namespace {

#if !defined(QFLEET_WITH_CUDA)
[[noreturn]] void no_cuda_backend() {
  throw Error("device 'cuda' was asked for, but this build of qfleet has no CUDA backend "
              "(configure with nvcc on PATH and -DQFLEET_ENABLE_CUDA=ON); use device 'cpu'");
}
#endif

#if defined(QFLEET_WITH_CUDA)
// The current device's properties; throws when none is visible.
gpu::DeviceProps visible_device() {
  if (gpu::device_count() == 0) {
    throw Error("device 'cuda' was asked for, but no CUDA device is visible to this process "
                "(no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them); use device 'cpu' or 'automatic'");
  }
  return gpu::device_props(gpu::current_device());
}

// Copies a packed blob to the device and records where (R: either resident type).
template <class Resident>
void upload(Resident& r, const std::vector<std::byte>& blob, const gpu::DeviceProps& props) {
  r.device = props.id;
  r.blob = gpu::malloc_device(blob.size());
  gpu::copy_to_device(r.blob, blob.data(), blob.size());
  r.sm_count = props.sm_count;
  r.smem_optin = props.smem_optin;
  r.total_mem = props.total_mem;
  r.name = props.name;
}
#endif

}  // namespace

std::shared_ptr<const CudaResident> make_cuda_resident(const Plan& plan) {
#if defined(QFLEET_WITH_CUDA)
  const gpu::DeviceProps props = visible_device();
  const double real_bytes = plan.precision == Precision::complex64 ? 4.0 : 8.0;
  const double per_circuit = std::ldexp(2.0 * 2.0 * real_bytes, plan.n);  // psi and lam
  if (per_circuit > 0.9 * static_cast<double>(props.total_mem)) {
    throw Error("a " + std::to_string(plan.n) + "-qubit circuit's adjoint needs " + gib(per_circuit) +
                " on the GPU, but " + props.name + " has " + gib(double(props.total_mem)) + "; use device 'cpu'");
  }
  const PackedSvPlan packed = pack_sv_plan(plan);
  auto r = std::make_shared<CudaResident>();
  upload(*r, packed.blob, props);
  r->view = packed.view_at(static_cast<const std::byte*>(r->blob));
  return r;
#else
  (void)plan;
  no_cuda_backend();
#endif
}

std::shared_ptr<const OpenCudaResident> make_open_cuda_resident(const OpenPlan& plan) {
#if defined(QFLEET_WITH_CUDA)
  const gpu::DeviceProps props = visible_device();
  auto r = std::make_shared<OpenCudaResident>();
  upload(*r, plan.blob, props);
  r->view = open_view_at(plan.offsets, static_cast<const std::byte*>(r->blob));
  return r;
#else
  (void)plan;
  no_cuda_backend();
#endif
}

// The cpu constants are measured (docs/benchmarks.md, "Scaling": 20-30 GFLOP/s per
// thread on the lanes path, 1.6 us for one 4-qubit sample). The GPU rate is measured
// on an H100 (docs/benchmarks.md, 2026-11-24): the plan's FLOP estimate over the
// device time of bench_cuda's calls gave 0.34-0.55 TFLOP/s for the 4-qubit layer at
// B = 10^6, 0.7-0.9 for the 10-qubit target pass at B = 100, 1.3 for the open qubit
// at B = 10^5 and 1.7 for the 10-qubit layer at B = 10^4; 1 TFLOP/s sits in that
// range (it was a 2 TFLOP/s guess before). The call and PCIe constants are still
// estimates: the staged host-data path has not been timed on a GPU.
namespace {
constexpr double kCpuFlopsPerThread = 20e9;    // the lane kernels' sustained rate per thread
constexpr double kCpuCallSeconds = 2e-6;       // argument checks, workspace, OpenMP fork
constexpr double kGpuFlops = 1e12;             // measured on an H100, above
constexpr double kGpuCallSeconds = 25e-6;      // launch + two copies + stream synchronisation
constexpr double kPcieBytesPerSecond = 12e9;   // pageable host memory both ways
}  // namespace

#if defined(QFLEET_WITH_CUDA)
StagedCall::StagedCall(void* stream, int n, const void* const* host, const std::size_t* bytes, const bool* output,
                       std::size_t scratch_bytes)
    : stream_(stream), n_(n) {
  if (n > kMax) throw Error("internal: too many staged buffers");
  for (int i = 0; i < n; ++i) {
    host_[i] = bytes[i] > 0 ? host[i] : nullptr;
    bytes_[i] = bytes[i];
    output_[i] = output[i];
    off_[i] = total_;
    if (host_[i] != nullptr) total_ += (bytes[i] + 255) / 256 * 256;
  }
  scratch_off_ = total_;
  total_ += (scratch_bytes + 255) / 256 * 256;
  arena_ = static_cast<char*>(gpu::malloc_async(total_, stream_));
  try {
    for (int i = 0; i < n_; ++i) {
      if (host_[i] != nullptr && !output_[i]) gpu::copy_async(device(i), host_[i], bytes_[i], stream_);
    }
    if (scratch_bytes > 0) gpu::memset_async(scratch(), scratch_bytes, stream_);
  } catch (...) {
    release();
    throw;
  }
}

void StagedCall::finish(void* scratch_host, std::size_t scratch_back) {
  for (int i = 0; i < n_; ++i) {
    if (host_[i] != nullptr && output_[i]) gpu::copy_async(const_cast<void*>(host_[i]), device(i), bytes_[i], stream_);
  }
  if (scratch_back > 0) gpu::copy_async(scratch_host, scratch(), scratch_back, stream_);
  char* a = arena_;
  arena_ = nullptr;
  gpu::free_async(a, stream_);
  gpu::stream_sync(stream_);
}

StagedCall::~StagedCall() { release(); }

void StagedCall::release() noexcept {
  if (arena_ == nullptr) return;
  char* a = arena_;
  arena_ = nullptr;
  try {
    gpu::free_async(a, stream_);
    gpu::stream_sync(stream_);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the first error is the one to report
  }
}
#endif

namespace {
double work_flops(std::size_t batch, double fwd, double adj, bool adjoint) {
  return double(batch) * (fwd + (adjoint ? adj : 0.0));
}
double cpu_seconds(double flops, int threads) {
  return kCpuCallSeconds + flops / (kCpuFlopsPerThread * std::max(threads, 1));
}
double cuda_seconds(double flops, std::size_t bytes_moved) {
  return kGpuCallSeconds + double(bytes_moved) / kPcieBytesPerSecond + flops / kGpuFlops;
}
}  // namespace

double estimate_cpu_seconds(const Plan& plan, std::size_t batch, bool adjoint, int threads) {
  return cpu_seconds(work_flops(batch, plan.flops_forward, plan.flops_adjoint, adjoint), threads);
}
double estimate_cuda_seconds(const Plan& plan, std::size_t batch, bool adjoint, std::size_t bytes_moved) {
  return cuda_seconds(work_flops(batch, plan.flops_forward, plan.flops_adjoint, adjoint), bytes_moved);
}
double estimate_open_cpu_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, int threads) {
  return cpu_seconds(work_flops(batch, plan.flops_forward, plan.flops_adjoint, adjoint), threads);
}
double estimate_open_cuda_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, std::size_t bytes_moved) {
  return cuda_seconds(work_flops(batch, plan.flops_forward, plan.flops_adjoint, adjoint), bytes_moved);
}

}  // namespace qfleet::detail
