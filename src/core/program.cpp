// The Program API: checks each call's arguments (shapes, finiteness, embedding
// norms), then hands the batch to the backend. Nothing is written before every
// check has passed.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>

#include "core/backend.hpp"
#include "core/call_checks.hpp"
#include "core/dm_compiled.hpp"
#include "core/executor.hpp"
#include "core/plan.hpp"
#include "kernels/sv_plan.hpp"
#include "qfleet/error.hpp"
#include "qfleet/program.hpp"

namespace qfleet {

namespace {
thread_local void* t_cuda_stream = nullptr;
}  // namespace

void set_cuda_stream(void* stream) { t_cuda_stream = stream; }
void* cuda_stream() { return t_cuda_stream; }

namespace {

using detail::expect_finite;
using detail::expect_size;

bool is_dm(const detail::Plan& p) { return p.kind == detail::ModelKind::density_matrix; }

// forward/vjp/jacobian need outputs; states() and sample() do not.
void expect_measurements(const detail::Plan& p) {
  if (p.n_outputs == 0) {
    throw Error("the circuit has no measurement: add expval(...) or probs(...) to use forward, vjp or jacobian");
  }
}

struct Checked {
  bool per_sample_weights = false;
};

template <class R>
Checked check_args(const detail::Plan& p, const BatchArgs<R>& a, bool values_on_host = true) {
  detail::expect_precision<R>(p.precision);
  if (a.batch == 0) throw Error("batch must be at least 1");
  if (a.batch > (std::size_t{1} << 40)) throw Error("batch too large");
  expect_size("inputs", a.inputs.size(), a.batch * p.n_inputs, [&] {
    return "([batch=" + std::to_string(a.batch) + ", n_inputs=" + std::to_string(p.n_inputs) + "])";
  });
  Checked c;
  const std::size_t nw = p.n_weights;
  if (a.weights.size() == nw) {
    c.per_sample_weights = false;
  } else if (nw > 0 && a.weights.size() == a.batch * nw) {
    c.per_sample_weights = true;
  } else {
    throw Error("weights has " + std::to_string(a.weights.size()) + " values, expected " +
                std::to_string(nw) + " (shared [n_weights]) or " + std::to_string(a.batch * nw) +
                " (per sample [batch=" + std::to_string(a.batch) + ", n_weights=" + std::to_string(nw) + "])");
  }
  if (!values_on_host) return c;  // device data: shapes only (see docs/architecture.md)
  expect_finite("inputs", a.inputs, p.n_inputs);
  expect_finite("weights", a.weights, nw);
  detail::check_channel_args(p, a, c.per_sample_weights);
  if (p.amp.active) {
    for (std::size_t s = 0; s < a.batch; ++s) {
      double nrm = 0;
      for (std::size_t j = 0; j < p.amp.index.size(); ++j) {
        const double v = j < std::size_t(p.amp.n_features)
                             ? double(a.inputs[s * p.n_inputs + p.amp.first_input + j])
                             : p.amp.pad;
        nrm += v * v;
      }
      if (p.amp.normalize && nrm == 0) {
        throw Error("AmplitudeEmbedding: sample " + std::to_string(s) + " has all-zero features; cannot normalise");
      }
      const double tol = std::is_same_v<R, float> ? 1e-5 : 1e-10;
      if (!p.amp.normalize && std::abs(nrm - 1.0) > tol * std::max<double>(1.0, p.amp.index.size())) {
        throw Error("AmplitudeEmbedding: features of sample " + std::to_string(s) +
                    " have squared norm " + std::to_string(nrm) + ", not 1; pass normalize=true");
      }
    }
  }
  return c;
}

template <class R>
kern::SvCall<R> base_call(const BatchArgs<R>& a, const Checked& c) {
  kern::SvCall<R> call;
  call.batch = a.batch;
  call.inputs = a.inputs.data();
  call.weights = a.weights.data();
  call.weights_per_sample = c.per_sample_weights;
  return call;
}

using detail::Route;

// Element counts of a call's buffers, in the order of Call's pointer fields.
// A call's buffers for the device backend (staging, bytes moved): each role's pointer and
// its length in reals (kern::for_each_buffer's order, which the backend walks too).
template <class R>
detail::CallBuffers call_buffers(const detail::Plan& p, const kern::SvCall<R>& c) {
  using kern::SvBuffer;
  const std::size_t B = c.batch, K = p.n_outputs, ni = p.n_inputs, nw = p.n_weights;
  const std::size_t state = is_dm(p) ? p.dim * p.dim : p.dim;  // density matrices: 4^n entries
  std::size_t len[kern::kSvBuffers] = {};
  len[int(SvBuffer::inputs)] = B * ni;
  len[int(SvBuffer::weights)] = c.weights_per_sample ? B * nw : nw;
  len[int(SvBuffer::outputs)] = B * K;
  len[int(SvBuffer::cotangents)] = B * K;
  len[int(SvBuffer::grad_inputs)] = B * ni;
  len[int(SvBuffer::grad_weights)] = c.reduce_weights ? nw : B * nw;
  len[int(SvBuffer::states)] = B * state * 2;
  len[int(SvBuffer::extra_probs)] = c.extra_probs ? B << c.extra_k : 0;
  detail::CallBuffers b;
  b.n = kern::kSvBuffers;
  kern::for_each_buffer(c, [&](SvBuffer role, const auto* ptr, bool output) {
    const int i = int(role);
    b.ptr[i] = ptr;
    b.bytes[i] = ptr != nullptr ? len[i] * sizeof(R) : 0;
    b.output[i] = output;
  });
  return b;
}

template <class R>
std::size_t host_bytes(const detail::Plan& p, const kern::SvCall<R>& c) {
  return call_buffers(p, c).total_bytes();
}

// The route of a call whose (non-empty) buffers are `ptrs`.
template <class R>
Route route_of(const detail::Plan& p, const kern::SvCall<R>& c, std::initializer_list<const void*> ptrs) {
  if (!p.resident) return Route::cpu;
  return detail::route_call(p, ptrs, c.batch, c.cotangents != nullptr, host_bytes(p, c));
}

template <class R>
const void* data_of(std::span<R> s) {
  return s.empty() ? nullptr : s.data();
}

template <class R>
void run(const detail::Plan& p, const kern::SvCall<R>& c, Route r) {
  if (r == Route::cpu) return detail::run_call(p, r, {&c, std::is_same_v<R, float>, nullptr, false, nullptr});
  const detail::CallBuffers buffers = call_buffers(p, c);  // what a device row stages
  detail::run_call(p, r, {&c, std::is_same_v<R, float>, &buffers, r == Route::device_staged, t_cuda_stream});
}

void expect_host(Route r, const char* what) {
  if (r == Route::device_buffers) {
    throw Error(std::string(what) + " takes host buffers (it returns its results on the host); use vjp() with "
                "one-hot cotangents or states() for device-resident data");
  }
}

}  // namespace

Program::Program(std::shared_ptr<const detail::Plan> plan) : plan_(std::move(plan)) {}

int Program::n_qubits() const { return plan_->n; }
int Program::n_inputs() const { return plan_->n_inputs; }
int Program::n_weights() const { return plan_->n_weights; }
int Program::n_outputs() const { return plan_->n_outputs; }
Precision Program::precision() const { return plan_->precision; }
std::string Program::isa() const { return plan_->host->isa; }
int Program::lanes() const {
  return plan_->precision == Precision::complex64 ? plan_->host->lanes_f32 : plan_->host->lanes_f64;
}
const Circuit& Program::circuit() const { return plan_->circuit; }

template <class R>
void Program::forward(const BatchArgs<R>& args, std::span<R> outputs) const {
  expect_measurements(*plan_);
  kern::SvCall<R> call = base_call(args, Checked{});
  call.outputs = outputs.data();
  const Route r = route_of(*plan_, call, {data_of(args.inputs), data_of(args.weights), data_of(outputs)});
  const Checked c = check_args(*plan_, args, r != Route::device_buffers);
  expect_size("outputs", outputs.size(), args.batch * plan_->n_outputs,
              [&] { return "([batch, n_outputs=" + std::to_string(plan_->n_outputs) + "])"; });
  call.weights_per_sample = c.per_sample_weights;
  run(*plan_, call, r);
}

template <class R>
std::vector<R> Program::forward(const BatchArgs<R>& args) const {
  std::vector<R> out(args.batch * std::size_t(plan_->n_outputs));
  forward(args, std::span<R>(out));
  return out;
}

std::size_t Program::saved_size(std::size_t batch) const {
  return is_dm(*plan_) || plan_->resident ? 0 : batch * plan_->dim * 2;
}

template <class R>
void Program::forward(const BatchArgs<R>& args, std::span<R> outputs, std::span<R> saved) const {
  if (saved.empty()) return forward(args, outputs);
  if (saved_size(args.batch) == 0) {
    throw Error(std::string("this program cannot save states for vjp_saved() (") +
                (is_dm(*plan_) ? "it simulates density matrices" : "it has a GPU copy") +
                "): pass an empty `saved` (vjp_saved() then runs vjp())");
  }
  expect_measurements(*plan_);
  const Checked c = check_args(*plan_, args);
  expect_size("outputs", outputs.size(), args.batch * plan_->n_outputs,
              [&] { return "([batch, n_outputs=" + std::to_string(plan_->n_outputs) + "])"; });
  expect_size("saved", saved.size(), saved_size(args.batch), [] { return "(saved_size(batch): [batch, 2^n] complex)"; });
  kern::SvCall<R> call = base_call(args, c);
  call.outputs = outputs.data();
  call.states = saved.data();
  run(*plan_, call, Route::cpu);
}

template <class R>
void Program::vjp_saved(const BatchArgs<R>& args, std::span<const R> saved, std::span<const R> cotangents,
                        const Gradients<R>& grads) const {
  if (saved_size(args.batch) == 0) return vjp(args, cotangents, grads);
  expect_size("saved", saved.size(), saved_size(args.batch),
              [] { return "(saved_size(batch), written by forward() for these arguments)"; });
  vjp_call(args, cotangents, grads, {}, saved.data());
}

template <class R>
void Program::vjp(const BatchArgs<R>& args, std::span<const R> cotangents, const Gradients<R>& grads,
                  std::span<R> outputs) const {
  vjp_call(args, cotangents, grads, outputs, static_cast<const R*>(nullptr));
}

template <class R>
void Program::vjp_call(const BatchArgs<R>& args, std::span<const R> cotangents, const Gradients<R>& grads,
                       std::span<R> outputs, const R* resume) const {
  expect_measurements(*plan_);
  const Route r = route_of(*plan_, kern::SvCall<R>{},
                           {data_of(args.inputs), data_of(args.weights), data_of(cotangents), data_of(grads.inputs),
                            data_of(grads.weights), data_of(outputs)});
  const Checked c = check_args(*plan_, args, r != Route::device_buffers);
  const std::size_t B = args.batch;
  expect_size("cotangents", cotangents.size(), B * plan_->n_outputs,
              [&] { return "([batch, n_outputs=" + std::to_string(plan_->n_outputs) + "])"; });
  if (r != Route::device_buffers) expect_finite("cotangents", cotangents, plan_->n_outputs);
  if (!grads.inputs.empty()) expect_size("grad_inputs", grads.inputs.size(), B * plan_->n_inputs, [] { return "([batch, n_inputs])"; });
  if (!grads.weights.empty()) {
    expect_size("grad_weights", grads.weights.size(),
                c.per_sample_weights ? B * plan_->n_weights : std::size_t(plan_->n_weights), [&] {
                  return c.per_sample_weights ? "([batch, n_weights], like the per-sample weights)"
                                              : "([n_weights], like the shared weights)";
                });
  }
  if (!outputs.empty()) expect_size("outputs", outputs.size(), B * plan_->n_outputs, [] { return "([batch, n_outputs])"; });
  kern::SvCall<R> call = base_call(args, c);
  call.cotangents = cotangents.data();
  call.grad_inputs = grads.inputs.empty() ? nullptr : grads.inputs.data();
  call.grad_weights = grads.weights.empty() ? nullptr : grads.weights.data();
  call.reduce_weights = !c.per_sample_weights;
  call.outputs = outputs.empty() ? nullptr : outputs.data();
  call.resume = resume;  // non-null only where saved_size() > 0: no device copy, so the cpu runs it
  run(*plan_, call, r == Route::device_buffers ? r : route_of(*plan_, call, {}));
}

template <class R>
void Program::jacobian(const BatchArgs<R>& args, std::span<R> jac_inputs, std::span<R> jac_weights) const {
  expect_measurements(*plan_);
  expect_host(route_of(*plan_, kern::SvCall<R>{}, {data_of(args.inputs), data_of(args.weights)}), "jacobian()");
  const Checked c = check_args(*plan_, args);
  const std::size_t B = args.batch, K = plan_->n_outputs, ni = plan_->n_inputs, nw = plan_->n_weights;
  if (!jac_inputs.empty()) expect_size("jac_inputs", jac_inputs.size(), B * K * ni, [] { return "([batch, n_outputs, n_inputs])"; });
  if (!jac_weights.empty()) expect_size("jac_weights", jac_weights.size(), B * K * nw, [] { return "([batch, n_outputs, n_weights])"; });
  std::vector<R> cot(B * K), gi(B * ni), gw(B * nw);
  for (std::size_t k = 0; k < K; ++k) {  // one adjoint sweep per output row of the Jacobian
    std::fill(cot.begin(), cot.end(), R(0));
    for (std::size_t b = 0; b < B; ++b) cot[b * K + k] = 1;
    kern::SvCall<R> call = base_call(args, c);
    call.cotangents = cot.data();
    call.grad_inputs = gi.data();
    call.grad_weights = gw.data();
    call.reduce_weights = false;
    run(*plan_, call, route_of(*plan_, call, {}));
    for (std::size_t b = 0; b < B; ++b) {
      if (!jac_inputs.empty()) std::copy_n(gi.data() + b * ni, ni, jac_inputs.data() + (b * K + k) * ni);
      if (!jac_weights.empty()) std::copy_n(gw.data() + b * nw, nw, jac_weights.data() + (b * K + k) * nw);
    }
  }
}

template <class R>
void Program::states(const BatchArgs<R>& args, std::span<std::complex<R>> out) const {
  if (is_dm(*plan_)) {
    throw Error("this program simulates density matrices (the circuit is noisy, or simulator density_matrix was "
                "asked): use density_matrices(); states() is for state-vector programs");
  }
  kern::SvCall<R> call = base_call(args, Checked{});
  call.states = reinterpret_cast<R*>(out.data());
  const Route r = route_of(*plan_, call, {data_of(args.inputs), data_of(args.weights), data_of(out)});
  const Checked c = check_args(*plan_, args, r != Route::device_buffers);
  expect_size("states", out.size(), args.batch * plan_->dim, [] { return "([batch, 2^n])"; });
  call.weights_per_sample = c.per_sample_weights;
  run(*plan_, call, r);
}

template <class R>
void Program::density_matrices(const BatchArgs<R>& args, std::span<std::complex<R>> out) const {
  if (!is_dm(*plan_)) {
    throw Error("this program simulates state vectors: use states(), or compile with simulator density_matrix");
  }
  kern::SvCall<R> call = base_call(args, Checked{});
  call.states = reinterpret_cast<R*>(out.data());
  const Route r = route_of(*plan_, call, {data_of(args.inputs), data_of(args.weights), data_of(out)});
  const Checked c = check_args(*plan_, args, r != Route::device_buffers);
  expect_size("density_matrices", out.size(), args.batch * plan_->dim * plan_->dim,
              [] { return "([batch, 2^n, 2^n])"; });
  call.weights_per_sample = c.per_sample_weights;
  run(*plan_, call, r);
}

template <class R>
void Program::sample(const BatchArgs<R>& args, const std::vector<int>& wires, std::size_t shots,
                     std::uint64_t seed, std::span<std::uint64_t> out) const {
  expect_host(route_of(*plan_, kern::SvCall<R>{}, {data_of(args.inputs), data_of(args.weights)}), "sample()");
  const Checked c = check_args(*plan_, args);
  std::vector<int> w = wires;
  if (w.empty()) {
    for (int i = 0; i < plan_->n; ++i) w.push_back(i);
  }
  Circuit probe(plan_->n);
  probe.probs(w);  // validates the wires with the builder's messages
  if (w.size() > std::size_t(kern::kMaxSampleWires)) {  // the call record holds that many positions
    throw Error("sampling supports at most " + std::to_string(kern::kMaxSampleWires) + " wires at once");
  }
  expect_size("samples", out.size(), args.batch * shots, [] { return "([batch, shots])"; });
  const std::size_t no = std::size_t{1} << w.size();
  std::vector<R> probs(args.batch * no);
  kern::SvCall<R> call = base_call(args, c);
  call.extra_k = static_cast<int>(w.size());
  for (int i = 0; i < call.extra_k; ++i) call.extra_pos[i] = call.extra_sorted[i] = plan_->n - 1 - w[i];
  std::sort(call.extra_sorted, call.extra_sorted + call.extra_k);  // the group bodies' walk order
  call.extra_probs = probs.data();
  run(*plan_, call, route_of(*plan_, call, {}));
  std::vector<double> cdf(no);
  for (std::size_t b = 0; b < args.batch; ++b) {
    double run = 0;
    for (std::size_t j = 0; j < no; ++j) cdf[j] = (run += double(probs[b * no + j]));
    // Stream per sample: seeds derived by splitmix64 so streams are independent of threads.
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (b + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    std::mt19937_64 rng(z ^ (z >> 31));
    for (std::size_t s = 0; s < shots; ++s) {
      const double u = double(rng() >> 11) * 0x1.0p-53 * run;  // uniform in [0, total)
      const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
      out[b * shots + s] = std::min<std::size_t>(std::size_t(it - cdf.begin()), no - 1);
    }
  }
}

#define QFLEET_INSTANTIATE(R)                                                                         \
  template void Program::forward<R>(const BatchArgs<R>&, std::span<R>) const;                         \
  template std::vector<R> Program::forward<R>(const BatchArgs<R>&) const;                             \
  template void Program::vjp<R>(const BatchArgs<R>&, std::span<const R>, const Gradients<R>&,         \
                                std::span<R>) const;                                                  \
  template void Program::forward<R>(const BatchArgs<R>&, std::span<R>, std::span<R>) const;           \
  template void Program::vjp_saved<R>(const BatchArgs<R>&, std::span<const R>, std::span<const R>,    \
                                      const Gradients<R>&) const;                                     \
  template void Program::jacobian<R>(const BatchArgs<R>&, std::span<R>, std::span<R>) const;          \
  template void Program::states<R>(const BatchArgs<R>&, std::span<std::complex<R>>) const;            \
  template void Program::density_matrices<R>(const BatchArgs<R>&, std::span<std::complex<R>>) const;  \
  template void Program::sample<R>(const BatchArgs<R>&, const std::vector<int>&, std::size_t,        \
                                   std::uint64_t, std::span<std::uint64_t>) const;
QFLEET_INSTANTIATE(float)
QFLEET_INSTANTIATE(double)
#undef QFLEET_INSTANTIATE

Simulator Program::simulator() const { return is_dm(*plan_) ? Simulator::density_matrix : Simulator::statevector; }

Program compile(const Circuit& circuit, const CompileOptions& options) {
  const bool noisy = circuit.is_noisy();
  if (options.simulator == Simulator::statevector && noisy) {
    throw Error("this circuit is noisy (a channel, a readout error or a purity output) and needs the density-matrix "
                "simulator: compile with simulator density_matrix or automatic");
  }
  std::shared_ptr<detail::Plan> plan;
  if (options.simulator == Simulator::density_matrix || (options.simulator == Simulator::automatic && noisy)) {
    plan = std::make_shared<detail::Plan>(circuit);
    detail::build_dm_plan(circuit, options, *plan);
  } else {
    plan = std::make_shared<detail::Plan>(detail::build_plan(circuit, options));
  }
  detail::place(*plan, options.device, options.isa);
  return Program(std::move(plan));
}

Device Program::device() const { return plan_->device; }
int Program::cuda_device() const { return plan_->resident ? plan_->resident->device : -1; }

std::string Program::execution(std::size_t batch, bool adjoint) const {
  if (batch == 0) throw Error("batch must be at least 1");
  kern::SvCall<double> probe;
  probe.batch = batch;
  double cot = 0;
  if (adjoint) probe.cotangents = &cot;
  return detail::describe_call(*plan_, route_of(*plan_, probe, {}), batch, adjoint);
}

std::vector<std::string> available_isas() {
  std::vector<std::string> v;
  for (const detail::Executor& e : detail::executors()) {
    if (e.host && e.kind == detail::ModelKind::statevector) v.emplace_back(e.isa);
  }
  return v;
}

namespace {
const detail::DeviceBackend* device_backend_or_null_for(int device) {
  const detail::DeviceBackend* be = detail::device_backend();
  return be != nullptr && device >= 0 && device < be->device_count() ? be : nullptr;
}
}  // namespace

int cuda_device_count() {
  const detail::DeviceBackend* be = detail::device_backend();
  return be != nullptr ? be->device_count() : 0;
}
int cuda_compute_capability(int device) {
  const detail::DeviceBackend* be = device_backend_or_null_for(device);
  return be != nullptr ? be->compute_capability(device) : -1;
}
bool built_with_cuda() { return detail::device_backend() != nullptr; }

}  // namespace qfleet
