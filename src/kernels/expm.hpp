// The matrix exponential and its Fréchet derivative for small dense complex
// matrices, written once for host and device (conventions: kernels/dense.hpp).
//
//   expm          N. J. Higham, "The scaling and squaring method for the matrix
//                 exponential revisited", SIAM J. Matrix Anal. Appl. 26(4),
//                 1179-1193 (2005), Algorithm 2.3: diagonal Padé approximants
//                 r_m, m in {3, 5, 7, 9, 13}, chosen from ||A||_1 against theta_m,
//                 with scaling 2^-s and s squarings for m = 13.
//   expm_frechet  A. H. Al-Mohy and N. J. Higham, "Computing the Fréchet
//                 derivative of the matrix exponential, with an application to
//                 condition number estimation", SIAM J. Matrix Anal. Appl. 30(4),
//                 1639-1657 (2009), Algorithm 6.4: exp(A) and L(A, E) together;
//                 the derivative is propagated through the Padé evaluation
//                 (M_2k = L(A^2k, E), Lu, Lv) and through the squaring phase
//                 (L <- X L + L X, X <- X^2).
//
// Adjoint (for reverse mode). With the Frobenius inner product <X, Y> = tr(X^dagger Y),
// the adjoint of E -> L(A, E) is W -> L(A^dagger, W):
//     <W, L(A, E)> = <L(A^dagger, W), E>      for all W, E,
// because L(A, E) = int_0^1 e^{tA} E e^{(1-t)A} dt and (e^{tA})^dagger = e^{tA^dagger}.
// So Dexp(A)^*[W] = expm_frechet(A^dagger, W).L (which also returns exp(A^dagger) =
// exp(A)^dagger). A gradient g_k = Re <W, dexp(A)/dp_k> of a real parameter then
// equals Re <L(A^dagger, W), dA/dp_k>.
//
// Groups: expm and expm_frechet take an optional group g (kernels/group.hpp) whose
// members split every product, combination and the LU solve; the default
// SoloGroup is the plain serial code.
//
// Precision: the Padé degrees and scaling use the double-precision constants for
// both float and double (for float this costs a little extra work, never accuracy;
// Higham's single-precision theta_m would allow lower degrees).
#pragma once

#include <cmath>
#include <cstddef>

#include "kernels/complex.hpp"
#include "kernels/dense.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/types.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Scratch sizes, in units of Cx<R>.
QFLEET_HD constexpr std::size_t expm_work(int n) {
  return 7 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
}
QFLEET_HD constexpr std::size_t expm_frechet_work(int n) {
  return 12 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
}

