// The bodies of reference/lindblad.hpp, compiled once into the tests' reference library
// (tests/CMakeLists.txt, qfleet_reference) rather than in every test that includes the
// header: the matrix exponentials and solvers they instantiate cost each such unit
// ~15 s of GCC 12 (2026-11-28), beside fidelity.hpp's.
#include "reference/lindblad.hpp"

namespace ref {

Mat sandwich(const Mat& a, const Mat& b) { return kron(b.transpose(), a); }

Mat liouvillian(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates) {
  const Mat id = eye(h.rows());
  Mat lv = -kI * (sandwich(h, id) - sandwich(id, h));
  for (std::size_t j = 0; j < jumps.size(); ++j) {
    const Mat& l = jumps[j];
    const Mat ldl = l.adjoint() * l;
    lv += rates[j] * (sandwich(l, l.adjoint()) - 0.5 * sandwich(ldl, id) - 0.5 * sandwich(id, ldl));
  }
  return lv;
}

Mat lindblad_rhs(const Mat& h, const std::vector<Mat>& jumps, const std::vector<double>& rates, const Mat& x) {
  Mat r = -kI * (h * x - x * h);
  for (std::size_t j = 0; j < jumps.size(); ++j) {
    const Mat& l = jumps[j];
    r += rates[j] * (l * x * l.adjoint() - 0.5 * (l.adjoint() * l * x + x * l.adjoint() * l));
  }
  return r;
}

Mat unitary_of(const Mat& h, double t) {
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (h + h.adjoint()));
  Vec ph(h.rows());
  for (Index i = 0; i < h.rows(); ++i) ph(i) = std::exp(-kI * es.eigenvalues()(i) * t);
  return es.eigenvectors() * ph.asDiagonal() * es.eigenvectors().adjoint();
}

