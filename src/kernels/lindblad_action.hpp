// The Lindblad generator applied in its d x d form, never as a d^2 x d^2
// superoperator (kernels/open_task.hpp, when OpenView::lindblad):
//   L(rho)     = G rho + rho G^dag + sum_j gamma_j L_j rho L_j^dag,
//   G          = -i H - 1/2 sum_j gamma_j L_j^dag L_j      (one sparse pattern),
// its adjoint (the discrete adjoint's backward stages)
//   L^dag(X)   = G^dag X + X G + sum_j gamma_j L_j^dag X L_j,
// and the gradient of Re <kbar, L(Y)> with respect to G's entries and the rates:
//   dG         = kbar Y^dag + kbar^dag Y       (only on G's pattern),
//   dgamma_j  += Re <kbar, L_j Y L_j^dag>.
// Every operator is sparse (compressed rows and columns, the nonzeros of the d x d
// matrices the user gave), so a product with a d x d matrix costs nnz * d instead of
// the superoperator's d^4: local Hamiltonian terms and jump operators of a
// multi-qubit system have O(d) nonzeros each.
//
// Matrices are column-stacked as the open state is (core/open_plan.hpp): X_ij is
// x[(i + d j) * stride]. A state problem's matrix is contiguous (stride 1); a gate
// problem's n x n row-major superoperator holds `blocks` = d^2 of them, block k (the
// image of the k-th basis matrix) starting at x + k with stride d^2. With a group
// (kernels/group.hpp), members split the output columns; each function ends with a sync.
#pragma once

#include <cstddef>

#include "kernels/complex.hpp"
#include "kernels/group.hpp"
#include "kernels/hd.hpp"
#include "kernels/simd_gemm.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// A d x d sparsity pattern, packed as ints (core/open_lindblad.cpp writes it):
//   [row_ptr: d + 1][col: nnz][row: nnz][col_ptr: d + 1][csc: nnz][monomial: 1]
// Entries are in row order (entry e is (row[e], col[e])); csc lists the entries of
// each column in row order: entries csc[col_ptr[c] .. col_ptr[c + 1]) are in column c.
// monomial: at most one nonzero per row and per column (sigma^-, Pauli strings,
// diagonal operators), so L Y L^dag is one gather of d^2 products (no scratch); the
// flag is 2 for a diagonal pattern (dephasing, projectors): all diagonal jumps of a
// generator are applied together as one elementwise product (lindblad_diag_weights).
struct SparsePattern {
  bool monomial = false;
  bool diagonal = false;
  int d = 0, nnz = 0;
  const int* row_ptr = nullptr;
  const int* col = nullptr;
  const int* row = nullptr;
  const int* col_ptr = nullptr;
  const int* csc = nullptr;
};

QFLEET_HD constexpr std::size_t sparse_pattern_ints(int d, int nnz) {
  return 2 * std::size_t(d + 1) + 3 * std::size_t(nnz) + 1;
}

QFLEET_HD inline SparsePattern sparse_pattern_at(const int* p, int d) {
  SparsePattern s;
  s.d = d;
  s.row_ptr = p;
  s.nnz = p[d];
  s.col = p + d + 1;
  s.row = s.col + s.nnz;
  s.col_ptr = s.row + s.nnz;
  s.csc = s.col_ptr + d + 1;
  s.monomial = s.csc[s.nnz] != 0;
  s.diagonal = s.csc[s.nnz] == 2;
  return s;
}