namespace expm_detail {

// Coefficient b_k of the degree-m diagonal Padé approximant to exp,
// p_m(x) = sum_k b_k x^k, q_m(x) = p_m(-x) (the b_k of Higham 2005, Algorithm 2.3).
QFLEET_HD constexpr double pade_b(int m, int k) {
  const double b3[] = {120., 60., 12., 1.};
  const double b5[] = {30240., 15120., 3360., 420., 30., 1.};
  const double b7[] = {17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.};
  const double b9[] = {17643225600., 8821612800., 2075673600., 302702400., 30270240.,
                       2162160.,     110880.,     3960.,       90.,        1.};
  const double b13[] = {64764752532480000.,
                        32382376266240000.,
                        7771770303897600.,
                        1187353796428800.,
                        129060195264000.,
                        10559470521600.,
                        670442572800.,
                        33522128640.,
                        1323241920.,
                        40840800.,
                        960960.,
                        16380.,
                        182.,
                        1.};
  return m == 3 ? b3[k] : m == 5 ? b5[k] : m == 7 ? b7[k] : m == 9 ? b9[k] : b13[k];
}

// Higham (2005), Table 2.3 (double precision, u = 2^-53): the largest ||2^-s A||_1
// for which r_m has backward error <= u.
QFLEET_HD constexpr double theta(int m) {
  return m == 3   ? 1.495585217958292e-2
         : m == 5 ? 2.539398330063230e-1
         : m == 7 ? 9.504178996162932e-1
         : m == 9 ? 2.097847961257068e0
                  : 5.371920351148152e0;
}

// Al-Mohy & Higham (2009), Table 6.1 (ell_m): the analogous bounds that keep the
// backward error of both exp and its Fréchet derivative <= 2^-53; used by
// Algorithm 6.4 (slightly below theta_m).
QFLEET_HD constexpr double ell(int m) {
  return m == 3 ? 1.08e-2 : m == 5 ? 2.00e-1 : m == 7 ? 7.83e-1 : m == 9 ? 1.78e0 : 4.74e0;
}

// s = max(0, ceil(log2(norm / bound))).
template <class R>
QFLEET_HD inline int scaling(R norm, double bound) {
  using std::ceil;
  using std::log2;
  const double q = static_cast<double>(norm) / bound;
  return q > 1.0 ? static_cast<int>(ceil(log2(q))) : 0;
}

// out (+)= c0 I + sum_k c[k] P[k]
template <bool Acc, int K, class N, class R, class G>
QFLEET_HD inline void lincomb(N n, Cx<R>* out, R c0, const R (&c)[K], const Cx<R>* const* P, const G& g) {
  const int nn = static_cast<int>(n);
  for (int i = g.rank(); i < nn; i += g.size())  // rows split over a group
    for (int j = 0; j < nn; ++j) {
      const int e = i * nn + j;
      Cx<R> v = Acc ? out[e] : Cx<R>{R(0), R(0)};
      if (i == j) v.re += c0;
      for (int k = 0; k < K; ++k) {
        v.re += c[k] * P[k][e].re;
        v.im += c[k] * P[k][e].im;
      }
      out[e] = v;
    }
  g.sync();
}

// Odd/even coefficient lists of r_M for the powers A^2, A^4, ..., A^{M-1}.
template <int M, class R>
struct LowPade {
  static constexpr int K = (M - 1) / 2;
  R odd[K], even[K];
  QFLEET_HD LowPade() {
    for (int k = 0; k < K; ++k) {
      odd[k] = R(pade_b(M, 2 * k + 3));
      even[k] = R(pade_b(M, 2 * k + 2));
    }
  }
};

// Even powers A^2 .. A^{2K} into P[0..K) (A^8 = A^4 A^4).
template <int K, class N, class R, class G>
QFLEET_HD inline void even_powers(N n, const Cx<R>* A, Cx<R>* const* P, const G& g) {
  mat_mul(n, A, A, P[0], g);
  if constexpr (K >= 2) mat_mul(n, P[0], P[0], P[1], g);
  if constexpr (K >= 3) mat_mul(n, P[1], P[0], P[2], g);
  if constexpr (K >= 4) mat_mul(n, P[1], P[1], P[3], g);
}

// expm for m in {3, 5, 7, 9}: U = A sum b_{2k+1} A^{2k}, V = sum b_{2k} A^{2k}.
template <int M, class N, class R, class G>
QFLEET_HD inline void expm_low(N n, const Cx<R>* A, Cx<R>* const* pw, Cx<R>* T, Cx<R>* U,
                               Cx<R>* V, const G& g) {
  constexpr int K = (M - 1) / 2;
  const LowPade<M, R> c;
  even_powers<K>(n, A, pw, g);
  lincomb<false>(n, T, R(pade_b(M, 1)), c.odd, pw, g);
  lincomb<false>(n, V, R(pade_b(M, 0)), c.even, pw, g);
  mat_mul(n, A, T, U, g);
}

// expm_frechet for m in {3, 5, 7, 9} (Al-Mohy & Higham 2009, (6.11)-(6.13)):
// M_2 = A E + E A, M_4 = A^2 M_2 + M_2 A^2, M_6 = A^4 M_2 + M_4 A^2,
// M_8 = A^4 M_4 + M_4 A^4; Lu = A sum b_{2k+1} M_{2k} + E sum b_{2k+1} A^{2k},
// Lv = sum b_{2k} M_{2k}. s[] are 12 n x n slots; results: U = s[0], V = s[11],
// Lu = s[2], Lv = s[3].
template <int M, class N, class R, class G>
QFLEET_HD inline void frechet_low(N n, const Cx<R>* A, const Cx<R>* E, Cx<R>* const (&s)[12], const G& g) {
  constexpr int K = (M - 1) / 2;
  const LowPade<M, R> c;
  Cx<R>* const pw[4] = {s[2], s[3], s[4], s[5]};
  Cx<R>* const mw[4] = {s[6], s[7], s[8], s[9]};
  even_powers<K>(n, A, pw, g);
  mat_mul(n, A, E, mw[0], g);
  mat_mul_acc(n, E, A, mw[0], g);
  if constexpr (K >= 2) {
    mat_mul(n, pw[0], mw[0], mw[1], g);
    mat_mul_acc(n, mw[0], pw[0], mw[1], g);
  }
  if constexpr (K >= 3) {
    mat_mul(n, pw[1], mw[0], mw[2], g);
    mat_mul_acc(n, mw[1], pw[0], mw[2], g);
  }
  if constexpr (K >= 4) {
    mat_mul(n, pw[1], mw[1], mw[3], g);
    mat_mul_acc(n, mw[1], pw[1], mw[3], g);
  }
  Cx<R>* S1 = s[10];
  Cx<R>* V = s[11];
  lincomb<false>(n, S1, R(pade_b(M, 1)), c.odd, pw, g);
  lincomb<false>(n, V, R(pade_b(M, 0)), c.even, pw, g);
  mat_mul(n, A, S1, s[0], g);                   // U
  lincomb<false>(n, s[1], R(0), c.odd, mw, g);  // S2 = sum b_{2k+1} M_{2k}
  mat_mul(n, A, s[1], s[2], g);                 // Lu = A S2 + E S1
  mat_mul_acc(n, E, S1, s[2], g);
  lincomb<false>(n, s[3], R(0), c.even, mw, g);  // Lv
}

// X (n x n) <- X^(2^s) using the scratch Y; the result ends in X.
template <class N, class R, class G>
QFLEET_HD inline void square(N n, int s, Cx<R>* X, Cx<R>* Y, const G& g) {
  Cx<R>* x = X;
  Cx<R>* y = Y;
  for (int k = 0; k < s; ++k) {
    mat_mul(n, x, x, y, g);
    Cx<R>* t = x;
    x = y;
    y = t;
  }
  if (x != X) mat_copy(n, x, X, g);
}

template <class R>
QFLEET_HD inline R b13(int k) {
  return R(pade_b(13, k));
}

template <class N, class R, class G>
QFLEET_HD inline void fill_nan(N n, Cx<R>* X, const G& g) {
  const int nn2 = static_cast<int>(n) * static_cast<int>(n);
  const R nan = R(0) / R(0);
  for (int e = g.rank(); e < nn2; e += g.size()) X[e] = {nan, nan};
  g.sync();
}

}  // namespace expm_detail

