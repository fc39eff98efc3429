// Register-blocked complex matrix products for the CPU executors compiled with
// AVX2+FMA or AVX-512 (see CMakeLists.txt: each executor source is compiled once
// per instruction set). The plain loops in dense.hpp stay the reference and the
// device path; this header only adds a faster host path for the same contract:
//
//   C (ldc) [+]= op(A) (lda) * B (ldb),   op(A) = A or A^dagger, C is m x p.
//
// Interleaved complex storage (re, im, re, im, ...) is used as is: a row of B is
// loaded as vectors, and each product a * b is two FMAs,
//   c += a.re * b  +  (-a.im, +a.im, ...) * swap_pairs(b),
// so no de-interleaving is needed. Blocks of RB rows x CB vectors of C stay in
// registers over the whole k loop (AVX-512 double: 4 x 4 zmm, 16 of 32 registers).
// Requires p to be a multiple of the complex numbers per vector; callers fall back
// to the plain loops otherwise (`simd_gemm_applies`).
#pragma once

#if !defined(__CUDACC__) && defined(__AVX2__) && defined(__FMA__)
#define QFLEET_SIMD_GEMM 1
#include <immintrin.h>

#include <cstddef>
#include <type_traits>

#include "kernels/complex.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {
namespace simd {

template <class R>
struct Vec;

#if defined(__AVX512F__)
template <>
struct Vec<double> {
  using V = __m512d;
  static constexpr int cpv = 4;        // complex numbers per vector
  static constexpr int rows = 4, cols = 4;  // register block
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V zero() { return _mm512_setzero_pd(); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V swap(V v) { return _mm512_shuffle_pd(v, v, 0x55); }
  static V alt(double x) { return _mm512_set_pd(x, -x, x, -x, x, -x, x, -x); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  // Not _mm512_reduce_add_pd (nor the plain extract or cast to 256 bits): GCC 12's header
  // passes an undefined vector to the builtin, -Wmaybe-uninitialized under -Werror. The
  // masked extract takes a defined one.
  static __m256d half(V v, int hi) {
    return hi ? _mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), __mmask8(0xFF), v, 1)
              : _mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), __mmask8(0xFF), v, 0);
  }
  static double sum(V v) {
    const __m256d q = _mm256_add_pd(half(v, 0), half(v, 1));
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
};
template <>
struct Vec<float> {
  using V = __m512;
  static constexpr int cpv = 8;
  static constexpr int rows = 4, cols = 4;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V swap(V v) { return _mm512_shuffle_ps(v, v, 0xB1); }
  static V alt(float x) { return _mm512_set_ps(x, -x, x, -x, x, -x, x, -x, x, -x, x, -x, x, -x, x, -x); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static float sum(V v) {  // as Vec<double>::sum
    const __m256 q = _mm256_add_ps(_mm256_castpd_ps(Vec<double>::half(_mm512_castps_pd(v), 0)),
                                   _mm256_castpd_ps(Vec<double>::half(_mm512_castps_pd(v), 1)));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }

};
#else
template <>
struct Vec<double> {
  using V = __m256d;
  static constexpr int cpv = 2;
  static constexpr int rows = 2, cols = 4;  // 8 accumulators + 4 loads of 16 ymm
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V zero() { return _mm256_setzero_pd(); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V swap(V v) { return _mm256_shuffle_pd(v, v, 0x5); }
  static V alt(double x) { return _mm256_set_pd(x, -x, x, -x); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static double sum(V v) {
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
};
template <>
struct Vec<float> {
  using V = __m256;
  static constexpr int cpv = 4;
  static constexpr int rows = 2, cols = 4;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V swap(V v) { return _mm256_shuffle_ps(v, v, 0xB1); }
  static V alt(float x) { return _mm256_set_ps(x, -x, x, -x, x, -x, x, -x); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static float sum(V v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }
};
#endif

// One RB x CB-vector block of C at (i0, column vector v0).
template <int RB, int CB, bool Acc, bool AdjA, class R>
inline void block(int k, const R* A, int lda, const R* B, int ldb, R* C, int ldc, int i0, int v0) {
  using T = Vec<R>;
  typename T::V c[RB][CB];
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < CB; ++v)
      c[r][v] = Acc ? T::load(C + 2 * std::ptrdiff_t(i0 + r) * ldc + 2 * T::cpv * (v0 + v)) : T::zero();
  for (int l = 0; l < k; ++l) {
    typename T::V b[CB], bs[CB];
    const R* brow = B + 2 * std::ptrdiff_t(l) * ldb + 2 * T::cpv * v0;
    for (int v = 0; v < CB; ++v) {
      b[v] = T::load(brow + 2 * T::cpv * v);
      bs[v] = T::swap(b[v]);
    }
    for (int r = 0; r < RB; ++r) {
      // op(A)(i, l): A(i, l), or conj(A(l, i)) for A^dagger.
      const R* a = AdjA ? A + 2 * (std::ptrdiff_t(l) * lda + i0 + r) : A + 2 * (std::ptrdiff_t(i0 + r) * lda + l);
      const typename T::V ar = T::set1(a[0]);
      const typename T::V ai = T::alt(AdjA ? -a[1] : a[1]);
      for (int v = 0; v < CB; ++v) {
        c[r][v] = T::fma(ar, b[v], c[r][v]);
        c[r][v] = T::fma(ai, bs[v], c[r][v]);
      }
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < CB; ++v) T::store(C + 2 * std::ptrdiff_t(i0 + r) * ldc + 2 * T::cpv * (v0 + v), c[r][v]);
}

// o[0..n) += sum over t < terms of w_t x_t[0..n) for complex weights w_t and columns x_t
// given by `term(t, w)` (returns x_t), with the sums kept in registers over all terms
// and the output touched once: adding one term's column to o at a time makes every pass
// wait on the previous pass's stores (the Lindblad generator's sparse right products,
// kernels/lindblad_action.hpp). n % Vec<R>::cpv == 0.
template <class R, class Term>
inline void add_weighted_columns(int n, int terms, const Term& term, Cx<R>* oc) {
  using T = Vec<R>;
  constexpr int CB = 4;  // vectors per block
  R* o = reinterpret_cast<R*>(oc);
  const int nv = n / T::cpv;
  int v0 = 0;
  auto run = [&](auto width) {
    constexpr int W = decltype(width)::value;
    typename T::V c[W];
    for (int v = 0; v < W; ++v) c[v] = T::load(o + 2 * T::cpv * (v0 + v));
    for (int t = 0; t < terms; ++t) {
      Cx<R> w{R(0), R(0)};
      const R* x = reinterpret_cast<const R*>(term(t, w)) + 2 * T::cpv * v0;
      const typename T::V wr = T::set1(w.re), wi = T::alt(w.im);
      for (int v = 0; v < W; ++v) {
        const typename T::V xv = T::load(x + 2 * T::cpv * v);
        c[v] = T::fma(wr, xv, c[v]);
        c[v] = T::fma(wi, T::swap(xv), c[v]);
      }
    }
    for (int v = 0; v < W; ++v) T::store(o + 2 * T::cpv * (v0 + v), c[v]);
  };
  for (; v0 + CB <= nv; v0 += CB) run(std::integral_constant<int, CB>{});
  for (; v0 < nv; ++v0) run(std::integral_constant<int, 1>{});
}

// sum over i < n of conj(a_i) b_i for contiguous a, b; n % Vec<R>::cpv == 0. Two
// accumulators of interleaved lanes, (a.re b.re, a.im b.im) and (a.re b.im, a.im b.re),
// reduced once at the end: the real part is the first's sum, the imaginary part the
// second's with alternating signs (the Lindblad gradient's column dot products,
// kernels/lindblad_action.hpp, held one running sum per lane of the plain loop).
template <class R>
inline Cx<R> conj_dot(int n, const Cx<R>* ac, const Cx<R>* bc) {
  using T = Vec<R>;
  const R* a = reinterpret_cast<const R*>(ac);
  const R* b = reinterpret_cast<const R*>(bc);
  typename T::V same[2] = {T::zero(), T::zero()}, cross[2] = {T::zero(), T::zero()};
  const int nv = n / T::cpv;
  int v = 0;
  for (; v + 1 < nv; v += 2) {
    for (int u = 0; u < 2; ++u) {
      const typename T::V av = T::load(a + 2 * T::cpv * (v + u)), bv = T::load(b + 2 * T::cpv * (v + u));
      same[u] = T::fma(av, bv, same[u]);
      cross[u] = T::fma(av, T::swap(bv), cross[u]);
    }
  }
  if (v < nv) {
    const typename T::V av = T::load(a + 2 * T::cpv * v), bv = T::load(b + 2 * T::cpv * v);
    same[0] = T::fma(av, bv, same[0]);
    cross[0] = T::fma(av, T::swap(bv), cross[0]);
  }
  // alt(-1): +1 on the real lanes (a.re b.im), -1 on the imaginary ones (a.im b.re)
  return {T::sum(T::add(same[0], same[1])), T::sum(T::mul(T::add(cross[0], cross[1]), T::alt(R(-1))))};
}

namespace detail {
// conj_dots_shared for a column of exactly NV vectors (registers, fully unrolled).
template <class R, int NV>
inline void conj_dots_shared_nv(const R* a, const Cx<R>* bc, std::size_t ld, const int* idx, int m, Cx<R>* out) {
  using T = Vec<R>;
  typename T::V av[NV], as[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    av[v] = T::load(a + 2 * T::cpv * v);
    as[v] = T::swap(av[v]);
  }
  for (int j = 0; j < m; ++j) {
    const R* b = reinterpret_cast<const R*>(bc + ld * std::size_t(idx[j]));
    typename T::V same[2] = {T::zero(), T::zero()}, cross[2] = {T::zero(), T::zero()};
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const typename T::V bv = T::load(b + 2 * T::cpv * v);
      same[v & 1] = T::fma(av[v], bv, same[v & 1]);
      cross[v & 1] = T::fma(as[v], bv, cross[v & 1]);
    }
    // cross holds a.im b.re on the real lanes and a.re b.im on the imaginary ones:
    // alt(1) (-1 real, +1 imaginary) gives Im(conj(a) b) = a.re b.im - a.im b.re.
    out[j] = {T::sum(T::add(same[0], same[1])), T::sum(T::mul(T::add(cross[0], cross[1]), T::alt(R(1))))};
  }
}
}  // namespace detail

// out[j] = conj_dot(n, a, b + ld * idx[j]) for j < m, a's vectors (and their swapped
// copies, which hold the cross products here instead of b's) held in registers: the
// Lindblad gradient's entries of one row of G's pattern share their kbar column. Columns
// of 2, 4 or 8 vectors (8 only with AVX-512's 32 registers); others one conj_dot each.
template <class R>
inline void conj_dots_shared(int n, const Cx<R>* ac, const Cx<R>* bc, std::size_t ld, const int* idx, int m,
                             Cx<R>* out) {
  using T = Vec<R>;
  const R* a = reinterpret_cast<const R*>(ac);
  switch (n / T::cpv) {
    case 2: return detail::conj_dots_shared_nv<R, 2>(a, bc, ld, idx, m, out);
    case 4: return detail::conj_dots_shared_nv<R, 4>(a, bc, ld, idx, m, out);
    case 8:
      if constexpr (sizeof(typename T::V) == 64) return detail::conj_dots_shared_nv<R, 8>(a, bc, ld, idx, m, out);
      [[fallthrough]];
    default:
      for (int j = 0; j < m; ++j) out[j] = conj_dot<R>(n, ac, bc + ld * std::size_t(idx[j]));
  }
}

template <class R>
inline bool gemm_applies(int p) {
  return p % Vec<R>::cpv == 0;
}

// C (m x p, ldc) [+]= op(A) B; op(A) is m x k. p % Vec<R>::cpv == 0.
template <bool Acc, bool AdjA, class R, class M, class K, class P>
inline void gemm(M m_, K k_, P p_, const Cx<R>* Ac, int lda, const Cx<R>* Bc, int ldb, Cx<R>* Cc, int ldc) {
  using T = Vec<R>;
  const int m = static_cast<int>(m_), k = static_cast<int>(k_), nv = static_cast<int>(p_) / T::cpv;
  const R* A = reinterpret_cast<const R*>(Ac);
  const R* B = reinterpret_cast<const R*>(Bc);
  R* C = reinterpret_cast<R*>(Cc);
  constexpr int RB = T::rows, CB = T::cols;
  int i = 0;
  for (; i + RB <= m; i += RB) {
    int v = 0;
    for (; v + CB <= nv; v += CB) block<RB, CB, Acc, AdjA>(k, A, lda, B, ldb, C, ldc, i, v);
    for (; v < nv; ++v) block<RB, 1, Acc, AdjA>(k, A, lda, B, ldb, C, ldc, i, v);
  }
  for (; i < m; ++i) {
    int v = 0;
    for (; v + CB <= nv; v += CB) block<1, CB, Acc, AdjA>(k, A, lda, B, ldb, C, ldc, i, v);
    for (; v < nv; ++v) block<1, 1, Acc, AdjA>(k, A, lda, B, ldb, C, ldc, i, v);
  }
}

}  // namespace simd
}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
#endif