namespace lindblad_detail {

template <class R>
QFLEET_HD inline void madd(Cx<R>& acc, Cx<R> a, Cx<R> b) {  // acc += a b
  acc.re += a.re * b.re - a.im * b.im;
  acc.im += a.re * b.im + a.im * b.re;
}
template <class R>
QFLEET_HD inline void madd_conj(Cx<R>& acc, Cx<R> a, Cx<R> b) {  // acc += conj(a) b
  acc.re += a.re * b.re + a.im * b.im;
  acc.im += a.re * b.im - a.im * b.re;
}

// sum over e < n of term(e) (complex products), in four partial sums: the compiler keeps
// a single running sum in order, so each add waits on the one before (in the gradient, a
// quarter of a d = 16 Lindblad run, such chains held about two thirds of the samples, perf).
template <class R, class Term>
QFLEET_HD inline Cx<R> sum4(int n, const Term& term) {
  Cx<R> a0{0, 0}, a1{0, 0}, a2{0, 0}, a3{0, 0};
  int e = 0;
  for (; e + 3 < n; e += 4) {
    term(a0, e);
    term(a1, e + 1);
    term(a2, e + 2);
    term(a3, e + 3);
  }
  for (; e < n; ++e) term(a0, e);
  return {(a0.re + a1.re) + (a2.re + a3.re), (a0.im + a1.im) + (a2.im + a3.im)};
}

}  // namespace lindblad_detail

// One column j of the products of a sparse S (values v on its pattern) with a
// column-stacked X (x, stride xs), added to out's column j (stride os) times s.
// Left products read only column j of X; right products read the columns S's row /
// column j names. kUnit: both strides are 1 (the compiler sees contiguous loops).
//   kLeft:     out_:j += s S x_:j              (rows of S)
//   kLeftAdj:  out_:j += s S^dag x_:j          (columns of S)
//   kRight:    out_:j += s sum_b x_:b S_bj     (column j of S)
//   kRightAdj: out_:j += s sum_b x_:b conj(S_jb)   (row j of S)
enum class SparseSide { kLeft, kLeftAdj, kRight, kRightAdj };

template <SparseSide side, bool kUnit, class R>
QFLEET_HD void sparse_column(const SparsePattern& p, const Cx<R>* v, const Cx<R>* x, std::size_t xs, Cx<R>* out,
                             std::size_t os, int j, Cx<R> s) {
  using lindblad_detail::madd;
  using lindblad_detail::madd_conj;
  if constexpr (kUnit) xs = os = 1;
  const int d = p.d;
  Cx<R>* o = out + std::size_t(d) * j * os;
  if constexpr (side == SparseSide::kLeft) {
    const Cx<R>* xj = x + std::size_t(d) * j * xs;
    for (int i = 0; i < d; ++i) {
      Cx<R> acc{0, 0};
      for (int e = p.row_ptr[i]; e < p.row_ptr[i + 1]; ++e) madd(acc, v[e], xj[std::size_t(p.col[e]) * xs]);
      madd(o[i * os], s, acc);
    }
  } else if constexpr (side == SparseSide::kLeftAdj) {
    const Cx<R>* xj = x + std::size_t(d) * j * xs;
    for (int i = 0; i < d; ++i) {  // (S^dag x)_i = sum over column i of S: conj(S_ai) x_a
      Cx<R> acc{0, 0};
      for (int t = p.col_ptr[i]; t < p.col_ptr[i + 1]; ++t) {
        const int e = p.csc[t];
        madd_conj(acc, v[e], xj[std::size_t(p.row[e]) * xs]);
      }
      madd(o[i * os], s, acc);
    }
  } else {
    // Column j of the output is a sum of weighted columns of X, one per entry of S's
    // column j (kRight) or row j (kRightAdj).
    constexpr bool kRightSide = side == SparseSide::kRight;
    const int* ptr = kRightSide ? p.col_ptr : p.row_ptr;
    const int n0 = ptr[j], n1 = ptr[j + 1];
    auto term = [&](int t, Cx<R>& w) -> const Cx<R>* {
      const int n = n0 + t;
      if constexpr (kRightSide) {
        const int e = p.csc[n];
        w = {R(0), R(0)};
        madd(w, s, v[e]);
        return x + std::size_t(d) * p.row[e] * xs;
      } else {
        w = {s.re * v[n].re + s.im * v[n].im, s.im * v[n].re - s.re * v[n].im};  // s conj(S_jb)
        return x + std::size_t(d) * p.col[n] * xs;
      }
    };
#if defined(QFLEET_SIMD_GEMM)
    if constexpr (kUnit) {
      if (simd::gemm_applies<R>(d)) return simd::add_weighted_columns<R>(d, n1 - n0, term, o);
    }
#endif
    for (int t = 0; t < n1 - n0; ++t) {
      Cx<R> w{R(0), R(0)};
      const Cx<R>* xb = term(t, w);
      for (int i = 0; i < d; ++i) madd(o[i * os], w, xb[i * xs]);
    }
  }
}

