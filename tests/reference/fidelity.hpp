// The tests' independent dense reference: figures of merit of open and closed
// systems, from their textbook definitions (each with second constructions that
// tests/unit/test_open_reference.cpp checks the first against):
//   Uhlmann fidelity (tr sqrt(sqrt(sigma) rho sqrt(sigma)))^2 from Hermitian
//     eigendecompositions; again with Eigen's .sqrt(), and from the spectrum of rho sigma
//   average gate fidelity by Nielsen's formula over the Weyl operator basis,
//     F = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d+1)); again as the state
//     fidelity averaged over a 2-design, and from the Choi matrix
// Plain Eigen; shares no code with qfleet.
#pragma once

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "dense.hpp"

namespace ref {

inline Mat psd_sqrt(const Mat& a) {
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (a + a.adjoint()));
  Eigen::VectorXd s = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * s.cast<cd>().asDiagonal() * es.eigenvectors().adjoint();
}

// Uhlmann fidelity (tr sqrt(sqrt(sigma) rho sqrt(sigma)))^2 from Hermitian eigendecompositions.
inline double uhlmann(const Mat& rho, const Mat& sigma) {
  const Mat s = psd_sqrt(sigma);
  const Mat m = s * rho * s;
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (m + m.adjoint()), Eigen::EigenvaluesOnly);
  // Eigenvalues at rounding level (rank-deficient arguments) count as 0: their square
  // roots would otherwise add ~sqrt(eps) each.
  const double cut = 1e-13 * std::max(1e-300, es.eigenvalues().maxCoeff());
  double t = 0;
  for (Index i = 0; i < m.rows(); ++i) t += es.eigenvalues()(i) > cut ? std::sqrt(es.eigenvalues()(i)) : 0.0;
  return t * t;
}
// The same with Eigen's general matrix square root (full-rank arguments only).
inline double uhlmann_sqrtm(const Mat& rho, const Mat& sigma) {
  const Mat sr = rho.sqrt();
  const Mat m = sr * sigma * sr;
  const Mat r = m.sqrt();
  const double t = r.trace().real();
  return t * t;
}
// The same from the spectrum of rho sigma (similar to sqrt(rho) sigma sqrt(rho)).
inline double uhlmann_spectrum(const Mat& rho, const Mat& sigma) {
  Eigen::ComplexEigenSolver<Mat> es(rho * sigma, false);
  double top = 1e-300, t = 0;
  for (Index i = 0; i < rho.rows(); ++i) top = std::max(top, es.eigenvalues()(i).real());
  for (Index i = 0; i < rho.rows(); ++i) {
    const double ev = es.eigenvalues()(i).real();
    t += ev > 1e-13 * top ? std::sqrt(ev) : 0.0;
  }
  return t * t;
}

using Channel = std::function<Mat(const Mat&)>;

// Weyl (clock-and-shift) operators X^a Z^b, a unitary operator basis with tr(P^dag Q) = d delta.
inline Mat weyl(Index d, Index a, Index b) {
  Mat x = Mat::Zero(d, d), z = Mat::Zero(d, d);
  for (Index j = 0; j < d; ++j) {
    x((j + 1) % d, j) = 1;
    z(j, j) = std::exp(2.0 * kPi * kI * double(j) / double(d));
  }
  Mat p = eye(d);
  for (Index i = 0; i < a; ++i) p = p * x;
  for (Index i = 0; i < b; ++i) p = p * z;
  return p;
}

// Nielsen (2002): F_avg = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d + 1)).
inline double avg_fidelity_weyl(const Channel& e, const Mat& u, Index d) {
  cd s = 0;
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) {
      const Mat p = weyl(d, a, b);
      s += (u * p.adjoint() * u.adjoint() * e(p)).trace();
    }
  return (s.real() + double(d * d)) / (double(d * d) * double(d + 1));
}

// Average over a 2-design of <psi|U^dag E(|psi><psi|) U|psi>: the six Pauli
// eigenstates (d = 2) or the d + 1 mutually unbiased bases (odd prime d).
inline double avg_fidelity_design(const Channel& e, const Mat& u, Index d) {
  std::vector<Vec> states;
  if (d == 2) {
    const double r = 1 / std::sqrt(2.0);
    states = {basis(2, 0), basis(2, 1)};
    for (cd ph : {cd(1), cd(-1), kI, -kI}) {
      Vec v(2);
      v << r, r * ph;
      states.push_back(v);
    }
  } else {
    for (Index i = 0; i < d; ++i) states.push_back(basis(d, i));
    for (Index k = 0; k < d; ++k)
      for (Index m = 0; m < d; ++m) {
        Vec v(d);
        for (Index j = 0; j < d; ++j)
          v(j) = std::exp(2.0 * kPi * kI * double(k * j * j + m * j) / double(d)) / std::sqrt(double(d));
        states.push_back(v);
      }
  }
  double s = 0;
  for (const Vec& v : states) {
    const Vec w = u * v;
    s += (w.adjoint() * e(v * v.adjoint()) * w)(0, 0).real();
  }
  return s / double(states.size());
}

// Via the Choi matrix J = sum_ij |i><j| kron E(|i><j|): F_pro = <<U|J|U>>/d^2.
inline double avg_fidelity_choi(const Channel& e, const Mat& u, Index d) {
  Mat j = Mat::Zero(d * d, d * d);
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) j += kron(ket_bra(d, a, b), e(ket_bra(d, a, b)));
  Vec phi = Vec::Zero(d * d);
  for (Index a = 0; a < d; ++a) phi += kron(basis(d, a), u * basis(d, a));
  const double fpro = (phi.adjoint() * j * phi)(0, 0).real() / double(d * d);
  return (double(d) * fpro + 1) / double(d + 1);
}

}  // namespace ref
