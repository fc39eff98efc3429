// The exact solver's action path (kernels/open_task.hpp, OpenView::action): X_k =
// exp(dt A) X_{k-1} without forming exp(dt A), after Al-Mohy & Higham, "Computing the
// action of the matrix exponential, with an application to exponential integrators",
// SIAM J. Sci. Comput. 33(2), 488-511 (2011) (AMH; scipy.sparse.linalg.expm_multiply
// implements the same algorithm):
//   exp(t A) X = [T_m(h A)]^s X,   h = t / s,   T_m(z) = sum_{j <= m} z^j / j!,
// s Taylor steps, each X <- sum_j k_j with k_0 = X, k_j = (h / j) A k_{j-1}: m products
// of the generator with the state, applied as the step solvers apply it (dense, or in
// Lindblad form, kernels/lindblad_action.hpp), so nothing of size n x n is formed.
// (m, s) come from a bound on ||t A||_1: with ||t A||_1 / s <= theta_m the computed
// map is exp(t (A + dA)) with ||dA||_1 <= u ||A||_1, u the unit roundoff of the
// working precision (AMH section 3). Every step uses all m terms (no early
// termination), so the map is a fixed polynomial in A.
//
// Its adjoint is reverse mode through that polynomial, as for the Runge-Kutta stages:
// with Fbar the cotangent of a step's output,
//   kbar_m = Fbar,  kbar_{j-1} = Fbar + (h/j) A^dag kbar_j,  dF/dA += (h/j) kbar_j k_{j-1}^dag,
// and kbar_0 is the cotangent of the step's input: the exact gradient of the computed
// map with respect to A (hence the controls, drift coefficients and rates). The terms
// of a step are recomputed from its stored start in the backward pass; a segment's
// step starts are recomputed from the segment's start (only segment boundaries are
// kept between the passes, as for the step solvers). Where the caller has room for a
// segment's s m terms, the backward pass's re-run of the segment keeps them
// (taylor_kept_forward) and its reverse sweep reads them (taylor_kept_backward).
//
// Host and device, C++17, no allocation: the caller hands out the scratch states.
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/complex.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/lindblad_action.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// AMH's m_max: beyond 55 terms the gain per product is small and the terms of a
// non-normal A can grow before they decay (AMH section 3.1).
inline constexpr int kTaylorMaxDegree = 55;
// More Taylor steps than this in one segment is a failed task (as dopri5's 10^6 steps).
inline constexpr long kTaylorMaxSteps = 1000000;

// Scratch of the backward pass in states (n x c entries each): the terms k_0..k_m of
// one step, (h/j) kbar_j and A^dag of it. The forward pass uses 2.
QFLEET_HD constexpr std::size_t taylor_work_states() { return std::size_t(kTaylorMaxDegree) + 3; }

// theta_m, m = 1..55: the largest ||h A||_1 for which m terms keep the backward error
// below u = 2^-53 (complex128) or 2^-24 (complex64). Computed by tools/expm_theta.py
// (AMH section 3: h~_{m+1}(theta) / theta = u); the double column reproduces the
// published values (Higham & Al-Mohy, Acta Numerica 2010, table A.3; AMH table 3.1).
QFLEET_HD inline double taylor_theta(int m, bool single) {
  // A local array, not a namespace-scope table: a device function must not read a host table.
  const double dbl[kTaylorMaxDegree] = {
      2.22045e-16, 2.58096e-8, 1.38635e-5, 3.39717e-4, 2.40088e-3, 9.06566e-3, 2.38446e-2, 4.99123e-2,
      8.95776e-2,  0.144183,   0.214236,   0.299616,   0.399778,   0.513915,   0.641084,   0.780287,
      0.930533,    1.09086,    1.26038,    1.43825,    1.62372,    1.81608,    2.01471,    2.21905,
      2.42858,     2.64285,    2.86145,    3.08400,    3.31017,    3.53967,    3.77221,    4.00756,
      4.24550,     4.48582,    4.72835,    4.97292,    5.21938,    5.46759,    5.71744,    5.96880,
      6.22158,     6.47568,    6.73102,    6.98750,    7.24507,    7.50365,    7.76317,    8.02359,
      8.28485,     8.54690,    8.80969,    9.07319,    9.33734,    9.60212,    9.86750};
  const double sgl[kTaylorMaxDegree] = {
      1.19209e-7, 5.97886e-4, 1.12339e-2, 5.11662e-2, 0.130849, 0.249529, 0.401458, 0.580052,
      0.779511,   0.995184,   1.22348,    1.46166,    1.70765,  1.95985,  2.21704,  2.47828,
      2.74282,    3.01007,    3.27956,    3.55093,    3.82386,  4.09811,  4.37347,  4.64978,
      4.92690,    5.20471,    5.48311,    5.76201,    6.04136,  6.32108,  6.60113,  6.88146,
      7.16204,    7.44283,    7.72380,    8.00493,    8.28620,  8.56759,  8.84908,  9.13065,
      9.41230,    9.69402,    9.97579,    10.2576,    10.5394,  10.8213,  11.1032,  11.3852,
      11.6671,    11.9490,    12.2310,    12.5129,    12.7949,  13.0769,  13.3588};
  return single ? sgl[m - 1] : dbl[m - 1];
}

