// Host-side helpers for calls that run on the cuda backend (circuits and open
// systems): the device a resident plan lives on, made current for the call.
#pragma once

#if defined(QFLEET_WITH_CUDA)
#include <cstddef>

#include "cuda/sv_cuda.hpp"

namespace qfleet::detail {

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
