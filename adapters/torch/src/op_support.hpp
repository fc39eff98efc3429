// Argument checks and small helpers shared by the operator library's sources
// (ops.cpp: the operators and their autograd; open_outputs.cpp: every open-system
// output, differentiable; program_calls.cpp: the programs' other methods). Internal
// to adapters/torch.
#pragma once

#include <cmath>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include <algorithm>

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qfleet/error.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/message.hpp"
#include "qfleet/torch.hpp"

namespace qfleet::nn::op_support {

using ::torch::Tensor;

// Library errors reach Python as RuntimeError (ValueError/TypeError for the
// argument checks below), with qfleet's message unchanged.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error&) {
    throw;
  } catch (const qfleet::Error& e) {
    TORCH_CHECK(false, qfleet::capped_message(e.what()));
  }
}

inline nlohmann::json parse_json(const std::string& text, std::string_view what) {
  return guarded([&] { return json_problem::parse_text(text, what); });
}

inline ::torch::ScalarType real_dtype(Precision p) {
  return p == Precision::complex64 ? ::torch::kFloat32 : ::torch::kFloat64;
}

inline std::string dtype_name(::torch::ScalarType t) {
  if (t == ::torch::kFloat64) return "torch.float64";
  if (t == ::torch::kFloat32) return "torch.float32";
  return std::string("torch.") + c10::toString(t);
}

// Checks one real tensor argument: dtype, device, rank among `ranks`.
inline void check_tensor(const Tensor& t, const char* op, const char* name, ::torch::ScalarType dtype,
                  std::initializer_list<int64_t> ranks) {
  TORCH_CHECK_TYPE(t.scalar_type() == dtype, "qfleet.", op, ": ", name, " must be ", dtype_name(dtype),
                   " (float64 for complex128 programs, float32 for complex64), got ", dtype_name(t.scalar_type()));
  bool rank_ok = false;
  for (auto r : ranks) rank_ok = rank_ok || t.dim() == r;
  TORCH_CHECK_VALUE(rank_ok, "qfleet.", op, ": ", name, " has ", t.dim(), " dimension(s) ", t.sizes(),
                    "; expected ", ranks.size() == 1 ? "" : "one of ", c10::IntArrayRef(ranks), " dimensions");
}

inline void check_same_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (first == nullptr) {
      first = t;
    } else {
      TORCH_CHECK_VALUE(t->device() == first->device(), "qfleet.", op,
                        ": all tensors must be on one device, got ", first->device(), " and ", t->device());
    }
  }
}

// An optional argument for check_same_device (absent: an undefined tensor, skipped).
inline const Tensor kNoTensor;
inline const Tensor* opt_ptr(const std::optional<Tensor>& t) { return t.has_value() ? &*t : &kNoTensor; }

template <class R>
std::span<const R> cspan(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.const_data_ptr<R>(), static_cast<std::size_t>(t.numel())};
}
template <class R>
std::span<R> mspan(Tensor& t) {
  if (!t.defined()) return {};
  return {t.mutable_data_ptr<R>(), static_cast<std::size_t>(t.numel())};
}

// A cpu tensor's values (one or two dimensions) row-major, without Tensor::contiguous()
// where it is not: autograd hands the backward of `out.sum()` an expanded (stride 0)
// cotangent, and contiguous() on it goes through the dispatcher twice (empty_like, copy_),
// a few us of a B = 1 layer call's backward (`git show 62dd332:docs/benchmarks.md`, "The backward
// without copies") for a copy of a few hundred reals. `buffer` holds the copy when one is made.
template <class R>
std::span<const R> cpu_values(const Tensor& t, std::vector<R>& buffer) {
  if (t.is_contiguous()) return cspan<R>(t);
  const int64_t rows = t.size(0), cols = t.dim() == 2 ? t.size(1) : 1;
  const int64_t row_stride = t.stride(0), col_stride = t.dim() == 2 ? t.stride(1) : 0;
  buffer.resize(static_cast<std::size_t>(rows * cols));
  const R* src = t.const_data_ptr<R>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) buffer[static_cast<std::size_t>(i * cols + j)] = src[i * row_stride + j * col_stride];
  }
  return buffer;
}

