// Dense small-matrix kernels, written once for host and device: products,
// adjoints, 1-norm, an LU solve with partial pivoting, a cyclic Jacobi
// eigensolver for Hermitian matrices and the principal square root of a
// positive-semidefinite matrix. The matrix exponential and its Fréchet
// derivative, built on these, are in kernels/expm.hpp.
//
// Conventions:
//   * Matrices are n x n, row-major, of kern::Cx<R> with R = float or double;
//     entry (i, j) of A is A[i * n + j]. Outputs may not alias inputs unless a
//     function says so.
//   * n is a plain int, or FixedDim<K> (a constexpr-int wrapper) when the
//     caller knows the order at compile time: every loop bound is then a constant
//     and the small hot sizes (4, 16) unroll and vectorise. Both spellings give the
//     same results.
//   * Nothing allocates and nothing throws: scratch is a caller-provided `work`
//     array whose size (in units of Cx<R>) is given by the *_work(n) helper next
//     to each function; failures are reported by an int status (0 = success).
//   * Only C++17 is used here, so the same header compiles under nvcc.
//   * Functions that take a group `g` (kernels/group.hpp; SoloGroup by default)
//     split their work over its members and end with g.sync().
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/complex.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/simd_gemm.hpp"
#include "kernels/types.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// A matrix order known at compile time: pass FixedDim<16>{} wherever `n` is taken.
// (Our own type rather than std::integral_constant, whose conversion operator is
// host-only under nvcc.)
template <int K>
struct FixedDim {
  static constexpr int value = K;
  QFLEET_HD constexpr operator int() const { return K; }
};

namespace dense_detail {

// Machine constants without std::numeric_limits (not constexpr-callable on device
// without --expt-relaxed-constexpr).
template <class R>
struct RealConst;
template <>
struct RealConst<double> {
  static constexpr double eps = 2.220446049250313e-16;  // 2^-52
  static constexpr double max = 1.7976931348623157e308;
};
template <>
struct RealConst<float> {
  static constexpr float eps = 1.1920929e-07f;  // 2^-23
  static constexpr float max = 3.4028235e38f;
};

// A non-deduced context (std::type_identity is C++20).
template <class T>
struct Same {
  using type = T;
};
template <class T>
using same_t = typename Same<T>::type;

template <class R>
QFLEET_HD inline Cx<R> sub(Cx<R> a, Cx<R> b) {
  return {a.re - b.re, a.im - b.im};
}
template <class R>
QFLEET_HD inline R abs2(Cx<R> a) {
  return a.re * a.re + a.im * a.im;
}
template <class R>
QFLEET_HD inline R cabs(Cx<R> a) {
  using std::sqrt;
  return sqrt(a.re * a.re + a.im * a.im);
}
// |re| + |im| (LAPACK's cabs1), the pivot-selection measure.
template <class R>
QFLEET_HD inline R abs1(Cx<R> a) {
  using std::fabs;
  return fabs(a.re) + fabs(a.im);
}
// 1 / a, scaled so that neither |a|^2 overflows nor underflows.
template <class R>
QFLEET_HD inline Cx<R> inv(Cx<R> a) {
  using std::fabs;
  const R m = fabs(a.re) > fabs(a.im) ? fabs(a.re) : fabs(a.im);
  const R re = a.re / m, im = a.im / m;
  const R d = (re * re + im * im) * m;
  return {re / d, -im / d};
}
// c += a * b, and c += conj(a) * b.
template <class R>
QFLEET_HD inline void madd(Cx<R>& c, Cx<R> a, Cx<R> b) {
  c.re += a.re * b.re - a.im * b.im;
  c.im += a.re * b.im + a.im * b.re;
}
template <class R>
QFLEET_HD inline void madd_conj(Cx<R>& c, Cx<R> a, Cx<R> b) {
  c.re += a.re * b.re + a.im * b.im;
  c.im += a.re * b.im - a.im * b.re;
}

// C[m x p] (ldc) [+]= op(A) B[k x p] (ldb), op(A) = A[m x k] (lda) or, with adj_a,
// A^dagger for A[k x m] (lda): one output entry per group member at a time.
template <bool Acc, class R, class G>
QFLEET_HD inline void group_gemm(int m, int k, int p, const Cx<R>* A, int lda, bool adj_a, const Cx<R>* B, int ldb,
                                 Cx<R>* C, int ldc, const G& g) {
  for (int e = g.rank(); e < m * p; e += g.size()) {
    const int i = e / p, j = e % p;
    Cx<R> c = Acc ? C[i * ldc + j] : Cx<R>{R(0), R(0)};
    for (int l = 0; l < k; ++l) madd(c, adj_a ? conj(A[l * lda + i]) : A[i * lda + l], B[l * ldb + j]);
    C[i * ldc + j] = c;
  }
  g.sync();
}

// C (ldc) [+]= A (lda) B (ldb), all n x n blocks of larger row-major arrays.
template <bool Acc, class N, class R, class G = SoloGroup>
QFLEET_HD inline void gemm(N n, const Cx<R>* A, int lda, const Cx<R>* B, int ldb, Cx<R>* C,
                           int ldc, const G& g = G{}) {
  const int nn = static_cast<int>(n);
  if constexpr (!G::kSolo) {
    group_gemm<Acc>(nn, nn, nn, A, lda, false, B, ldb, C, ldc, g);
  } else {
#ifdef QFLEET_SIMD_GEMM
    if (simd::gemm_applies<R>(nn)) return simd::gemm<Acc, false>(n, n, n, A, lda, B, ldb, C, ldc);
#endif
    for (int i = 0; i < nn; ++i) {
      Cx<R>* c = C + i * ldc;
      if (!Acc)
        for (int j = 0; j < nn; ++j) c[j] = {R(0), R(0)};
      const Cx<R>* a = A + i * lda;
      for (int k = 0; k < nn; ++k) {
        const Cx<R> aik = a[k];
        const Cx<R>* b = B + k * ldb;
        for (int j = 0; j < nn; ++j) madd(c[j], aik, b[j]);
      }
    }
  }
}

}  // namespace dense_detail