// expA = exp(A) by scaling and squaring with Padé approximants (Higham 2005,
// Algorithm 2.3): the smallest m in {3, 5, 7, 9} with ||A||_1 <= theta_m, else
// m = 13 on 2^-s A with s = max(0, ceil(log2(||A||_1 / theta_13))) followed by s
// squarings. A^2, A^4, A^6 (and A^8) are formed once and shared by U and V; the
// degree-13 numerator/denominator take Higham's split U = A[A6(b13 A6 + b11 A4 +
// b9 A2) + ...], V = A6(b12 A6 + ...) + ..., 6 products in all; r_m comes from
// one lu_solve. expA may not alias A.
// work: expm_work(n) = 7 n^2 entries. Returns 0; -1 (expA all NaN) if A is not
// finite; k > 0 if the Padé denominator was singular (cannot happen for finite A).
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline int expm(N n, const Cx<R>* A, Cx<R>* expA, Cx<R>* work, const G& g = G{}) {
  namespace ed = expm_detail;
  const int nn = static_cast<int>(n);
  const int n2 = nn * nn;
  const R nrm = norm1(n, A, g);
  if (!(nrm <= dense_detail::RealConst<R>::max)) {
    ed::fill_nan(n, expA, g);
    return -1;
  }
  Cx<R>* const As = work;
  Cx<R>* const A2 = work + n2;
  Cx<R>* const A4 = work + 2 * n2;
  Cx<R>* const A6 = work + 3 * n2;
  Cx<R>* const T = work + 4 * n2;
  Cx<R>* const U = work + 5 * n2;
  Cx<R>* const V = work + 6 * n2;
  Cx<R>* const pw[4] = {A2, A4, A6, As};  // As holds A^8 when m = 9
  int s = 0;
  if (nrm <= R(ed::theta(3))) {
    ed::expm_low<3>(n, A, pw, T, U, V, g);
  } else if (nrm <= R(ed::theta(5))) {
    ed::expm_low<5>(n, A, pw, T, U, V, g);
  } else if (nrm <= R(ed::theta(7))) {
    ed::expm_low<7>(n, A, pw, T, U, V, g);
  } else if (nrm <= R(ed::theta(9))) {
    ed::expm_low<9>(n, A, pw, T, U, V, g);
  } else {
    s = ed::scaling(nrm, ed::theta(13));
    using std::ldexp;
    const R c = ldexp(R(1), -s);  // exact
    for (int e = g.rank(); e < n2; e += g.size()) As[e] = {c * A[e].re, c * A[e].im};
    g.sync();
    mat_mul(n, As, As, A2, g);
    mat_mul(n, A2, A2, A4, g);
    mat_mul(n, A4, A2, A6, g);
    const Cx<R>* const P3[3] = {A6, A4, A2};
    // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
    const R cu1[3] = {ed::b13<R>(13), ed::b13<R>(11), ed::b13<R>(9)};
    const R cu2[3] = {ed::b13<R>(7), ed::b13<R>(5), ed::b13<R>(3)};
    ed::lincomb<false>(n, T, R(0), cu1, P3, g);
    mat_mul(n, A6, T, V, g);
    ed::lincomb<true>(n, V, ed::b13<R>(1), cu2, P3, g);
    mat_mul(n, As, V, U, g);
    // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
    const R cv1[3] = {ed::b13<R>(12), ed::b13<R>(10), ed::b13<R>(8)};
    const R cv2[3] = {ed::b13<R>(6), ed::b13<R>(4), ed::b13<R>(2)};
    ed::lincomb<false>(n, T, R(0), cv1, P3, g);
    mat_mul(n, A6, T, V, g);
    ed::lincomb<true>(n, V, ed::b13<R>(0), cv2, P3, g);
  }
  // r_m = (V - U)^{-1} (V + U)
  for (int e = g.rank(); e < n2; e += g.size()) {
    T[e] = dense_detail::sub(V[e], U[e]);
    expA[e] = V[e] + U[e];
  }
  g.sync();
  const int status = lu_solve(n, T, expA, nn, g);
  ed::square(n, s, expA, A2, g);
  return status;
}