// The operators of one Lindblad generator as the task body holds them for a segment.
template <class R>
struct LindbladOps {
  SparsePattern g;            // pattern of G
  const Cx<R>* g_val;         // G's values this segment [g.nnz]
  int njump;
  const int* jump_pat;        // jump j's pattern at jump_pat + jump_index[j]
  const int* jump_index;      // [njump]
  const Cx<R>* jump_val;      // jump j's values at jump_val + jump_vstart[j]
  const int* jump_vstart;     // [njump]
  const R* gamma;             // [njump] rates of this task
  // W_ac = sum over the diagonal jumps of gamma_j l_j(a) conj(l_j(c)) (d x d,
  // column-stacked; lindblad_diag_weights), so their sum of sandwiches is W o Y.
  const Cx<R>* diag_w = nullptr;
  // The matrices applied are Hermitian (a state problem: rho, its Runge-Kutta stage
  // states and their cotangents all are, because L and L^dag map Hermitian matrices to
  // Hermitian ones). Then Y G^dag = (G Y)^dag and G^dag X = (X G)^dag: one sparse
  // product and a transpose instead of two products, and the gradient's two outer
  // products are equal.
  bool hermitian = false;
  QFLEET_HD SparsePattern jump(int j) const { return sparse_pattern_at(jump_pat + jump_index[j], g.d); }
  QFLEET_HD const Cx<R>* jval(int j) const { return jump_val + jump_vstart[j]; }
};

