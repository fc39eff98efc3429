// The OpenProgram API: per-call checks (shapes, finiteness, rates >= 0, per-task
// initial states), then the cpu executor or the cuda backend. Nothing is written
// before every check passes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/backend.hpp"
#include "core/call_checks.hpp"
#include "core/open_plan.hpp"
#include "core/executor.hpp"
#include "kernels/open_workspace.hpp"
#include "qfleet/error.hpp"

namespace qfleet {

namespace {

using detail::expect_finite;

// Accepts `len` shared values or `batch * len` per-task values; returns per_task.
// `dims` ("n_seg=60, n_ctrl=2") is built only for the message, on failure.
template <class T, class Dims>
bool per_task_or_shared(std::string_view what, std::span<const T> v, std::size_t batch, std::size_t len,
                        Dims&& dims) {
  if (v.size() == len) return false;
  if (len > 0 && v.size() == batch * len) return true;
  const std::string d = dims();
  throw Error(std::string(what) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(len) +
              " (shared [" + d + "]) or " + std::to_string(batch * len) + " (per task [batch, " + d + "])");
}

struct Shape {
  bool amp = false, drift = false, rates = false, durations = false;
};

// Shapes of the arguments (every call; device data gets only these).
template <class R>
Shape check_shapes(const detail::OpenPlan& p, const TaskArgs<R>& a) {
  detail::expect_precision<R>(p.precision);
  if (a.batch == 0) throw Error("batch must be at least 1");
  const OpenSystem& s = p.sys;
  Shape sh;
  sh.amp = per_task_or_shared("amplitudes", a.amplitudes, a.batch, std::size_t(s.n_segments()) * s.n_controls(), [&] {
    return "n_seg=" + std::to_string(s.n_segments()) + ", n_ctrl=" + std::to_string(s.n_controls());
  });
  sh.drift = per_task_or_shared("drift_coeffs", a.drift_coeffs, a.batch, std::size_t(s.n_drift_terms()),
                                [&] { return "n_drift_terms=" + std::to_string(s.n_drift_terms()); });
  sh.rates = per_task_or_shared("rates", a.rates, a.batch, std::size_t(s.n_jumps()),
                                [&] { return "n_jumps=" + std::to_string(s.n_jumps()); });
  if (!a.durations.empty()) {
    sh.durations = per_task_or_shared("durations", a.durations, a.batch, std::size_t(s.n_segments()),
                                      [&] { return "n_seg=" + std::to_string(s.n_segments()); });
  }
  if (!a.initial.empty()) {
    if (p.gate) throw Error("a gate problem starts from the identity; per-task initial states do not apply");
    const std::size_t per = p.closed ? std::size_t(p.d) : std::size_t(p.d) * p.d;
    if (a.initial.size() != a.batch * per) {
      throw Error("initial has " + std::to_string(a.initial.size()) + " values, expected " +
                  std::to_string(a.batch * per) + (p.closed ? " ([batch, d] pure states)" : " ([batch, d, d] density matrices)"));
    }
  }
  return sh;
}

// Per-call durations: finite, > 0, and for rk4/euler at most 10^6 steps a segment.
template <class R>
void check_durations(const detail::OpenPlan& p, std::span<const R> durations) {
  const bool fixed = solver_info(p.options.solver).fixed_step;
  for (std::size_t i = 0; i < durations.size(); ++i) {
    const double t = double(durations[i]);
    if (!(std::isfinite(t) && t > 0)) {
      throw Error("durations must be finite and > 0, got " + std::to_string(t) + " at index " + std::to_string(i));
    }
    if (fixed && t / p.options.dt > 1e6) {
      throw Error("durations[" + std::to_string(i) + "] = " + std::to_string(t) + " needs more than 10^6 " +
                  solver_info(p.options.solver).name + " steps of dt = " + std::to_string(p.options.dt));
    }
  }
}

// Values of the arguments (host data only): finite, rates >= 0, valid initial states.
template <class R>
void check_values(const detail::OpenPlan& p, const TaskArgs<R>& a) {
  const OpenSystem& s = p.sys;
  expect_finite("amplitudes", a.amplitudes, std::size_t(s.n_controls()));
  expect_finite("drift_coeffs", a.drift_coeffs, std::size_t(s.n_drift_terms()));
  expect_finite("rates", a.rates, std::size_t(s.n_jumps()));
  for (std::size_t i = 0; i < a.rates.size(); ++i) {
    if (a.rates[i] < 0) {
      throw Error("rates must be >= 0, got " + std::to_string(a.rates[i]) + " at index " + std::to_string(i));
    }
  }
  check_durations(p, a.durations);
  if (a.initial.empty()) return;
  const std::size_t d = p.d, per = p.closed ? d : d * d;
  const double tol = std::is_same_v<R, float> ? 1e-4 : 1e-8;
  for (std::size_t b = 0; b < a.batch; ++b) {
    const std::complex<R>* x = a.initial.data() + b * per;
    for (std::size_t i = 0; i < per; ++i) {
      if (!std::isfinite(x[i].real()) || !std::isfinite(x[i].imag())) {
        throw Error("initial state of task " + std::to_string(b) + " has a non-finite entry");
      }
    }
    if (p.closed) {
      double nrm = 0;
      for (std::size_t i = 0; i < d; ++i) nrm += std::norm(std::complex<double>(x[i]));
      if (std::abs(nrm - 1) > tol) {
        throw Error("initial state of task " + std::to_string(b) + " is not normalised (|psi|^2 = " + std::to_string(nrm) + ")");
      }
    } else {
      std::vector<std::complex<double>> rho(per);
      for (std::size_t i = 0; i < per; ++i) rho[i] = std::complex<double>(x[i]);
      detail::check_density(rho, int(d), "initial density matrix of task " + std::to_string(b), tol,
                              ErrorSubject::initial_state);
    }
  }
}

template <class R>
void check_outputs(const detail::OpenPlan& p, std::size_t B, const TaskOutputs<R>& o) {
  const OpenSystem& s = p.sys;
  auto expect = [](std::string_view what, std::size_t got, std::size_t want, const std::string& shape) {
    if (got != want) {
      throw Error(std::string(what) + " has " + std::to_string(got) + " values, expected " + std::to_string(want) + " " + shape);
    }
  };
  if (!o.fidelity.empty()) {
    if (s.target_kind() == OpenSystem::Target::None) throw Error("fidelity needs a target (target_state/target_density/target_unitary)");
    expect("fidelity", o.fidelity.size(), B, "([batch])");
  }
  if (!o.leakage.empty()) {
    if (p.subspace.empty()) throw Error("leakage needs a computational subspace (computational_subspace(levels))");
    expect("leakage", o.leakage.size(), B, "([batch])");
  }
  if (!o.expvals.empty()) {
    if (p.observables.empty()) throw Error("expvals need observables (observable(O))");
    expect("expvals", o.expvals.size(), B * (s.n_segments() + 1) * p.observables.size(), "([batch, n_seg + 1, n_observables])");
  }
  if (!o.final_state.empty()) {
    const std::size_t per = (!p.closed && !p.gate) ? std::size_t(p.d) * p.d : std::size_t(p.n) * p.c;
    expect("final_state", o.final_state.size(), B * per, "([batch, " + std::to_string(per) + "])");
  }
}

template <class R>
kern::OpenTaskCall<R> make_call(const TaskArgs<R>& a, const Shape& sh, const TaskOutputs<R>& o) {
  kern::OpenTaskCall<R> c;
  c.batch = a.batch;
  c.amplitudes = a.amplitudes.data();
  c.amplitudes_per_task = sh.amp;
  c.drift = a.drift_coeffs.data();
  c.drift_per_task = sh.drift;
  c.rates = a.rates.data();
  c.rates_per_task = sh.rates;
  c.initial = a.initial.empty() ? nullptr : reinterpret_cast<const R*>(a.initial.data());  // (re, im) pairs
  c.durations = a.durations.empty() ? nullptr : a.durations.data();
  c.durations_per_task = sh.durations;
  c.fidelity = o.fidelity.empty() ? nullptr : o.fidelity.data();
  c.leakage = o.leakage.empty() ? nullptr : o.leakage.data();
  c.expvals = o.expvals.empty() ? nullptr : o.expvals.data();
  c.final_state = o.final_state.empty() ? nullptr : reinterpret_cast<R*>(o.final_state.data());
  return c;
}


using detail::Route;

// A call's buffers and their lengths in reals, by role (kern::for_each_buffer's order, which
// the cuda backend's run_open_call walks too).
struct Buffers {
  const void* ptr[kern::kOpenBuffers] = {};
  std::size_t len[kern::kOpenBuffers] = {};
  bool output[kern::kOpenBuffers] = {};
};

template <class R>
Buffers buffers_of(const detail::OpenPlan& p, const kern::OpenTaskCall<R>& c) {
  using kern::OpenBuffer;
  const std::size_t B = c.batch, n_amp = std::size_t(p.sys.n_segments()) * p.sys.n_controls();
  const std::size_t nd = p.a_drift.size(), nr = p.a_rate.size(), d = std::size_t(p.d);
  const std::size_t per_init = p.closed ? d : d * d;
  const std::size_t per_final = (!p.closed && !p.gate) ? d * d : std::size_t(p.n) * p.c;
  const std::size_t nseg = std::size_t(p.sys.n_segments());
  const std::size_t amps = c.amplitudes_per_task ? B * n_amp : n_amp, drift = c.drift_per_task ? B * nd : nd,
                    rates = c.rates_per_task ? B * nr : nr, durs = c.durations_per_task ? B * nseg : nseg;
  const std::size_t exps = B * (nseg + 1) * p.observables.size();
  Buffers b;
  using L = std::pair<OpenBuffer, std::size_t>;
  for (const auto& [role, n] :
       {L{OpenBuffer::amplitudes, amps}, L{OpenBuffer::drift, drift}, L{OpenBuffer::rates, rates},
        L{OpenBuffer::initial, 2 * B * per_init}, L{OpenBuffer::cot_fidelity, B}, L{OpenBuffer::cot_leakage, B},
        L{OpenBuffer::durations, durs}, L{OpenBuffer::cot_expvals, exps}, L{OpenBuffer::cot_final, 2 * B * per_final},
        L{OpenBuffer::fidelity, B}, L{OpenBuffer::leakage, B}, L{OpenBuffer::expvals, exps},
        L{OpenBuffer::final_state, 2 * B * per_final}, L{OpenBuffer::grad_amplitudes, amps},
        L{OpenBuffer::grad_drift, drift}, L{OpenBuffer::grad_rates, rates}, L{OpenBuffer::grad_durations, durs},
        L{OpenBuffer::grad_initial, 2 * B * per_init}})
    b.len[int(role)] = n;
  kern::for_each_buffer(c, [&b](OpenBuffer role, const auto* ptr, bool output) {
    const int i = int(role);
    b.ptr[i] = b.len[i] == 0 ? nullptr : ptr;
    b.output[i] = output;
  });
  return b;
}

template <class R>
std::size_t host_bytes(const Buffers& b) {
  std::size_t bytes = 0;
  for (int i = 0; i < kern::kOpenBuffers; ++i) bytes += b.ptr[i] ? b.len[i] * sizeof(R) : 0;
  return bytes;
}

template <class R>
detail::CallBuffers call_buffers(const Buffers& b) {
  detail::CallBuffers cb;
  cb.n = kern::kOpenBuffers;
  for (int i = 0; i < kern::kOpenBuffers; ++i) {
    cb.ptr[i] = b.ptr[i];
    cb.bytes[i] = b.ptr[i] != nullptr ? b.len[i] * sizeof(R) : 0;
    cb.output[i] = b.output[i];
  }
  return cb;
}

template <class R>
Route route_of(const detail::OpenPlan& p, const kern::OpenTaskCall<R>& c) {
  if (!p.resident) return Route::cpu;
  const Buffers b = buffers_of(p, c);
  return detail::route_call(p, b.ptr, c.batch, c.adjoint, host_bytes<R>(b));
}

template <class R>
void run(const detail::OpenPlan& p, const kern::OpenTaskCall<R>& c, Route r) {
  if (r == Route::cpu) return detail::run_call(p, r, {&c, std::is_same_v<R, float>, nullptr, false, nullptr});
  const detail::CallBuffers buffers = call_buffers<R>(buffers_of(p, c));  // what a device row stages
  detail::run_call(p, r, {&c, std::is_same_v<R, float>, &buffers, r == Route::device_staged, cuda_stream()});
  p.calls += 1;  // (the cpu executor counts its own)
}

}  // namespace

OpenProgram::OpenProgram(std::shared_ptr<detail::OpenPlan> plan) : plan_(std::move(plan)) {}
int OpenProgram::dim() const { return plan_->d; }
int OpenProgram::n_segments() const { return plan_->sys.n_segments(); }
Precision OpenProgram::precision() const { return plan_->precision; }
Solver OpenProgram::solver() const { return plan_->options.solver; }
const OpenSystem& OpenProgram::system() const { return plan_->sys; }
std::size_t OpenProgram::final_state_size() const {
  return (!plan_->closed && !plan_->gate) ? std::size_t(plan_->d) * plan_->d : std::size_t(plan_->n) * plan_->c;
}
CacheStats OpenProgram::cache_stats() const {
  return {plan_->computed.load(), plan_->reused.load(), plan_->calls.load()};
}

Device OpenProgram::device() const { return plan_->device; }
std::string OpenProgram::isa() const { return plan_->host->isa; }
OpenForm OpenProgram::form() const { return plan_->lindblad ? OpenForm::lindblad : OpenForm::superoperator; }
ExactMethod OpenProgram::exact_method() const {
  if (plan_->options.solver != Solver::exact) return ExactMethod::automatic;
  return plan_->action ? ExactMethod::action : ExactMethod::propagator;
}
int OpenProgram::cuda_device() const { return plan_->resident ? plan_->resident->device : -1; }

std::string OpenProgram::execution(std::size_t batch, bool adjoint) const {
  if (batch == 0) throw Error("batch must be at least 1");
  kern::OpenTaskCall<double> probe;
  probe.batch = batch;
  probe.adjoint = adjoint;
  return detail::describe_call(*plan_, route_of(*plan_, probe), batch, adjoint);
}

template <class R>
void OpenProgram::forward(const TaskArgs<R>& args, const TaskOutputs<R>& outputs) const {
  const Shape sh = check_shapes(*plan_, args);
  check_outputs(*plan_, args.batch, outputs);
  const kern::OpenTaskCall<R> c = make_call(args, sh, outputs);
  const Route r = route_of(*plan_, c);
  if (r != Route::device_buffers) check_values(*plan_, args);
  run(*plan_, c, r);
  // Device buffers are not read back: that would wait for the GPU on every call.
  if (r != Route::device_buffers) detail::check_fixed_step_results(*plan_, args, outputs);
}

namespace {

// vjp() and vjp_saved(): the checks, then one adjoint call; resume (vjp_saved) points
// past the saved buffer's header, and the call then runs on the cpu.
// The cotangents' shapes: each needs its output and has that output's shape.
template <class R>
void check_cotangents(const detail::OpenPlan& plan, std::size_t B, const TaskCotangents<R>& cot) {
  const OpenSystem& s = plan.sys;
  auto expect = [](std::string_view what, std::size_t got, std::size_t want, const std::string& shape) {
    if (got != want) {
      throw Error("the " + std::string(what) + " cotangent has " + std::to_string(got) + " values, expected " +
                  std::to_string(want) + " " + shape);
    }
  };
  if (!cot.fidelity.empty()) {
    if (s.target_kind() == OpenSystem::Target::None) throw Error("a fidelity cotangent needs a target");
    expect("fidelity", cot.fidelity.size(), B, "([batch])");
  }
  if (!cot.leakage.empty()) {
    if (plan.subspace.empty()) throw Error("a leakage cotangent needs a computational subspace");
    expect("leakage", cot.leakage.size(), B, "([batch])");
  }
  if (!cot.expvals.empty()) {
    if (plan.observables.empty()) throw Error("an expectation-value cotangent needs observables (observable(O))");
    expect("expvals", cot.expvals.size(), B * (s.n_segments() + 1) * plan.observables.size(),
           "([batch, n_seg + 1, n_observables])");
  }
  if (!cot.final_state.empty()) {
    const std::size_t per = (!plan.closed && !plan.gate) ? std::size_t(plan.d) * plan.d : std::size_t(plan.n) * plan.c;
    expect("final_state", cot.final_state.size(), B * per, "([batch, " + std::to_string(per) + "] complex)");
  }
}

template <class R>
void expect_finite_complex(std::string_view what, std::span<const std::complex<R>> v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i].real()) || !std::isfinite(v[i].imag())) {
      throw Error(std::string(what) + " contains a non-finite value at index " + std::to_string(i));
    }
  }
}

