// The cuda open-system backend's seam (see sv_cuda.hpp for the conventions): plain
// declarations read by the C++20 library and the C++17 CUDA translation unit.
#pragma once

#include <cstddef>

#include "cuda/sv_cuda.hpp"
#include "kernels/open_view.hpp"

namespace qfleet::gpu {

// How a task maps onto the GPU (docs/architecture.md): a thread per task (grid
// stride over the batch), or a group per task whose members split every product of
// the task body (kernels/group.hpp): 8 or 16 lanes of a warp (`tile8`, `tile16`:
// 16 or 8 tasks in a block of 128 threads, for generators whose 4 x 4 or 9 x 9
// products leave most of a warp idle), a block of 32 threads (`warp`) or of 128-256
// (`block`). Each task slot (thread, tile or block) owns a workspace, in dynamic
// shared memory when a block's slots fit the device's opt-in limit, else in global
// memory sized for the resident slots (work_bytes).
enum class OpenShape { automatic, thread, tile8, tile16, warp, block };
const char* open_shape_name(OpenShape s);  // launch_names.cpp, as are the two below
// The shape named `name` (a QFLEET_OPEN_CUDA_SHAPE value: thread, tile8, tile16,
// warp, block or automatic); anything else is a qfleet::Error naming them.
OpenShape parse_open_shape(const char* name);

struct OpenLaunch {
  OpenShape shape = OpenShape::thread;
  int threads = 128;                // per block
  int group = 1;                    // threads per task
  std::size_t blocks = 1;
  int cap = 0;                      // dopri5 steps per segment the backward pass holds
  std::size_t work_per_task = 0;    // workspace of one task slot, in complex numbers
  std::size_t work_bytes = 0;       // global workspace (0 when it is in shared memory)
  std::size_t smem = 0;             // dynamic shared memory per block
};

// `want` automatic picks from the generator order n: warp for n <= 9 (an open qubit
// or qutrit, closed d <= 9), block beyond (thresholds from the OpenShape/ rows
// measured on an H100; thread is pinnable only). Throws qfleet::Error when not even one task slot's
// workspace fits in a quarter of the device memory (huge d with the exact solver).
OpenLaunch open_launch_shape(const kern::OpenView& v, std::size_t batch, int real_bytes, int cap,
                             const DeviceProps& dev, OpenShape want = OpenShape::automatic);

// Enqueues one call on `stream`: every task's forward and (call.adjoint) reverse
// pass in one launch. Pointers are device pointers; sums of shared-parameter
// gradients are zeroed here. A failed task ORs (1 << status) into *status (when
// given) and gets NaN fidelity and leakage.
template <class R>
void run_open_tasks(const kern::OpenView& device_view, const kern::OpenTaskCall<R>& call, const OpenLaunch& shape,
                    int* status, void* stream);

}  // namespace qfleet::gpu
