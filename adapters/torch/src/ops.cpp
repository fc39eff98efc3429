// TORCH_LIBRARY(qfleet): the custom classes, the operators' schemas and their
// CPU, CUDA and Autograd kernels. See include/qfleet/torch.hpp for the contract.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "control/classes.hpp"
#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"
#include "qfleet/error.hpp"
#include "qfleet/names.hpp"
#include "qfleet/torch.hpp"
#include "autocast_rule.hpp"
#include "op_support.hpp"

namespace qfleet::nn {

using ::torch::Tensor;

namespace {

using namespace op_support;  // guarded, check_tensor, cspan, check_circuit, ... (op_support.hpp)

// ---- circuits ------------------------------------------------------------------

Tensor circuit_forward_kernel(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                           const Tensor& weights) {
  const auto s = check_circuit(*p, "circuit_forward", inputs, weights);
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  Tensor out = ::torch::empty({s.batch, p->n_outputs()}, inputs.options());
  if (s.batch == 0) return out;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_circuit_forward", [&] {
      p->program.forward<scalar_t>(BatchArgs<scalar_t>{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                                   mspan<scalar_t>(out));
    });
  });
  return out;
}

void check_grad_outputs(const CircuitProgram& p, const Tensor& g, int64_t B) {
  check_tensor(g, "circuit_backward", "grad_outputs", p.dtype(), {2});
  TORCH_CHECK_VALUE(g.size(0) == B && g.size(1) == p.n_outputs(), "qfleet.circuit_backward: grad_outputs has shape ",
                    g.sizes(), "; expected [", B, ", ", p.n_outputs(), "]");
}

std::tuple<Tensor, Tensor> circuit_backward_kernel(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                                const Tensor& weights, const Tensor& grad_outputs) {
  const auto s = check_circuit(*p, "circuit_backward", inputs, weights);
  check_grad_outputs(*p, grad_outputs, s.batch);
  const Tensor x = inputs.contiguous(), w = weights.contiguous(), g = grad_outputs.contiguous();
  Tensor gx = ::torch::zeros_like(x), gw = ::torch::zeros_like(w);
  if (s.batch == 0) return {gx, gw};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_circuit_backward", [&] {
      p->program.vjp<scalar_t>(BatchArgs<scalar_t>{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                               cspan<scalar_t>(g), Gradients<scalar_t>{mspan<scalar_t>(gx), mspan<scalar_t>(gw)});
    });
  });
  return {gx, gw};
}

// ---- open systems --------------------------------------------------------------

Tensor open_forward_kernel(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                        const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  const int64_t B = check_open(*p, "open_forward", amplitudes, drift, rates);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates);
  Tensor fid = ::torch::empty({B}, amplitudes.options());
  if (B == 0) return fid;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_forward", [&] {
      TaskOutputs<scalar_t> out;
      out.fidelity = mspan<scalar_t>(fid);
      p->program.forward<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}}, out);
    });
  });
  refuse_non_finite("open_forward", fid, a, c, r);
  return fid;
}

Tensor open_final_state_kernel(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                            const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  const int64_t B = check_open(*p, "open_final_state", amplitudes, drift, rates);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates);
  const auto ctype = a.scalar_type() == ::torch::kFloat32 ? ::torch::kComplexFloat : ::torch::kComplexDouble;
  Tensor out = ::torch::empty(final_state_shape(*p, B), a.options().dtype(ctype));
  if (B == 0) return out;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_final_state", [&] {
      TaskOutputs<scalar_t> o;
      o.final_state = {reinterpret_cast<std::complex<scalar_t>*>(out.mutable_data_ptr()), std::size_t(out.numel())};
      p->program.forward<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}}, o);
    });
  });
  refuse_non_finite("open_final_state", "final state", out, a, c, r);
  return out;
}

// Not differentiable: asking for its gradient is an error at the call, not a silent zero later.
Tensor open_final_state_autograd(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                                 const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  const bool wants_grad = ::torch::GradMode::is_enabled() &&
                          (amplitudes.requires_grad() || (drift && drift->defined() && drift->requires_grad()) ||
                           (rates && rates->defined() && rates->requires_grad()));
  TORCH_CHECK_VALUE(!wants_grad,
                    "qfleet.open_final_state is not differentiable (it returns the final states); call it on "
                    "detached tensors or under torch.no_grad(), and differentiate fidelities with open_forward");
  at::AutoDispatchBelowADInplaceOrView guard;
  static const auto op = op_handle("qfleet::open_final_state").typed<decltype(open_final_state_kernel)>();
  return op.call(p, amplitudes, drift, rates);
}

Tensor zeros_like_opt(const std::optional<Tensor>& t) {
  return t.has_value() && t->defined() ? ::torch::zeros_like(*t) : Tensor();
}

