// The executor registry: one row per (model kind, device) — the cpu device once per
// instruction set (src/cpu/cpu_executors.cpp), each device backend's rows after it
// (src/cuda/cuda_backend.cpp) — each saying whether it runs a compiled model, how to
// prepare the model on its device, estimate a call, run a call and describe how it
// would run. Placement (compile) and routing (each call) are one function each over
// the rows, for every model kind. (ggml's backend interface, device_i and
// supports_op, is the same idea: a device answers what it runs.)
//
// Adding a model kind: a ModelKind value, its compiled type deriving from Model, its
// call record, and a row per device with its kernels. Adding a device: a backend
// folder whose DeviceBackend::executors() lists its rows. docs/architecture.md,
// "Adding a model kind or a device", names the files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/program.hpp"

namespace qfleet::detail {

enum class ModelKind : std::uint8_t { statevector, density_matrix, open_system };
inline constexpr ModelKind kModelKinds[] = {ModelKind::statevector, ModelKind::density_matrix,
                                            ModelKind::open_system};
// "statevector", "density_matrix", "open_system" (Program::execution and test names).
const char* model_kind_name(ModelKind kind);

struct Resident;  // core/backend.hpp
struct Executor;

// What every compiled model carries for placement and the executors: Plan
// (statevector and density_matrix) and OpenPlan (open_system) derive from it.
struct Model {
  explicit Model(ModelKind k) : kind(k) {}
  ModelKind kind;
  Precision precision = Precision::complex128;
  int num_threads = 0;                       // cpu threads; 0 = OpenMP's default
  Device device = Device::cpu;               // as asked at compile time
  const Executor* host = nullptr;            // the cpu row (its instruction set)
  const Executor* on_device = nullptr;       // the device row holding `resident`, or null
  std::shared_ptr<const Resident> resident;  // the model's copy on that device
  // Estimated real FLOPs per sample or task (forward; the adjoint sweep's extra): the
  // cost model and the cpu thread count read them.
  double flops_forward = 0, flops_adjoint = 0;
};

// A call's buffers in the order of its call record's pointer fields (kern::SvCall:
// inputs, weights, outputs, cotangents, grad_inputs, grad_weights, states,
// extra_probs; kern::OpenTaskCall: open_program.cpp's kBuffers order): a device row
// stages them by index. Absent buffers are null with 0 bytes.
struct CallBuffers {
  static constexpr int kMax = 20;
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

// One checked call as a row receives it: the model kind's call record (kern::SvCall<R>
// for circuits, kern::OpenTaskCall<R> for open systems; R = float when f32), its
// buffers, and where they are: staged from the host (synchronous) or already on the
// device (asynchronous on `stream`, the thread's set_cuda_stream; null = default).
struct CallRef {
  const void* record = nullptr;
  bool f32 = false;
  const CallBuffers* buffers = nullptr;
  bool staged = false;
  void* stream = nullptr;
};

struct Executor {
  ModelKind kind;
  const char* device;           // "cpu", or the device backend's name ("cuda")
  const char* isa;              // the cpu rows' instruction set; "" on device rows
  const void* context;          // the row's own data (cpu rows: their cpu::CpuIsa)
  bool host;                    // runs on host buffers, without a resident copy
  int lanes_f32, lanes_f64;     // its batch granularity: SIMD lanes (cpu), the warp (cuda)
  // "" when this row runs the model, else why not (a clause for the error message).
  std::string (*supports)(const Executor&, const Model&);
  // Device rows: the model's copy on the current device (throws qfleet::Error when no
  // device is visible or the model cannot fit); null on host rows.
  std::shared_ptr<const Resident> (*prepare)(const Executor&, const Model&);
  // The cost model (docs/architecture.md, "Choosing the device"): seconds for a call
  // moving `bytes_moved` between host and device.
  double (*estimate_seconds)(const Executor&, const Model&, std::size_t batch, bool adjoint,
                             std::size_t bytes_moved);
  void (*run)(const Executor&, const Model&, const CallRef& call);
  // How a call of this batch would run (Program::execution()).
  std::string (*describe)(const Executor&, const Model&, std::size_t batch, bool adjoint);
};

// Every row this build and machine have: the cpu device's (each instruction set this
// machine runs, best first; QFLEET_ISA caps them), then the device backend's.
std::span<const Executor> executors();
// The row of `kind` on `device` ("cpu" with an instruction set, or "cuda"), or null.
const Executor* find_executor(ModelKind kind, std::string_view device, std::string_view isa = "");

// The cpu device's rows (src/cpu/cpu_executors.cpp): each instruction set this
// machine runs x each model kind; and the row of `kind` for instruction set `isa`
// ("automatic": the best, or QFLEET_ISA; throws qfleet::Error naming the available ones).
std::vector<Executor> cpu_executors();
const Executor& cpu_executor(ModelKind kind, const std::string& isa);

// Placement, one rule for every model kind: the cpu row of instruction set `isa`
// ("automatic": the best, or QFLEET_ISA) runs host calls; Device::cuda prepares the model
// on the device row (an error when there is none, it does not run the model, or no
// device is visible); Device::automatic does so when a device is visible and its row
// runs the model. Sets model.host, model.on_device, model.resident and model.device.
void place(Model& model, Device device, const std::string& isa);

// Where a call runs: the cpu row, the device row with host buffers staged through
// device memory (synchronous), or the device row on buffers already there
// (asynchronous on the calling thread's stream).
enum class Route : std::uint8_t { cpu, device_staged, device_buffers };

// A call on host buffers of a model with a resident copy: staged on the device for
// Device::cuda; for automatic, where the device row's estimate beats the cpu row's.
Route route_for_host_buffers(const Model& model, std::size_t batch, bool adjoint, std::size_t host_bytes);
// Runs a checked call on the route's row; describes how a call would run there.
void run_call(const Model& model, Route route, const CallRef& call);
std::string describe_call(const Model& model, Route route, std::size_t batch, bool adjoint);

// The cost model's shared part: a call's estimated floating-point operations.
double call_flops(const Model& model, std::size_t batch, bool adjoint);

}  // namespace qfleet::detail
