// The task body's figures of merit and outputs (kernels/open_task.hpp): fidelity and
// leakage of the final state X_N with their gradients dF/dX_N, expectation values at
// the segment boundaries and the final state as the caller receives it. Small d x d
// work, run by one thread of a task's group. Host and device, C++17.
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/complex.hpp"
#include "kernels/dense.hpp"
#include "kernels/hd.hpp"
#include "kernels/open_products.hpp"
#include "kernels/open_view.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// scratch: 6 d^2 + hermitian_eig_work(d) + d entries (the Uhlmann fidelity's matrices).
template <class R>
struct OpenMerit {
  const OpenView& view;
  std::size_t nc;  // entries of the state X (n x c)
  Cx<R>* scratch;

  // A figure of merit linear in X: offset + Re <m, X>; its gradient is m.
  QFLEET_HD R linear(const double* m, double offset, const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) const {
    if (!add_lam) return R(offset + open_detail::re_inner<R>(nc, x, m) * 1.0);
    for (std::size_t i = 0; i < nc; ++i) {
      lam[i].re += scale * R(m[2 * i]);
      lam[i].im += scale * R(m[2 * i + 1]);
    }
    return 0;
  }

  // Fidelity of X_N; with add_lam, accumulates scale * dF/dX into lam instead.
  QFLEET_HD R fidelity(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) const {
    using open_detail::at;
    const int d = view.d;
    if (view.fid_lam) return linear(view.fid_lam, view.fid_offset, x, lam, scale, add_lam);
    if (view.closed && view.gate) {  // F = (|tr V^dag U|^2 + d) / (d (d + 1))
      Cx<double> t{0, 0};
      for (std::size_t i = 0; i < nc; ++i) t = t + conj(at(view.target_mat, i)) * Cx<double>{x[i].re, x[i].im};
      const double den = double(d) * (d + 1);
      if (add_lam) {
        for (std::size_t i = 0; i < nc; ++i) {
          const Cx<double> z = (2.0 / den) * (t * at(view.target_mat, i));
          lam[i].re += scale * R(z.re);
          lam[i].im += scale * R(z.im);
        }
        return 0;
      }
      return R((t.re * t.re + t.im * t.im + d) / den);
    }
    if (view.closed && view.target == kTargetPure) {  // |<phi|psi>|^2
      Cx<double> t{0, 0};
      for (int i = 0; i < d; ++i) t = t + conj(at(view.target_psi, i)) * Cx<double>{x[i].re, x[i].im};
      if (add_lam) {
        for (int i = 0; i < d; ++i) {
          const Cx<double> z = 2.0 * (at(view.target_psi, i) * t);
          lam[i].re += scale * R(z.re);
          lam[i].im += scale * R(z.im);
        }
        return 0;
      }
      return R(t.re * t.re + t.im * t.im);
    }
    if (view.closed) {  // mixed target sigma: <psi|sigma|psi>
      Cx<R>* s = scratch;  // sigma psi
      for (int i = 0; i < d; ++i) {
        Cx<double> acc{0, 0};
        for (int j = 0; j < d; ++j)
          acc = acc + at(view.target_mat, std::size_t(i) * d + j) * Cx<double>{x[j].re, x[j].im};
        s[i] = open_detail::cx<R>(acc);
      }
      if (add_lam) {
        for (int i = 0; i < d; ++i) {
          lam[i].re += scale * 2 * s[i].re;
          lam[i].im += scale * 2 * s[i].im;
        }
        return 0;
      }
      double f = 0;
      for (int i = 0; i < d; ++i) f += double(x[i].re) * s[i].re + double(x[i].im) * s[i].im;
      return R(f);
    }
    return uhlmann(x, lam, scale, add_lam);
  }