// ----------------------------------------------------------------------------
// Basic operations.

// A = I.
template <class N, class R>
QFLEET_HD inline void identity(N n, Cx<R>* A) {
  const int nn = static_cast<int>(n);
  for (int i = 0; i < nn; ++i)
    for (int j = 0; j < nn; ++j) A[i * nn + j] = {R(i == j ? 1 : 0), R(0)};
}

// B = A (B may equal A).
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline void mat_copy(N n, const Cx<R>* A, Cx<R>* B, const G& g = G{}) {
  const int nn2 = static_cast<int>(n) * static_cast<int>(n);
  for (int e = g.rank(); e < nn2; e += g.size()) B[e] = A[e];
  g.sync();
}

// B = A^dagger (B may not alias A).
template <class N, class R>
QFLEET_HD inline void mat_adjoint(N n, const Cx<R>* A, Cx<R>* B) {
  const int nn = static_cast<int>(n);
  for (int i = 0; i < nn; ++i)
    for (int j = 0; j < nn; ++j) B[j * nn + i] = conj(A[i * nn + j]);
}

// Y += alpha X (alpha real or complex; Y may equal X).
template <class N, class R>
QFLEET_HD inline void mat_add_scaled(N n, Cx<R>* Y, Cx<R> alpha, const Cx<R>* X) {
  const int nn2 = static_cast<int>(n) * static_cast<int>(n);
  for (int e = 0; e < nn2; ++e) dense_detail::madd(Y[e], alpha, X[e]);
}
template <class N, class R>
QFLEET_HD inline void mat_add_scaled(N n, Cx<R>* Y, dense_detail::same_t<R> alpha, const Cx<R>* X) {
  const int nn2 = static_cast<int>(n) * static_cast<int>(n);
  for (int e = 0; e < nn2; ++e) {
    Y[e].re += alpha * X[e].re;
    Y[e].im += alpha * X[e].im;
  }
}

// C = A B. C may not alias A or B.
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline void mat_mul(N n, const Cx<R>* A, const Cx<R>* B, Cx<R>* C, const G& g = G{}) {
  const int nn = static_cast<int>(n);
  dense_detail::gemm<false>(n, A, nn, B, nn, C, nn, g);
}

// C += A B. C may not alias A or B.
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline void mat_mul_acc(N n, const Cx<R>* A, const Cx<R>* B, Cx<R>* C, const G& g = G{}) {
  const int nn = static_cast<int>(n);
  dense_detail::gemm<true>(n, A, nn, B, nn, C, nn, g);
}

