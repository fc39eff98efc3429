// The bodies of reference/fidelity.hpp, compiled once into the tests' reference library
// (tests/CMakeLists.txt, qfleet_reference) rather than in every test that includes the
// header: the Eigen solvers they instantiate cost each such unit ~15 s of GCC 12 (2026-11-28).
#include "reference/fidelity.hpp"

namespace ref {

Mat psd_sqrt(const Mat& a) {
  Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (a + a.adjoint()));
  Eigen::VectorXd s = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * s.cast<cd>().asDiagonal() * es.eigenvectors().adjoint();
}

double uhlmann(const Mat& rho, const Mat& sigma) {
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

double uhlmann_sqrtm(const Mat& rho, const Mat& sigma) {
  const Mat sr = rho.sqrt();
  const Mat m = sr * sigma * sr;
  const Mat r = m.sqrt();
  const double t = r.trace().real();
  return t * t;
}

double uhlmann_spectrum(const Mat& rho, const Mat& sigma) {
  Eigen::ComplexEigenSolver<Mat> es(rho * sigma, false);
  double top = 1e-300, t = 0;
  for (Index i = 0; i < rho.rows(); ++i) top = std::max(top, es.eigenvalues()(i).real());
  for (Index i = 0; i < rho.rows(); ++i) {
    const double ev = es.eigenvalues()(i).real();
    t += ev > 1e-13 * top ? std::sqrt(ev) : 0.0;
  }
  return t * t;
}

Mat weyl(Index d, Index a, Index b) {
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

double avg_fidelity_weyl(const Channel& e, const Mat& u, Index d) {
  cd s = 0;
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) {
      const Mat p = weyl(d, a, b);
      s += (u * p.adjoint() * u.adjoint() * e(p)).trace();
    }
  return (s.real() + double(d * d)) / (double(d * d) * double(d + 1));
}

double avg_fidelity_design(const Channel& e, const Mat& u, Index d) {
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

double avg_fidelity_choi(const Channel& e, const Mat& u, Index d) {
  Mat j = Mat::Zero(d * d, d * d);
  for (Index a = 0; a < d; ++a)
    for (Index b = 0; b < d; ++b) j += kron(ket_bra(d, a, b), e(ket_bra(d, a, b)));
  Vec phi = Vec::Zero(d * d);
  for (Index a = 0; a < d; ++a) phi += kron(basis(d, a), u * basis(d, a));
  const double fpro = (phi.adjoint() * j * phi)(0, 0).real() / double(d * d);
  return (double(d) * fpro + 1) / double(d + 1);
}

}  // namespace ref
