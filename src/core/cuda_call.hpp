// Host-side helpers for calls that run on the cuda backend (circuits and open
// systems): the device a resident plan lives on, made current for the call.
#pragma once

#include <cstdint>

#include "qfleet/error.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

// Where a call runs: the cpu backend, the cuda backend with host buffers staged
// through device memory (synchronous), or the cuda backend on device buffers
// (asynchronous on the thread's current stream).
enum class Route : std::uint8_t { cpu, cuda_staged, cuda_device };

}  // namespace qfleet::detail

#if defined(QFLEET_WITH_CUDA)
#include <cstddef>

#include "cuda/sv_cuda.hpp"

namespace qfleet::detail {

// The route of a call on a program that has a device copy: every non-null buffer
// in `ptrs` on the device -> cuda_device (host and device mixed: an error); on the
// host -> staged for Device::cuda, else (automatic) staged when gpu_faster() says so.
template <class Ptrs, class GpuFaster>
Route route_with_cuda(Device device, const Ptrs& ptrs, GpuFaster gpu_faster) {
  int on_device = 0, on_host = 0;
  for (const void* q : ptrs) {
    if (q != nullptr) ++(gpu::is_device_pointer(q) ? on_device : on_host);
  }
  if (on_device > 0 && on_host > 0) {
    throw Error("this call mixes host and device buffers; pass every buffer on the device (the call is then "
                "asynchronous on the current CUDA stream) or every buffer on the host");
  }
  if (on_device > 0) return Route::cuda_device;
  if (device == Device::cuda) return Route::cuda_staged;
  return gpu_faster() ? Route::cuda_staged : Route::cpu;
}

// The launch-shape inputs recorded when a plan was uploaded (Resident: CudaResident
// or OpenCudaResident).
template <class Resident>
gpu::DeviceProps props_of(const Resident& r) {
  gpu::DeviceProps d;
  d.id = r.device;
  d.sm_count = r.sm_count;
  d.smem_optin = r.smem_optin;
  d.total_mem = r.total_mem;
  return d;
}

class DeviceGuard {  // runs a call on the program's device, restoring the caller's
 public:
  explicit DeviceGuard(int dev) : prev_(gpu::current_device()) {
    if (prev_ != dev) gpu::set_device(dev);
  }
  ~DeviceGuard() {
    try {
      if (gpu::current_device() != prev_) gpu::set_device(prev_);
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing useful to do in a destructor
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_;
};

// A call on host buffers staged through one stream-ordered device arena: inputs
// copied in at construction, outputs copied back and the stream synchronised by
// finish(). Buffers are given as host pointers (null: absent), sizes in bytes and
// whether each is an output; `scratch` extra bytes (zeroed) can carry a status word.
// On an exception before finish(), the destructor frees the arena and waits.
class StagedCall {
 public:
  static constexpr int kMax = 16;
  StagedCall(void* stream, int n, const void* const* host, const std::size_t* bytes, const bool* output,
             std::size_t scratch_bytes = 0);
  ~StagedCall();
  StagedCall(const StagedCall&) = delete;
  StagedCall& operator=(const StagedCall&) = delete;
  std::size_t arena_bytes() const { return total_; }
  void* device(int i) const { return host_[i] != nullptr ? static_cast<void*>(arena_ + off_[i]) : nullptr; }
  void* scratch() const { return arena_ + scratch_off_; }
  // Copies the outputs (and the first scratch_back bytes of scratch to scratch_host)
  // back, frees the arena, synchronises the stream.
  void finish(void* scratch_host = nullptr, std::size_t scratch_back = 0);

 private:
  void release() noexcept;  // frees the arena (if still held) and waits for the stream
  void* stream_;
  int n_;
  const void* host_[kMax];
  std::size_t bytes_[kMax], off_[kMax], scratch_off_ = 0, total_ = 0;
  bool output_[kMax];
  char* arena_ = nullptr;
};

}  // namespace qfleet::detail
#endif
