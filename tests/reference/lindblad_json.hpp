// The tests' independent dense reference, read from a "kind": "lindblad" problem's
// JSON (docs/cli.md): a thin reader that builds the reference's own Model and
// TaskBatch (lindblad.hpp) from the problem, and evaluate(), which returns the
// reference's results in the layout of qfleet's output so the two can be compared
// key by key. Gradients are central finite differences of the sum over tasks of the
// differentiated figure of merit (the fidelity if there is a target, else the
// leakage). It shares no code with qfleet's JSON reader or kernels: only
// nlohmann::json to read the problem.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lindblad.hpp"

namespace ref::lindblad_json {

using nlohmann::json;

// A complex entry is a number or [re, im].
inline cd entry(const json& e) {
  if (e.is_number()) return {e.get<double>(), 0.0};
  return {e.at(0).get<double>(), e.at(1).get<double>()};
}
inline Mat matrix(const json& m, int d) {
  Mat a(d, d);
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c) a(r, c) = entry(m.at(r).at(c));
  return a;
}
inline Vec vector(const json& v, int d) {
  Vec a(d);
  for (int i = 0; i < d; ++i) a(i) = entry(v.at(i));
  return a;
}

inline void flatten(const json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& e : j) flatten(e, out);
  } else {
    out.push_back(j.get<double>());
  }
}
// Array nesting depth along the first elements.
inline int depth(const json& j) {
  int n = 0;
  const json* e = &j;
  while (e->is_array()) {
    ++n;
    if (e->empty()) break;
    e = &(*e)[0];
  }
  return n;
}

struct Problem {
  Model model;
  TaskBatch tasks;
  Scheme scheme = Scheme::Exact;
  double dt = 0;
};

inline Scheme scheme(const std::string& solver) {
  if (solver == "exact") return Scheme::Exact;
  if (solver == "rk4") return Scheme::RK4;
  if (solver == "euler") return Scheme::Euler;
  throw std::runtime_error("reference: solver not modelled: " + solver);
}

inline Problem read(const json& p) {
  Problem q;
  const int d = p.at("dim").get<int>();
  Model& m = q.model = Model(d);
  if (p.contains("H0")) m.h0 = matrix(p["H0"], d);
  auto list = [&](const char* k, std::vector<Mat>& out) {
    if (p.contains(k))
      for (const auto& a : p[k]) out.push_back(matrix(a, d));
  };
  list("drift_terms", m.drift_terms);
  list("controls", m.controls);
  list("jumps", m.jumps);
  list("observables", m.observables);
  if (p.contains("durations")) {
    for (const auto& t : p["durations"]) m.durations.push_back(t.get<double>());
  } else {
    std::size_t nseg = 0;
    if (p.contains("n_segments")) {
      nseg = p["n_segments"].get<std::size_t>();
    } else {
      const json& a = p.at("amplitudes");
      nseg = depth(a) > 2 ? a[0].size() : a.size();
    }
    m.durations.assign(nseg, p.at("segment_duration").get<double>());
  }
  // Each argument is shared, or per task when nested one level deeper; the batch is
  // the number of tasks of any per-task argument (1 if none is).
  TaskBatch& b = q.tasks;
  auto arg = [&](const char* key, int shared_depth, std::size_t per, std::vector<double>& v, bool& per_task) {
    if (!p.contains(key)) return;
    per_task = depth(p[key]) > shared_depth;
    flatten(p[key], v);
    if (per_task) b.B = per > 0 ? v.size() / per : p[key].size();
  };
  arg("amplitudes", 2, m.n_amp(), b.amps, b.amp_pt);
  arg("drift_coeffs", 1, m.drift_terms.size(), b.drift, b.drift_pt);
  arg("rates", 1, m.jumps.size(), b.rates, b.rates_pt);
  if (p.contains("psi0")) m.psi0 = vector(p["psi0"], d);
  if (p.contains("rho0")) {
    m.init = Init::Density;
    m.rho0 = matrix(p["rho0"], d);
  }
  if (p.value("gate", false)) m.init = Init::Gate;
  if (p.contains("target")) {
    const json& t = p["target"];
    if (t.contains("state")) {
      m.target = Target::Pure;
      m.target_psi = vector(t["state"], d);
    } else if (t.contains("density")) {
      m.target = Target::Mixed;
      m.target_mat = matrix(t["density"], d);
    } else {
      m.target = Target::Unitary;
      m.target_mat = matrix(t["unitary"], d);
    }
  }
  if (p.contains("subspace"))
    for (const auto& l : p["subspace"]) m.subspace.push_back(l.get<int>());
  q.scheme = scheme(p.value("solver", std::string("exact")));
  q.dt = p.value("dt", 0.0);
  return q;
}