// A gradient the engine's vjp writes in full (its contract; the engine's tests fill these
// spans with a sentinel first): no zero fill, except for an empty batch, where the engine
// is not called.
inline Tensor written_gradient(const Tensor& like, int64_t batch) {
  return batch > 0 ? ::torch::empty_like(like, at::MemoryFormat::Contiguous) : ::torch::zeros_like(like);
}

inline c10::OperatorHandle op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

struct CircuitShapes {
  int64_t batch;
};

inline CircuitShapes check_circuit(const CircuitProgram& p, const char* op, const Tensor& inputs,
                            const Tensor& weights) {
  const auto dt = p.dtype();
  check_tensor(inputs, op, "inputs", dt, {2});
  check_tensor(weights, op, "weights", dt, {1, 2});
  check_same_device(op, {&inputs, &weights});
  const int64_t B = inputs.size(0);
  TORCH_CHECK_VALUE(inputs.size(1) == p.n_inputs(), "qfleet.", op, ": inputs has shape ", inputs.sizes(),
                    " but the circuit reads ", p.n_inputs(), " input column(s); expected [B, ", p.n_inputs(), "]");
  if (weights.dim() == 1) {
    TORCH_CHECK_VALUE(weights.size(0) == p.n_weights(), "qfleet.", op, ": weights has shape ", weights.sizes(),
                      " but the circuit has ", p.n_weights(), " weight(s); expected [", p.n_weights(),
                      "] (shared) or [B, ", p.n_weights(), "] (per sample)");
  } else {
    TORCH_CHECK_VALUE(weights.size(0) == B && weights.size(1) == p.n_weights(), "qfleet.", op,
                      ": per-sample weights have shape ", weights.sizes(), "; expected [", B, ", ", p.n_weights(),
                      "] (B from inputs)");
  }
  return {B};
}

// Finite inputs can still overflow the solver (an amplitude of 1e300 makes the propagator
// infinite): fidelities on the CPU are checked (B numbers, next to the solve's cost) and
// a non-finite one is refused, naming the task and the largest inputs, as `qfleet eval`
// does (src/json/json_problem.cpp). On a GPU the check would cost a host transfer per
// call, so the fidelities come back as computed there.
// (A loop over the B values, no tensor operation: it runs on every call.)
inline void refuse_non_finite(const char* op, const char* what, const Tensor& out, const Tensor& a, const Tensor& c,
                              const Tensor& r) {
  if (!out.device().is_cpu() || out.numel() == 0) return;
  // Complex outputs (final states) as (re, im) pairs; a task's values are numel / B in a row.
  const Tensor v = (out.is_complex() ? at::view_as_real(out) : out).contiguous();
  const int64_t per = v.numel() / out.size(0);
  int64_t task = -1;
  AT_DISPATCH_FLOATING_TYPES(v.scalar_type(), "qfleet_refuse_non_finite", [&] {
    const scalar_t* f = v.const_data_ptr<scalar_t>();
    for (int64_t i = 0, n = v.numel(); i < n; ++i) {
      if (!std::isfinite(f[i])) {
        task = i / per;
        break;
      }
    }
  });
  if (task < 0) return;
  auto largest = [](const Tensor& t) { return t.defined() && t.numel() ? t.abs().max().item<double>() : 0.0; };
  TORCH_CHECK_VALUE(false, "qfleet.", op, ": the ", what, " of task ", task,
                    " is not finite: the inputs overflow the solver (the largest magnitudes: amplitudes ", largest(a),
                    ", drift_coeffs ", largest(c), ", rates ", largest(r), "); scale them down");
}

inline void refuse_non_finite(const char* op, const Tensor& fid, const Tensor& a, const Tensor& c, const Tensor& r) {
  refuse_non_finite(op, "fidelity", fid, a, c, r);
}

