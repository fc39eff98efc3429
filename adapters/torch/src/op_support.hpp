// Argument checks and small helpers shared by the operator library's sources
// (ops.cpp: the operators and their autograd; program_calls.cpp: the programs' other
// methods). Internal to adapters/torch.
#pragma once

#include <cmath>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

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

}  // namespace qfleet::nn::op_support
