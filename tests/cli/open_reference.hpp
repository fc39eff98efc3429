// An independent reference for "kind": "lindblad" problems: it reads the problem's
// JSON itself and simulates with plain Eigen, sharing no code with qfleet (only
// nlohmann::json to read the problem). Closed systems (no jumps) propagate psi or
// U with exp(-i H dt); open systems propagate vec(rho) (column stacking) or the
// superoperator with exp(dt L), the Liouvillian built from Kronecker products:
//
//   vec(A X B) = (B^T kron A) vec(X)
//   L = -i (I kron H - H^T kron I)
//       + sum_j gamma_j (conj(L_j) kron L_j - (I kron L_j^dag L_j)/2 - ((L_j^dag L_j)^T kron I)/2)
//
// rk4 / euler are the exact maps of those one-step methods on the linear ODE
// (each segment split into ceil(duration / dt) equal steps). Gradients are central
// finite differences of the sum over tasks of the differentiated figure of merit.
// evaluate() returns its results in the layout of qfleet's output (docs/cli.md),
// so the two can be compared key by key.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>
#include <nlohmann/json.hpp>

namespace qfleet_oref {

using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
using Vec = Eigen::VectorXcd;
using nlohmann::json;
inline const cd kI{0.0, 1.0};

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
inline Mat kron(const Mat& a, const Mat& b) {
  Mat k(a.rows() * b.rows(), a.cols() * b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) k.block(i * b.rows(), j * b.cols(), b.rows(), b.cols()) = a(i, j) * b;
  return k;
}
inline Vec vec(const Mat& m) {  // column stacking
  Vec v(m.size());
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i) v(i + m.rows() * j) = m(i, j);
  return v;
}
inline Mat unvec(const Vec& v, int d) {
  Mat m(d, d);
  for (int j = 0; j < d; ++j)
    for (int i = 0; i < d; ++i) m(i, j) = v(i + d * j);
  return m;
}
inline Mat sqrt_psd(const Mat& a) {
  Eigen::SelfAdjointEigenSolver<Mat> es(Mat((a + a.adjoint()) / 2.0));
  Eigen::VectorXd ev = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * ev.cast<cd>().asDiagonal() * es.eigenvectors().adjoint();
}

// A per-task or shared real array: flattened values, per_task, and the size of one task.
struct Arg {
  std::vector<double> v;
  bool per_task = false;
  std::size_t per = 0;  // values per task
};
inline void flatten(const json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& e : j) flatten(e, out);
  } else {
    out.push_back(j.get<double>());
  }
}
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
inline Arg arg(const json& p, const char* key, int shared_depth, std::size_t per) {
  Arg a;
  a.per = per;
  if (!p.contains(key)) return a;
  a.per_task = depth(p[key]) > shared_depth;
  flatten(p[key], a.v);
  return a;
}

struct Problem {
  int d = 0;
  Mat h0;
  std::vector<Mat> drift, ctrl, jumps, obs;
  std::vector<double> durations;
  bool gate = false, mixed0 = false;
  Vec psi0;
  Mat rho0;
  std::string target;  // "", "state", "density", "unitary"
  Vec tpsi;
  Mat tmat;
  std::vector<int> sub;
  std::string solver = "exact";
  double dt = 0;
  std::size_t batch = 1;
  Arg amps, coeffs, rates;
  bool closed() const { return jumps.empty(); }
};

inline Problem read(const json& p) {
  Problem q;
  const int d = q.d = p.at("dim").get<int>();
  q.h0 = p.contains("H0") ? matrix(p["H0"], d) : Mat::Zero(d, d);
  auto list = [&](const char* k, std::vector<Mat>& out) {
    if (p.contains(k))
      for (const auto& m : p[k]) out.push_back(matrix(m, d));
  };
  list("drift_terms", q.drift);
  list("controls", q.ctrl);
  list("jumps", q.jumps);
  list("observables", q.obs);
  std::size_t nseg = 0;
  if (p.contains("durations")) {
    for (const auto& t : p["durations"]) q.durations.push_back(t.get<double>());
  } else {
    if (p.contains("n_segments")) {
      nseg = p["n_segments"].get<std::size_t>();
    } else {
      const json& a = p.at("amplitudes");
      nseg = depth(a) > 2 ? a[0].size() : a.size();
    }
    q.durations.assign(nseg, p.at("segment_duration").get<double>());
  }
  nseg = q.durations.size();
  q.amps = arg(p, "amplitudes", 2, nseg * q.ctrl.size());
  q.coeffs = arg(p, "drift_coeffs", 1, q.drift.size());
  q.rates = arg(p, "rates", 1, q.jumps.size());
  for (const Arg* a : {&q.amps, &q.coeffs, &q.rates})
    if (a->per_task && a->per > 0) q.batch = a->v.size() / a->per;
  if (q.amps.per_task && q.amps.per == 0) q.batch = p["amplitudes"].size();
  if (q.coeffs.per_task && q.coeffs.per == 0) q.batch = p["drift_coeffs"].size();
  if (q.rates.per_task && q.rates.per == 0) q.batch = p["rates"].size();
  q.gate = p.value("gate", false);
  if (p.contains("psi0")) q.psi0 = vector(p["psi0"], d);
  if (p.contains("rho0")) {
    q.mixed0 = true;
    q.rho0 = matrix(p["rho0"], d);
  }
  if (p.contains("target")) {
    const json& t = p["target"];
    if (t.contains("state")) {
      q.target = "state";
      q.tpsi = vector(t["state"], d);
    } else {
      q.target = t.contains("density") ? "density" : "unitary";
      q.tmat = matrix(t[q.target], d);
    }
  }
  if (p.contains("subspace"))
    for (const auto& l : p["subspace"]) q.sub.push_back(l.get<int>());
  q.solver = p.value("solver", std::string("exact"));
  q.dt = p.value("dt", 0.0);
  return q;
}