template <class R>
void vjp_call(const detail::OpenPlan& plan, const TaskArgs<R>& args, const TaskCotangents<R>& cot,
              const TaskGradients<R>& grads, const TaskOutputs<R>& outputs, const R* resume) {
  const Shape sh = check_shapes(plan, args);
  check_outputs(plan, args.batch, outputs);
  const std::size_t B = args.batch;
  const OpenSystem& s = plan.sys;
  check_cotangents(plan, B, cot);
  kern::OpenTaskCall<R> c = make_call(args, sh, outputs);
  c.adjoint = true;
  c.cot_fidelity = cot.fidelity.empty() ? nullptr : cot.fidelity.data();
  c.cot_leakage = cot.leakage.empty() ? nullptr : cot.leakage.data();
  c.cot_expvals = cot.expvals.empty() ? nullptr : cot.expvals.data();
  c.cot_final = cot.final_state.empty() ? nullptr : reinterpret_cast<const R*>(cot.final_state.data());
  c.grad_amplitudes = grads.amplitudes.empty() ? nullptr : grads.amplitudes.data();
  c.grad_drift = grads.drift_coeffs.empty() ? nullptr : grads.drift_coeffs.data();
  c.grad_rates = grads.rates.empty() ? nullptr : grads.rates.data();
  c.grad_durations = grads.durations.empty() ? nullptr : grads.durations.data();
  c.grad_initial = grads.initial.empty() ? nullptr : reinterpret_cast<R*>(grads.initial.data());
  c.resume = resume;
  const Route r = resume ? Route::cpu : route_of(plan, c);
  if (r != Route::device_buffers) {
    check_values(plan, args);
    expect_finite("the fidelity cotangent", cot.fidelity, 1);
    expect_finite("the leakage cotangent", cot.leakage, 1);
    expect_finite("the expvals cotangent", cot.expvals, 1);
    expect_finite_complex("the final_state cotangent", cot.final_state);
  }
  auto expect_grad = [&](std::string_view what, std::size_t got, bool per_task, std::size_t len) {
    if (got == 0) return;
    const std::size_t want = per_task ? B * len : len;
    if (got != want) {
      throw Error(std::string("gradient ") + std::string(what) + " has " + std::to_string(got) + " values, expected " +
                  std::to_string(want) + (per_task ? " (per task, like the argument)" : " (shared, like the argument)"));
    }
  };
  expect_grad("amplitudes", grads.amplitudes.size(), sh.amp, std::size_t(s.n_segments()) * s.n_controls());
  expect_grad("drift_coeffs", grads.drift_coeffs.size(), sh.drift, std::size_t(s.n_drift_terms()));
  expect_grad("rates", grads.rates.size(), sh.rates, std::size_t(s.n_jumps()));
  expect_grad("durations", grads.durations.size(), sh.durations, std::size_t(s.n_segments()));
  if (!grads.initial.empty()) {
    if (args.initial.empty()) {
      throw Error("gradient initial needs per-task initial states (TaskArgs::initial); the compiled initial state "
                  "is a constant");
    }
    if (grads.initial.size() != args.initial.size()) {
      throw Error("gradient initial has " + std::to_string(grads.initial.size()) + " values, expected " +
                  std::to_string(args.initial.size()) + " (like the initial argument)");
    }
  }
  run(plan, c, r);
  if (r != Route::device_buffers) detail::check_fixed_step_results(plan, args, outputs);
}