void check_grad_fidelity(const OpenSystemProgram& p, const Tensor& g, int64_t B) {
  check_tensor(g, "open_backward", "grad_fidelity", p.dtype(), {1});
  TORCH_CHECK_VALUE(g.size(0) == B, "qfleet.open_backward: grad_fidelity has shape ", g.sizes(), "; expected [", B,
                    "]");
}

std::tuple<Tensor, Tensor, Tensor> open_backward_kernel(const c10::intrusive_ptr<OpenSystemProgram>& p,
                                                     const Tensor& amplitudes, const std::optional<Tensor>& drift,
                                                     const std::optional<Tensor>& rates, const Tensor& grad_fidelity) {
  const int64_t B = check_open(*p, "open_backward", amplitudes, drift, rates);
  check_grad_fidelity(*p, grad_fidelity, B);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates), g = grad_fidelity.contiguous();
  Tensor ga = ::torch::zeros_like(a), gc = zeros_like_opt(drift), gr = zeros_like_opt(rates);
  if (B == 0) return {ga, gc, gr};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_backward", [&] {
      p->program.vjp<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}},
          cspan<scalar_t>(g), {}, TaskGradients<scalar_t>{mspan<scalar_t>(ga), mspan<scalar_t>(gc), mspan<scalar_t>(gr)});
    });
  });
  return {ga, gc, gr};
}

// ---- CUDA tensors: the same kernels on the tensors' device and stream (op_support.hpp's on_torch_stream)

Tensor circuit_forward_cuda(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs, const Tensor& weights) {
  return on_torch_stream(p->program.cuda_device(), "circuit_forward", {&inputs, &weights},
                         [&] { return circuit_forward_kernel(p, inputs, weights); });
}

std::tuple<Tensor, Tensor> circuit_backward_cuda(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                                 const Tensor& weights, const Tensor& grad_outputs) {
  return on_torch_stream(p->program.cuda_device(), "circuit_backward", {&inputs, &weights, &grad_outputs},
                         [&] { return circuit_backward_kernel(p, inputs, weights, grad_outputs); });
}

Tensor open_forward_cuda(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                         const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  return on_torch_stream(p->program.cuda_device(), "open_forward", {&amplitudes, opt_ptr(drift), opt_ptr(rates)},
                         [&] { return open_forward_kernel(p, amplitudes, drift, rates); });
}

std::tuple<Tensor, Tensor, Tensor> open_backward_cuda(const c10::intrusive_ptr<OpenSystemProgram>& p,
                                                      const Tensor& amplitudes, const std::optional<Tensor>& drift,
                                                      const std::optional<Tensor>& rates,
                                                      const Tensor& grad_fidelity) {
  return on_torch_stream(p->program.cuda_device(), "open_backward",
                         {&amplitudes, opt_ptr(drift), opt_ptr(rates), &grad_fidelity},
                         [&] { return open_backward_kernel(p, amplitudes, drift, rates, grad_fidelity); });
}

Tensor open_final_state_cuda(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                             const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  return on_torch_stream(p->program.cuda_device(), "open_final_state",
                         {&amplitudes, opt_ptr(drift), opt_ptr(rates)},
                         [&] { return open_final_state_kernel(p, amplitudes, drift, rates); });
}

// ---- autograd ------------------------------------------------------------------


// The backward ops are differentiable only once: under create_graph they record
// a node whose own backward says so (instead of silently returning zeros).
[[noreturn]] void no_double_backward(const char* op) {
  TORCH_CHECK(false, "qfleet.", op,
              ": second derivatives are not implemented (the adjoint method gives exact first derivatives); "
              "use first-order methods, or finite differences of the gradients");
}

class CircuitBackwardFunction : public ::torch::autograd::Function<CircuitBackwardFunction> {
 public:
  static ::torch::autograd::variable_list forward(::torch::autograd::AutogradContext*,
                                                  const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& x,
                                                  const Tensor& w, const Tensor& g) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static const auto op = op_handle("qfleet::circuit_backward").typed<decltype(circuit_backward_kernel)>();
    auto [gx, gw] = op.call(p, x, w, g);
    return {gx, gw};
  }
  static ::torch::autograd::variable_list backward(::torch::autograd::AutogradContext*,
                                                   ::torch::autograd::variable_list) {
    no_double_backward("circuit_backward");
  }
};

std::tuple<Tensor, Tensor> circuit_backward_autograd(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& x,
                                                     const Tensor& w, const Tensor& g) {
  auto r = CircuitBackwardFunction::apply(p, x, w, g);
  return {r[0], r[1]};
}