// The open-system arguments' shapes, dtypes and device; returns the batch size.
inline int64_t check_open(const OpenSystemProgram& p, const char* op, const Tensor& amplitudes,
                   const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  const auto dt = p.dtype();
  check_tensor(amplitudes, op, "amplitudes", dt, {2, 3});
  int64_t B = -1;
  const char* from = "";
  auto agree = [&](int64_t b, const char* name) {
    if (B < 0) {
      B = b;
      from = name;
    } else {
      TORCH_CHECK_VALUE(B == b, "qfleet.", op, ": ", name, " has ", b, " task(s) but ", from, " has ", B,
                        "; per-task arguments must agree on the batch size");
    }
  };
  const int64_t ns = p.n_segments(), nc = p.n_controls();
  const bool amp_ok = amplitudes.size(-2) == ns && amplitudes.size(-1) == nc;
  TORCH_CHECK_VALUE(amp_ok, "qfleet.", op, ": amplitudes has shape ", amplitudes.sizes(), "; expected [B, ", ns,
                    ", ", nc, "] (per task) or [", ns, ", ", nc, "] (shared): ", ns, " segments, ", nc, " controls");
  if (amplitudes.dim() == 3) agree(amplitudes.size(0), "amplitudes");
  auto vec_arg = [&](const std::optional<Tensor>& t, const char* name, int64_t n, const char* what) {
    if (!t.has_value() || !t->defined()) {
      TORCH_CHECK_VALUE(n == 0, "qfleet.", op, ": ", name, " is required: the system has ", n, " ", what);
      return;
    }
    check_tensor(*t, op, name, dt, {1, 2});
    TORCH_CHECK_VALUE(t->size(-1) == n, "qfleet.", op, ": ", name, " has shape ", t->sizes(), "; expected [B, ", n,
                      "] (per task) or [", n, "] (shared): the system has ", n, " ", what);
    if (t->dim() == 2) agree(t->size(0), name);
  };
  vec_arg(drift, "drift_coeffs", p.n_drift_terms(), "drift term(s)");
  vec_arg(rates, "rates", p.n_jumps(), "jump operator(s)");
  check_same_device(op, {&amplitudes, opt_ptr(drift), opt_ptr(rates)});
  return B < 0 ? 1 : B;
}

inline Tensor contig(const std::optional<Tensor>& t) { return t.has_value() && t->defined() ? t->contiguous() : Tensor(); }

// CUDA tensors:
// The same kernels as for CPU tensors: the program's GPU copy reads and writes the
// tensors in place, enqueued on PyTorch's current stream of their device (no host
// synchronisation, no allocation outside torch's caching allocator and the stream-
// ordered pool, so torch.cuda.graph can capture it). The stream comes through
// c10's device-generic guard interface, so this library links only the CPU half of
// LibTorch and still loads where no CUDA runtime is installed.

class StreamScope {  // qfleet::cuda_stream() for the call, the caller's restored after
 public:
  explicit StreamScope(void* stream) : prev_(qfleet::cuda_stream()) { qfleet::set_cuda_stream(stream); }
  ~StreamScope() { qfleet::set_cuda_stream(prev_); }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* prev_;
};

// Runs `kernel` on the tensors' device and its current stream, after checking they
// share one device (the CUDA kernel is chosen when any of them is a CUDA tensor) and
// the program has a copy there (program_device: Program::cuda_device()).
template <class F>
auto on_torch_stream(int program_device, const char* op, std::initializer_list<const Tensor*> ts, F&& kernel)
    -> decltype(kernel()) {
  check_same_device(op, ts);
  const Tensor& t = **std::find_if(ts.begin(), ts.end(), [](const Tensor* x) { return x->defined(); });
  TORCH_CHECK_VALUE(program_device >= 0, "qfleet.", op, ": the tensors are on ", t.device(),
                    " but the program has no GPU copy (it was compiled for device 'cpu', or 'automatic' where no "
                    "GPU was visible); compile it with device='cuda', or move the tensors to the CPU with .cpu()");
  TORCH_CHECK_VALUE(t.device().index() == program_device, "qfleet.", op, ": the tensors are on ", t.device(),
                    " but the program's copy is on cuda:", program_device,
                    "; compile the program with that device current (with torch.cuda.device(...)), or move the "
                    "tensors to cuda:", program_device);
  const c10::DeviceGuard device_guard(t.device());
  const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  const StreamScope stream(cuda.getStream(t.device()).native_handle());
  return kernel();
}

// Final states (forward only): [B, d, d] densities, [B, d] pure states,
// [B, d^2, d^2] superoperators or [B, d, d] unitaries, complex.
inline std::vector<int64_t> final_state_shape(const OpenSystemProgram& p, int64_t B) {
  const int64_t d = p.dim(), n = static_cast<int64_t>(p.program.final_state_size());
  if (n == d) return {B, d};
  if (n == d * d) return {B, d, d};
  return {B, d * d, d * d};
}

}  // namespace qfleet::nn::op_support
