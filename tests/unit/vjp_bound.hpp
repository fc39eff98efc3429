// An error model for a vjp checked against the reference's finite differences: a
// bound per gradient entry that scales with what the entry sums, in place of one
// fixed relative tolerance (which fails where a true gradient is zero and the
// result is rounding noise, and passes a real error hidden in a large vector).
//
// The adjoint method's derivative of sum_k cot_k <O_k> for a parameter on sample b
// is a sum, over the gates the parameter drives, of 2 Re <lambda_b| dU psi_b>
// (Jones & Gacon, arXiv:2009.02823), with |psi_b| = 1 and |lambda_b| <= Lambda_b =
// sum_k |cot_bk| ||O_k|| (a Pauli sum's norm is at most sum |c|, a probability's
// projector 1). A gate whose angle is s * theta has |dU/dtheta| <= |s| across the
// catalogue (rotation generators have norm 1/2, phases 1), so the term's size is at
// most 2 |s| Lambda_b: its scale. An amplitude embedding's derivative in a feature
// is at most 1/|v| (normalised, v the padded features) or 1, times 2 Lambda_b.
//
// Rounding: each of the D operations applied to psi and lambda moves them by a few
// unit roundoffs u relative to their norms (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., sec. 3.5: a matrix-vector product errs by
// gamma_k |A||x|), and a shared weight's gradient adds B such terms, so an entry
// errs by at most kappa u (D + B) times the sum of its terms' scales. The reference's
// own error (fourth-order central differences, h = 1e-3: h^4/30 |f^(5)| + eps/h,
// reference/statevector.hpp) is kFdError times the same scale, plus its rounding
// (eps |f| / h) for every entry.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "unit/harness.hpp"

namespace ref {

struct VjpBound {
  std::vector<double> gi, gw;  // the layouts of q_vjp's gi and gw for this batch
};

// kappa: the model's "a few roundoffs per operation". On the backend matrix (every
// gate, backend and batch size, complex64) the largest error was 0.26 of the bound
// with kappa = 1 (tests/unit/test_backend_matrix.cpp prints it); 4 leaves room for
// other compilers, instruction sets and GPUs.
constexpr double kRoundingKappa = 4.0;
// The finite-difference reference's relative error: h^4/30 |f^(5)| is about 1e-11
// for the parameter scales the tests draw (|f^(5)| <= (2 |s|)^5 Lambda, |s| <= 2),
// and its rounding eps |f| / h about 1e-13.
constexpr double kFdError = 1e-9;

// The bound for a vjp computed with unit roundoff u (2^-24 for complex64, 2^-53 for
// complex128) of the cotangent `cot` on batch b, for the reference circuit c.
inline VjpBound vjp_bound(const Circuit& c, const Batch& b, const std::vector<double>& cot, double u) {
  const std::size_t K = static_cast<std::size_t>(c.n_outputs());
  std::vector<double> norm_o;  // ||O_k|| per output
  for (const Meas& m : c.meas) {
    if (m.probs) {
      norm_o.insert(norm_o.end(), std::size_t{1} << m.wires.size(), 1.0);
      continue;
    }
    double s = 0;
    for (const auto& term : m.terms) s += std::abs(term.first);
    norm_o.push_back(s);
  }
  // 2 sum |s| over the gates each parameter drives.
  std::vector<double> mu_x(std::size_t(b.ni), 0.0), mu_w(std::size_t(b.nw), 0.0);
  for (const Op& op : c.ops) {
    for (const qfleet::Param& p : op.params) {
      if (p.kind == qfleet::Param::Kind::Input) mu_x[std::size_t(p.index)] += 2 * std::abs(p.scale);
      if (p.kind == qfleet::Param::Kind::Weight) mu_w[std::size_t(p.index)] += 2 * std::abs(p.scale);
    }
  }
  const double ops = double(c.ops.size()) + (c.amp ? 1.0 : 0.0);
  const bool shared = !(b.per_sample && b.B > 1);
  // An entry's bound per unit of Lambda: rounding in the engine grows with the terms'
  // scale mu; the differences' rounding (eps |f| / h, even for a parameter nothing
  // drives) does not.
  const auto rel = [&](double mu, double sums) { return kRoundingKappa * u * (ops + sums) * mu + kFdError * (1 + mu); };
  VjpBound v;
  v.gi.assign(b.B * std::size_t(b.ni), 0.0);
  v.gw.assign((shared ? 1 : b.B) * std::size_t(b.nw), 0.0);
  for (std::size_t s = 0; s < b.B; ++s) {
    double lambda = 0;
    for (std::size_t k = 0; k < K; ++k) lambda += std::abs(cot[s * K + k]) * norm_o[k];
    for (int i = 0; i < b.ni; ++i) {
      double mu = mu_x[std::size_t(i)];
      if (c.amp && i >= c.amp->first_input && i < c.amp->first_input + c.amp->n_features) {
        double v2 = c.amp->pad * c.amp->pad * double((1 << c.amp->wires.size()) - c.amp->n_features);
        for (int f = 0; f < c.amp->n_features; ++f) v2 += std::pow(b.xrow(s)[c.amp->first_input + f], 2);
        mu += c.amp->normalize ? 2 / std::sqrt(v2) : 2.0;
      }
      v.gi[s * std::size_t(b.ni) + std::size_t(i)] = rel(mu, 0) * lambda;
    }
    for (int j = 0; j < b.nw; ++j) {  // a shared weight adds its B terms up: B more roundings
      const double mu = mu_w[std::size_t(j)];
      v.gw[(shared ? 0 : s * std::size_t(b.nw)) + std::size_t(j)] += rel(mu, shared ? double(b.B) : 0) * lambda;
    }
  }
  return v;
}

// max_j |got_j - want_j| / bound_j: at most 1 when the result is within the model.
inline double bound_ratio(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& bound) {
  if (got.size() != want.size() || got.size() != bound.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t j = 0; j < got.size(); ++j) {
    const double err = std::abs(got[j] - want[j]);
    if (err == 0) continue;
    worst = std::max(worst, bound[j] > 0 ? err / bound[j] : std::numeric_limits<double>::infinity());
  }
  return worst;
}

// The unit roundoff of the precision a vjp ran in.
inline double unit_roundoff(bool c64) {
  return c64 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

}  // namespace ref