// The saved buffer's header: a tag, and how many runs the forward call kept (1 when
// every task is identical and one simulation stood for them all, else the batch), so
// vjp_saved() refuses a buffer no forward() wrote or one written for other arguments.
constexpr std::uint64_t kSavedTag = 0x71666c656574534fULL;  // "qfleetSO"
constexpr std::size_t kSavedHeaderBytes = 2 * sizeof(std::uint64_t);

template <class R>
constexpr std::size_t saved_header() {
  return kSavedHeaderBytes / sizeof(R);
}

std::uint64_t saved_runs(std::size_t batch, bool identical) { return identical ? 1 : batch; }

}  // namespace

template <class R>
void OpenProgram::vjp(const TaskArgs<R>& args, const TaskCotangents<R>& cot, const TaskGradients<R>& grads,
                      const TaskOutputs<R>& outputs) const {
  vjp_call(*plan_, args, cot, grads, outputs, static_cast<const R*>(nullptr));
}

std::size_t OpenProgram::saved_size(std::size_t batch) const {
  if (plan_->resident) return 0;
  const bool f32 = plan_->precision == Precision::complex64;
  const std::size_t per_run =
      f32 ? kern::open_saved_per_run<float>(plan_->view) : kern::open_saved_per_run<double>(plan_->view);
  return (f32 ? saved_header<float>() : saved_header<double>()) + batch * per_run;
}

