// The plain control problem straight from the engine (include/qfleet/control.hpp,
// infidelity): 1 - F and its gradient with respect to the amplitudes from one
// OpenProgram::vjp per evaluation, without an autograd graph. On small systems the graph
// and the tensors a call through autograd creates cost several times the engine's own work
// (a qubit gate of 60 segments: about 35 us in the engine, 250-300 us through autograd from
// Python: bench/micro/control_overhead.py).
#include "qfleet/control.hpp"
#include "qfleet/error.hpp"
#include "qfleet/torch.hpp"

namespace qfleet::control {

using torch::Tensor;

namespace {

// Rows `tasks` of a per-task tensor [B, k], or the shared one [k] as it is.
Tensor rows(const Tensor& t, const Tensor& tasks, bool per_task) {
  if (!t.defined()) return t;
  return (per_task && t.dim() == 2 ? t.index_select(0, tasks) : t).contiguous();
}

std::span<const double> span_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.const_data_ptr<double>(), static_cast<std::size_t>(t.numel())};
}

}  // namespace

CostGradient infidelity(const c10::intrusive_ptr<nn::OpenSystemProgram>& program, const Tensor& rates,
                        const Tensor& drift_coeffs, const Tensor& weights) {
  const OpenProgram& p = program->program;
  if (p.precision() != Precision::complex128)
    throw Error("control: the engine's infidelity runs complex128 programs (use the autograd cost for complex64)");
  if (p.system().target_kind() == OpenSystem::Target::None) throw Error("control: the system has no target");
  auto f64 = [](const Tensor& t) { return t.defined() ? t.to(torch::kFloat64).contiguous() : t; };
  const Tensor r = f64(rates), c = f64(drift_coeffs), w = f64(weights);
  const bool ensemble = w.defined();
  const int64_t n_amp = p.n_segments() * p.system().n_controls();
  return [program, r, c, w, ensemble, n_amp](const Tensor& x, const Tensor& tasks) {
    const OpenProgram& prog = program->program;
    const Tensor xd = x.to(torch::kFloat64).contiguous();
    const int64_t A = xd.size(0);
    if (xd.size(1) != n_amp)
      throw Error("control: the infidelity takes the amplitudes [A, " + std::to_string(n_amp) + "]");
    // An ensemble: one pulse for M members (batch M, amplitudes shared, cotangent -w_m);
    // tasks or one system: batch A, each its own pulse (cotangent -1).
    const int64_t batch = ensemble ? w.size(0) : A;
    const Tensor rr = rows(r, tasks, !ensemble), cc = rows(c, tasks, !ensemble);
    const Tensor cot = ensemble ? -w : torch::full({batch}, -1.0, torch::kFloat64);
    Tensor fid = torch::empty({batch}, torch::kFloat64);
    Tensor grad = torch::zeros({ensemble ? 1 : A, n_amp}, torch::kFloat64);
    const TaskArgs<double> args{std::size_t(batch), span_of(ensemble ? xd[0] : xd), span_of(cc), span_of(rr), {}};
    TaskOutputs<double> out;
    out.fidelity = {fid.mutable_data_ptr<double>(), std::size_t(batch)};
    prog.vjp<double>(args, span_of(cot), {}, TaskGradients<double>{{grad.mutable_data_ptr<double>(),
                                                                      std::size_t(grad.numel())}, {}, {}},
                     out);
    const Tensor cost = ensemble ? (1 - (fid * w).sum()).reshape({1}) : 1 - fid;
    return std::pair{cost, grad};
  };
}

}  // namespace qfleet::control
