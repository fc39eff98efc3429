// The seam between the engine's front (src/core: argument checks, routing, the
// cost model's cpu side) and a device backend (a folder: src/cuda today). src/core
// never names a device API: it asks `device_backend()` (null in a build without
// one) to prepare a compiled model on a device, estimate a call's time, run a call
// on a stream and describe how it would run. The cpu executor (src/cpu) is always
// built and is called directly. A new device backend is a new folder implementing
// DeviceBackend, and the CMake line that builds it instead of no_device_backend.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "cpu/open_cpu.hpp"
#include "cpu/statevector_cpu.hpp"
#include "qfleet/error.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

struct Plan;
struct OpenPlan;

// A compiled model's copy on a device: the packed plan (kern::SvPlan or
// kern::OpenView), uploaded once at compile time. One type for circuits and open
// systems; the backend keeps its own data in a derived type.
struct Resident {
  int device = 0;           // the device's index in its backend
  std::string device_name;  // for messages and Program::execution()
  virtual ~Resident() = default;
};

// Where a call runs: the cpu executor, the device with host buffers staged through
// device memory (synchronous), or the device on buffers already there (asynchronous
// on the calling thread's stream).
enum class Route : std::uint8_t { cpu, device_staged, device_buffers };

// A call's buffers in the order of its call struct's pointer fields (cpu::Call:
// inputs, weights, outputs, cotangents, grad_inputs, grad_weights, states,
// extra_probs; cpu::OpenCall: open_program.cpp's kBuffers order): the backend stages
// them by index. Absent buffers are null with 0 bytes.
struct CallBuffers {
  static constexpr int kMax = 16;
  int n = 0;
  const void* ptr[kMax] = {};
  std::size_t bytes[kMax] = {};
  bool output[kMax] = {};
  std::size_t total_bytes() const {
    std::size_t t = 0;
    for (int i = 0; i < n; ++i) t += ptr[i] != nullptr ? bytes[i] : 0;
    return t;
  }
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;  // "cuda"
  virtual int device_count() const = 0;
  virtual int compute_capability(int device) const = 0;  // 10 * major + minor
  virtual bool is_device_pointer(const void* p) const = 0;

  // Uploads the plan to the current device; throws qfleet::Error when no device is
  // visible or the model cannot fit there.
  virtual std::shared_ptr<const Resident> prepare(const Plan& plan) const = 0;
  virtual std::shared_ptr<const Resident> prepare(const OpenPlan& plan) const = 0;

  // The cost model's device side (docs/architecture.md, "Choosing the device").
  virtual double estimate_seconds(const Plan& plan, std::size_t batch, bool adjoint,
                                  std::size_t bytes_moved) const = 0;
  virtual double estimate_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint,
                                  std::size_t bytes_moved) const = 0;

  // Runs a checked call on the plan's resident copy: staged (buffers on the host) or
  // on device buffers, on `stream` (the thread's, set_cuda_stream; null = default).
  virtual void run(const Plan& plan, const cpu::Call<float>& call, const CallBuffers& buffers, bool staged,
                   void* stream) const = 0;
  virtual void run(const Plan& plan, const cpu::Call<double>& call, const CallBuffers& buffers, bool staged,
                   void* stream) const = 0;
  virtual void run(const OpenPlan& plan, const cpu::OpenCall<float>& call, const CallBuffers& buffers,
                   bool staged, void* stream) const = 0;
  virtual void run(const OpenPlan& plan, const cpu::OpenCall<double>& call, const CallBuffers& buffers,
                   bool staged, void* stream) const = 0;

  // How a call of this batch would run (Program::execution()).
  virtual std::string describe(const Plan& plan, std::size_t batch, bool adjoint) const = 0;
  virtual std::string describe(const OpenPlan& plan, std::size_t batch, bool adjoint) const = 0;
};

// The build's device backend; nullptr when it has none (src/cuda/cuda_backend.cpp,
// or src/core/no_device_backend.cpp: CMake builds one of the two).
const DeviceBackend* device_backend();

// The resident copy for Device::cuda / automatic; throws when the build has no
// device backend.
template <class AnyPlan>
std::shared_ptr<const Resident> prepare_on_device(const AnyPlan& plan) {
  const DeviceBackend* be = device_backend();
  if (be == nullptr) {
    throw Error("device 'cuda' was asked for, but this build of qfleet has no CUDA backend "
                "(configure with nvcc on PATH and -DQFLEET_ENABLE_CUDA=ON); use device 'cpu'");
  }
  return be->prepare(plan);
}

// The route of a call on a program with a resident copy: every non-null buffer on
// the device -> device_buffers (host and device mixed: an error); on the host ->
// staged for Device::cuda, else (automatic) staged when device_faster() says so.
template <class Ptrs, class DeviceFaster>
Route route_call(const DeviceBackend& be, Device device, const Ptrs& ptrs, DeviceFaster device_faster) {
  int on_device = 0, on_host = 0;
  for (const void* q : ptrs) {
    if (q != nullptr) ++(be.is_device_pointer(q) ? on_device : on_host);
  }
  if (on_device > 0 && on_host > 0) {
    throw Error("this call mixes host and device buffers; pass every buffer on the device (the call is then "
                "asynchronous on the current CUDA stream) or every buffer on the host");
  }
  if (on_device > 0) return Route::device_buffers;
  if (device == Device::cuda) return Route::device_staged;
  return device_faster() ? Route::device_staged : Route::cpu;
}

// The cost model (cost_model.cpp): a call's estimated floating-point operations, and
// its cpu side.
double call_flops(const Plan& plan, std::size_t batch, bool adjoint);
double call_flops(const OpenPlan& plan, std::size_t batch, bool adjoint);
double estimate_cpu_seconds(const Plan& plan, std::size_t batch, bool adjoint, int threads);
double estimate_cpu_seconds(const OpenPlan& plan, std::size_t batch, bool adjoint, int threads);

}  // namespace qfleet::detail