Mat fixed_steps(const Mat& a, Mat x, double duration, double dt, Scheme s) {
  const long m = std::max(1L, static_cast<long>(std::ceil(duration / dt)));
  const double h = duration / double(m);
  for (long i = 0; i < m; ++i) {
    if (s == Scheme::Euler) {
      x = x + h * (a * x);
    } else {
      const Mat k1 = a * x;
      const Mat k2 = a * (x + (h / 2) * k1);
      const Mat k3 = a * (x + (h / 2) * k2);
      const Mat k4 = a * (x + h * k3);
      x = x + (h / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
    }
  }
  return x;
}

Out simulate(const Model& m, const Task& t, Scheme scheme, double dt) {
  const Index d = m.d;
  const bool closed = m.closed(), gate = m.gate();
  Mat hs = m.h0;
  for (std::size_t i = 0; i < m.drift_terms.size(); ++i) hs += t.drift[i] * m.drift_terms[i];

  Mat x;
  if (gate) {
    x = eye(closed ? d : d * d);
  } else if (closed) {
    x = t.psi0 ? *t.psi0 : m.psi0;
  } else {
    Mat rho = t.rho0 ? *t.rho0 : (m.init == Init::Density ? m.rho0 : Mat(m.psi0 * m.psi0.adjoint()));
    x = vec(rho);
  }
  Out out;
  const std::size_t nobs = m.observables.size();
  out.expvals.assign((m.durations.size() + 1) * nobs, 0.0);
  auto record = [&](std::size_t k) {
    if (gate) return;
    for (std::size_t o = 0; o < nobs; ++o) {
      const Mat& ob = m.observables[o];
      const double v = closed ? (x.adjoint() * ob * x)(0, 0).real() : (ob * unvec(x.col(0), d)).trace().real();
      out.expvals[k * nobs + o] = v;
    }
  };
  record(0);
  for (int k = 0; k < m.n_seg(); ++k) {
    Mat h = hs;
    for (int i = 0; i < m.n_ctrl(); ++i) h += t.amps[std::size_t(k) * m.n_ctrl() + i] * m.controls[i];
    const double dur = m.durations[k];
    if (scheme == Scheme::Exact) {
      if (closed) {
        x = unitary_of(h, dur) * x;
      } else {
        const Mat a = dur * liouvillian(h, m.jumps, t.rates);
        const Mat p = a.exp();
        x = p * x;
      }
    } else {
      const Mat a = closed ? Mat(-kI * h) : liouvillian(h, m.jumps, t.rates);
      x = fixed_steps(a, x, dur, dt, scheme);
    }
    record(std::size_t(k) + 1);
  }
  out.x = x;

  // The channel (gates) or the final state.
  Channel e;
  Mat rho;
  if (gate) {
    if (closed) {
      e = [x](const Mat& in) -> Mat { return x * in * x.adjoint(); };
    } else {
      e = [x, d](const Mat& in) -> Mat { return unvec(x * vec(in), d); };
    }
    out.final_state = row_major(x);
  } else if (closed) {
    out.final_state = stdvec(x.col(0));
  } else {
    rho = unvec(x.col(0), d);
    out.final_state = row_major(rho);
  }

  switch (m.target) {
    case Target::None:
      break;
    case Target::Pure:
      if (closed) {
        out.fidelity = std::norm((m.target_psi.adjoint() * x)(0, 0));
      } else {
        out.fidelity = (m.target_psi.adjoint() * rho * m.target_psi)(0, 0).real();
      }
      break;
    case Target::Mixed:
      if (closed) {
        const Vec psi = x.col(0);
        out.fidelity = (psi.adjoint() * m.target_mat * psi)(0, 0).real();
      } else {
        out.fidelity = uhlmann(rho, m.target_mat);
      }
      break;
    case Target::Unitary:
      out.fidelity = avg_fidelity_weyl(e, m.target_mat, d);
      break;
  }
  if (!m.subspace.empty()) {
    const Mat p = projector(d, m.subspace);
    const double dc = double(m.subspace.size());
    if (gate && closed) {
      double kept = 0;
      for (int i : m.subspace)
        for (int j : m.subspace) kept += std::norm(x(i, j));
      out.leakage = 1 - kept / dc;
    } else if (gate) {
      out.leakage = 1 - (p * e(p)).trace().real() / dc;
    } else if (closed) {
      out.leakage = 1 - (x.adjoint() * p * x)(0, 0).real();
    } else {
      out.leakage = 1 - (p * rho).trace().real();
    }
  }
  return out;
}

std::vector<Out> simulate_batch(const Model& m, const TaskBatch& b, Scheme s,
                                       double dt) {
  std::vector<Out> out;
  for (std::size_t i = 0; i < b.B; ++i) out.push_back(simulate(m, b.task(m, i), s, dt));
  return out;
}

Grads fd_grads(const Model& m, const TaskBatch& b, const std::vector<double>& cot_f,
                      const std::vector<double>& cot_l, Scheme s, double dt, double h) {
  auto objective = [&](const TaskBatch& bb, std::size_t task) {
    const Out o = simulate(m, bb.task(m, task), s, dt);
    double v = 0;
    if (!cot_f.empty()) v += cot_f[task] * o.fidelity;
    if (!cot_l.empty()) v += cot_l[task] * o.leakage;
    return v;
  };
  auto diff = [&](std::vector<double> TaskBatch::*field, bool per_task, std::size_t len) {
    const std::vector<double>& base = b.*field;
    std::vector<double> g(base.size(), 0.0);
    for (std::size_t i = 0; i < base.size(); ++i) {
      TaskBatch plus = b, minus = b;
      (plus.*field)[i] += h;
      (minus.*field)[i] -= h;
      double acc = 0;
      for (std::size_t task = 0; task < b.B; ++task) {
        if (per_task && task != i / len) continue;
        acc += objective(plus, task) - objective(minus, task);
      }
      g[i] = acc / (2 * h);
    }
    return g;
  };
  Grads gr;
  gr.amps = diff(&TaskBatch::amps, b.amp_pt, m.n_amp());
  gr.drift = diff(&TaskBatch::drift, b.drift_pt, m.drift_terms.size());
  gr.rates = diff(&TaskBatch::rates, b.rates_pt, m.jumps.size());
  return gr;
}

}  // namespace ref