// Value i of task b of a per-task or shared argument.
inline double val(const Arg& a, std::size_t b, std::size_t i) {
  return a.per_task ? a.v[b * a.per + i] : a.v[i];
}

struct TaskResult {
  double fidelity = 0, leakage = 0;
  std::vector<std::vector<double>> expvals;  // [n_seg + 1][n_obs]
  Mat final_state;                           // pure states as a d x 1 column
};

inline TaskResult simulate(const Problem& q, std::size_t b) {
  const int d = q.d;
  const bool closed = q.closed();
  const Mat id = Mat::Identity(d, d);
  const std::size_t nctrl = q.ctrl.size();
  auto generator = [&](std::size_t k) {
    Mat h = q.h0;
    for (std::size_t m = 0; m < q.drift.size(); ++m) h += val(q.coeffs, b, m) * q.drift[m];
    for (std::size_t c = 0; c < nctrl; ++c) h += val(q.amps, b, k * nctrl + c) * q.ctrl[c];
    if (closed) return Mat(-kI * h);
    Mat l = -kI * (kron(id, h) - kron(h.transpose(), id));
    for (std::size_t j = 0; j < q.jumps.size(); ++j) {
      const Mat& lj = q.jumps[j];
      const Mat ldl = lj.adjoint() * lj;
      l += val(q.rates, b, j) *
           (kron(lj.conjugate(), lj) - 0.5 * kron(id, ldl) - 0.5 * kron(ldl.transpose(), id));
    }
    return l;
  };
  auto propagator = [&](const Mat& a, double t) -> Mat {
    if (q.solver == "exact") return Mat((a * t).exp());
    const auto steps = static_cast<int>(std::ceil(t / q.dt));
    const Mat ha = a * (t / steps);
    const Mat one = Mat::Identity(a.rows(), a.cols());
    const Mat m = q.solver == "euler" ? Mat(one + ha)
                                      : Mat(one + ha + ha * ha / 2.0 + ha * ha * ha / 6.0 + ha * ha * ha * ha / 24.0);
    Mat p = one;
    for (int s = 0; s < steps; ++s) p = m * p;
    return p;
  };
  // The propagated object X: psi (d x 1), U (d x d), vec(rho) (d^2 x 1) or S (d^2 x d^2).
  Mat x;
  if (q.gate) {
    x = Mat::Identity(closed ? d : d * d, closed ? d : d * d);
  } else if (closed) {
    x = q.psi0;
  } else {
    x = vec(q.mixed0 ? q.rho0 : Mat(q.psi0 * q.psi0.adjoint()));
  }
  TaskResult r;
  auto record = [&] {
    std::vector<double> e;
    for (const Mat& o : q.obs) {
      if (closed) {
        e.push_back((x.adjoint() * o * x)(0, 0).real());
      } else {
        e.push_back((o * unvec(x.col(0), d)).trace().real());
      }
    }
    r.expvals.push_back(e);
  };
  if (!q.gate) record();
  for (std::size_t k = 0; k < q.durations.size(); ++k) {
    x = propagator(generator(k), q.durations[k]) * x;
    if (!q.gate) record();
  }
  const double dd = d;
  if (q.target == "state") {
    r.fidelity = closed ? std::norm(q.tpsi.dot(x.col(0)))
                        : (q.tpsi.adjoint() * unvec(x.col(0), d) * q.tpsi)(0, 0).real();
  } else if (q.target == "density") {
    if (closed) {
      r.fidelity = (x.adjoint() * q.tmat * x)(0, 0).real();
    } else {
      const Mat s = sqrt_psd(q.tmat);
      const double t = sqrt_psd(s * unvec(x.col(0), d) * s).trace().real();
      r.fidelity = t * t;
    }
  } else if (q.target == "unitary") {
    if (closed) {
      r.fidelity = (std::norm((q.tmat.adjoint() * x).trace()) + dd) / (dd * (dd + 1));
    } else {
      const Mat su = kron(q.tmat.conjugate(), q.tmat);
      const double f_pro = (su.adjoint() * x).trace().real() / (dd * dd);
      r.fidelity = (dd * f_pro + 1) / (dd + 1);
    }
  }
  if (!q.sub.empty()) {
    Mat proj = Mat::Zero(d, d);
    for (int i : q.sub) proj(i, i) = 1;
    const double dc = static_cast<double>(q.sub.size());
    if (q.gate) {
      const Mat ep = closed ? Mat(x * proj * x.adjoint()) : unvec(x * vec(proj), d);
      r.leakage = 1 - (proj * ep).trace().real() / dc;
    } else {
      const Mat rho = closed ? Mat(x * x.adjoint()) : unvec(x.col(0), d);
      r.leakage = 1 - (proj * rho).trace().real();
    }
  }
  r.final_state = (!closed && !q.gate) ? unvec(x.col(0), d) : x;
  return r;
}