template <class R>
void OpenProgram::forward(const TaskArgs<R>& args, const TaskOutputs<R>& outputs, std::span<R> saved) const {
  if (saved.empty()) return forward(args, outputs);
  if (saved_size(args.batch) == 0) {
    throw Error("this program cannot save states for vjp_saved() (it has a GPU copy): pass an empty `saved` "
                "(vjp_saved() then runs vjp())");
  }
  const Shape sh = check_shapes(*plan_, args);
  check_outputs(*plan_, args.batch, outputs);
  detail::expect_size("saved", saved.size(), saved_size(args.batch), [] {
    return "(saved_size(batch): the states at every segment boundary of each task)";
  });
  check_values(*plan_, args);
  kern::OpenTaskCall<R> c = make_call(args, sh, outputs);
  c.save = saved.data() + saved_header<R>();
  run(*plan_, c, Route::cpu);
  detail::check_fixed_step_results(*plan_, args, outputs);
  const std::uint64_t header[2] = {kSavedTag, saved_runs(args.batch, kern::identical_tasks(c))};
  std::memcpy(saved.data(), header, kSavedHeaderBytes);
}

template <class R>
void OpenProgram::vjp_saved(const TaskArgs<R>& args, std::span<const R> saved, const TaskCotangents<R>& cot,
                            const TaskGradients<R>& grads) const {
  if (saved_size(args.batch) == 0) return vjp(args, cot, grads);
  const Shape sh = check_shapes(*plan_, args);
  detail::expect_size("saved", saved.size(), saved_size(args.batch),
                      [] { return "(saved_size(batch), written by forward() for these arguments)"; });
  std::uint64_t header[2];
  std::memcpy(header, saved.data(), kSavedHeaderBytes);
  if (header[0] != kSavedTag) throw Error("saved was not written by forward() with a saved buffer");
  const bool identical = kern::identical_tasks(make_call(args, sh, TaskOutputs<R>{}));
  if (header[1] != saved_runs(args.batch, identical)) {
    throw Error(std::string("saved was written by forward() for other arguments: ") +
                (identical ? "these share every parameter (one simulation stands for all tasks), that call's did not"
                           : "that call's shared every parameter (one simulation stood for all tasks), these do not"));
  }
  vjp_call(*plan_, args, cot, grads, TaskOutputs<R>{}, saved.data() + saved_header<R>());
}

