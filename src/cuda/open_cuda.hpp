// The cuda open-system backend's seam (see sv_cuda.hpp for the conventions): plain
// declarations read by the C++20 library and the C++17 CUDA translation unit.
#pragma once

#include <cstddef>

#include "cuda/sv_cuda.hpp"
#include "kernels/open_view.hpp"

namespace qfleet::gpu {

// A thread per task (grid-stride over the batch), each with its workspace in
// global memory: work_bytes covers the resident threads only.
struct OpenLaunch {
  int threads = 128;           // per block
  std::size_t blocks = 1;
  int cap = 0;                 // dopri5 steps per segment the backward pass holds
  std::size_t work_per_thread = 0;  // in complex numbers
  std::size_t work_bytes = 0;
};

// Throws qfleet::Error when not even one block's workspace fits in a quarter of
// the device memory (huge d with the exact solver).
OpenLaunch open_launch_shape(const kern::OpenView& v, std::size_t batch, int real_bytes, int cap,
                             const DeviceProps& dev);

// Enqueues one call on `stream`: every task's forward and (call.adjoint) reverse
// pass in one launch. Pointers are device pointers; sums of shared-parameter
// gradients are zeroed here. A failed task ORs (1 << status) into *status (when
// given) and gets NaN fidelity and leakage.
template <class R>
void run_open_tasks(const kern::OpenView& device_view, const kern::OpenTaskCall<R>& call, const OpenLaunch& shape,
                    int* status, void* stream);

}  // namespace qfleet::gpu
