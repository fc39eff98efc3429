// Planning the Lindblad form of an open system (kernels/lindblad_action.hpp): the
// generator's d x d terms on one sparse pattern, each jump operator as a sparse
// matrix of its own, and the choice between this form and the dense superoperator;
// and the exact solver's choice between the propagator and the action
// (kernels/expm_action.hpp), which rests on the same operation counts.
#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "core/open_plan.hpp"
#include "core/plan.hpp"
#include "kernels/expm_action.hpp"
#include "kernels/lindblad_action.hpp"
#include "qfleet/error.hpp"
#include "qfleet/names.hpp"

namespace qfleet::detail {

namespace {

using C = std::complex<double>;

// How much cheaper per operation a dense superoperator product is than the sparse
// Lindblad products (SIMD tiles against indexed loads): automatic picks the Lindblad
// form when it needs this many times fewer operations. Measured with
// bench_open's BM_LocalQubits, superoperator against Lindblad form (`git show 65154b2:docs/benchmarks.md`).
constexpr double kDenseAdvantage = 2.0;

// L^dag L for a row-major d x d L.
CVec adjoint_times(int d, const CVec& l) {
  CVec k(std::size_t(d) * d, C(0));
  for (int c = 0; c < d; ++c)
    for (int a = 0; a < d; ++a) {
      const C lca = std::conj(l[std::size_t(c) * d + a]);
      if (lca == C(0)) continue;
      for (int b = 0; b < d; ++b) k[std::size_t(a) * d + b] += lca * l[std::size_t(c) * d + b];
    }
  return k;
}

// The d x d terms of G = -i H - 1/2 sum gamma_j L_j^dag L_j, in the plan's order:
// H0, the drift terms, the rates' anticommutator parts, the controls.
struct GTerms {
  CVec h0;
  std::vector<CVec> drift, rate, ctrl;
};

CVec times(const CVec& m, C z) {
  CVec r = m;
  for (auto& x : r) x *= z;
  return r;
}

GTerms g_terms(const OpenSystem& s) {
  const int d = s.dim();
  GTerms t;
  const C minus_i(0, -1);
  t.h0 = times(s.h0(), minus_i);
  for (const auto& h : s.drift_terms()) t.drift.push_back(times(h, minus_i));
  for (const auto& l : s.jumps()) t.rate.push_back(times(adjoint_times(d, l), C(-0.5)));
  for (const auto& h : s.controls()) t.ctrl.push_back(times(h, minus_i));
  return t;
}

// The packed pattern (kern::SparsePattern ints) of the entries where nz is set.
std::vector<int> pattern_of(int d, const std::vector<char>& nz) {
  std::vector<int> row_ptr(std::size_t(d) + 1, 0), col, row, col_ptr(std::size_t(d) + 1, 0);
  for (int i = 0; i < d; ++i) {
    for (int j = 0; j < d; ++j) {
      if (!nz[std::size_t(i) * d + j]) continue;
      col.push_back(j);
      row.push_back(i);
      ++col_ptr[std::size_t(j) + 1];
    }
    row_ptr[std::size_t(i) + 1] = static_cast<int>(col.size());
  }
  for (int j = 0; j < d; ++j) col_ptr[std::size_t(j) + 1] += col_ptr[std::size_t(j)];
  std::vector<int> csc(col.size()), next(col_ptr.begin(), col_ptr.end() - 1);
  for (std::size_t e = 0; e < col.size(); ++e) csc[std::size_t(next[std::size_t(col[e])]++)] = static_cast<int>(e);
  std::vector<int> packed = row_ptr;
  for (const auto* part : {&col, &row, &col_ptr, &csc}) packed.insert(packed.end(), part->begin(), part->end());
  bool monomial = true;  // at most one nonzero per row and per column
  for (int i = 0; i < d; ++i) {
    monomial = monomial && row_ptr[std::size_t(i) + 1] - row_ptr[std::size_t(i)] <= 1 &&
               col_ptr[std::size_t(i) + 1] - col_ptr[std::size_t(i)] <= 1;
  }
  bool diagonal = true;
  for (std::size_t e = 0; e < col.size(); ++e) diagonal = diagonal && col[e] == row[e];
  packed.push_back(diagonal ? 2 : monomial ? 1 : 0);  // kern::SparsePattern's flags
  return packed;
}

void mark(std::vector<char>& nz, const CVec& m) {
  for (std::size_t i = 0; i < m.size(); ++i) nz[i] |= m[i] != C(0) ? 1 : 0;
}

// m's values on the pattern's entries, in entry order.
CVec values_on(int d, const std::vector<int>& packed, const CVec& m) {
  const kern::SparsePattern p = kern::sparse_pattern_at(packed.data(), d);
  CVec v(std::size_t(p.nnz));
  for (int e = 0; e < p.nnz; ++e) v[std::size_t(e)] = m[std::size_t(p.row[e]) * d + p.col[e]];
  return v;
}

std::vector<char> nonzeros(const CVec& m) {
  std::vector<char> nz(m.size(), 0);
  mark(nz, m);
  return nz;
}

std::vector<char> g_nonzeros(int d, const GTerms& t) {
  std::vector<char> nz(std::size_t(d) * d, 0);
  mark(nz, t.h0);
  for (const auto* group : {&t.drift, &t.rate, &t.ctrl})
    for (const CVec& m : *group) mark(nz, m);
  return nz;
}

std::size_t count(const std::vector<char>& nz) {
  std::size_t n = 0;
  for (char c : nz) n += c ? 1 : 0;
  return n;
}

// Complex multiply-adds per generator product on one d x d state: G rho, rho G^dag
// and each L rho L^dag on their nonzeros.
double lindblad_product_cost(const OpenSystem& s) {
  const int d = s.dim();
  double sparse = 2.0 * double(count(g_nonzeros(d, g_terms(s)))) * d;
  for (const CVec& l : s.jumps()) sparse += 2.0 * double(count(nonzeros(l))) * d;
  return sparse;
}

// Whether the dense superoperators (one per term) take under a quarter of the memory.
bool superoperators_fit(const OpenSystem& s) {
  const double d = s.dim(), matrices = 1.0 + s.n_drift_terms() + s.n_jumps() + s.n_controls();
  return 16.0 * matrices * d * d * d * d < 0.25 * double(physical_memory_bytes());
}

// A bound on ||A||_1 with every amplitude, drift coefficient and rate of magnitude one
// (the coefficients are only known per call): the Hamiltonian terms' 1-norms, and for
// an open system the Lindbladian's bound of kernels/expm_action.hpp,
// 2 ||G||_1 + sum_j ||L_j||_1^2 with ||G||_1 <= sum ||H_i||_1 + 1/2 sum ||L_j^dag L_j||_1.
double generator_norm_estimate(const OpenSystem& s) {
  const int d = s.dim();
  const GTerms t = g_terms(s);
  double g = norm1(d, t.h0);
  for (const auto* group : {&t.drift, &t.rate, &t.ctrl})
    for (const CVec& m : *group) g += norm1(d, m);
  if (s.closed()) return g;
  double b = 2 * g;
  for (const CVec& l : s.jumps()) b += norm1(d, l) * norm1(d, l);
  return b;
}

}  // namespace

double norm1(int d, const CVec& m) {
  double best = 0;
  for (int j = 0; j < d; ++j) {
    double col = 0;
    for (int i = 0; i < d; ++i) col += std::abs(m[std::size_t(i) * d + j]);
    best = std::max(best, col);
  }
  return best;
}

bool choose_lindblad_form(const OpenSystem& s, const OpenCompileOptions& o, bool action) {
  const bool applies = !s.closed() && (solver_info(o.solver).stages > 0 || action);
  if (o.form == OpenForm::lindblad && !applies) {
    throw Error("form lindblad applies to open systems (with jump operators) on a step solver (rk4, euler, dopri5, "
                "tsit5) or the exact solver's action (exact: action)",
                ErrorSubject::solver);
  }
  if (!applies || o.form == OpenForm::superoperator) return false;
  if (o.form == OpenForm::lindblad) return true;
  // The superoperator's d^4 multiply-adds per product against the Lindblad form's.
  const double d = s.dim();
  return !superoperators_fit(s) || kDenseAdvantage * lindblad_product_cost(s) < d * d * d * d;
}

ExactChoice choose_exact_method(const OpenSystem& s, const OpenCompileOptions& o, bool gate) {
  ExactChoice c;
  if (o.solver != Solver::exact) {
    if (o.exact != ExactMethod::automatic) {
      throw Error("exact: " + std::string(to_string(o.exact)) + " applies to the exact solver only (solver is " +
                      std::string(solver_info(o.solver).name) + ")",
                  ErrorSubject::solver);
    }
    return c;
  }
  const int d = s.dim();
  const double n = s.closed() ? d : double(d) * d, cols = gate ? n : 1.0;
  // Taylor products per segment at the estimated norm (AMH's parameters, as the kernel picks them).
  const double norm = generator_norm_estimate(s);
  const bool single = o.precision == Precision::complex64;
  for (double dur : s.segment_durations()) {
    const kern::TaylorPlan tp = kern::taylor_plan(dur * norm, single);
    c.products += double(tp.m) * double(std::max(tp.s, 1L));
  }
  if (o.exact == ExactMethod::propagator) return c;
  // Lindblad form (open, or forced): the form an automatic choice would take.
  const bool open_form = !s.closed() && o.form != OpenForm::superoperator;
  if (o.exact == ExactMethod::action || n > kMaxExactGenerator || (open_form && o.form == OpenForm::lindblad)) {
    c.action = true;
    return c;
  }
  if (n < kActionMinGenerator) return c;
  // Complex multiply-adds of a forward and reverse pass, summed over segments: the
  // propagator's Pade exponential (~10 n x n products; ~25 for its Frechet adjoint,
  // plus the squarings) against the action's Taylor products (forward; backward:
  // the step starts, the terms, the adjoint products and the gradient's ~ one more).
  double product = n * n * cols;
  if (open_form) product = std::min(product, kDenseAdvantage * lindblad_product_cost(s) * cols);
  double propagator = 0;
  for (double dur : s.segment_durations()) {
    const double squarings = std::max(0.0, std::ceil(std::log2(std::max(dur * norm, 1e-300) / 5.4)));
    propagator += (35.0 + 3 * squarings) * n * n * n + 3 * n * n * cols;
  }
  c.action = 5 * c.products * product < propagator;
  return c;
}

void plan_lindblad_form(OpenPlan& p) {
  const OpenSystem& s = p.sys;
  const int d = p.d;
  const GTerms t = g_terms(s);
  p.lindblad = true;
  p.g_pattern = pattern_of(d, g_nonzeros(d, t));
  p.a0 = values_on(d, p.g_pattern, t.h0);
  for (const CVec& m : t.drift) p.a_drift.push_back(values_on(d, p.g_pattern, m));
  for (const CVec& m : t.rate) p.a_rate.push_back(values_on(d, p.g_pattern, m));
  for (const CVec& m : t.ctrl) p.a_ctrl.push_back(values_on(d, p.g_pattern, m));
  for (const CVec& l : s.jumps()) {
    const std::vector<int> pat = pattern_of(d, nonzeros(l));
    const CVec vals = values_on(d, pat, l);
    p.jump_index.push_back(static_cast<int>(p.jump_pattern.size()));
    p.jump_vstart.push_back(static_cast<int>(p.jump_vals.size()));
    p.jump_pattern.insert(p.jump_pattern.end(), pat.begin(), pat.end());
    p.jump_vals.insert(p.jump_vals.end(), vals.begin(), vals.end());
  }
}

}  // namespace qfleet::detail