inline json pair(cd z) { return json::array({z.real(), z.imag()}); }

// Values [B * per] as [per] (shared) or [B][per] (per task); `row` shapes one task's.
template <class Row>
json per_task_shape(bool per_task, std::size_t B, std::size_t per, Row row) {
  if (!per_task) return row(0);
  json all = json::array();
  for (std::size_t b = 0; b < B; ++b) all.push_back(row(b * per));
  return all;
}

// The reference's result for a problem, in qfleet's output layout (without the
// informational keys dim/batch/solver/precision). h: finite-difference step.
inline json evaluate(const json& problem, double h = 1e-6) {
  const Problem q = read(problem);
  const Model& m = q.model;
  const std::size_t B = q.tasks.B, d = std::size_t(m.d), nobs = m.observables.size();
  const std::vector<Out> res = simulate_batch(m, q.tasks, q.scheme, q.dt);
  json out = json::object();
  auto each = [&](auto value) {
    json a = json::array();
    for (const Out& r : res) a.push_back(value(r));
    return a;
  };
  if (m.target != Target::None) out["fidelity"] = each([](const Out& r) { return r.fidelity; });
  if (!m.subspace.empty()) out["leakage"] = each([](const Out& r) { return r.leakage; });
  if (nobs > 0) {
    out["expvals"] = each([&](const Out& r) {  // [n_seg + 1][n_obs]
      json e = json::array();
      for (std::size_t k = 0; k * nobs < r.expvals.size(); ++k)
        e.push_back(std::vector<double>(r.expvals.begin() + std::ptrdiff_t(k * nobs),
                                        r.expvals.begin() + std::ptrdiff_t((k + 1) * nobs)));
      return e;
    });
  }
  // A closed system's state is [d] of [re, im]; rho, U and S are square matrices.
  out["final_state"] = each([&](const Out& r) {
    json s = json::array();
    if (m.closed() && !m.gate()) {
      for (const cd& z : r.final_state) s.push_back(pair(z));
      return s;
    }
    const std::size_t n = m.gate() && !m.closed() ? d * d : d;
    for (std::size_t i = 0; i < n; ++i) {
      json row = json::array();
      for (std::size_t j = 0; j < n; ++j) row.push_back(pair(r.final_state[i * n + j]));
      s.push_back(row);
    }
    return s;
  });

  if (problem.value("gradients", false)) {
    const std::vector<double> ones(B, 1.0), none;
    const bool fid = m.target != Target::None;
    const Grads g = fd_grads(m, q.tasks, fid ? ones : none, fid ? none : ones, q.scheme, q.dt, h);
    const std::size_t nctrl = m.controls.size(), nseg = m.durations.size();
    auto slice = [](const std::vector<double>& v, std::size_t off, std::size_t n) {
      return json(std::vector<double>(v.begin() + std::ptrdiff_t(off), v.begin() + std::ptrdiff_t(off + n)));
    };
    out["grad_amplitudes"] = per_task_shape(q.tasks.amp_pt, B, nseg * nctrl, [&](std::size_t off) {
      json a = json::array();  // [n_seg][n_ctrl]
      for (std::size_t k = 0; k < nseg; ++k) a.push_back(slice(g.amps, off + k * nctrl, nctrl));
      return a;
    });
    const std::size_t nd = m.drift_terms.size(), nj = m.jumps.size();
    out["grad_drift_coeffs"] =
        per_task_shape(q.tasks.drift_pt, B, nd, [&](std::size_t off) { return slice(g.drift, off, nd); });
    out["grad_rates"] =
        per_task_shape(q.tasks.rates_pt, B, nj, [&](std::size_t off) { return slice(g.rates, off, nj); });
  }
  return out;
}

}  // namespace ref::lindblad_json