class OpenBackwardFunction : public ::torch::autograd::Function<OpenBackwardFunction> {
 public:
  static ::torch::autograd::variable_list forward(::torch::autograd::AutogradContext*,
                                                  const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& a,
                                                  const Tensor& c, const Tensor& r, const Tensor& g) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static const auto op = op_handle("qfleet::open_backward").typed<decltype(open_backward_kernel)>();
    auto opt = [](const Tensor& t) { return t.numel() > 0 ? std::optional<Tensor>(t) : std::nullopt; };
    auto [ga, gc, gr] = op.call(p, a, opt(c), opt(r), g);
    auto def = [&](const Tensor& t) { return t.defined() ? t : ::torch::empty({0}, a.options()); };
    return {ga, def(gc), def(gr)};
  }
  static ::torch::autograd::variable_list backward(::torch::autograd::AutogradContext*,
                                                   ::torch::autograd::variable_list) {
    no_double_backward("open_backward");
  }
};

std::tuple<Tensor, Tensor, Tensor> open_backward_autograd(const c10::intrusive_ptr<OpenSystemProgram>& p,
                                                          const Tensor& a, const std::optional<Tensor>& c,
                                                          const std::optional<Tensor>& r, const Tensor& g) {
  auto arg = [&](const std::optional<Tensor>& t) {
    return t.has_value() && t->defined() ? *t : ::torch::empty({0}, a.options());
  };
  auto out = OpenBackwardFunction::apply(p, a, arg(c), arg(r), g);
  auto undef = [&](const std::optional<Tensor>& t, const Tensor& v) {
    return t.has_value() && t->defined() ? v : Tensor();
  };
  return {out[0], undef(c, out[1]), undef(r, out[2])};
}

// Saved-state adjoint (Program::vjp_saved): on the cpu the forward call also keeps
// the final states [B, 2^n], so the backward runs only the reverse sweep.
std::tuple<Tensor, Tensor> circuit_forward_saving(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                                  const Tensor& weights) {
  const auto s = check_circuit(*p, "circuit_forward", inputs, weights);
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  Tensor out = ::torch::empty({s.batch, p->n_outputs()}, x.options());
  Tensor saved = ::torch::empty({int64_t(p->program.saved_size(std::size_t(s.batch)))}, x.options());
  if (s.batch == 0) return {out, saved};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_circuit_forward_saving", [&] {
      p->program.forward<scalar_t>(BatchArgs<scalar_t>{std::size_t(s.batch), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                                   mspan<scalar_t>(out), mspan<scalar_t>(saved));
    });
  });
  return {out, saved};
}

std::tuple<Tensor, Tensor> circuit_backward_saved(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                                  const Tensor& weights, const Tensor& saved, const Tensor& grad_outputs,
                                                  bool need_x, bool need_w) {
  const int64_t B = inputs.size(0);
  check_grad_outputs(*p, grad_outputs, B);
  const Tensor x = inputs.contiguous(), w = weights.contiguous();
  Tensor gx = need_x ? written_gradient(x, B) : Tensor(), gw = need_w ? written_gradient(w, B) : Tensor();
  if (B == 0 || !(need_x || need_w)) return {gx, gw};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "qfleet_circuit_backward_saved", [&] {
      std::vector<scalar_t> g_copy;
      p->program.vjp_saved<scalar_t>(BatchArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(x), cspan<scalar_t>(w)},
                                     cspan<scalar_t>(saved), cpu_values<scalar_t>(grad_outputs, g_copy),
                                     Gradients<scalar_t>{mspan<scalar_t>(gx), mspan<scalar_t>(gw)});
    });
  });
  return {gx, gw};
}

class CircuitFunction : public ::torch::autograd::Function<CircuitFunction> {
 public:
  static Tensor forward(::torch::autograd::AutogradContext* ctx, const c10::intrusive_ptr<CircuitProgram>& p,
                        const Tensor& inputs, const Tensor& weights, bool save_states) {
    ctx->saved_data["program"] = p;
    at::AutoDispatchBelowADInplaceOrView guard;
    if (save_states) {
      auto [out, saved] = circuit_forward_saving(p, inputs, weights);
      ctx->save_for_backward({inputs, weights, saved});
      return out;
    }
    ctx->save_for_backward({inputs, weights});
    static const auto op = op_handle("qfleet::circuit_forward").typed<decltype(circuit_forward_kernel)>();
    return op.call(p, inputs, weights);
  }
  static ::torch::autograd::variable_list backward(::torch::autograd::AutogradContext* ctx,
                                                   ::torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto p = ctx->saved_data["program"].toCustomClass<CircuitProgram>();
    // needs_input_grad counts tensor arguments only (the program is not one).
    const bool need_x = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1);
    Tensor gx, gw;
    if (saved.size() == 3 && !::torch::GradMode::is_enabled()) {  // create_graph goes the recording way
      std::tie(gx, gw) = circuit_backward_saved(p, saved[0], saved[1], saved[2], grads[0], need_x, need_w);
    } else {
      std::tie(gx, gw) = circuit_backward_autograd(p, saved[0], saved[1], grads[0]);
    }
    return {Tensor(), need_x ? gx : Tensor(), need_w ? gw : Tensor(), Tensor()};
  }
};

