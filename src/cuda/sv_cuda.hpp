// The cuda backend's seam: plain declarations that both the C++20 library and the
// C++17 CUDA translation units read (no public headers cross it). Every function
// throws qfleet::Error with the CUDA error's text on failure, and none exists in a
// build without CUDA (only src/cuda calls them, behind core/backend.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sv_plan.hpp"

namespace qfleet::gpu {

struct DeviceProps {
  int id = -1;
  int sm_count = 0;
  std::size_t smem_optin = 0;  // most dynamic shared memory one block may ask for
  std::size_t total_mem = 0;
  int cc_major = 0, cc_minor = 0;
  char name[128] = {};
};

int device_count();
int current_device();
void set_device(int id);
DeviceProps device_props(int id);

// How a call is laid out on the device (chosen per call from n, precision and
// whether the adjoint runs; see docs/architecture.md "How a call runs on cuda").
enum class Strategy : std::uint8_t { registers, warp, block, interleaved, global, automatic };
struct LaunchShape {
  Strategy strategy = Strategy::registers;
  int group = 1;        // threads per circuit
  int per_block = 1;    // circuits per block
  int threads = 32;     // threads per block
  std::size_t smem = 0;   // dynamic shared memory per block (bytes), the tables included
  std::size_t table = 0;  // one group's block table (bytes; kernels/sv_table.hpp), 0: none
  std::size_t blocks = 1;
  std::size_t work_bytes = 0;  // global workspace (interleaved and global strategies)
};
// `want` automatic picks registers for n <= 5; else block where the states fit one
// block's shared memory; else global (from the Shape/ rows measured on an H200 with
// block tables); another value pins that shape (the
// QFLEET_CUDA_SHAPE variable: benchmarks, tests of every shape on a GPU) and throws
// qfleet::Error where the circuit cannot run that way.
LaunchShape launch_shape(const kern::SvPlan& p, std::size_t batch, int real_bytes, bool adjoint,
                         const DeviceProps& dev, Strategy want = Strategy::automatic);
const char* strategy_name(Strategy s);
// The strategy named `name` (a QFLEET_CUDA_SHAPE value: registers, warp, block,
// interleaved, global or automatic); anything else is a qfleet::Error naming them.
Strategy parse_strategy(const char* name);

// Memory. Synchronous forms are for compile time; *_async forms are stream-ordered
// (cudaMallocAsync pools), so a call never synchronises and can be graph-captured.
void* malloc_device(std::size_t bytes);
void free_device(void* p) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void* malloc_async(std::size_t bytes, void* stream);
void free_async(void* p, void* stream);
void copy_async(void* dst, const void* src, std::size_t bytes, void* stream);  // any direction
void memset_async(void* p, std::size_t bytes, void* stream);
void stream_sync(void* stream);
// True when p is device (or managed) memory; false for ordinary host memory.
bool is_device_pointer(const void* p);

// Enqueues one call: every sample's forward, measurements and (with cotangents)
// adjoint backward in one kernel launch on `stream`. The call's pointers are device
// pointers; reduced weight gradients are zeroed here (cudaMemsetAsync).
template <class R>
void run_circuits(const kern::SvPlan& device_plan, const kern::SvCall<R>& call, const LaunchShape& shape,
                  void* stream);

}  // namespace qfleet::gpu