namespace expm_detail {

// Where expm_frechet's Padé pieces end up in its 12 work slots: U, V, their Fréchet
// derivatives Lu, Lv, the denominator P, the 3-block right-hand side RHS (n x 3n,
// contiguous slots), two scratch slots for the squaring phase, and its count sq.
template <class R>
struct FrechetSlots {
  Cx<R>* U;
  Cx<R>* V;
  Cx<R>* Lu;
  Cx<R>* Lv;
  Cx<R>* P;
  Cx<R>* RHS;
  Cx<R>* T1;
  Cx<R>* T2;
  int sq = 0;
};

// Degrees 3-9 (||A||_1 <= ell_9): no scaling.
template <class N, class R, class G>
QFLEET_HD inline FrechetSlots<R> frechet_pieces_low(N n, R nrm, const Cx<R>* A, const Cx<R>* E, Cx<R>* const (&s)[12],
                                                    const G& g) {
  if (nrm <= R(ell(3))) {
    frechet_low<3>(n, A, E, s, g);
  } else if (nrm <= R(ell(5))) {
    frechet_low<5>(n, A, E, s, g);
  } else if (nrm <= R(ell(7))) {
    frechet_low<7>(n, A, E, s, g);
  } else {
    frechet_low<9>(n, A, E, s, g);
  }
  return {s[0], s[11], s[2], s[3], s[7], s[4] /* s[4..6] */, s[8], s[9], 0};
}

// Degree 13 on A and E scaled by 2^-sq.
template <class N, class R, class G>
QFLEET_HD inline FrechetSlots<R> frechet_pieces_13(N n, R nrm, const Cx<R>* A, const Cx<R>* E, Cx<R>* const (&s)[12],
                                                   const G& g) {
  const int n2 = static_cast<int>(n) * static_cast<int>(n);
  const int sq = scaling(nrm, ell(13));
  using std::ldexp;
  const R c = ldexp(R(1), -sq);  // exact
  Cx<R>* const As = s[0];
  Cx<R>* const Es = s[1];
  for (int e = g.rank(); e < n2; e += g.size()) {
    As[e] = {c * A[e].re, c * A[e].im};
    Es[e] = {c * E[e].re, c * E[e].im};
  }
  g.sync();
  Cx<R>* const A2 = s[2];
  Cx<R>* const A4 = s[3];
  Cx<R>* const A6 = s[4];
  Cx<R>* const M2 = s[6];
  Cx<R>* const M4 = s[7];
  Cx<R>* const M6 = s[8];
  mat_mul(n, As, As, A2, g);
  mat_mul(n, A2, A2, A4, g);
  mat_mul(n, A4, A2, A6, g);
  mat_mul(n, As, Es, M2, g);
  mat_mul_acc(n, Es, As, M2, g);
  mat_mul(n, A2, M2, M4, g);
  mat_mul_acc(n, M2, A2, M4, g);
  mat_mul(n, A4, M2, M6, g);
  mat_mul_acc(n, M4, A2, M6, g);
  const Cx<R>* const PA[3] = {A6, A4, A2};
  const Cx<R>* const PM[3] = {M6, M4, M2};
  const R cw1[3] = {b13<R>(13), b13<R>(11), b13<R>(9)};
  const R cw2[3] = {b13<R>(7), b13<R>(5), b13<R>(3)};
  const R cz1[3] = {b13<R>(12), b13<R>(10), b13<R>(8)};
  const R cz2[3] = {b13<R>(6), b13<R>(4), b13<R>(2)};
  Cx<R>* const W1 = s[5];
  Cx<R>* const Z1 = s[9];
  lincomb<false>(n, W1, R(0), cw1, PA, g);     // W1 = b13 A6 + b11 A4 + b9 A2
  lincomb<false>(n, Z1, R(0), cz1, PA, g);     // Z1 = b12 A6 + b10 A4 + b8 A2
  lincomb<false>(n, s[10], R(0), cw1, PM, g);  // Lw1
  // Lw = A6 Lw1 + M6 W1 + Lw2,  Lw2 = b7 M6 + b5 M4 + b3 M2
  mat_mul(n, A6, s[10], s[11], g);
  mat_mul_acc(n, M6, W1, s[11], g);
  lincomb<true>(n, s[11], R(0), cw2, PM, g);
  // W = A6 W1 + W2,  W2 = b7 A6 + b5 A4 + b3 A2 + b1 I
  mat_mul(n, A6, W1, s[10], g);
  lincomb<true>(n, s[10], b13<R>(1), cw2, PA, g);
  // Lu = A Lw + E W (into W1's slot), U = A W (into Lw's slot)
  mat_mul(n, As, s[11], s[5], g);
  mat_mul_acc(n, Es, s[10], s[5], g);
  mat_mul(n, As, s[10], s[11], g);
  // Lv = A6 Lz1 + M6 Z1 + Lz2 (into Es's slot), Lz1 = b12 M6 + b10 M4 + b8 M2
  lincomb<false>(n, s[10], R(0), cz1, PM, g);
  mat_mul(n, A6, s[10], s[1], g);
  mat_mul_acc(n, M6, Z1, s[1], g);
  lincomb<true>(n, s[1], R(0), cz2, PM, g);
  // V = A6 Z1 + Z2
  mat_mul(n, A6, Z1, s[10], g);
  lincomb<true>(n, s[10], b13<R>(0), cz2, PA, g);
  return {s[11], s[10], s[5], s[1], s[6], s[2] /* s[2..4] */, s[0], s[7], sq};
}

// (V - U) [R, Y, Z] = [U + V, Lu + Lv, Lu - Lv] in one elimination (RHS is n x 3n),
// then L = Y + Z R and the squaring phase: L <- X L + L X, X <- X^2.
template <class N, class R, class G>
QFLEET_HD inline int frechet_solve_square(N n, const FrechetSlots<R>& f, Cx<R>* expA, Cx<R>* L, const G& g) {
  const int nn = static_cast<int>(n);
  const int n2 = nn * nn;
  const int ld = 3 * nn;
  for (int e = g.rank(); e < n2; e += g.size()) {
    const int i = e / nn, j = e % nn;
    f.P[e] = dense_detail::sub(f.V[e], f.U[e]);
    f.RHS[i * ld + j] = f.V[e] + f.U[e];
    f.RHS[i * ld + nn + j] = f.Lu[e] + f.Lv[e];
    f.RHS[i * ld + 2 * nn + j] = dense_detail::sub(f.Lu[e], f.Lv[e]);
  }
  g.sync();
  const int status = lu_solve(n, f.P, f.RHS, ld, g);
  for (int e = g.rank(); e < n2; e += g.size()) {
    const int i = e / nn, j = e % nn;
    expA[e] = f.RHS[i * ld + j];
    L[e] = f.RHS[i * ld + nn + j];
  }
  g.sync();
  dense_detail::gemm<true>(n, f.RHS + 2 * nn, ld, f.RHS, ld, L, nn, g);  // L = Y + Z R
  Cx<R>* x = expA;
  Cx<R>* l = L;
  Cx<R>* x2 = f.T1;
  Cx<R>* l2 = f.T2;
  for (int k = 0; k < f.sq; ++k) {
    mat_mul(n, x, l, l2, g);
    mat_mul_acc(n, l, x, l2, g);
    mat_mul(n, x, x, x2, g);
    Cx<R>* t = x;
    x = x2;
    x2 = t;
    t = l;
    l = l2;
    l2 = t;
  }
  if (x != expA) {
    mat_copy(n, x, expA, g);
    mat_copy(n, l, L, g);
  }
  return status;
}

}  // namespace expm_detail

