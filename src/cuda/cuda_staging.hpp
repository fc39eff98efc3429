// Host-side helpers of the cuda backend's calls (cuda_backend.cpp): the device a
// resident plan lives on made current for the call, and host buffers staged through
// one stream-ordered device arena.
#pragma once

#include <cstddef>

#include "core/backend.hpp"
#include "cuda/sv_cuda.hpp"

namespace qfleet::gpu {

class DeviceGuard {  // runs a call on the program's device, restoring the caller's
 public:
  explicit DeviceGuard(int dev) : prev_(current_device()) {
    if (prev_ != dev) set_device(dev);
  }
  ~DeviceGuard() {
    try {
      if (current_device() != prev_) set_device(prev_);
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
// finish(). `scratch` extra bytes (zeroed) can hold a status word. On an exception
// before finish(), the destructor frees the arena and waits.
class StagedCall {
 public:
  StagedCall(void* stream, const detail::CallBuffers& buffers, std::size_t scratch_bytes = 0);
  ~StagedCall();
  StagedCall(const StagedCall&) = delete;
  StagedCall& operator=(const StagedCall&) = delete;
  void* device(int i) const { return b_.ptr[i] != nullptr ? static_cast<void*>(arena_ + off_[i]) : nullptr; }
  void* scratch() const { return arena_ + scratch_off_; }
  // Copies the outputs (and the first scratch_back bytes of scratch to scratch_host)
  // back, frees the arena, synchronises the stream.
  void finish(void* scratch_host = nullptr, std::size_t scratch_back = 0);

 private:
  void release() noexcept;  // frees the arena (if still held) and waits for the stream
  void* stream_;
  detail::CallBuffers b_;
  std::size_t off_[detail::CallBuffers::kMax] = {}, scratch_off_ = 0, total_ = 0;
  char* arena_ = nullptr;
};

}  // namespace qfleet::gpu