template <class R>
kern::OpenView detail::open_call_view(const kern::OpenView& v, const kern::OpenTaskCall<R>& c) {
  kern::OpenView out = v;
  if (!c.durations || v.fixed_steps == 0) return out;  // (fixed_steps: rk4/euler only)
  const std::size_t n = (c.durations_per_task ? c.batch : 1) * std::size_t(v.nseg);
  for (std::size_t i = 0; i < n; ++i) {
    out.fixed_steps = std::max(out.fixed_steps, static_cast<int>(kern::open_fixed_steps(double(c.durations[i]), v.dt)));
  }
  return out;
}
template kern::OpenView detail::open_call_view<float>(const kern::OpenView&, const kern::OpenTaskCall<float>&);
template kern::OpenView detail::open_call_view<double>(const kern::OpenView&, const kern::OpenTaskCall<double>&);

#define QFLEET_OPEN_INSTANTIATE(R)                                                                       \
  template void OpenProgram::forward<R>(const TaskArgs<R>&, const TaskOutputs<R>&) const;              \
  template void OpenProgram::vjp<R>(const TaskArgs<R>&, const TaskCotangents<R>&, const TaskGradients<R>&, \
                                    const TaskOutputs<R>&) const;                                        \
  template void OpenProgram::forward<R>(const TaskArgs<R>&, const TaskOutputs<R>&, std::span<R>) const; \
  template void OpenProgram::vjp_saved<R>(const TaskArgs<R>&, std::span<const R>, const TaskCotangents<R>&, \
                                          const TaskGradients<R>&) const;
QFLEET_OPEN_INSTANTIATE(float)
QFLEET_OPEN_INSTANTIATE(double)
#undef QFLEET_OPEN_INSTANTIATE

OpenProgram compile(const OpenSystem& system, const OpenCompileOptions& options) {
  std::shared_ptr<detail::OpenPlan> plan(detail::build_open_plan(system, options));
  detail::finish_open_plan(*plan);
  detail::pack_open_plan(*plan);
  detail::place(*plan, options.device, options.isa);
  return OpenProgram(std::move(plan));
}

}  // namespace qfleet