// exp(A) and the Fréchet derivative L = L(A, E) = d/dt exp(A + tE)|_{t=0}, by
// Al-Mohy & Higham (2009), Algorithm 6.4: degrees m in {3, 5, 7, 9, 13} chosen
// against their ell_m (Table 6.1: 1.08e-2, 2.00e-1, 7.83e-1, 1.78, 4.74; a little
// below expm's theta_m, so for some ||A||_1 the two functions use different m and
// their exp(A) agree to rounding, not bitwise), s = max(0, ceil(log2(||A||_1 /
// ell_13))) with A and E both scaled by 2^-s, then s steps L <- X L + L X, X <- X^2.
// The two solves with the denominator q_m(A) = V - U share one elimination:
// (V - U) [R, Y, Z] = [U + V, Lu + Lv, Lu - Lv], L = Y + Z R.
// Reverse mode: Dexp(A)^*[W] = L(A^dagger, W) (see the top of this file).
// No output may alias an input. work: expm_frechet_work(n) = 12 n^2 entries.
// Returns 0; -1 (outputs NaN) if A is not finite; k > 0 if the denominator was
// singular (cannot happen for finite A).
template <class N, class R, class G = SoloGroup>
QFLEET_HD inline int expm_frechet(N n, const Cx<R>* A, const Cx<R>* E, Cx<R>* expA, Cx<R>* L,
                                  Cx<R>* work, const G& g = G{}) {
  namespace ed = expm_detail;
  const int n2 = static_cast<int>(n) * static_cast<int>(n);
  const R nrm = norm1(n, A, g);
  if (!(nrm <= dense_detail::RealConst<R>::max)) {
    ed::fill_nan(n, expA, g);
    ed::fill_nan(n, L, g);
    return -1;
  }
  Cx<R>* const s[12] = {work,          work + n2,     work + 2 * n2,  work + 3 * n2,
                        work + 4 * n2, work + 5 * n2, work + 6 * n2,  work + 7 * n2,
                        work + 8 * n2, work + 9 * n2, work + 10 * n2, work + 11 * n2};
  const ed::FrechetSlots<R> f =
      nrm <= R(ed::ell(9)) ? ed::frechet_pieces_low(n, nrm, A, E, s, g) : ed::frechet_pieces_13(n, nrm, A, E, s, g);
  return ed::frechet_solve_square(n, f, expA, L, g);
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