Tensor circuit_forward_autograd(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs,
                                const Tensor& weights) {
  const bool save = ::torch::GradMode::is_enabled() && (inputs.requires_grad() || weights.requires_grad()) &&
                    inputs.device().is_cpu() && inputs.dim() == 2 &&
                    p->program.saved_size(std::size_t(std::max<int64_t>(inputs.size(0), 0))) > 0;
  return CircuitFunction::apply(p, inputs, weights, save);
}

// Saved-state adjoint (OpenProgram::vjp_saved): on the cpu the forward call also keeps
// every task's states at the segment boundaries, so the backward runs only the
// reverse sweep.
std::tuple<Tensor, Tensor> open_forward_saving(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                                               const std::optional<Tensor>& drift,
                                               const std::optional<Tensor>& rates) {
  const int64_t B = check_open(*p, "open_forward", amplitudes, drift, rates);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates);
  Tensor fid = ::torch::empty({B}, a.options());
  Tensor saved = ::torch::empty({int64_t(p->program.saved_size(std::size_t(B)))}, a.options());
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_forward_saving", [&] {
      TaskOutputs<scalar_t> out;
      out.fidelity = mspan<scalar_t>(fid);
      p->program.forward<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}}, out,
          mspan<scalar_t>(saved));
    });
  });
  refuse_non_finite("open_forward", fid, a, c, r);
  return {fid, saved};
}

// Gradients only where needed (undefined otherwise: vjp_saved skips an empty span).
std::tuple<Tensor, Tensor, Tensor> open_backward_saved(const c10::intrusive_ptr<OpenSystemProgram>& p,
                                                       const Tensor& amplitudes, const std::optional<Tensor>& drift,
                                                       const std::optional<Tensor>& rates, const Tensor& saved,
                                                       const Tensor& grad_fidelity, bool need_a, bool need_c,
                                                       bool need_r) {
  const int64_t B = check_open(*p, "open_backward", amplitudes, drift, rates);
  check_grad_fidelity(*p, grad_fidelity, B);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates);
  Tensor ga = need_a ? written_gradient(a, B) : Tensor();
  Tensor gc = need_c && c.defined() ? written_gradient(c, B) : Tensor();
  Tensor gr = need_r && r.defined() ? written_gradient(r, B) : Tensor();
  if (!(ga.defined() || gc.defined() || gr.defined())) return {ga, gc, gr};
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_backward_saved", [&] {
      std::vector<scalar_t> g_copy;
      p->program.vjp_saved<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}},
          cspan<scalar_t>(saved), cpu_values<scalar_t>(grad_fidelity, g_copy), {},
          TaskGradients<scalar_t>{mspan<scalar_t>(ga), mspan<scalar_t>(gc), mspan<scalar_t>(gr)});
    });
  });
  return {ga, gc, gr};
}

// Per-task gradient rows (OpenFunction's kRows): when every tensor that needs a gradient
// holds its own values per task, task b's fidelity depends on task b's row of each alone
// (the Jacobian is block diagonal), so one fused vjp with unit cotangents gives every row
// and the backward only scales row b by grad_fidelity[b]. The fused call is the engine's
// cheapest way to the gradient: forward and reverse sweep in one, the step solvers
// reading back the steps their forward sweep kept (kernels/open_task.hpp's trajectory
// store) where the saved-state backward has to step through every segment again.
std::tuple<Tensor, Tensor, Tensor, Tensor> open_forward_rows(const c10::intrusive_ptr<OpenSystemProgram>& p,
                                                             const Tensor& amplitudes,
                                                             const std::optional<Tensor>& drift,
                                                             const std::optional<Tensor>& rates, bool need_a,
                                                             bool need_c, bool need_r) {
  const int64_t B = check_open(*p, "open_forward", amplitudes, drift, rates);
  const Tensor a = amplitudes.contiguous(), c = contig(drift), r = contig(rates);
  Tensor fid = ::torch::empty({B}, a.options()), ones = ::torch::ones({B}, a.options());
  Tensor ga = need_a ? ::torch::empty_like(a) : Tensor();
  Tensor gc = need_c && c.defined() ? ::torch::empty_like(c) : Tensor();
  Tensor gr = need_r && r.defined() ? ::torch::empty_like(r) : Tensor();
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_forward_rows", [&] {
      TaskOutputs<scalar_t> out;
      out.fidelity = mspan<scalar_t>(fid);
      p->program.vjp<scalar_t>(
          TaskArgs<scalar_t>{std::size_t(B), cspan<scalar_t>(a), cspan<scalar_t>(c), cspan<scalar_t>(r), {}},
          cspan<scalar_t>(ones), {},
          TaskGradients<scalar_t>{mspan<scalar_t>(ga), mspan<scalar_t>(gc), mspan<scalar_t>(gr)}, out);
    });
  });
  refuse_non_finite("open_forward", fid, a, c, r);
  return {fid, ga, gc, gr};
}