namespace lindblad_detail {

// Output column c of K += s L Y L^dag for a monomial L (the adjoint's L^dag S L:
// monomial_adjoint_sandwich):
//   (L Y L^dag)_ac = L_a,col(a) Y_col(a),col(c) conj(L_c,col(c))
// (entries walk the rows of L, each holding at most one nonzero, so row a = row[e] is
// met once).
template <class R>
QFLEET_HD void monomial_sandwich_column(const SparsePattern& p, const Cx<R>* v, const Cx<R>* y, Cx<R>* k,
                                        std::size_t cs, int c, Cx<R> s) {
  const int d = p.d;
  if (p.row_ptr[c] == p.row_ptr[c + 1]) return;
  const int ec = p.row_ptr[c];
  Cx<R> w{0, 0};
  madd(w, s, Cx<R>{v[ec].re, -v[ec].im});
  const std::size_t yc = std::size_t(d) * p.col[ec] * cs;
  Cx<R>* kc = k + std::size_t(d) * c * cs;
  for (int e = 0; e < p.nnz; ++e) {
    Cx<R> z{0, 0};
    madd(z, v[e], w);
    madd(kc[std::size_t(p.row[e]) * cs], z, y[yc + std::size_t(p.col[e]) * cs]);
  }
}

// The adjoint's sandwich gamma L^dag S L of a monomial jump added to K (this member's
// columns; cs between a matrix's entries), (L^dag S L)_bc = conj(L_row(b),b) S_row(b),row(c)
// L_row(c),c. With Y (yg), also Re <L^dag S L, Y> summed over the group: the rate's
// gradient Re <S, L Y L^dag>, paired where each entry is formed (one product more per
// entry, not a second gather through S and Y; perf, d = 16 Taylor backward: about half of
// the gradient's time), and formed also at rate 0. Without Y it returns 0.
template <class R, class G>
QFLEET_HD double monomial_adjoint_sandwich(const SparsePattern& p, const Cx<R>* v, R rate, const Cx<R>* s,
                                           const Cx<R>* yg, Cx<R>* k, std::size_t cs, const G& grp) {
  const int d = p.d;
  double g = 0;
  for (int c = grp.rank(); c < d; c += grp.size()) {
    if (p.col_ptr[c] == p.col_ptr[c + 1]) continue;
    const int ec = p.csc[p.col_ptr[c]];
    const Cx<R> w = v[ec];
    const Cx<R>* sc = s + std::size_t(d) * p.row[ec] * cs;
    Cx<R>* kc = k + std::size_t(d) * c * cs;
    const Cx<R>* yc = yg ? yg + std::size_t(d) * c * cs : nullptr;
    Cx<R> acc{0, 0};
    for (int e = 0; e < p.nnz; ++e) {
      Cx<R> z{0, 0};
      madd(z, Cx<R>{v[e].re, -v[e].im}, w);
      Cx<R> val{0, 0};
      madd(val, z, sc[std::size_t(p.row[e]) * cs]);
      const std::size_t out = std::size_t(p.col[e]) * cs;
      kc[out].re += rate * val.re;
      kc[out].im += rate * val.im;
      if (yc) madd_conj(acc, val, yc[out]);
    }
    g += double(acc.re);
  }
  return yg ? grp.sum(g) : 0.0;
}

// K += W o Y (adjoint: conj(W) o Y) on this member's output columns: every diagonal
// jump's L Y L^dag at once, (L Y L^dag)_ac = l(a) Y_ac conj(l(c)).
template <bool adjoint, class R, class G>
QFLEET_HD void add_diag_jumps(const Cx<R>* w, int d, std::size_t cs, const Cx<R>* y, Cx<R>* k, const G& grp) {
  for (int c = grp.rank(); c < d; c += grp.size()) {
    const Cx<R>* wc = w + std::size_t(d) * c;
    const std::size_t o = std::size_t(d) * c * cs;
    for (int a = 0; a < d; ++a) {
      const Cx<R> wa = adjoint ? Cx<R>{wc[a].re, -wc[a].im} : wc[a];
      madd(k[o + a * cs], wa, y[o + a * cs]);
    }
  }
}

// K = M + M^dag in place for a contiguous d x d M. The pair (i, j), i <= j, belongs to
// the member owning column j; it writes K_ij and K_ji, and no other member touches
// either, so the only syncs are around the whole pass.
template <class R, class G>
QFLEET_HD void add_adjoint_in_place(Cx<R>* k, int d, const G& grp) {
  grp.sync();
  for (int j = grp.rank(); j < d; j += grp.size()) {
    for (int i = 0; i < j; ++i) {
      Cx<R>& kij = k[i + std::size_t(d) * j];
      Cx<R>& kji = k[j + std::size_t(d) * i];
      const Cx<R> a = kij, b = kji;
      kij = {a.re + b.re, a.im - b.im};
      kji = {b.re + a.re, b.im - a.im};
    }
    Cx<R>& kjj = k[j + std::size_t(d) * j];
    kjj = {R(2) * kjj.re, R(0)};
  }
  grp.sync();
}

// lindblad_apply for `blocks` matrices of stride cs (kUnit: one contiguous matrix).
// Adjoint with yg: the monomial jumps' rate gradients Re <y, L yg L^dag> are added to
// jump_grad, yg the matrices the gradient pairs with (lindblad_adjoint_gradient).
template <bool adjoint, bool kUnit, class R, class G>
QFLEET_HD void apply_blocks(const LindbladOps<R>& op, int blocks, std::size_t cs, const Cx<R>* y, Cx<R>* k, Cx<R>* t,
                            const G& grp, const Cx<R>* yg = nullptr, double* jump_grad = nullptr) {
  const int d = op.g.d;
  const Cx<R> one{R(1), R(0)};
  const bool hermitian = kUnit && op.hermitian;
  for (int blk = 0; blk < blocks; ++blk) {
    const Cx<R>* yb = y + blk;
    Cx<R>* kb = k + blk;
    for (int j = grp.rank(); j < d; j += grp.size()) {
      Cx<R>* kj = kb + std::size_t(d) * j * cs;
      for (int i = 0; i < d; ++i) kj[i * cs] = {R(0), R(0)};
      // The right products add whole columns of Y (unit stride); the left ones gather
      // along G's rows, so the Hermitian case keeps only the right one.
      if constexpr (adjoint) {
        if (!hermitian) sparse_column<SparseSide::kLeftAdj, kUnit>(op.g, op.g_val, yb, cs, kb, cs, j, one);
        sparse_column<SparseSide::kRight, kUnit>(op.g, op.g_val, yb, cs, kb, cs, j, one);
      } else {
        if (!hermitian) sparse_column<SparseSide::kLeft, kUnit>(op.g, op.g_val, yb, cs, kb, cs, j, one);
        sparse_column<SparseSide::kRightAdj, kUnit>(op.g, op.g_val, yb, cs, kb, cs, j, one);
      }
    }
    if (hermitian) add_adjoint_in_place(kb, d, grp);  // Y G^dag + (Y G^dag)^dag = G Y + Y G^dag
    if (op.diag_w) add_diag_jumps<adjoint>(op.diag_w, d, kUnit ? 1 : cs, yb, kb, grp);
    for (int q = 0; q < op.njump; ++q) {
      const R rate = op.gamma[q];
      const SparsePattern lp = op.jump(q);
      const Cx<R>* lv = op.jval(q);
      if constexpr (adjoint) {
        if (lp.monomial && !(lp.diagonal && op.diag_w) && (yg || rate != R(0))) {  // yg: also at rate 0
          const double g = monomial_adjoint_sandwich(lp, lv, rate, yb, yg ? yg + blk : nullptr, kb, kUnit ? 1 : cs, grp);
          if (yg && grp.rank() == 0) jump_grad[q] += g;
          continue;
        }
      }
      if (rate == R(0)) continue;
      if (lp.diagonal && op.diag_w) continue;  // in W
      if (lp.monomial) {  // each member its own output columns; no scratch
        for (int c = grp.rank(); c < d; c += grp.size())
          monomial_sandwich_column(lp, lv, yb, kb, kUnit ? 1 : cs, c, Cx<R>{rate, R(0)});
        continue;
      }
      grp.sync();  // every member is done reading t from the previous jump
      for (int j = grp.rank(); j < d; j += grp.size()) {
        Cx<R>* tj = t + std::size_t(d) * j;
        for (int i = 0; i < d; ++i) tj[i] = {R(0), R(0)};
        if constexpr (adjoint) {
          sparse_column<SparseSide::kLeftAdj, kUnit>(lp, lv, yb, cs, t, 1, j, one);  // T = L^dag Y
        } else {
          sparse_column<SparseSide::kLeft, kUnit>(lp, lv, yb, cs, t, 1, j, one);  // T = L Y
        }
      }
      grp.sync();
      for (int j = grp.rank(); j < d; j += grp.size()) {
        if constexpr (adjoint) {
          sparse_column<SparseSide::kRight, kUnit>(lp, lv, t, 1, kb, cs, j, Cx<R>{rate, R(0)});  // += gamma T L
        } else {
          sparse_column<SparseSide::kRightAdj, kUnit>(lp, lv, t, 1, kb, cs, j, Cx<R>{rate, R(0)});  // += gamma T L^dag
        }
      }
    }
  }
  grp.sync();
}

// sum over c < d of conj(a_c) b_c: column dot products of the gradient.
template <class R>
QFLEET_HD inline Cx<R> column_conj_dot(int d, const Cx<R>* a, const Cx<R>* b) {
#if defined(QFLEET_SIMD_GEMM)
  if (simd::gemm_applies<R>(d)) return simd::conj_dot<R>(d, a, b);
#endif
  return sum4<R>(d, [&](Cx<R>& acc, int c) { madd_conj(acc, a[c], b[c]); });
}

#if defined(QFLEET_SIMD_GEMM)
inline constexpr int kSimdMaxD = 256;  // diag_jump_gradient's column on the stack (4 KiB)

// Re sum_ac P_ac l(a) conj(l(c)) for a diagonal jump l and P = conj(kbar) o Y (p, d x d
// column-stacked) as Re l^T v with v = P conj(l): the columns of P weighted and summed in
// vector registers (simd::add_weighted_columns), then one dot over l's entries. The plain
// loop's sum over a per column c ended in a reduction per column (perf: over a third of
// the gradient at d = 16).
template <class R>
inline double diag_jump_gradient(const SparsePattern& lp, const Cx<R>* lv, const Cx<R>* p) {
  const int d = lp.d;
  Cx<R> v[kSimdMaxD];
  for (int a = 0; a < d; ++a) v[a] = {R(0), R(0)};
  simd::add_weighted_columns<R>(
      d, lp.nnz,
      [&](int e, Cx<R>& w) {
        w = {lv[e].re, -lv[e].im};  // conj(l(c)), c = row[e] = col[e]
        return p + std::size_t(d) * lp.row[e];
      },
      v);
  double s = 0;
  for (int e = 0; e < lp.nnz; ++e) {
    const Cx<R> va = v[lp.row[e]];
    s += double(lv[e].re) * va.re - double(lv[e].im) * va.im;  // Re(l(a) v_a)
  }
  return s;
}
#endif

}  // namespace lindblad_detail

