// The cuda backend behind the seam of core/backend.hpp: plans uploaded once at
// compile time, the device side of the cost model, calls staged or on device
// buffers, launch shapes chosen (or pinned by QFLEET_CUDA_SHAPE, QFLEET_DM_CUDA_THREADS,
// QFLEET_OPEN_CUDA_SHAPE) and described. Host C++; the kernels are behind the C++17
// seams sv_cuda.hpp, dm_cuda.hpp and open_cuda.hpp.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/backend.hpp"
#include "core/dm_compiled.hpp"
#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "core/sv_pack.hpp"
#include "cuda/cuda_staging.hpp"
#include "cuda/dm_cuda.hpp"
#include "cuda/open_cuda.hpp"
#include "cuda/sv_cuda.hpp"
#include "qfleet/error.hpp"

namespace qfleet::gpu {
namespace {

using detail::CallBuffers;
using detail::OpenPlan;
using detail::Plan;

// A plan's packed blob in device memory, with the launch-shape inputs of its device.
struct CudaResident : detail::Resident {
  void* blob = nullptr;
  DeviceProps props;
  CudaResident() = default;
  CudaResident(const CudaResident&) = delete;
  CudaResident& operator=(const CudaResident&) = delete;
  ~CudaResident() override { free_device(blob); }
};
struct SvResident : CudaResident {
  kern::SvPlan view;  // the plan with device pointers
};
struct OpenResident : CudaResident {
  kern::OpenView view;
};
struct DmResident : CudaResident {
  kern::DmPlan view;  // the density-matrix plan with device pointers
};

const SvResident& resident_of(const Plan& p) { return static_cast<const SvResident&>(*p.resident); }
const OpenResident& resident_of(const OpenPlan& p) { return static_cast<const OpenResident&>(*p.resident); }

// The current device's properties; throws when none is visible.
DeviceProps visible_device() {
  if (device_count() == 0) {
    throw Error("device 'cuda' was asked for, but no CUDA device is visible to this process "
                "(no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them); use device 'cpu' or 'automatic'");
  }
  return device_props(current_device());
}

void upload(CudaResident& r, const std::vector<std::byte>& blob, const DeviceProps& props) {
  r.device = props.id;
  r.device_name = props.name;
  r.props = props;
  r.blob = malloc_device(blob.size());
  copy_to_device(r.blob, blob.data(), blob.size());
}

// The GPU rate is measured on an H100 (2026-11-24; `git show 9b5cc1b:docs/benchmarks.md`): the plan's
// FLOP estimate over the device time of bench_cuda's calls gave 0.34-0.55 TFLOP/s for
// the 4-qubit layer at B = 10^6, 0.7-0.9 for the 10-qubit target pass at B = 100, 1.3
// for the open qubit at B = 10^5 and 1.7 for the 10-qubit layer at B = 10^4; 1 TFLOP/s
// sits in that range. The call and PCIe constants are estimates: the staged host-data
// path has not been timed on a GPU.
constexpr double kGpuFlops = 1e12;
constexpr double kGpuCallSeconds = 25e-6;     // launch + two copies + stream synchronisation
constexpr double kPcieBytesPerSecond = 12e9;  // pageable host memory both ways

double gpu_seconds(double flops, std::size_t bytes_moved) {
  return kGpuCallSeconds + double(bytes_moved) / kPcieBytesPerSecond + flops / kGpuFlops;
}

void expect_fits(std::size_t bytes, const CudaResident& r) {
  if (double(bytes) > 0.9 * double(r.props.total_mem)) {
    throw Error("this call needs " + std::to_string(bytes >> 20) + " MiB of GPU memory, more than " + r.device_name +
                " has; use a smaller batch");
  }
}

// ---- circuits

// QFLEET_CUDA_SHAPE = registers | warp | block | interleaved | global pins the circuit launch
// shape (benchmarks and tests of every shape on a GPU); unset or `automatic`: chosen
// from n and the precision (launch_shape).
Strategy requested_strategy() {
  const char* env = std::getenv("QFLEET_CUDA_SHAPE");
  return env == nullptr || *env == 0 ? Strategy::automatic : parse_strategy(env);
}

// A call's buffers swapped for their staged device copies, by role (kern::for_each_buffer:
// the order program.cpp and open_program.cpp staged them in), for every kind's call record.
template <class Call>
void on_staged_buffers(Call& k, const StagedCall& staged_call) {
  kern::for_each_buffer(k, [&staged_call](auto role, auto& field, bool) {
    field = static_cast<std::remove_reference_t<decltype(field)>>(staged_call.device(int(role)));
  });
}

template <class R>
void run_circuits_call(const Plan& p, const kern::SvCall<R>& c, const CallBuffers& buffers, bool staged,
                       void* stream) {
  const SvResident& res = resident_of(p);
  DeviceGuard guard(res.device);
  kern::SvCall<R> k = c;  // staged calls swap in the device copies of the buffers
  const LaunchShape shape =
      launch_shape(res.view, c.batch, int(sizeof(R)), c.cotangents != nullptr, res.props, requested_strategy());
  expect_fits(shape.work_bytes + (staged ? buffers.total_bytes() + 16 * 8 : 0), res);
  if (!staged) {
    run_circuits(res.view, k, shape, stream);
    return;
  }
  // Host buffers: one stream-ordered arena, copies in, the launch, copies out, one sync.
  StagedCall staged_call(stream, buffers);
  on_staged_buffers(k, staged_call);
  run_circuits(res.view, k, shape, stream);
  staged_call.finish();
}

// ---- density-matrix circuits

// QFLEET_DM_CUDA_THREADS = 32 | 64 | 128 | 256 pins the block size of density-matrix calls
// (benchmarks and tests on a GPU); unset or `automatic`: chosen from the matrix size.
int requested_dm_threads() {
  const char* env = std::getenv("QFLEET_DM_CUDA_THREADS");
  return env == nullptr || *env == 0 ? 0 : parse_dm_threads(env);
}

// The checkpoint segments of a call on the device: one segment unless one sample's
// stored states would pass an eighth of the device memory.
std::vector<int> device_segments(const kern::DmPlan& v, bool adjoint, int real_bytes, const DeviceProps& props,
                                 kern::DmSegments& seg) {
  seg.per_segment = v.n_slots;
  std::vector<int> begin{0, v.n_ops};
  const double state = 2.0 * double(v.dim2) * real_bytes;
  if (adjoint && v.n_slots > 1 && (v.n_slots + 2) * state > 0.125 * double(props.total_mem)) {
    seg.per_segment = static_cast<int>(std::ceil(std::sqrt(double(v.n_slots))));
    begin = detail::cut_dm_segments(v, seg.per_segment);
  }
  seg.count = static_cast<int>(begin.size()) - 1;
  return begin;
}

template <class R>
void run_dm_call(const Plan& p, const kern::SvCall<R>& c, const CallBuffers& buffers, bool staged, void* stream) {
  const DmResident& res = static_cast<const DmResident&>(*p.resident);
  DeviceGuard guard(res.device);
  kern::DmSegments seg;
  const std::vector<int> begin = device_segments(res.view, c.cotangents != nullptr, int(sizeof(R)), res.props, seg);
  seg.begin = begin.data();
  const DmLaunch shape =
      dm_launch_shape(res.view, c.batch, int(sizeof(R)), c.cotangents != nullptr, seg, c.extra_k, res.props,
                      requested_dm_threads());
  expect_fits(shape.work_bytes + (staged ? buffers.total_bytes() + 16 * 8 : 0), res);
  kern::SvCall<R> k = c;
  if (!staged) {
    run_dm(res.view, k, seg, shape, stream);
    return;
  }
  StagedCall staged_call(stream, buffers);
  on_staged_buffers(k, staged_call);
  run_dm(res.view, k, seg, shape, stream);
  staged_call.finish();
}

// ---- open systems

constexpr int kFirstCap = 64, kMaxCap = 1 << 16;  // dopri5 steps per segment the GPU backward pass holds

// QFLEET_OPEN_CUDA_SHAPE = thread | warp | block pins the launch shape (for
// benchmarks and tests of every shape on a GPU); unset or `automatic`: chosen from n.
OpenShape requested_open_shape() {
  const char* env = std::getenv("QFLEET_OPEN_CUDA_SHAPE");
  return env == nullptr || *env == 0 ? OpenShape::automatic : parse_open_shape(env);
}

OpenLaunch open_shape(const OpenResident& res, const kern::OpenView& view, std::size_t batch, int real, int cap) {
  return open_launch_shape(view, batch, real, cap, res.props, requested_open_shape());
}

[[noreturn]] void throw_status(int status, int cap) {
  if (status & (1 << kern::kOpenStepCapacity)) {
    throw Error("more than " + std::to_string(cap) + " steps in one segment (dopri5/tsit5's accepted steps, or the "
                "exact solver's Taylor steps), more than the GPU workspace holds; loosen rtol/atol, shorten segments "
                "or use device 'cpu'");
  }
  throw Error("more than 10^6 steps in one segment (dopri5/tsit5: step size underflow, loosen rtol/atol; the exact "
              "solver's action: ||dt A||_1 too large or not finite)");
}

template <class R>
void run_open_call(const OpenPlan& p, const kern::OpenTaskCall<R>& c, const CallBuffers& buffers, bool staged,
                   void* stream) {
  const OpenResident& res = resident_of(p);
  DeviceGuard guard(res.device);
  const int real = int(sizeof(R));
  if (!staged) {  // (device durations are not read: rk4/euler take the compiled grid's most steps)
    run_open_tasks(res.view, c, open_shape(res, res.view, c.batch, real, kFirstCap), nullptr, stream);
    return;
  }
  const kern::OpenView view = detail::open_call_view(res.view, c);
  // Host buffers: one stream-ordered arena, copies in, the launch, copies out, one sync;
  // re-run with a larger dopri5 step store if a task needed one.
  for (int cap = kFirstCap;; cap *= 4) {
    const OpenLaunch shape = open_shape(res, view, c.batch, real, cap);
    expect_fits(shape.work_bytes + buffers.total_bytes(), res);
    StagedCall staged_call(stream, buffers, sizeof(int));
    kern::OpenTaskCall<R> k = c;
    on_staged_buffers(k, staged_call);
    run_open_tasks(view, k, shape, static_cast<int*>(staged_call.scratch()), stream);
    int status = 0;
    staged_call.finish(&status, sizeof(int));
    if (status == 0) return;
    if (!(status & (1 << kern::kOpenStepCapacity)) || cap >= kMaxCap) throw_status(status, cap);
  }
}

// ---- the backend

using detail::CallRef;
using detail::Executor;
using detail::Model;
using detail::ModelKind;

const Plan& circuit_of(const Model& m) { return static_cast<const Plan&>(m); }
const OpenPlan& open_of(const Model& m) { return static_cast<const OpenPlan&>(m); }
int real_bytes(const Model& m) { return m.precision == Precision::complex64 ? 4 : 8; }

template <class Record>
const Record& record(const CallRef& c) {
  return *static_cast<const Record*>(c.record);
}

std::string runs_every_model(const Executor&, const Model&) { return {}; }
// The GPU body starts from |0...0><0...0| (kernels/dm_group.hpp): an amplitude-embedded
// density-matrix circuit stays on the cpu.
std::string dm_supports(const Executor&, const Model& m) {
  return circuit_of(m).amp.active ? "density-matrix circuits with AmplitudeEmbedding run on the cpu only" : "";
}

double estimate_seconds(const Executor&, const Model& m, std::size_t batch, bool adjoint, std::size_t bytes) {
  return gpu_seconds(detail::call_flops(m, batch, adjoint), bytes);
}

std::shared_ptr<const detail::Resident> prepare_sv(const Executor&, const Model& m) {
  const Plan& plan = circuit_of(m);
  const DeviceProps props = visible_device();
  const double per_circuit = std::ldexp(2.0 * 2.0 * real_bytes(m), plan.n);  // psi and lam
  if (per_circuit > 0.9 * static_cast<double>(props.total_mem)) {
    throw Error("a " + std::to_string(plan.n) + "-qubit circuit's adjoint needs " + detail::gib(per_circuit) +
                " on the GPU, but " + props.name + " has " + detail::gib(double(props.total_mem)) +
                "; use device 'cpu'");
  }
  auto r = std::make_shared<SvResident>();
  upload(*r, plan.blob, props);
  r->view = detail::sv_view_at(plan.offsets, static_cast<const std::byte*>(r->blob));
  return r;
}
std::shared_ptr<const detail::Resident> prepare_dm(const Executor&, const Model& m) {
  const Plan& plan = circuit_of(m);
  const DeviceProps props = visible_device();
  auto r = std::make_shared<DmResident>();
  upload(*r, plan.dm->blob, props);
  r->view = detail::dm_view_at(plan.dm->offsets, static_cast<const std::byte*>(r->blob));
  return r;
}
std::shared_ptr<const detail::Resident> prepare_open(const Executor&, const Model& m) {
  const OpenPlan& plan = open_of(m);
  const DeviceProps props = visible_device();
  auto r = std::make_shared<OpenResident>();
  upload(*r, plan.blob, props);
  r->view = detail::open_view_at(plan.offsets, static_cast<const std::byte*>(r->blob));
  return r;
}

void run_sv(const Executor&, const Model& m, const CallRef& c) {
  if (c.f32) return run_circuits_call(circuit_of(m), record<kern::SvCall<float>>(c), *c.buffers, c.staged, c.stream);
  run_circuits_call(circuit_of(m), record<kern::SvCall<double>>(c), *c.buffers, c.staged, c.stream);
}
void run_dm(const Executor&, const Model& m, const CallRef& c) {
  if (c.f32) return run_dm_call(circuit_of(m), record<kern::SvCall<float>>(c), *c.buffers, c.staged, c.stream);
  run_dm_call(circuit_of(m), record<kern::SvCall<double>>(c), *c.buffers, c.staged, c.stream);
}
void run_open(const Executor&, const Model& m, const CallRef& c) {
  if (c.f32) return run_open_call(open_of(m), record<kern::OpenTaskCall<float>>(c), *c.buffers, c.staged, c.stream);
  run_open_call(open_of(m), record<kern::OpenTaskCall<double>>(c), *c.buffers, c.staged, c.stream);
}

// ", 3 runs of constant permutation gates fused" where the launch's groups apply the
// plan's runs fused (kern::perm_runs_fused, the bodies' own rule).
std::string fused_runs(int runs, std::uint64_t entries, int per_member, int threads) {
  if (!kern::perm_runs_fused(runs, entries, per_member, threads)) return "";
  return ", " + std::to_string(runs) + (runs == 1 ? " run" : " runs") + " of constant permutation gates fused";
}

// ", 2 runs of diagonal gates fused" where the launch's groups apply them fused
// (kern::diag_runs_fused, the body's own rule): the group shapes that sync a block.
std::string diagonal_runs(int runs, const LaunchShape& s) {
  const bool block_barrier = s.strategy == Strategy::block || s.strategy == Strategy::interleaved ||
                             s.strategy == Strategy::global;
  if (!kern::diag_runs_fused(runs, s.table > 0, block_barrier)) return "";
  return ", " + std::to_string(runs) + (runs == 1 ? " run" : " runs") + " of diagonal gates fused";
}

std::string describe_sv(const Executor&, const Model& m, std::size_t batch, bool adjoint) {
  const SvResident& res = resident_of(circuit_of(m));
  const LaunchShape s = launch_shape(res.view, batch, real_bytes(m), adjoint, res.props, requested_strategy());
  return "cuda " + std::string(strategy_name(s.strategy)) + ": " + std::to_string(s.group) +
         " threads per circuit, " + std::to_string(s.per_block) + " circuits per block, " +
         std::to_string(s.smem) + " B shared memory, " + std::to_string(s.blocks) + " blocks on " +
         res.device_name + fused_runs(res.view.n_perm_runs, res.view.dim, kern::kPermPerMember, s.group) +
         diagonal_runs(res.view.n_diag_runs, s);
}
std::string describe_dm(const Executor&, const Model& m, std::size_t batch, bool adjoint) {
  const DmResident& res = static_cast<const DmResident&>(*m.resident);
  kern::DmSegments seg;
  const std::vector<int> begin = device_segments(res.view, adjoint, real_bytes(m), res.props, seg);
  const DmLaunch s = dm_launch_shape(res.view, batch, real_bytes(m), adjoint, seg, 0, res.props, requested_dm_threads());
  return "cuda density matrices: a block of " + std::to_string(s.threads) + " threads per sample, " +
         std::to_string(s.blocks) + " blocks, " + std::to_string(s.smem_bytes) + " B shared memory, " +
         std::to_string(s.work_bytes >> 20) + " MiB global scratch on " + res.device_name +
         fused_runs(res.view.n_perm_runs, res.view.dim2, kern::kDmPermPerMember, s.threads);
}
std::string describe_open(const Executor&, const Model& m, std::size_t batch, bool /*adjoint*/) {
  const OpenResident& res = resident_of(open_of(m));
  const OpenLaunch s = open_shape(res, res.view, batch, real_bytes(m), kFirstCap);
  const std::string where = s.smem > 0 ? std::to_string(s.smem >> 10) + " KiB shared memory per block"
                                       : std::to_string(s.work_bytes >> 20) + " MiB global workspace";
  return "cuda " + std::string(open_shape_name(s.shape)) +
         (s.group == 1           ? " (a thread per task): "
          : s.group < s.threads ? " (" + std::to_string(s.group) + " lanes of a warp per task): "
                                : " (a block of " + std::to_string(s.group) + " threads per task): ") +
         std::to_string(s.threads) + " threads per block, " + std::to_string(s.blocks) + " blocks, " + where +
         " on " + res.device_name;
}

class CudaBackend final : public detail::DeviceBackend {
 public:
  std::string name() const override { return "cuda"; }
  int device_count() const override { return gpu::device_count(); }
  int compute_capability(int device) const override {
    const DeviceProps p = gpu::device_props(device);
    return 10 * p.cc_major + p.cc_minor;
  }
  bool is_device_pointer(const void* p) const override { return gpu::is_device_pointer(p); }
  // Batch granularity: the warp.
  std::vector<Executor> executors() const override {
    auto row = [this](ModelKind kind, auto supports, auto prepare, auto run, auto describe) {
      return Executor{.kind = kind,
                      .device = "cuda",
                      .isa = "",
                      .context = this,
                      .host = false,
                      .lanes_f32 = 32,
                      .lanes_f64 = 32,
                      .supports = supports,
                      .prepare = prepare,
                      .estimate_seconds = &estimate_seconds,
                      .run = run,
                      .describe = describe};
    };
    return {row(ModelKind::statevector, &runs_every_model, &prepare_sv, &run_sv, &describe_sv),
            row(ModelKind::density_matrix, &dm_supports, &prepare_dm, &run_dm, &describe_dm),
            row(ModelKind::open_system, &runs_every_model, &prepare_open, &run_open, &describe_open)};
  }
};

}  // namespace
}  // namespace qfleet::gpu

namespace qfleet::detail {

const DeviceBackend* device_backend() {
  static const gpu::CudaBackend backend;
  return &backend;
}

}  // namespace qfleet::detail
