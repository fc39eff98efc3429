// The seam between the engine's front (src/core: argument checks, placement,
// routing) and a device backend (a folder: src/cuda today). src/core never names a
// device API: it asks `device_backend()` (null in a build without one) how many
// devices it sees, whether a pointer is the device's, and for its executor rows
// (core/executor.hpp: prepare a compiled model on a device, estimate a call's time,
// run a call on a stream, describe it). A new device backend is a new folder
// implementing DeviceBackend, and the CMake line that builds it instead of
// no_device_backend.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/executor.hpp"
#include "qfleet/error.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

// A compiled model's copy on a device: its packed plan (kern::SvPlan, kern::DmPlan or
// kern::OpenView), uploaded once at compile time; the backend keeps its own data in
// a derived type.
struct Resident {
  int device = 0;           // the device's index in its backend
  std::string device_name;  // for messages and Program::execution()
  virtual ~Resident() = default;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;  // "cuda"
  virtual int device_count() const = 0;
  virtual int compute_capability(int device) const = 0;  // 10 * major + minor
  virtual bool is_device_pointer(const void* p) const = 0;
  // Its rows of the executor registry, one per model kind it runs.
  virtual std::vector<Executor> executors() const = 0;
};

// The build's device backend; nullptr when it has none (src/cuda/cuda_backend.cpp,
// or src/core/no_device_backend.cpp: CMake builds one of the two).
const DeviceBackend* device_backend();

// The route of a call, whose non-null buffers are `ptrs`, on a model with a resident
// copy (without one, every call is the cpu's): every buffer on the device ->
// device_buffers (host and device mixed: an error); on the host -> route_for_host_buffers.
template <class Ptrs>
Route route_call(const Model& model, const Ptrs& ptrs, std::size_t batch, bool adjoint, std::size_t host_bytes) {
  const DeviceBackend& be = *device_backend();
  int on_device = 0, on_host = 0;
  for (const void* q : ptrs) {
    if (q != nullptr) ++(be.is_device_pointer(q) ? on_device : on_host);
  }
  if (on_device > 0 && on_host > 0) {
    throw Error("this call mixes host and device buffers; pass every buffer on the device (the call is then "
                "asynchronous on the current CUDA stream) or every buffer on the host");
  }
  if (on_device > 0) return Route::device_buffers;
  return route_for_host_buffers(model, batch, adjoint, host_bytes);
}

}  // namespace qfleet::detail