// Row b of a per-task gradient [B, ...] times grad_fidelity[b], into a new tensor (the
// saved rows stay: retain_graph may run the backward again). One loop, reading the
// cotangent as the saved-state backward does (cpu_values), rather than a contiguous() of
// `fid.sum()`'s expanded cotangent and a broadcast multiply per tensor.
Tensor scale_rows(const Tensor& rows, const Tensor& grad_fidelity) {
  if (rows.numel() == 0) return Tensor();
  const int64_t B = rows.size(0), n = rows.numel() / B;
  // Autograd casts and checks a node's cotangent against its output (fidelity [B]).
  TORCH_INTERNAL_ASSERT(grad_fidelity.dim() == 1 && grad_fidelity.size(0) == B &&
                        grad_fidelity.scalar_type() == rows.scalar_type());
  const Tensor dense = rows.contiguous();  // as saved (empty_like of a contiguous tensor): no copy
  Tensor out = ::torch::empty_like(dense);
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "qfleet_scale_rows", [&] {
    std::vector<scalar_t> g_copy;
    const std::span<const scalar_t> g = cpu_values<scalar_t>(grad_fidelity, g_copy);
    const scalar_t* src = dense.const_data_ptr<scalar_t>();
    scalar_t* dst = out.mutable_data_ptr<scalar_t>();
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < n; ++j) dst[b * n + j] = src[b * n + j] * g[static_cast<std::size_t>(b)];
    }
  });
  return out;
}

// How OpenFunction's forward prepares its backward.
enum OpenMode : int64_t {
  kRecompute = 0,  // nothing kept: the backward is the fused vjp (and create_graph's way)
  kSaveStates = 1,  // the states at the segment boundaries (OpenProgram::vjp_saved)
  kRows = 2,        // every task's gradient row (open_forward_rows)
  kModeMask = 3,
  kGivenDrift = 4,  // flags beside the mode: drift_coeffs / rates were given
  kGivenRates = 8,
};

class OpenFunction : public ::torch::autograd::Function<OpenFunction> {
 public:
  static Tensor forward(::torch::autograd::AutogradContext* ctx, const c10::intrusive_ptr<OpenSystemProgram>& p,
                        const Tensor& amplitudes, const Tensor& drift_arg, const Tensor& rates_arg, int64_t flags) {
    const int64_t mode = flags & kModeMask;
    ctx->saved_data["program"] = p;
    ctx->saved_data["mode"] = mode;
    ctx->saved_data["given"] = flags & ~kModeMask;
    const std::optional<Tensor> drift = given(drift_arg, flags & kGivenDrift), rates = given(rates_arg, flags & kGivenRates);
    at::AutoDispatchBelowADInplaceOrView guard;
    if (mode == kRows) {
      auto [fid, ja, jc, jr] = open_forward_rows(p, amplitudes, drift, rates, amplitudes.requires_grad(),
                                                 drift_arg.requires_grad(), rates_arg.requires_grad());
      auto none = [&](const Tensor& t) { return t.defined() ? t : ::torch::empty({0}, amplitudes.options()); };
      ctx->save_for_backward({amplitudes, drift_arg, rates_arg, none(ja), none(jc), none(jr)});
      return fid;
    }
    if (mode == kSaveStates) {
      auto [fid, saved] = open_forward_saving(p, amplitudes, drift, rates);
      ctx->save_for_backward({amplitudes, drift_arg, rates_arg, saved});
      return fid;
    }
    ctx->save_for_backward({amplitudes, drift_arg, rates_arg});
    static const auto op = op_handle("qfleet::open_forward").typed<decltype(open_forward_kernel)>();
    return op.call(p, amplitudes, drift, rates);
  }
  static ::torch::autograd::variable_list backward(::torch::autograd::AutogradContext* ctx,
                                                   ::torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto p = ctx->saved_data["program"].toCustomClass<OpenSystemProgram>();
    // needs_input_grad counts tensor arguments only (the program is not one).
    const bool need_a = ctx->needs_input_grad(0), need_c = ctx->needs_input_grad(1), need_r = ctx->needs_input_grad(2);
    const int64_t mode = ctx->saved_data["mode"].toInt(), flags = ctx->saved_data["given"].toInt();
    const std::optional<Tensor> drift = given(saved[1], flags & kGivenDrift), rates = given(saved[2], flags & kGivenRates);
    Tensor ga, gc, gr;
    if (mode == kRows && !::torch::GradMode::is_enabled()) {  // create_graph goes the recording way
      const Tensor& g = grads[0];
      auto scaled = [&](const Tensor& rows, bool need) { return need ? scale_rows(rows, g) : Tensor(); };
      ga = scaled(saved[3], need_a), gc = scaled(saved[4], need_c), gr = scaled(saved[5], need_r);
    } else if (mode == kSaveStates && !::torch::GradMode::is_enabled()) {
      std::tie(ga, gc, gr) = open_backward_saved(p, saved[0], drift, rates, saved[3], grads[0], need_a, need_c, need_r);
    } else {
      std::tie(ga, gc, gr) = open_backward_autograd(p, saved[0], drift, rates, grads[0]);
    }
    return {Tensor(), need_a ? ga : Tensor(), need_c ? gc : Tensor(), need_r ? gr : Tensor(), Tensor()};
  }