  // Uhlmann fidelity F = (tr sqrt(M))^2, M = sqrt(sigma) rho sqrt(sigma), and its
  // gradient dF/drho = tr sqrt(M) sqrt(sigma) M^{-1/2} sqrt(sigma) (pseudo-inverse on M's support).
  QFLEET_HD R uhlmann(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) const {
    using open_detail::dmax;
    using std::sqrt;
    const int d = view.d;
    const std::size_t dd = std::size_t(d) * d;
    Cx<R>* rho = scratch;
    Cx<R>* ss = rho + dd;
    Cx<R>* t1 = ss + dd;
    Cx<R>* mm = t1 + dd;
    Cx<R>* v = mm + dd;
    Cx<R>* t2 = v + dd;
    Cx<R>* work = t2 + dd;
    R* mu = reinterpret_cast<R*>(work + hermitian_eig_work(d));
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) rho[std::size_t(i) * d + j] = x[i + std::size_t(d) * j];
    for (std::size_t i = 0; i < dd; ++i) ss[i] = open_detail::cx<R>(open_detail::at(view.sqrt_sigma, i));
    open_detail::gemm<R>(d, d, d, ss, rho, t1);
    open_detail::gemm<R>(d, d, d, t1, ss, mm);
    for (int i = 0; i < d; ++i)  // symmetrise against rounding before the eigensolver
      for (int j = 0; j < i; ++j) {
        const Cx<R> a = mm[std::size_t(i) * d + j], b = mm[std::size_t(j) * d + i];
        mm[std::size_t(i) * d + j] = {(a.re + b.re) / 2, (a.im - b.im) / 2};
        mm[std::size_t(j) * d + i] = {(a.re + b.re) / 2, (b.im - a.im) / 2};
      }
    hermitian_eig(d, mm, mu, v, work);
    double tr = 0, top = 0;
    for (int i = 0; i < d; ++i) top = dmax(top, double(mu[i]));
    for (int i = 0; i < d; ++i) tr += sqrt(dmax(0.0, double(mu[i])));
    if (!add_lam) return R(tr * tr);
    // M^{-1/2} on the support (eigenvalues above a relative cutoff).
    const double cut = dmax(top, 1e-300) * (sizeof(R) == 8 ? 1e-12 : 1e-6);
    for (std::size_t i = 0; i < dd; ++i) t1[i] = {0, 0};
    for (int e = 0; e < d; ++e) {
      if (mu[e] <= cut) continue;
      const R wgt = R(1 / sqrt(double(mu[e])));
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          const Cx<R> vi = v[std::size_t(i) * d + e], vj = v[std::size_t(j) * d + e];
          t1[std::size_t(i) * d + j].re += wgt * (vi.re * vj.re + vi.im * vj.im);
          t1[std::size_t(i) * d + j].im += wgt * (vi.im * vj.re - vi.re * vj.im);
        }
    }
    open_detail::gemm<R>(d, d, d, ss, t1, t2);
    open_detail::gemm<R>(d, d, d, t2, ss, t1);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        const Cx<R> z = t1[std::size_t(i) * d + j];
        lam[i + std::size_t(d) * j].re += scale * R(tr) * z.re;
        lam[i + std::size_t(d) * j].im += scale * R(tr) * z.im;
      }
    return 0;
  }

  QFLEET_HD R leakage(const Cx<R>* x, Cx<R>* lam, R scale, bool add_lam) const {
    if (view.leak_lam) return linear(view.leak_lam, view.leak_offset, x, lam, scale, add_lam);
    // Closed: 1 - sum_{i in sub} |psi_i|^2, or 1 - sum_{i,j in sub} |U_ij|^2 / d_c.
    const int d = view.d;
    double kept = 0;
    const double dc = view.gate ? double(view.nsub) : 1.0;
    for (int si = 0; si < view.nsub; ++si) {
      const int i = view.subspace[si];
      if (view.gate) {
        for (int sj = 0; sj < view.nsub; ++sj) {
          const int j = view.subspace[sj];
          const Cx<R> z = x[std::size_t(i) * d + j];
          kept += double(z.re) * z.re + double(z.im) * z.im;
          if (add_lam) {
            lam[std::size_t(i) * d + j].re -= scale * R(2 / dc) * z.re;
            lam[std::size_t(i) * d + j].im -= scale * R(2 / dc) * z.im;
          }
        }
      } else {
        kept += double(x[i].re) * x[i].re + double(x[i].im) * x[i].im;
        if (add_lam) {
          lam[i].re -= scale * 2 * x[i].re;
          lam[i].im -= scale * 2 * x[i].im;
        }
      }
    }
    return R(1 - kept / dc);
  }

  QFLEET_HD void record_expvals(R* expvals, std::size_t b, int boundary, const Cx<R>* x) const {
    using open_detail::at;
    const int d = view.d;
    const std::size_t no = std::size_t(view.nobs);
    for (std::size_t o = 0; o < no; ++o) {
      const double* om = view.observables + 2 * std::size_t(d) * d * o;
      double val = 0;
      if (view.closed) {  // <psi|O|psi>
        for (int i = 0; i < d; ++i) {
          Cx<double> s{0, 0};
          for (int j = 0; j < d; ++j) s = s + at(om, std::size_t(i) * d + j) * Cx<double>{x[j].re, x[j].im};
          val += x[i].re * s.re + x[i].im * s.im;
        }
      } else {  // tr(O rho) = sum_ij O_ji rho_ij, rho_ij = X[i + d j]
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < d; ++j) {
            const Cx<double> r{x[i + std::size_t(d) * j].re, x[i + std::size_t(d) * j].im};
            val += (at(om, std::size_t(j) * d + i) * r).re;
          }
      }
      expvals[(b * (std::size_t(view.nseg) + 1) + boundary) * no + o] = R(val);
    }
  }

  // lam += sum_o cot[b, boundary, o] d<O_o>/dX in the Re <lam, dX> convention:
  // open, <O> = Re sum_ij O_ji X[i + d j], so lam[i + d j] += c O_ij (O Hermitian);
  // closed, <psi|O|psi>, so lam += 2 c O psi.
  QFLEET_HD void add_expval_cotangent(const R* cot, std::size_t b, int boundary, const Cx<R>* x, Cx<R>* lam) const {
    using open_detail::at;
    const int d = view.d;
    const std::size_t no = std::size_t(view.nobs);
    const R* c = cot + (b * (std::size_t(view.nseg) + 1) + std::size_t(boundary)) * no;
    for (std::size_t o = 0; o < no; ++o) {
      if (c[o] == R(0)) continue;
      const double w = double(c[o]);
      const double* om = view.observables + 2 * std::size_t(d) * d * o;
      for (int i = 0; i < d; ++i) {
        if (view.closed) {
          Cx<double> s{0, 0};
          for (int j = 0; j < d; ++j) s = s + at(om, std::size_t(i) * d + j) * Cx<double>{x[j].re, x[j].im};
          lam[i].re += R(2 * w * s.re);
          lam[i].im += R(2 * w * s.im);
        } else {
          for (int j = 0; j < d; ++j) {
            const Cx<double> z = at(om, std::size_t(i) * d + j);
            lam[i + std::size_t(d) * j].re += R(w * z.re);
            lam[i + std::size_t(d) * j].im += R(w * z.im);
          }
        }
      }
    }
  }

  // lam += the final state's cotangent of task b (laid out as write_final writes the state).
  QFLEET_HD void add_final_cotangent(const R* cot, std::size_t b, Cx<R>* lam) const {
    const int d = view.d;
    const bool density = !view.closed && !view.gate;
    const R* in = cot + 2 * b * (density ? std::size_t(d) * d : nc);
    if (density) {
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          lam[i + std::size_t(d) * j].re += in[2 * (std::size_t(i) * d + j)];
          lam[i + std::size_t(d) * j].im += in[2 * (std::size_t(i) * d + j) + 1];
        }
    } else {
      for (std::size_t i = 0; i < nc; ++i) {
        lam[i].re += in[2 * i];
        lam[i].im += in[2 * i + 1];
      }
    }
  }

  // The gradient with respect to task b's initial state, lam = dL/dX_0, laid out as the
  // initial argument ([d] pure states, [d, d] densities).
  QFLEET_HD void write_initial_gradient(R* grad, std::size_t b, const Cx<R>* lam) const {
    const int d = view.d;
    if (view.closed) {
      for (int i = 0; i < d; ++i) {
        grad[2 * (b * d + i)] = lam[i].re;
        grad[2 * (b * d + i) + 1] = lam[i].im;
      }
      return;
    }
    R* out = grad + 2 * b * std::size_t(d) * d;
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        out[2 * (std::size_t(i) * d + j)] = lam[i + std::size_t(d) * j].re;
        out[2 * (std::size_t(i) * d + j) + 1] = lam[i + std::size_t(d) * j].im;
      }
  }

  QFLEET_HD void write_final(R* final_state, std::size_t b, const Cx<R>* x) const {
    const int d = view.d;
    const bool density = !view.closed && !view.gate;
    R* out = final_state + 2 * b * (density ? std::size_t(d) * d : nc);  // (re, im) pairs
    if (density) {  // unvec rho
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
          out[2 * (std::size_t(i) * d + j)] = x[i + std::size_t(d) * j].re;
          out[2 * (std::size_t(i) * d + j) + 1] = x[i + std::size_t(d) * j].im;
        }
    } else {
      for (std::size_t i = 0; i < nc; ++i) {
        out[2 * i] = x[i].re;
        out[2 * i + 1] = x[i].im;
      }
    }
  }
};

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