// m terms per step, s steps. s = 0: the norm is not finite or needs more than
// kTaylorMaxSteps steps (the task fails).
struct TaylorPlan {
  int m = 0;
  long s = 1;
};

// The (m, s) of fewest products m s with ||t A||_1 / s <= theta_m, given norm >=
// ||t A||_1 (AMH eq. (3.11) with alpha_p(A) bounded by ||A||_1 itself, which holds for
// every p: a larger bound only costs steps, never accuracy). Ties keep the smaller m
// (fewer terms to store and less rounding). norm = 0: the identity (m = 0, one step).
QFLEET_HD inline TaylorPlan taylor_plan(double norm, bool single) {
  TaylorPlan best;
  if (norm == 0) return best;
  if (!(norm < double(kTaylorMaxSteps) * taylor_theta(kTaylorMaxDegree, single))) {
    best.s = 0;  // also NaN and infinity
    return best;
  }
  double best_cost = -1;
  for (int m = 1; m <= kTaylorMaxDegree; ++m) {
    const double s = std::ceil(norm / taylor_theta(m, single));
    if (s > double(kTaylorMaxSteps)) continue;
    const double cost = double(m) * s;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best.m = m;
      best.s = static_cast<long>(s);
    }
  }
  return best;
}

namespace taylor_detail {

template <class R>
QFLEET_HD inline double abs_cx(Cx<R> z) {
  using std::sqrt;
  return sqrt(double(z.re) * z.re + double(z.im) * z.im);
}

template <class R, class G>
QFLEET_HD inline void copy(const Cx<R>* a, std::size_t n, Cx<R>* b, const G& g) {
  for (std::size_t i = std::size_t(g.rank()); i < n; i += std::size_t(g.size())) b[i] = a[i];
  g.sync();
}

// ||S||_1 (largest column sum) of a sparse d x d matrix: its values on the pattern.
template <class R>
QFLEET_HD inline double sparse_norm1(const SparsePattern& p, const Cx<R>* v) {
  double best = 0;
  for (int c = 0; c < p.d; ++c) {
    double s = 0;
    for (int t = p.col_ptr[c]; t < p.col_ptr[c + 1]; ++t) s += abs_cx(v[p.csc[t]]);
    best = nan_max(best, s);
  }
  return best;
}

}  // namespace taylor_detail

// ||A||_1 of a dense row-major n x n generator (every member gets it).
template <class R, class G>
QFLEET_HD double dense_norm1(int n, const Cx<R>* a, const G& g) {
  double best = 0;
  for (int j = g.rank(); j < n; j += g.size()) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += taylor_detail::abs_cx(a[std::size_t(i) * n + j]);
    best = nan_max(best, s);
  }
  return g.max(best);
}