 private:
  // An absent drift_coeffs / rates argument travels through autograd as an empty [0]
  // placeholder (autograd::Function cannot pass undefined tensors), and whether it was
  // given as a flag beside the mode: a given one may be empty too (rates [0, n_jumps] of
  // an empty batch), which an emptiness test took for absent ("rates is required").
  static std::optional<Tensor> given(const Tensor& t, bool was_given) {
    return was_given ? std::optional<Tensor>(t) : std::nullopt;
  }
};

Tensor open_forward_autograd(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                             const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  // The clear messages, before placeholders.
  const int64_t B = check_open(*p, "open_forward", amplitudes, drift, rates);
  auto arg = [&](const std::optional<Tensor>& t) {
    return t.has_value() && t->defined() ? *t : ::torch::empty({0}, amplitudes.options());
  };
  const Tensor c = arg(drift), r = arg(rates);
  const bool grad = ::torch::GradMode::is_enabled() &&
                    (amplitudes.requires_grad() || c.requires_grad() || r.requires_grad());
  // Per task: amplitudes [B, n_seg, n_ctrl], drift_coeffs and rates [B, n] (check_open has
  // checked the shapes; a shared tensor has one dimension fewer).
  const bool rows = grad && amplitudes.device().is_cpu() && B > 0 &&
                    (!amplitudes.requires_grad() || amplitudes.dim() == 3) && (!c.requires_grad() || c.dim() == 2) &&
                    (!r.requires_grad() || r.dim() == 2);
  const bool save = grad && amplitudes.device().is_cpu() && B > 0 && p->program.saved_size(std::size_t(B)) > 0;
  const int64_t given = (drift.has_value() && drift->defined() ? int64_t(kGivenDrift) : 0) |
                        (rates.has_value() && rates->defined() ? int64_t(kGivenRates) : 0);
  return OpenFunction::apply(p, amplitudes, c, r, (rows ? kRows : save ? kSaveStates : kRecompute) | given);
}

// base_dir: the problem file's directory, for its relative .npy names ("" = the working directory).
std::string evaluate_json(const std::string& text, const std::string& base_dir) {
  return guarded([&] {
    nlohmann::json doc = json_problem::parse_text(text, "<problem>");
    json_problem::resolve_npy_paths(doc, base_dir);
    return json_problem::dump(json_problem::evaluate(doc));
  });
}

}  // namespace

// The programs' `layer` methods (registered below): the autograd functions reached
// past the dispatcher, so autocast's rule is applied here.
Tensor circuit_layer(const c10::intrusive_ptr<CircuitProgram>& p, const Tensor& inputs, const Tensor& weights) {
  return circuit_forward_autograd(p, autocast_up(inputs, p->dtype()), autocast_up(weights, p->dtype()));
}
Tensor open_layer(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& amplitudes,
                  const std::optional<Tensor>& drift, const std::optional<Tensor>& rates) {
  auto up = [&](const std::optional<Tensor>& t) {
    return t.has_value() ? std::optional<Tensor>(autocast_up(*t, p->dtype())) : std::nullopt;
  };
  return open_forward_autograd(p, autocast_up(amplitudes, p->dtype()), up(drift), up(rates));
}

// ---- the custom classes ------------------------------------------------------------

CircuitProgram::CircuitProgram(const Circuit& circuit, const CompileOptions& options)
    : program(guarded([&] { return compile(circuit, options); })) {}

CircuitProgram::CircuitProgram(const std::string& text)
    : program(guarded([&] {
        const auto p = json_problem::parse_circuit_problem(parse_json(text, "<circuit>"), /*model_only=*/true);
        return compile(p.circuit, p.options);
      })),
      json_text(text) {}

::torch::ScalarType CircuitProgram::dtype() const { return real_dtype(program.precision()); }

namespace {
OpenProgram compile_guarded(const OpenSystem& system, const OpenCompileOptions& options) {
  return guarded([&] { return compile(system, options); });
}
}  // namespace

OpenSystemProgram::OpenSystemProgram(const OpenSystem& system, const OpenCompileOptions& options)
    : program(compile_guarded(system, options)) {}

OpenSystemProgram::OpenSystemProgram(const std::string& text)
    : program(guarded([&] {
        const auto p =
            json_problem::parse_lindblad_problem(parse_json(text, "<open system>"), /*model_only=*/true);
        return compile_guarded(p.system, p.options);
      })),
      json_text(text) {}

::torch::ScalarType OpenSystemProgram::dtype() const { return real_dtype(program.precision()); }