// K = L(Y) (adjoint: K = L^dag(Y)) for `blocks` column-stacked d x d matrices (1:
// a contiguous state; d^2: a gate problem's superoperator); t is a d x d scratch
// matrix. K must not alias Y.
template <bool adjoint, class R, class G>
QFLEET_HD void lindblad_apply(const LindbladOps<R>& op, int blocks, const Cx<R>* y, Cx<R>* k, Cx<R>* t, const G& grp) {
  if (blocks == 1) return lindblad_detail::apply_blocks<adjoint, true>(op, 1, 1, y, k, t, grp);
  lindblad_detail::apply_blocks<adjoint, false>(op, blocks, std::size_t(blocks), y, k, t, grp);
}

namespace lindblad_detail {

// dG[e] += (kbar Y^dag + kbar^dag Y)_(row e, col e) on G's pattern for one block
// (kb, yb: its first entries; cs: the blocks' stride).
template <class R, class G>
QFLEET_HD_INLINE void pattern_gradient(const LindbladOps<R>& op, int blocks, const Cx<R>* kb, const Cx<R>* yb,
                                       std::size_t cs, Cx<R>* dg, const G& grp) {
  const int d = op.g.d;
  if (blocks == 1 && op.hermitian) {  // kbar Y^dag = (kbar^dag Y)^dag: 2 conj(kbar_:a) . Y_:b
#if defined(QFLEET_SIMD_GEMM)
    if (grp.size() == 1 && simd::gemm_applies<R>(d) && d <= kSimdMaxD) {
      Cx<R> acc[kSimdMaxD];  // a row's entries, which share kbar_:a
      for (int a = 0; a < d; ++a) {
        const int e0 = op.g.row_ptr[a], m = op.g.row_ptr[a + 1] - e0;
        simd::conj_dots_shared<R>(d, kb + std::size_t(d) * a, yb, std::size_t(d), op.g.col + e0, m, acc);
        for (int j = 0; j < m; ++j) {
          dg[e0 + j].re += R(2) * acc[j].re;
          dg[e0 + j].im += R(2) * acc[j].im;
        }
      }
    } else
#endif
    for (int e = grp.rank(); e < op.g.nnz; e += grp.size()) {
      const Cx<R>* ka = kb + std::size_t(d) * op.g.row[e];
      const Cx<R>* yc = yb + std::size_t(d) * op.g.col[e];
      const Cx<R> acc = column_conj_dot(d, ka, yc);
      dg[e].re += R(2) * acc.re;
      dg[e].im += R(2) * acc.im;
    }
  } else {
    for (int e = grp.rank(); e < op.g.nnz; e += grp.size()) {
      const int a = op.g.row[e], b = op.g.col[e];
      const Cx<R> acc = sum4<R>(d, [&](Cx<R>& s, int c) {
        madd_conj(s, yb[(b + std::size_t(d) * c) * cs], kb[(a + std::size_t(d) * c) * cs]);  // kbar_ac conj(Y_bc)
        madd_conj(s, kb[(c + std::size_t(d) * a) * cs], yb[(c + std::size_t(d) * b) * cs]);  // conj(kbar_ca) Y_cb
      });
      dg[e].re += acc.re;
      dg[e].im += acc.im;
    }
  }
}

// The diagonal jumps' jump_grad[j] += Re <kbar, L_j Y L_j^dag> for one block:
// Re sum_c conj(l(c)) sum_a l(a) P_ac with P = conj(kbar) o Y, formed once (this
// member's columns of t; it reads no others).
template <class R, class G>
QFLEET_HD_INLINE void diagonal_jump_gradients(const LindbladOps<R>& op, int blocks, const Cx<R>* kb,
                                              const Cx<R>* yb, std::size_t cs, double* jump_grad, Cx<R>* t,
                                              const G& grp) {
  static_cast<void>(blocks);  // read by the SIMD path alone
  const int d = op.g.d;
  for (int c = grp.rank(); c < d; c += grp.size()) {
    Cx<R>* tc = t + std::size_t(d) * c;
    for (int a = 0; a < d; ++a) {
      tc[a] = {R(0), R(0)};
      madd_conj(tc[a], kb[(a + std::size_t(d) * c) * cs], yb[(a + std::size_t(d) * c) * cs]);
    }
  }
  for (int q = 0; q < op.njump; ++q) {
    const SparsePattern lp = op.jump(q);
    if (!lp.diagonal) continue;
    const Cx<R>* lv = op.jval(q);
#if defined(QFLEET_SIMD_GEMM)
    if (blocks == 1 && grp.size() == 1 && simd::gemm_applies<R>(d) && d <= kSimdMaxD) {
      jump_grad[q] += diag_jump_gradient(lp, lv, t);
      continue;
    }
#endif
    double s = 0;
    for (int c = grp.rank(); c < d; c += grp.size()) {
      if (lp.row_ptr[c] == lp.row_ptr[c + 1]) continue;
      const Cx<R>* tc = t + std::size_t(d) * c;
      const Cx<R> acc = sum4<R>(lp.nnz, [&](Cx<R>& a, int e) { madd(a, lv[e], tc[lp.row[e]]); });
      const Cx<R> lc = lv[lp.row_ptr[c]];
      s += double(acc.re) * lc.re + double(acc.im) * lc.im;  // Re(acc conj(l(c)))
    }
    s = grp.sum(s);
    if (grp.rank() == 0) jump_grad[q] += s;
  }
}

// The gradient of Re <kbar, L(Y)> but the monomial jumps' rates (lindblad_adjoint_gradient
// takes those from the adjoint's sandwiches): dG[e] += (kbar Y^dag + kbar^dag Y)_(row e,
// col e) on G's pattern, and jump_grad[j] += Re <kbar, L_j Y L_j^dag> for the diagonal and
// general jumps (written by rank 0; every member gets the same sums), for `blocks`
// column-stacked matrices; t is a d x d scratch matrix.
template <class R, class G>
QFLEET_HD void gradient_rest(const LindbladOps<R>& op, int blocks, const Cx<R>* kbar, const Cx<R>* y, Cx<R>* dg,
                             double* jump_grad, Cx<R>* t, const G& grp) {
  const int d = op.g.d;
  const std::size_t cs = std::size_t(blocks);  // the blocks' stride (1: one contiguous matrix)
  for (int blk = 0; blk < blocks; ++blk) {
    const Cx<R>* kb = kbar + blk;
    const Cx<R>* yb = y + blk;
    pattern_gradient(op, blocks, kb, yb, cs, dg, grp);
    if (op.diag_w) diagonal_jump_gradients(op, blocks, kb, yb, cs, jump_grad, t, grp);
    for (int q = 0; q < op.njump; ++q) {
      const SparsePattern lp = op.jump(q);
      const Cx<R>* lv = op.jval(q);
      if (lp.diagonal && op.diag_w) continue;  // above
      if (lp.monomial) continue;  // lindblad_adjoint_gradient: the adjoint's sandwich
      grp.sync();
      for (int j = grp.rank(); j < d; j += grp.size()) {
        Cx<R>* tj = t + std::size_t(d) * j;
        for (int i = 0; i < d; ++i) tj[i] = {R(0), R(0)};
        sparse_column<SparseSide::kLeft, false>(lp, lv, yb, cs, t, 1, j, Cx<R>{R(1), R(0)});  // T = L Y
      }
      grp.sync();
      // Re <kbar, T L^dag> = Re sum_c sum_(c,b) in L conj(L_cb) <kbar_:c, T_:b>
      double s = 0;
      for (int c = grp.rank(); c < d; c += grp.size()) {
        const Cx<R>* kc = kb + std::size_t(d) * c * cs;
        for (int e = lp.row_ptr[c]; e < lp.row_ptr[c + 1]; ++e) {
          const Cx<R>* tb = t + std::size_t(d) * lp.col[e];
          Cx<R> ip{0, 0};
          for (int i = 0; i < d; ++i) madd_conj(ip, kc[i * cs], tb[i]);
          s += double(ip.re) * lv[e].re + double(ip.im) * lv[e].im;  // Re(ip conj(L_cb))
        }
      }
      s = grp.sum(s);
      if (grp.rank() == 0) jump_grad[q] += s;
    }
  }
  grp.sync();
}

}  // namespace lindblad_detail

