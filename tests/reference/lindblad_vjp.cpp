// Finite-difference gradients of every open-system output (lindblad_vjp.hpp).
#include "reference/lindblad_vjp.hpp"

namespace ref {

std::vector<double> Durations::of(const Model& m, std::size_t task) const {
  if (values.empty()) return m.durations;
  const std::size_t n = m.durations.size();
  const auto from = values.begin() + std::ptrdiff_t(per_task ? task * n : 0);
  return {from, from + std::ptrdiff_t(n)};
}

double task_objective(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c,
                      std::size_t task, Scheme s, double dt) {
  Model mt = m;
  mt.durations = dur.of(m, task);
  const Out o = simulate(mt, b.task(mt, task), s, dt);
  double v = 0;
  if (!c.fid.empty()) v += c.fid[task] * o.fidelity;
  if (!c.leak.empty()) v += c.leak[task] * o.leakage;
  const std::size_t ne = o.expvals.size();
  for (std::size_t i = 0; i < ne && !c.exp.empty(); ++i) v += c.exp[task * ne + i] * o.expvals[i];
  const std::size_t nf = o.final_state.size();
  for (std::size_t i = 0; i < nf && !c.fin.empty(); ++i) v += (std::conj(c.fin[task * nf + i]) * o.final_state[i]).real();
  return v;
}

AllGrads fd_all_grads(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c, Scheme s,
                      double dt, double h) {
  // Central differences of one entry: the tasks it feeds (one, or all when shared).
  auto diff = [&](const std::vector<double>& base, bool per_task, std::size_t len, auto&& with) {
    std::vector<double> g(base.size(), 0.0);
    for (std::size_t i = 0; i < base.size(); ++i) {
      double acc = 0;
      for (std::size_t task = 0; task < b.B; ++task) {
        if (per_task && task != i / len) continue;
        acc += with(i, +h, task) - with(i, -h, task);
      }
      g[i] = acc / (2 * h);
    }
    return g;
  };
  auto batch_field = [&](std::vector<double> TaskBatch::*field) {
    return [&, field](std::size_t i, double step, std::size_t task) {
      TaskBatch bb = b;
      (bb.*field)[i] += step;
      return task_objective(m, bb, dur, c, task, s, dt);
    };
  };
  AllGrads g;
  g.amps = diff(b.amps, b.amp_pt, m.n_amp(), batch_field(&TaskBatch::amps));
  g.drift = diff(b.drift, b.drift_pt, m.drift_terms.size(), batch_field(&TaskBatch::drift));
  g.rates = diff(b.rates, b.rates_pt, m.jumps.size(), batch_field(&TaskBatch::rates));
  Durations base = dur;
  if (base.values.empty()) base.values = m.durations;
  g.durations = diff(base.values, base.per_task, m.durations.size(), [&](std::size_t i, double step, std::size_t task) {
    Durations dd = base;
    dd.values[i] += step;
    return task_objective(m, b, dd, c, task, s, dt);
  });
  return g;
}

double fd_initial_direction(const Model& m, const TaskBatch& b, const Durations& dur, const Cotangents& c,
                            std::size_t task, const std::vector<cd>& v, Scheme s, double dt, double h) {
  const std::size_t per = v.size();
  auto at = [&](double step) {
    TaskBatch bb = b;
    for (std::size_t i = 0; i < per; ++i) bb.initial[task * per + i] += step * v[i];
    return task_objective(m, bb, dur, c, task, s, dt);
  };
  return (at(h) - at(-h)) / (2 * h);
}

}  // namespace ref
