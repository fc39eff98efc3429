// StagedCall (cuda_staging.hpp): host buffers through one stream-ordered arena.
#include "cuda/cuda_staging.hpp"

namespace qfleet::gpu {

StagedCall::StagedCall(void* stream, const detail::CallBuffers& buffers, std::size_t scratch_bytes)
    : stream_(stream), b_(buffers) {
  for (int i = 0; i < b_.n; ++i) {
    if (b_.bytes[i] == 0) b_.ptr[i] = nullptr;
    off_[i] = total_;
    if (b_.ptr[i] != nullptr) total_ += (b_.bytes[i] + 255) / 256 * 256;
  }
  scratch_off_ = total_;
  total_ += (scratch_bytes + 255) / 256 * 256;
  arena_ = static_cast<char*>(malloc_async(total_, stream_));
  try {
    for (int i = 0; i < b_.n; ++i) {
      if (b_.ptr[i] != nullptr && !b_.output[i]) copy_async(device(i), b_.ptr[i], b_.bytes[i], stream_);
    }
    if (scratch_bytes > 0) memset_async(scratch(), scratch_bytes, stream_);
  } catch (...) {
    release();
    throw;
  }
}

void StagedCall::finish(void* scratch_host, std::size_t scratch_back) {
  for (int i = 0; i < b_.n; ++i) {
    if (b_.ptr[i] != nullptr && b_.output[i]) copy_async(const_cast<void*>(b_.ptr[i]), device(i), b_.bytes[i], stream_);
  }
  if (scratch_back > 0) copy_async(scratch_host, scratch(), scratch_back, stream_);
  char* a = arena_;
  arena_ = nullptr;
  free_async(a, stream_);
  stream_sync(stream_);
}

StagedCall::~StagedCall() { release(); }

void StagedCall::release() noexcept {
  if (arena_ == nullptr) return;
  char* a = arena_;
  arena_ = nullptr;
  try {
    free_async(a, stream_);
    stream_sync(stream_);
  } catch (...) {  // NOLINT(bugprone-empty-catch): the first error is the one to report
  }
}

}  // namespace qfleet::gpu