// A bound on the 1-norm of the Lindbladian S(X) = G X + X G^dag + sum_j gamma_j L_j X L_j^dag
// as the n x n matrix acting on vec(X), without forming it:
//   ||S||_1 <= 2 ||G||_1 + sum_j gamma_j ||L_j||_1^2.
// Why: that norm is the one induced by |X| = sum_ab |X_ab| (entrywise l1), and
// |G X| <= ||G||_1 |X| (column by column), |X G^dag| <= ||G^dag||_inf |X| = ||G||_1 |X|
// (row by row), |L X L^dag| <= ||L||_1 ||L^dag||_inf |X| = ||L||_1^2 |X|; the triangle
// inequality adds them. O(nnz); every member computes the same value.
template <class R>
QFLEET_HD double lindblad_norm1_bound(const LindbladOps<R>& op) {
  double b = 2 * taylor_detail::sparse_norm1(op.g, op.g_val);
  for (int j = 0; j < op.njump; ++j) {
    const double l = taylor_detail::sparse_norm1(op.jump(j), op.jval(j));
    b += double(op.gamma[j]) * l * l;
  }
  return b;
}

// Gen: the generator as the task applies it, with
//   apply(y, k)                  K = A Y
//   adjoint_gradient(kb, y, yb)  Ybar = A^dag Kbar and dF/dA += Kbar Y^dag (on the
//                                generator's entries)
// each ending with a group sync; states have nc entries.

// xout = [T_m(h A)]^s x, h = t / s. steps: null, or room for p.s states that receive
// the start of every step (steps[0] = x). work: 2 states. xout aliases none of them.
template <class R, class Gen, class G>
QFLEET_HD void taylor_forward(const Gen& gen, std::size_t nc, TaylorPlan p, double t, const Cx<R>* x, Cx<R>* xout,
                              Cx<R>* steps, Cx<R>* work, const G& g) {
  const double h = t / double(p.s);
  const std::size_t r0 = std::size_t(g.rank()), gs = std::size_t(g.size());
  taylor_detail::copy(x, nc, xout, g);
  for (long i = 0; i < p.s; ++i) {
    if (steps) taylor_detail::copy(xout, nc, steps + nc * std::size_t(i), g);
    Cx<R>* term = work;
    Cx<R>* next = work + nc;
    taylor_detail::copy(xout, nc, term, g);
    for (int j = 1; j <= p.m; ++j) {
      gen.apply(term, next);
      const R c = R(h / j);
      for (std::size_t e = r0; e < nc; e += gs) {
        next[e] = {c * next[e].re, c * next[e].im};
        xout[e].re += next[e].re;
        xout[e].im += next[e].im;
      }
      g.sync();
      Cx<R>* tmp = term;
      term = next;
      next = tmp;
    }
  }
}

namespace taylor_detail {

// Reverse mode through one step whose terms k_0 .. k_{m-1} are at terms (nc apart):
// lam <- (d step / d x)^dag lam, gen.adjoint_gradient adding dF/dA. With kbar_m = lam and
// kbar_{j-1} = lam + A^dag (h/j) kbar_j, each pass forms the next term's scaled cotangent
// (h/j) kbar_j at once (kbar itself is never stored), and the last one kbar_0 in lam.
// scaled, adj: one state each.
template <class R, class Gen, class G>
QFLEET_HD void step_backward(const Gen& gen, std::size_t nc, int m, double h, const Cx<R>* terms, Cx<R>* lam,
                             Cx<R>* scaled, Cx<R>* adj, const G& g) {
  const std::size_t r0 = std::size_t(g.rank()), gs = std::size_t(g.size());
  if (m == 0) return;
  const R cm = R(h / m);
  for (std::size_t e = r0; e < nc; e += gs) scaled[e] = {cm * lam[e].re, cm * lam[e].im};
  g.sync();
  for (int j = m; j >= 1; --j) {
    gen.adjoint_gradient(scaled, terms + nc * std::size_t(j - 1), adj);
    if (j > 1) {
      const R c = R(h / (j - 1));
      for (std::size_t e = r0; e < nc; e += gs) {
        scaled[e] = {c * (lam[e].re + adj[e].re), c * (lam[e].im + adj[e].im)};
      }
    } else {
      for (std::size_t e = r0; e < nc; e += gs) {
        lam[e].re += adj[e].re;
        lam[e].im += adj[e].im;
      }
    }
    g.sync();
  }
}

}  // namespace taylor_detail

