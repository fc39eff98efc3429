// The task body's small dense helpers (kernels/open_task.hpp): products of the
// generator with the state's columns, outer products for dF/dA, inner products with
// the plan's (re, im) double matrices. Host and device, C++17, with an optional group
// (kernels/group.hpp) splitting the output entries.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/complex.hpp"
#include "kernels/dense.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {
namespace open_detail {

QFLEET_HD inline double dmin(double a, double b) { return a < b ? a : b; }
QFLEET_HD inline double dmax(double a, double b) { return a > b ? a : b; }

// Entry i of a plan matrix stored as (re, im) pairs of double.
QFLEET_HD inline Cx<double> at(const double* v, std::size_t i) { return {v[2 * i], v[2 * i + 1]}; }

template <class R>
QFLEET_HD inline Cx<R> cx(Cx<double> z) {
  return {static_cast<R>(z.re), static_cast<R>(z.im)};
}

template <class R, class G = SoloGroup>
QFLEET_HD inline void copy(const Cx<R>* a, std::size_t n, Cx<R>* b, const G& g = G{}) {
  for (std::size_t i = std::size_t(g.rank()); i < n; i += std::size_t(g.size())) b[i] = a[i];
  g.sync();
}

// n bytes from a to b: values that must survive bit for bit in a buffer of another
// type (doubles in a complex64 caller's buffer).
QFLEET_HD inline void copy_bytes(const void* a, void* b, std::size_t n) {
  const unsigned char* from = static_cast<const unsigned char*>(a);
  unsigned char* to = static_cast<unsigned char*>(b);
  for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
}

// C[m x p] = A[m x k] B[k x p] (or A^dag B when adj_a, A is then k x m).
// M, K, P are int or FixedDim<k>: fixed sizes unroll for the hot d = 2 (n = 4) case.
// With a group, one output entry per member at a time.
template <class R, class M, class K, class P, class G = SoloGroup>
QFLEET_HD void gemm(M m_, K k_, P p_, const Cx<R>* a, const Cx<R>* b, Cx<R>* c, bool adj_a = false,
                    const G& g = G{}) {
  const int m = static_cast<int>(m_), k = static_cast<int>(k_), p = static_cast<int>(p_);
  if constexpr (!G::kSolo) {
    dense_detail::group_gemm<false>(m, k, p, a, adj_a ? m : k, adj_a, b, p, c, p, g);
  } else {
#if defined(QFLEET_SIMD_GEMM)
    if (simd::gemm_applies<R>(p)) {
      if (adj_a) return simd::gemm<false, true>(m_, k_, p_, a, m, b, p, c, p);
      return simd::gemm<false, false>(m_, k_, p_, a, k, b, p, c, p);
    }
#endif
    for (int i = 0; i < m * p; ++i) c[i] = {R(0), R(0)};
    for (int i = 0; i < m; ++i) {
      for (int l = 0; l < k; ++l) {
        const Cx<R> x = adj_a ? conj(a[std::size_t(l) * m + i]) : a[std::size_t(i) * k + l];
        const Cx<R>* brow = b + std::size_t(l) * p;
        Cx<R>* crow = c + std::size_t(i) * p;
        for (int j = 0; j < p; ++j) {
          crow[j].re += x.re * brow[j].re - x.im * brow[j].im;
          crow[j].im += x.re * brow[j].im + x.im * brow[j].re;
        }
      }
    }
  }
}

// C[m x m] += A[m x p] B[m x p]^dag  (outer products for dF/dA).
template <class R, class M, class P, class G = SoloGroup>
QFLEET_HD void add_outer(M m_, P p_, const Cx<R>* a, const Cx<R>* b, Cx<R>* c, const G& g = G{}) {
  const int m = static_cast<int>(m_), p = static_cast<int>(p_);
  auto entry = [&](int i, int j) {
    R re = 0, im = 0;
    for (int l = 0; l < p; ++l) {
      const Cx<R> x = a[std::size_t(i) * p + l], y = b[std::size_t(j) * p + l];
      re += x.re * y.re + x.im * y.im;  // x * conj(y)
      im += x.im * y.re - x.re * y.im;
    }
    c[std::size_t(i) * m + j].re += re;
    c[std::size_t(i) * m + j].im += im;
  };
  if constexpr (G::kSolo) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) entry(i, j);
  } else {
    for (int e = g.rank(); e < m * m; e += g.size()) entry(e / m, e % m);
    g.sync();
  }
}

// Re <a, b> = Re sum conj(a_i) b_i over n entries; b a plan matrix (double pairs).
template <class R>
QFLEET_HD double re_inner(std::size_t n, const Cx<R>* a, const double* b) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(a[i].re) * b[2 * i] + double(a[i].im) * b[2 * i + 1];
  return s;
}

template <class N>
QFLEET_HD N make_dim(int n) {
  if constexpr (std::is_same_v<N, int>) {
    return n;
  } else {
    (void)n;
    return N{};
  }
}

}  // namespace open_detail

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
