// Every open-system output as tensors autograd differentiates (qfleet::nn::open_outputs;
// OpenSystemProgram.outputs from Python): fidelity [B], leakage [B], expectation values
// [B, n_seg + 1, K] and final states (complex), with respect to amplitudes, drift
// coefficients, rates, segment durations and per-task initial states. One engine pass
// forward; the backward is one reverse sweep with every output's cotangent at once
// (OpenProgram::vjp_saved from the states the forward kept at the segment boundaries on
// the cpu; OpenProgram::vjp, forward sweep included, on a GPU copy).
#include <torch/torch.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <vector>

#include "op_support.hpp"
#include "qfleet/torch.hpp"

namespace qfleet::nn {

using namespace op_support;

namespace {

using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

::torch::ScalarType complex_of(::torch::ScalarType real) {
  return real == ::torch::kFloat64 ? ::torch::kComplexDouble : ::torch::kComplexFloat;
}

// The arguments' shapes, dtypes and device (check_open for the first three); the batch.
int64_t check_outputs_call(const OpenSystemProgram& p, const Tensor& a, const Tensor& c, const Tensor& r,
                           const Tensor& dur, const Tensor& init) {
  const char* op = "open_outputs";
  int64_t B = check_open(p, op, a, c.defined() ? std::optional<Tensor>(c) : std::nullopt,
                         r.defined() ? std::optional<Tensor>(r) : std::nullopt);
  bool batched = a.dim() == 3 || (c.defined() && c.dim() == 2) || (r.defined() && r.dim() == 2);
  auto agree = [&](int64_t b, const char* name) {
    TORCH_CHECK_VALUE(!batched || b == B, "qfleet.", op, ": ", name, " has ", b, " task(s) but the other arguments ",
                      "have ", B, "; per-task arguments must agree on the batch size");
    B = b;
    batched = true;
  };
  const int64_t ns = p.n_segments(), d = p.dim();
  if (dur.defined()) {
    check_tensor(dur, op, "durations", p.dtype(), {1, 2});
    TORCH_CHECK_VALUE(dur.size(-1) == ns, "qfleet.", op, ": durations has shape ", dur.sizes(), "; expected [B, ", ns,
                      "] (per task) or [", ns, "] (shared): ", ns, " segments");
    if (dur.dim() == 2) agree(dur.size(0), "durations");
  }
  if (init.defined()) {
    const bool closed = p.program.system().closed();
    TORCH_CHECK_VALUE(p.program.system().initial_kind() != OpenSystem::Initial::Gate, "qfleet.", op,
                      ": a gate problem starts from the identity; initial states do not apply");
    TORCH_CHECK_TYPE(init.scalar_type() == complex_of(p.dtype()), "qfleet.", op, ": initial must be ",
                     dtype_name(complex_of(p.dtype())), " (the program's precision), got ", dtype_name(init.scalar_type()));
    const bool ok = closed ? (init.dim() == 2 && init.size(1) == d)
                           : (init.dim() == 3 && init.size(1) == d && init.size(2) == d);
    TORCH_CHECK_VALUE(ok, "qfleet.", op, ": initial has shape ", init.sizes(), "; expected ",
                      closed ? "[B, " + std::to_string(d) + "] (a pure state per task: the system is closed)"
                             : "[B, " + std::to_string(d) + ", " + std::to_string(d) + "] (a density matrix per task)");
    agree(init.size(0), "initial");
  }
  check_same_device(op, {&a, &c, &r, &dur, &init});
  return B;
}

template <class R>
std::span<const std::complex<R>> ccspan(const Tensor& t) {
  if (!t.defined()) return {};
  return {reinterpret_cast<const std::complex<R>*>(t.const_data_ptr()), static_cast<std::size_t>(t.numel())};
}
template <class R>
std::span<std::complex<R>> cmspan(Tensor& t) {
  if (!t.defined()) return {};
  return {reinterpret_cast<std::complex<R>*>(t.mutable_data_ptr()), static_cast<std::size_t>(t.numel())};
}

template <class R>
TaskArgs<R> task_args(int64_t B, const Tensor& a, const Tensor& c, const Tensor& r, const Tensor& dur,
                      const Tensor& init) {
  return TaskArgs<R>{std::size_t(B), cspan<R>(a), cspan<R>(c), cspan<R>(r), ccspan<R>(init), cspan<R>(dur)};
}

struct Results {
  Tensor fid, leak, exp, fin, saved;
};

// The forward pass: every output the system has (zero-size tensors for the others), and,
// with `save`, the states its backward resumes from.
Results run_forward(const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& a, const Tensor& c,
                    const Tensor& r, const Tensor& dur, const Tensor& init, int64_t B, bool save) {
  const OpenSystem& s = p->program.system();
  const auto opts = a.options();
  const int64_t K = s.n_observables();
  Results o;
  o.fid = ::torch::empty({s.target_kind() != OpenSystem::Target::None ? B : 0}, opts);
  o.leak = ::torch::empty({s.subspace().empty() ? 0 : B}, opts);
  o.exp = ::torch::empty({K > 0 ? B : 0, K > 0 ? p->n_segments() + 1 : 0, K}, opts);
  o.fin = ::torch::empty(final_state_shape(*p, B), opts.dtype(complex_of(a.scalar_type())));
  if (save) o.saved = ::torch::empty({int64_t(p->program.saved_size(std::size_t(B)))}, opts);
  if (B == 0) return o;
  guarded([&] {
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "qfleet_open_outputs", [&] {
      TaskOutputs<scalar_t> out{o.fid.numel() ? mspan<scalar_t>(o.fid) : std::span<scalar_t>(),
                                o.leak.numel() ? mspan<scalar_t>(o.leak) : std::span<scalar_t>(),
                                o.exp.numel() ? mspan<scalar_t>(o.exp) : std::span<scalar_t>(), cmspan<scalar_t>(o.fin)};
      const TaskArgs<scalar_t> args = task_args<scalar_t>(B, a, c, r, dur, init);
      if (save) {
        p->program.forward<scalar_t>(args, out, mspan<scalar_t>(o.saved));
      } else {
        p->program.forward<scalar_t>(args, out);
      }
    });
  });
  // Overflowing inputs (non-finite results) are refused by name, as open_forward refuses them.
  refuse_non_finite("open_outputs", "fidelity", o.fid, a, c, r);
  refuse_non_finite("open_outputs", "leakage", o.leak, a, c, r);
  refuse_non_finite("open_outputs", "expectation values", o.exp, a, c, r);
  refuse_non_finite("open_outputs", "final state", o.fin, a, c, r);
  return o;
}

// A cotangent for the engine: contiguous, in the output's dtype; undefined or zero-size
// (an output the system does not have) stays undefined.
Tensor cotangent(const Tensor& g, ::torch::ScalarType dtype) {
  if (!g.defined() || g.numel() == 0) return Tensor();
  return g.to(dtype).contiguous();
}

// An autograd function's inputs must be defined tensors: an absent argument travels as a
// zero-size one (which no present argument is: durations and initial states never are
// empty, drift coefficients and rates only where the system has none).
Tensor placeholder(const Tensor& t, const ::torch::TensorOptions& options) {
  return t.defined() ? t : ::torch::empty({0}, options);
}
Tensor present(const Tensor& t) { return t.numel() > 0 ? t : Tensor(); }

class OpenOutputsFunction : public ::torch::autograd::Function<OpenOutputsFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const c10::intrusive_ptr<OpenSystemProgram>& p, const Tensor& a,
                               const Tensor& c_in, const Tensor& r_in, const Tensor& dur_in, const Tensor& init_in,
                               int64_t B) {
    const Tensor c = present(c_in), r = present(r_in), dur = present(dur_in), init = present(init_in);
    const bool save = a.device().is_cpu() && p->program.saved_size(std::size_t(B)) > 0 && B > 0;
    Results o = run_forward(p, a, c, r, dur, init, B, save);
    ctx->saved_data["program"] = p;
    ctx->saved_data["batch"] = B;
    ctx->save_for_backward({a, c, r, dur, init, o.saved});
    return {o.fid, o.leak, o.exp, o.fin};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto p = ctx->saved_data["program"].toCustomClass<OpenSystemProgram>();
    const int64_t B = ctx->saved_data["batch"].toInt();
    const variable_list v = ctx->get_saved_variables();
    const Tensor a = v[0], c = present(v[1]), r = present(v[2]), dur = present(v[3]), init = present(v[4]);
    const Tensor saved = v[5].defined() && v[5].numel() > 0 ? v[5] : Tensor();
    const auto real = a.scalar_type();
    const Tensor gf = cotangent(grads[0], real), gl = cotangent(grads[1], real), ge = cotangent(grads[2], real),
                 gx = cotangent(grads[3], complex_of(real));
    // needs_input_grad counts tensor arguments only (the program and the batch are not).
    auto want = [&](int i, const Tensor& t) { return ctx->needs_input_grad(i) && t.defined(); };
    Tensor ga = want(0, a) ? written_gradient(a, B) : Tensor();
    Tensor gc = want(1, c) ? written_gradient(c, B) : Tensor();
    Tensor gr = want(2, r) ? written_gradient(r, B) : Tensor();
    Tensor gd = want(3, dur) ? written_gradient(dur, B) : Tensor();
    Tensor gi = want(4, init) ? written_gradient(init, B) : Tensor();
    const bool any = ga.defined() || gc.defined() || gr.defined() || gd.defined() || gi.defined();
    if (B > 0 && any && (gf.defined() || gl.defined() || ge.defined() || gx.defined())) {
      auto run = [&] {
        guarded([&] {
          AT_DISPATCH_FLOATING_TYPES(real, "qfleet_open_outputs_backward", [&] {
            const TaskCotangents<scalar_t> cot{cspan<scalar_t>(gf), cspan<scalar_t>(gl), cspan<scalar_t>(ge),
                                               ccspan<scalar_t>(gx)};
            const TaskGradients<scalar_t> g{mspan<scalar_t>(ga), mspan<scalar_t>(gc), mspan<scalar_t>(gr),
                                            mspan<scalar_t>(gd), cmspan<scalar_t>(gi)};
            const TaskArgs<scalar_t> args = task_args<scalar_t>(B, a, c, r, dur, init);
            if (saved.defined()) {
              p->program.vjp_saved<scalar_t>(args, cspan<scalar_t>(saved), cot, g);
            } else {
              p->program.vjp<scalar_t>(args, cot, g);
            }
          });
        });
      };
      if (a.device().is_cpu()) {
        run();
      } else {
        on_torch_stream(p->program.cuda_device(), "open_outputs", {&a, &c, &r, &dur, &init}, run);
      }
    } else {  // no cotangent reached an output: zero gradients
      for (Tensor* t : {&ga, &gc, &gr, &gd, &gi})
        if (t->defined()) t->zero_();
    }
    return {Tensor(), ga, gc, gr, gd, gi, Tensor()};
  }
};

}  // namespace