// K = L^dag(S) and the gradient of Re <S, L(Y)> with respect to G's entries (dG) and the
// rates (jump_grad) in one call, what a reverse sweep asks of each stage or Taylor term:
// the monomial jumps' rate gradients come from the sandwiches L^dag S L the adjoint forms
// (monomial_adjoint_sandwich), the rest from lindblad_detail::gradient_rest.
template <class R, class G>
QFLEET_HD void lindblad_adjoint_gradient(const LindbladOps<R>& op, int blocks, const Cx<R>* s, const Cx<R>* y,
                                         Cx<R>* k, Cx<R>* dg, double* jump_grad, Cx<R>* t, const G& grp) {
  lindblad_detail::gradient_rest(op, blocks, s, y, dg, jump_grad, t, grp);
  if (blocks == 1) return lindblad_detail::apply_blocks<true, true>(op, 1, 1, s, k, t, grp, y, jump_grad);
  lindblad_detail::apply_blocks<true, false>(op, blocks, std::size_t(blocks), s, k, t, grp, y, jump_grad);
}

// W_ac = sum over the diagonal jumps j of gamma_j l_j(a) conj(l_j(c)) into w (d x d,
// column-stacked; this member's columns, then a sync). Returns whether any jump is
// diagonal (else W is not used and need not exist).
template <class R, class G>
QFLEET_HD bool lindblad_diag_weights(const LindbladOps<R>& op, Cx<R>* w, const G& grp) {
  using lindblad_detail::madd;
  const int d = op.g.d;
  bool any = false;
  for (int q = 0; q < op.njump; ++q) any = any || op.jump(q).diagonal;
  if (!any) return false;
  for (int c = grp.rank(); c < d; c += grp.size()) {
    Cx<R>* wc = w + std::size_t(d) * c;
    for (int a = 0; a < d; ++a) wc[a] = {R(0), R(0)};
    for (int q = 0; q < op.njump; ++q) {
      const SparsePattern lp = op.jump(q);
      if (!lp.diagonal || lp.row_ptr[c] == lp.row_ptr[c + 1]) continue;
      const Cx<R>* lv = op.jval(q);
      const Cx<R> lc = lv[lp.row_ptr[c]];
      const Cx<R> s{op.gamma[q] * lc.re, -op.gamma[q] * lc.im};  // gamma conj(l(c))
      for (int e = 0; e < lp.nnz; ++e) madd(wc[lp.row[e]], lv[e], s);
    }
  }
  grp.sync();
  return true;
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