Tensor circuit_forward(const c10::intrusive_ptr<CircuitProgram>& program, const Tensor& inputs,
                       const Tensor& weights) {
  static const auto op = op_handle("qfleet::circuit_forward").typed<decltype(circuit_forward_kernel)>();
  return op.call(program, inputs, weights);
}

Tensor open_final_state(const c10::intrusive_ptr<OpenSystemProgram>& program, const Tensor& amplitudes,
                        const Tensor& drift_coeffs, const Tensor& rates) {
  static const auto op = op_handle("qfleet::open_final_state").typed<decltype(open_final_state_kernel)>();
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  return op.call(program, amplitudes, opt(drift_coeffs), opt(rates));
}

Tensor open_fidelity(const c10::intrusive_ptr<OpenSystemProgram>& program, const Tensor& amplitudes,
                     const Tensor& drift_coeffs, const Tensor& rates) {
  static const auto op = op_handle("qfleet::open_forward").typed<decltype(open_forward_kernel)>();
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  return op.call(program, amplitudes, opt(drift_coeffs), opt(rates));
}

}  // namespace qfleet::nn

// ---- registration ------------------------------------------------------------------

namespace {
using qfleet::nn::CircuitProgram;
using qfleet::nn::OpenSystemProgram;
}  // namespace

TORCH_LIBRARY(qfleet, m) {
  m.class_<CircuitProgram>("CircuitProgram")
      .def(torch::init<std::string>())
      .def("n_qubits", &CircuitProgram::n_qubits)
      .def("n_inputs", &CircuitProgram::n_inputs)
      .def("n_weights", &CircuitProgram::n_weights)
      .def("n_outputs", &CircuitProgram::n_outputs)
      .def("precision",
           [](const c10::intrusive_ptr<CircuitProgram>& self) {
             return std::string(qfleet::to_string(self->program.precision()));
           })
      .def("isa", [](const c10::intrusive_ptr<CircuitProgram>& self) { return self->program.isa(); })
      .def("json", [](const c10::intrusive_ptr<CircuitProgram>& self) { return self->json_text; })
      .def("simulator",
           [](const c10::intrusive_ptr<CircuitProgram>& self) {
             return std::string(qfleet::to_string(self->program.simulator()));
           })
      // Final density matrices [B, 2^n, 2^n] (complex; density-matrix programs; not differentiable).
      .def("density_matrices",
           [](const c10::intrusive_ptr<CircuitProgram>& self, const torch::Tensor& inputs, const torch::Tensor& weights) {
             return qfleet::nn::circuit_density_matrices(self, inputs, weights);
           })
      // Final state vectors [B, 2^n] (complex; state-vector programs; not differentiable).
      .def("states", &qfleet::nn::circuit_states)
      // Outcome indices [B, shots] (int64, first wire most significant) on `wires` ([] = all),
      // with the circuit's readout errors; reproducible for a seed.
      .def("sample", &qfleet::nn::circuit_sample)
      // Per-sample Jacobians ([B, n_outputs, n_inputs], [B, n_outputs, n_weights]) by adjoint sweeps.
      .def("jacobian", &qfleet::nn::circuit_jacobian)
      // circuit_forward, differentiated by the C++ autograd function only: what the Python
      // modules call eagerly. A method call from Python costs ~12 us less than an operator
      // call taking a program, and circuit_forward also carries the Python autograd that
      // torch.compile traces (python/qfleet/_fake.py), ~60 us more per forward + backward.
      .def("layer", &qfleet::nn::circuit_layer)
      // Identity (torch's fake-tensor dispatch cache compares its arguments).
      .def("__eq__", [](const c10::intrusive_ptr<CircuitProgram>& self,
                        const c10::intrusive_ptr<CircuitProgram>& other) { return self.get() == other.get(); })
      .def("__obj_flatten__",
           [](const c10::intrusive_ptr<CircuitProgram>& self) {
             return std::make_tuple(std::make_tuple(std::string("json"), self->json_text));
           })
      .def_pickle([](const c10::intrusive_ptr<CircuitProgram>& self) -> std::string {
                    TORCH_CHECK(!self->json_text.empty(),
                                "qfleet: a CircuitProgram built from a C++ Circuit cannot be pickled; build it "
                                "from its JSON description");
                    return self->json_text;
                  },
                  [](std::string state) { return c10::make_intrusive<CircuitProgram>(state); });
  m.class_<OpenSystemProgram>("OpenSystemProgram")
      .def(torch::init<std::string>())
      .def("dim", &OpenSystemProgram::dim)
      .def("n_segments", &OpenSystemProgram::n_segments)
      .def("n_controls", &OpenSystemProgram::n_controls)
      .def("n_drift_terms", &OpenSystemProgram::n_drift_terms)
      .def("n_jumps", &OpenSystemProgram::n_jumps)
      .def("final_state_size",
           [](const c10::intrusive_ptr<OpenSystemProgram>& self) {
             return static_cast<int64_t>(self->program.final_state_size());
           })
      .def("cache_stats",
           [](const c10::intrusive_ptr<OpenSystemProgram>& self) {
             const auto s = self->program.cache_stats();
             return std::vector<int64_t>{int64_t(s.propagators_computed), int64_t(s.propagators_reused),
                                         int64_t(s.calls)};
           })
      .def("json", [](const c10::intrusive_ptr<OpenSystemProgram>& self) { return self->json_text; })
      .def("n_observables", &OpenSystemProgram::n_observables)
      .def("has_target", &OpenSystemProgram::has_target)
      .def("has_leakage", &OpenSystemProgram::has_leakage)
      // [fidelity, leakage, expvals, final_state] (None where the system has none), every one
      // differentiable w.r.t. every tensor argument (qfleet::nn::open_outputs).
      .def("outputs", &qfleet::nn::open_outputs_list)
      // open_forward through the C++ autograd function only (see CircuitProgram.layer).
      .def("layer", &qfleet::nn::open_layer)
      .def("__eq__", [](const c10::intrusive_ptr<OpenSystemProgram>& self,
                        const c10::intrusive_ptr<OpenSystemProgram>& other) { return self.get() == other.get(); })
      .def("__obj_flatten__",
           [](const c10::intrusive_ptr<OpenSystemProgram>& self) {
             return std::make_tuple(std::make_tuple(std::string("json"), self->json_text));
           })
      .def_pickle([](const c10::intrusive_ptr<OpenSystemProgram>& self) -> std::string {
                    TORCH_CHECK(!self->json_text.empty(),
                                "qfleet: an OpenSystemProgram built from a C++ OpenSystem cannot be pickled");
                    return self->json_text;
                  },
                  [](std::string state) { return c10::make_intrusive<OpenSystemProgram>(state); });

  m.def("circuit_forward(__torch__.torch.classes.qfleet.CircuitProgram program, Tensor inputs, Tensor weights) -> Tensor");
  m.def("circuit_backward(__torch__.torch.classes.qfleet.CircuitProgram program, Tensor inputs, Tensor weights, "
        "Tensor grad_outputs) -> (Tensor, Tensor)");
  m.def("open_forward(__torch__.torch.classes.qfleet.OpenSystemProgram program, Tensor amplitudes, "
        "Tensor? drift_coeffs, Tensor? rates) -> Tensor");
  m.def("open_backward(__torch__.torch.classes.qfleet.OpenSystemProgram program, Tensor amplitudes, "
        "Tensor? drift_coeffs, Tensor? rates, Tensor grad_fidelity) -> (Tensor, Tensor, Tensor)");
  m.def("open_final_state(__torch__.torch.classes.qfleet.OpenSystemProgram program, Tensor amplitudes, "
        "Tensor? drift_coeffs, Tensor? rates) -> Tensor");
  m.def("evaluate_json(str problem, str base_dir=\"\") -> str", &qfleet::nn::evaluate_json);
  m.def("cuda_device_count() -> int", [] { return static_cast<int64_t>(qfleet::cuda_device_count()); });
  m.def("built_with_cuda() -> bool", [] { return qfleet::built_with_cuda(); });
  qfleet::control::register_classes(m);  // (after OpenSystemProgram: its methods take one)
}