// The reverse of taylor_forward: lam <- (d xout / d x)^dag lam, and gen.adjoint_gradient
// receives dF/dA. steps: the p.s step starts (steps[0] = the segment's start).
// work: taylor_work_states() states.
template <class R, class Gen, class G>
QFLEET_HD void taylor_backward(const Gen& gen, std::size_t nc, TaylorPlan p, double t, const Cx<R>* steps, Cx<R>* lam,
                               Cx<R>* work, const G& g) {
  const double h = t / double(p.s);
  const std::size_t r0 = std::size_t(g.rank()), gs = std::size_t(g.size());
  Cx<R>* terms = work;  // k_0 .. k_m
  Cx<R>* scaled = work + nc * (std::size_t(kTaylorMaxDegree) + 1);
  for (long i = p.s; i-- > 0;) {
    // This step's terms, recomputed exactly as taylor_forward made them (k_m, which
    // feeds no gradient, is not).
    taylor_detail::copy(steps + nc * std::size_t(i), nc, terms, g);
    for (int j = 1; j < p.m; ++j) {
      Cx<R>* k = terms + nc * std::size_t(j);
      gen.apply(terms + nc * std::size_t(j - 1), k);
      const R c = R(h / j);
      for (std::size_t e = r0; e < nc; e += gs) k[e] = {c * k[e].re, c * k[e].im};
      g.sync();
    }
    taylor_detail::step_backward(gen, nc, p.m, h, terms, lam, scaled, scaled + nc, g);
  }
}

// States taylor_kept_forward keeps for plan p: the terms k_0 .. k_{m-1} of every step.
QFLEET_HD inline long taylor_kept_states(TaylorPlan p) { return p.s * long(p.m); }

// taylor_forward's steps from x, keeping every step's terms k_0 .. k_{m-1} in store
// (taylor_kept_states(p) states; step i's term j at store + nc (i m + j)) for
// taylor_kept_backward: the backward pass of a segment then applies the generator
// s m - 1 times, not s m again for the step starts plus s (m - 1) for the terms. The
// step starts are summed as taylor_forward sums them (bit for bit); the last step's
// end, which the backward pass does not read, is not formed. work: 1 state. p.m >= 1.
template <class R, class Gen, class G>
QFLEET_HD void taylor_kept_forward(const Gen& gen, std::size_t nc, TaylorPlan p, double t, const Cx<R>* x,
                                   Cx<R>* store, Cx<R>* work, const G& g) {
  const double h = t / double(p.s);
  const std::size_t r0 = std::size_t(g.rank()), gs = std::size_t(g.size()), step = nc * std::size_t(p.m);
  taylor_detail::copy(x, nc, store, g);
  for (long i = 0; i < p.s; ++i) {
    Cx<R>* k = store + step * std::size_t(i);
    const bool last = i + 1 == p.s;
    Cx<R>* sum = last ? nullptr : k + step;  // the next step's k_0
    if (sum) taylor_detail::copy(k, nc, sum, g);
    for (int j = 1; j <= p.m; ++j) {
      if (last && j == p.m) break;  // k_m feeds only the step's end
      Cx<R>* out = j < p.m ? k + nc * std::size_t(j) : work;
      gen.apply(k + nc * std::size_t(j - 1), out);
      const R c = R(h / j);
      for (std::size_t e = r0; e < nc; e += gs) {
        out[e] = {c * out[e].re, c * out[e].im};
        if (sum) {
          sum[e].re += out[e].re;
          sum[e].im += out[e].im;
        }
      }
      g.sync();
    }
  }
}

// The reverse of taylor_forward from the terms taylor_kept_forward kept (store):
// lam <- (d xout / d x)^dag lam, gen.adjoint_gradient adding dF/dA. work: 2 states.
template <class R, class Gen, class G>
QFLEET_HD void taylor_kept_backward(const Gen& gen, std::size_t nc, TaylorPlan p, double t, const Cx<R>* store,
                                    Cx<R>* lam, Cx<R>* work, const G& g) {
  const double h = t / double(p.s);
  const std::size_t step = nc * std::size_t(p.m);
  for (long i = p.s; i-- > 0;)
    taylor_detail::step_backward(gen, nc, p.m, h, store + step * std::size_t(i), lam, work, work + nc, g);
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