// C = A^dagger B. C may not alias A or B.
template <class N, class R>
QFLEET_HD inline void mat_mul_adj_left(N n, const Cx<R>* A, const Cx<R>* B, Cx<R>* C) {
  const int nn = static_cast<int>(n);
#ifdef QFLEET_SIMD_GEMM
  if (simd::gemm_applies<R>(nn)) return simd::gemm<false, true>(n, n, n, A, nn, B, nn, C, nn);
#endif
  for (int e = 0; e < nn * nn; ++e) C[e] = {R(0), R(0)};
  for (int k = 0; k < nn; ++k) {
    const Cx<R>* a = A + k * nn;
    const Cx<R>* b = B + k * nn;
    for (int i = 0; i < nn; ++i) {
      const Cx<R> aki = a[i];
      Cx<R>* c = C + i * nn;
      for (int j = 0; j < nn; ++j) dense_detail::madd_conj(c[j], aki, b[j]);
    }
  }
}

// C = A B^dagger. C may not alias A or B (A may equal B: C = A A^dagger).
template <class N, class R>
QFLEET_HD inline void mat_mul_adj_right(N n, const Cx<R>* A, const Cx<R>* B, Cx<R>* C) {
  const int nn = static_cast<int>(n);
  for (int i = 0; i < nn; ++i) {
    const Cx<R>* a = A + i * nn;
    for (int j = 0; j < nn; ++j) {
      const Cx<R>* b = B + j * nn;
      Cx<R> s{R(0), R(0)};
      for (int k = 0; k < nn; ++k) dense_detail::madd_conj(s, b[k], a[k]);  // a_ik conj(b_jk)
      C[i * nn + j] = s;
    }
  }
}

// tr A.
template <class N, class R>
QFLEET_HD inline Cx<R> trace(N n, const Cx<R>* A) {
  const int nn = static_cast<int>(n);
  Cx<R> t{R(0), R(0)};
  for (int i = 0; i < nn; ++i) t = t + A[i * nn + i];
  return t;
}

// ||A||_1 = max_j sum_i |a_ij| (the maximum column sum of moduli).
// With a group, each member sums its columns and the maxima are reduced (read only:
// no sync of its own).
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline R norm1(N n, const Cx<R>* A, const G& g = G{}) {
  const int nn = static_cast<int>(n);
  R best = R(0);
  for (int j = g.rank(); j < nn; j += g.size()) {
    R s = R(0);
    for (int i = 0; i < nn; ++i) s += dense_detail::cabs(A[i * nn + j]);
    if (s > best || s != s) best = s;  // a NaN column sum sticks
    if (best != best) break;
  }
  if constexpr (!G::kSolo) best = static_cast<R>(g.max(static_cast<double>(best)));
  return best;
}

// ----------------------------------------------------------------------------
// Linear systems.