TORCH_LIBRARY_IMPL(qfleet, CPU, m) {
  m.impl("circuit_forward", &qfleet::nn::circuit_forward_kernel);
  m.impl("circuit_backward", &qfleet::nn::circuit_backward_kernel);
  m.impl("open_forward", &qfleet::nn::open_forward_kernel);
  m.impl("open_backward", &qfleet::nn::open_backward_kernel);
  m.impl("open_final_state", &qfleet::nn::open_final_state_kernel);
}

// Meta / fake kernels live in Python (python/qfleet/_fake.py): under torch.compile
// the program arrives as a Python FakeScriptObject, which a C++ kernel cannot take.

TORCH_LIBRARY_IMPL(qfleet, CUDA, m) {
  m.impl("circuit_forward", &qfleet::nn::circuit_forward_cuda);
  m.impl("circuit_backward", &qfleet::nn::circuit_backward_cuda);
  m.impl("open_forward", &qfleet::nn::open_forward_cuda);
  m.impl("open_backward", &qfleet::nn::open_backward_cuda);
  m.impl("open_final_state", &qfleet::nn::open_final_state_cuda);
}

TORCH_LIBRARY_IMPL(qfleet, Autograd, m) {
  m.impl("circuit_forward", &qfleet::nn::circuit_forward_autograd);
  m.impl("open_forward", &qfleet::nn::open_forward_autograd);
  m.impl("circuit_backward", &qfleet::nn::circuit_backward_autograd);
  m.impl("open_backward", &qfleet::nn::open_backward_autograd);
  m.impl("open_final_state", &qfleet::nn::open_final_state_autograd);
}
