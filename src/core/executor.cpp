// The executor registry, placement and routing (core/executor.hpp): one rule for
// every model kind, over the rows the cpu device and the device backend register.
#include "core/executor.hpp"

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "qfleet/error.hpp"

namespace qfleet::detail {

const char* model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::statevector: return "statevector";
    case ModelKind::density_matrix: return "density_matrix";
    case ModelKind::open_system: return "open_system";
  }
  return "?";
}

std::span<const Executor> executors() {
  static const std::vector<Executor> rows = [] {
    std::vector<Executor> v = cpu_executors();
    if (const DeviceBackend* be = device_backend()) {
      for (const Executor& e : be->executors()) v.push_back(e);
    }
    return v;
  }();
  return rows;
}

const Executor* find_executor(ModelKind kind, std::string_view device, std::string_view isa) {
  for (const Executor& e : executors()) {
    if (e.kind == kind && device == e.device && (isa.empty() || isa == e.isa)) return &e;
  }
  return nullptr;
}

namespace {

// The first device row (not the cpu's) of the model's kind, or null.
const Executor* device_row(ModelKind kind) {
  for (const Executor& e : executors()) {
    if (e.kind == kind && !e.host) return &e;
  }
  return nullptr;
}

}  // namespace

void place(Model& model, Device device, const std::string& isa) {
  model.device = device;
  model.host = &cpu_executor(model.kind, isa);
  model.on_device = nullptr;
  model.resident = nullptr;
  if (device == Device::cpu) return;
  const DeviceBackend* be = device_backend();
  const Executor* row = device_row(model.kind);
  if (device == Device::cuda) {
    if (be == nullptr) {
      throw Error("device 'cuda' was asked for, but this build of qfleet has no CUDA backend "
                  "(configure with nvcc on PATH and -DQFLEET_ENABLE_CUDA=ON); use device 'cpu'");
    }
    if (row == nullptr) {
      throw Error(std::string("device '") + be->name() + "' does not run " + model_kind_name(model.kind) +
                  " models; compile with device cpu or automatic");
    }
    const std::string why = row->supports(*row, model);
    if (!why.empty()) throw Error(why + "; compile with device cpu or automatic");
  } else if (be == nullptr || row == nullptr || be->device_count() == 0 || !row->supports(*row, model).empty()) {
    return;  // automatic: the cpu
  }
  model.resident = row->prepare(*row, model);
  model.on_device = row;
}

double call_flops(const Model& model, std::size_t batch, bool adjoint) {
  return double(batch) * (model.flops_forward + (adjoint ? model.flops_adjoint : 0.0));
}

Route route_for_host_buffers(const Model& model, std::size_t batch, bool adjoint, std::size_t host_bytes) {
  if (model.device == Device::cuda) return Route::device_staged;
  const Executor& dev = *model.on_device;
  const Executor& cpu = *model.host;
  return dev.estimate_seconds(dev, model, batch, adjoint, host_bytes) <
                 cpu.estimate_seconds(cpu, model, batch, adjoint, host_bytes)
             ? Route::device_staged
             : Route::cpu;
}

namespace {
const Executor& row_of(const Model& model, Route route) {
  return route == Route::cpu ? *model.host : *model.on_device;
}
}  // namespace

void run_call(const Model& model, Route route, const CallRef& call) {
  const Executor& row = row_of(model, route);
  row.run(row, model, call);
}

std::string describe_call(const Model& model, Route route, std::size_t batch, bool adjoint) {
  const Executor& row = row_of(model, route);
  return row.describe(row, model, batch, adjoint);
}

}  // namespace qfleet::detail