inline json pair(cd z) { return json::array({z.real(), z.imag()}); }

// Gradient values of a vector argument ([m] shared or [B][m] per task), shaped like it.
inline json shaped(const Arg& a, const std::vector<double>& g, std::size_t batch) {
  auto one = [&](std::size_t off) {
    return json(std::vector<double>(g.begin() + static_cast<std::ptrdiff_t>(off),
                                    g.begin() + static_cast<std::ptrdiff_t>(off + a.per)));
  };
  if (!a.per_task) return one(0);
  json all = json::array();
  for (std::size_t b = 0; b < batch; ++b) all.push_back(one(b * a.per));
  return all;
}

// The reference's result for a problem, in qfleet's output layout (without the
// informational keys dim/batch/solver/precision). h: finite-difference step.
inline json evaluate(const json& problem, double h = 1e-6) {
  Problem q = read(problem);
  const std::size_t B = q.batch;
  json out = json::object();
  std::vector<TaskResult> res;
  for (std::size_t b = 0; b < B; ++b) res.push_back(simulate(q, b));
  if (!q.target.empty()) {
    json f = json::array();
    for (const auto& r : res) f.push_back(r.fidelity);
    out["fidelity"] = f;
  }
  if (!q.sub.empty()) {
    json l = json::array();
    for (const auto& r : res) l.push_back(r.leakage);
    out["leakage"] = l;
  }
  if (!q.obs.empty()) {
    json e = json::array();
    for (const auto& r : res) e.push_back(r.expvals);
    out["expvals"] = e;
  }
  json fs = json::array();
  for (const auto& r : res) {
    json s = json::array();
    if (r.final_state.cols() == 1) {
      for (Eigen::Index i = 0; i < r.final_state.rows(); ++i) s.push_back(pair(r.final_state(i, 0)));
    } else {
      for (Eigen::Index i = 0; i < r.final_state.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < r.final_state.cols(); ++j) row.push_back(pair(r.final_state(i, j)));
        s.push_back(row);
      }
    }
    fs.push_back(s);
  }
  out["final_state"] = fs;

  if (problem.value("gradients", false)) {
    const bool fid = !q.target.empty();
    auto total = [&] {
      double t = 0;
      for (std::size_t b = 0; b < B; ++b) {
        const TaskResult r = simulate(q, b);
        t += fid ? r.fidelity : r.leakage;
      }
      return t;
    };
    auto fd = [&](Arg& a) {
      std::vector<double> g(a.v.size());
      for (std::size_t i = 0; i < a.v.size(); ++i) {
        const double x0 = a.v[i];
        a.v[i] = x0 + h;
        const double fp = total();
        a.v[i] = x0 - h;
        const double fm = total();
        a.v[i] = x0;
        g[i] = (fp - fm) / (2 * h);
      }
      return g;
    };
    const std::size_t nctrl = q.ctrl.size(), nseg = q.durations.size();
    {
      const std::vector<double> g = fd(q.amps);
      auto one = [&](std::size_t off) {
        json m = json::array();
        for (std::size_t k = 0; k < nseg; ++k)
          m.push_back(std::vector<double>(g.begin() + static_cast<std::ptrdiff_t>(off + k * nctrl),
                                          g.begin() + static_cast<std::ptrdiff_t>(off + (k + 1) * nctrl)));
        return m;
      };
      if (q.amps.per_task) {
        json all = json::array();
        for (std::size_t b = 0; b < B; ++b) all.push_back(one(b * nseg * nctrl));
        out["grad_amplitudes"] = all;
      } else {
        out["grad_amplitudes"] = one(0);
      }
    }
    out["grad_drift_coeffs"] = shaped(q.coeffs, fd(q.coeffs), B);
    out["grad_rates"] = shaped(q.rates, fd(q.rates), B);
  }
  return out;
}

}  // namespace qfleet_oref