OpenOutputs open_outputs(const c10::intrusive_ptr<OpenSystemProgram>& program, const OpenInputs& in) {
  const int64_t B = check_outputs_call(*program, in.amplitudes, in.drift_coeffs, in.rates, in.durations, in.initial);
  const Tensor a = in.amplitudes.contiguous();
  const auto real = a.options(), complex = a.options().dtype(complex_of(a.scalar_type()));
  const Tensor c = placeholder(in.drift_coeffs, real).contiguous(), r = placeholder(in.rates, real).contiguous(),
               dur = placeholder(in.durations, real).contiguous(), init = placeholder(in.initial, complex).contiguous();
  variable_list out;
  auto call = [&] { out = OpenOutputsFunction::apply(program, a, c, r, dur, init, B); };
  if (a.device().is_cpu()) {
    call();
  } else {
    on_torch_stream(program->program.cuda_device(), "open_outputs", {&a}, call);
  }
  const OpenSystem& s = program->program.system();
  OpenOutputs o;
  if (s.target_kind() != OpenSystem::Target::None) o.fidelity = out[0];
  if (!s.subspace().empty()) o.leakage = out[1];
  if (s.n_observables() > 0) o.expvals = out[2];
  o.final_state = out[3];
  return o;
}

std::vector<Tensor> open_outputs_list(const c10::intrusive_ptr<OpenSystemProgram>& program, const Tensor& amplitudes,
                                      const std::optional<Tensor>& drift_coeffs, const std::optional<Tensor>& rates,
                                      const std::optional<Tensor>& durations, const std::optional<Tensor>& initial) {
  auto get = [](const std::optional<Tensor>& t) { return t.has_value() ? *t : Tensor(); };
  const OpenOutputs o =
      open_outputs(program, {amplitudes, get(drift_coeffs), get(rates), get(durations), get(initial)});
  return {o.fidelity, o.leakage, o.expvals, o.final_state};
}

}  // namespace qfleet::nn