// Solves A X = B by Gaussian elimination with partial pivoting (rows chosen by
// |re| + |im|, as LAPACK does). A is n x n and is overwritten (its upper triangle
// holds U, with the reciprocals of the pivots on the diagonal when g is SoloGroup);
// B is n x nrhs, row-major with leading dimension nrhs, and is overwritten by X. Row swaps are
// applied to A and B as elimination proceeds, so no pivot array is needed.
// Returns 0; 1 if A has a NaN or infinite entry; or k + 1 when the k-th pivot
// (0-based) is exactly zero (A singular, LAPACK's getrf convention). A and B then
// hold partial results. A nearly singular A gives status 0 and a large X, as in
// LAPACK; the Padé denominators of expm are well conditioned by construction.
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline int lu_solve(N n, Cx<R>* A, Cx<R>* B, int nrhs, const G& g = G{}) {
  namespace dd = dense_detail;
  const int nn = static_cast<int>(n);
  const int r0 = g.rank(), gs = g.size();
  R amax = R(0);
  for (int e = r0; e < nn * nn; e += gs) {
    const R v = dd::abs1(A[e]);
    if (v > amax || v != v) amax = v;
  }
  if constexpr (!G::kSolo) amax = static_cast<R>(g.max(static_cast<double>(amax)));
  if (!(amax <= dd::RealConst<R>::max)) return 1;  // NaN or infinite entry
  for (int k = 0; k < nn; ++k) {
    int p = k;  // every member finds the same pivot row
    R best = dd::abs1(A[k * nn + k]);
    for (int i = k + 1; i < nn; ++i) {
      const R v = dd::abs1(A[i * nn + k]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    if (!(best > R(0)) || best > dd::RealConst<R>::max) return k + 1;
    g.sync();  // column k read by all before the swap rewrites it
    if (p != k) {
      for (int j = k + r0; j < nn; j += gs) {
        const Cx<R> t = A[k * nn + j];
        A[k * nn + j] = A[p * nn + j];
        A[p * nn + j] = t;
      }
      for (int j = r0; j < nrhs; j += gs) {
        const Cx<R> t = B[k * nrhs + j];
        B[k * nrhs + j] = B[p * nrhs + j];
        B[p * nrhs + j] = t;
      }
    }
    g.sync();
    const Cx<R> piv = dd::inv(A[k * nn + k]);
    const Cx<R>* ak = A + k * nn;
    const Cx<R>* bk = B + k * nrhs;
    if constexpr (G::kSolo) {
      A[k * nn + k] = piv;
      for (int i = k + 1; i < nn; ++i) {
        Cx<R>* ai = A + i * nn;
        const Cx<R> f = ai[k] * piv;
        if (f.re == R(0) && f.im == R(0)) continue;
        const Cx<R> mf{-f.re, -f.im};
        for (int j = k + 1; j < nn; ++j) dd::madd(ai[j], mf, ak[j]);
        Cx<R>* bi = B + i * nrhs;
        for (int j = 0; j < nrhs; ++j) dd::madd(bi[j], mf, bk[j]);
      }
    } else {  // entries (i, j) of the trailing rows split over the group; column k
              // and row k are only read (the pivot's reciprocal is not stored)
      const int wa = nn - k - 1, w = wa + nrhs;
      for (int e = r0; e < wa * w; e += gs) {
        const int i = k + 1 + e / w, j = e % w;
        const Cx<R> f = A[i * nn + k] * piv;
        if (f.re == R(0) && f.im == R(0)) continue;
        const Cx<R> mf{-f.re, -f.im};
        if (j < wa) {
          dd::madd(A[i * nn + k + 1 + j], mf, ak[k + 1 + j]);
        } else {
          dd::madd(B[i * nrhs + j - wa], mf, bk[j - wa]);
        }
      }
      g.sync();
    }
  }
  if constexpr (G::kSolo) {
    for (int k = nn - 1; k >= 0; --k) {
      Cx<R>* bk = B + k * nrhs;
      for (int j = k + 1; j < nn; ++j) {
        const Cx<R> u = A[k * nn + j];
        const Cx<R> mu{-u.re, -u.im};
        const Cx<R>* bj = B + j * nrhs;
        for (int c = 0; c < nrhs; ++c) dd::madd(bk[c], mu, bj[c]);
      }
      const Cx<R> piv = A[k * nn + k];
      for (int c = 0; c < nrhs; ++c) bk[c] = bk[c] * piv;
    }
  } else {  // a column of B per member: back substitution needs no sync
    for (int c = r0; c < nrhs; c += gs) {
      for (int k = nn - 1; k >= 0; --k) {
        Cx<R> x = B[k * nrhs + c];
        for (int j = k + 1; j < nn; ++j) {
          const Cx<R> u = A[k * nn + j];
          dd::madd(x, Cx<R>{-u.re, -u.im}, B[j * nrhs + c]);
        }
        B[k * nrhs + c] = x * dd::inv(A[k * nn + k]);
      }
    }
    g.sync();
  }
  return 0;
}

// ----------------------------------------------------------------------------
// Hermitian eigenproblem (cyclic Jacobi) and the PSD square root.

QFLEET_HD constexpr std::size_t hermitian_eig_work(int n) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
}
QFLEET_HD constexpr std::size_t sqrtm_psd_work(int n) {
  return 2 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
}

namespace dense_detail {

// Diagonalises the Hermitian matrix H in place by cyclic complex Jacobi rotations
// (row by row over the strict upper triangle), accumulating G = V^dagger as
// G <- J^dagger G (rows p, q: contiguous), so that on return H ~ G H0 G^dagger is
// diagonal (eigenvalues, unsorted, on the real diagonal) and the rows of G are
// the conjugated orthonormal eigenvectors. Each rotation J = diag(1, e^{-i phi}) P,
// with h_pq = |h_pq| e^{i phi} and P the real Jacobi rotation of the resulting
// real symmetric 2 x 2 block (Numerical Recipes 11.1 / Golub & Van Loan 8.5),
// zeroes h_pq; only rows p, q of H are computed, columns p, q follow by
// Hermiticity. Stops when the off-diagonal Frobenius norm is <= eps ||H0||_F.
// Returns 0, or 1 if 64 sweeps did not get there (or ||H0||_F^2 overflows: the
// entries must stay below sqrt(max) ~ 1e154 in double, 1e19 in float).
template <class N, class R>
QFLEET_HD inline int jacobi(N n, Cx<R>* H, Cx<R>* G) {
  using std::fabs;
  using std::sqrt;
  const int nn = static_cast<int>(n);
  identity(n, G);
  R fro2 = R(0), off2 = R(0);
  for (int i = 0; i < nn; ++i)
    for (int j = 0; j < nn; ++j) {
      const R a = abs2(H[i * nn + j]);
      fro2 += a;
      if (i != j) off2 += a;
    }
  if (!(fro2 <= RealConst<R>::max)) return 1;
  const R eps = RealConst<R>::eps;
  const R stop2 = eps * eps * fro2;
  // Off-diagonal entries this small are left alone (their rotation would change
  // nothing at working precision).
  const R skip2 = R(1e-4) * stop2 / R(nn * nn);
  for (int sweep = 0; sweep < 64; ++sweep) {
    if (off2 <= stop2) return 0;
    for (int p = 0; p < nn - 1; ++p) {
      for (int q = p + 1; q < nn; ++q) {
        const Cx<R> beta = H[p * nn + q];
        const R b2 = abs2(beta);
        if (b2 <= skip2) continue;
        const R b = sqrt(b2);
        const R app = H[p * nn + p].re, aqq = H[q * nn + q].re;
        const R theta = (aqq - app) / (2 * b);
        R t;
        if (fabs(theta) > R(1) / eps) {
          t = R(0.5) / theta;
        } else {
          t = R(1) / (fabs(theta) + sqrt(theta * theta + R(1)));
          if (theta < R(0)) t = -t;
        }
        const R c = R(1) / sqrt(t * t + R(1));
        const R s = t * c;
        // J = [[c, s], [-s e, c e]] on (p, q), e = e^{-i phi}; the rows of
        // J^dagger are [c, -s conj(e)] and [s, c conj(e)].
        const Cx<R> ec{beta.re / b, beta.im / b};  // conj(e) = e^{i phi}
        const Cx<R> msec{-s * ec.re, -s * ec.im};
        const Cx<R> cec{c * ec.re, c * ec.im};
        // H <- J^dagger H J: rows p, q off the 2 x 2 block, mirrored into columns.
        Cx<R>* hp = H + p * nn;
        Cx<R>* hq = H + q * nn;
        for (int k = 0; k < nn; ++k) {
          if (k == p || k == q) continue;
          const Cx<R> x = hp[k], y = hq[k];
          const Cx<R> np = c * x + msec * y;
          const Cx<R> nq = s * x + cec * y;
          hp[k] = np;
          hq[k] = nq;
          H[k * nn + p] = conj(np);
          H[k * nn + q] = conj(nq);
        }
        hp[p] = {app - t * b, R(0)};
        hq[q] = {aqq + t * b, R(0)};
        hp[q] = {R(0), R(0)};
        hq[p] = {R(0), R(0)};
        // G <- J^dagger G (rows p, q).
        Cx<R>* gp = G + p * nn;
        Cx<R>* gq = G + q * nn;
        for (int k = 0; k < nn; ++k) {
          const Cx<R> x = gp[k], y = gq[k];
          gp[k] = c * x + msec * y;
          gq[k] = s * x + cec * y;
        }
      }
    }
    off2 = R(0);
    for (int i = 0; i < nn; ++i)
      for (int j = 0; j < nn; ++j)
        if (i != j) off2 += abs2(H[i * nn + j]);
  }
  return off2 <= stop2 ? 0 : 1;
}

// H = (A + A^dagger) / 2, so that rounding in a Hermitian input cannot matter.
template <class N, class R>
QFLEET_HD inline void hermitian_part(N n, const Cx<R>* A, Cx<R>* H) {
  const int nn = static_cast<int>(n);
  for (int i = 0; i < nn; ++i) {
    H[i * nn + i] = {A[i * nn + i].re, R(0)};
    for (int j = i + 1; j < nn; ++j) {
      const Cx<R> a = A[i * nn + j], b = A[j * nn + i];
      const Cx<R> h{R(0.5) * (a.re + b.re), R(0.5) * (a.im - b.im)};
      H[i * nn + j] = h;
      H[j * nn + i] = conj(h);
    }
  }
}

}  // namespace dense_detail

// Eigen-decomposition A = V diag(evals) V^dagger of a Hermitian matrix (only its
// Hermitian part (A + A^dagger)/2 is used) by cyclic Jacobi. evals (n reals) come
// out ascending; evecs (n x n) holds the orthonormal eigenvectors as columns, in
// the same order. work: hermitian_eig_work(n) entries. Returns 0, or 1 if the
// iteration did not converge (non-finite input). Each sweep costs O(n^3) (n^2/2
// rotations of 2 rows of H and of V^dagger); 6-10 sweeps; meant for n <= 64.
template <class N, class R>
QFLEET_HD inline int hermitian_eig(N n, const Cx<R>* A, R* evals, Cx<R>* evecs, Cx<R>* work) {
  const int nn = static_cast<int>(n);
  dense_detail::hermitian_part(n, A, work);
  const int status = dense_detail::jacobi(n, work, evecs);  // evecs = V^dagger for now
  for (int i = 0; i < nn; ++i) evals[i] = work[i * nn + i].re;
  // Selection sort (n swaps at most), moving the rows of V^dagger along.
  for (int i = 0; i < nn - 1; ++i) {
    int m = i;
    for (int j = i + 1; j < nn; ++j)
      if (evals[j] < evals[m]) m = j;
    if (m == i) continue;
    const R t = evals[i];
    evals[i] = evals[m];
    evals[m] = t;
    for (int k = 0; k < nn; ++k) {
      const Cx<R> v = evecs[i * nn + k];
      evecs[i * nn + k] = evecs[m * nn + k];
      evecs[m * nn + k] = v;
    }
  }
  // V = (V^dagger)^dagger in place.
  for (int i = 0; i < nn; ++i) {
    evecs[i * nn + i] = conj(evecs[i * nn + i]);
    for (int j = i + 1; j < nn; ++j) {
      const Cx<R> a = evecs[i * nn + j];
      evecs[i * nn + j] = conj(evecs[j * nn + i]);
      evecs[j * nn + i] = conj(a);
    }
  }
  return status;
}

// Principal square root S = V diag(sqrt(max(lambda, 0))) V^dagger of a Hermitian
// positive-semidefinite matrix A (only its Hermitian part is used), via
// hermitian_eig. Negative eigenvalues, which for a PSD input are rounding noise of
// order eps ||A||, are clamped to 0. S is formed as W^dagger W with
// W = diag(lambda^{1/4}) V^dagger, so it is Hermitian PSD by construction.
// Accuracy: ||S^2 - A|| ~ eps ||A||; near a zero eigenvalue the root itself is
// only determined to ~ sqrt(eps ||A||) (the square root is not Lipschitz at 0),
// which also bounds, e.g., tr sqrt(M) for a rank-deficient M in the Uhlmann
// fidelity F(rho, sigma) = (tr sqrt(sqrt(rho) sigma sqrt(rho)))^2.
// work: sqrtm_psd_work(n) entries. Returns hermitian_eig's status.
template <class N, class R>
QFLEET_HD inline int sqrtm_psd(N n, const Cx<R>* A, Cx<R>* S, Cx<R>* work) {
  using std::sqrt;
  const int nn = static_cast<int>(n);
  Cx<R>* H = work;
  Cx<R>* W = work + nn * nn;
  dense_detail::hermitian_part(n, A, H);
  const int status = dense_detail::jacobi(n, H, W);  // W = V^dagger
  for (int k = 0; k < nn; ++k) {
    const R lam = H[k * nn + k].re;
    const R w = lam > R(0) ? sqrt(sqrt(lam)) : R(0);
    for (int j = 0; j < nn; ++j) {
      W[k * nn + j].re *= w;
      W[k * nn + j].im *= w;
    }
  }
  mat_mul_adj_left(n, W, W, S);
  return status;
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
