// Dense small-matrix kernels (src/kernels/dense.hpp, src/kernels/expm.hpp) against
// Eigen: products, LU solve, expm (every Padé degree and the scaling branch),
// the Fréchet derivative against the block-matrix identity
// exp([[A, E], [0, A]]) = [[exp(A), L(A, E)], [0, exp(A)]], its adjoint
// identity, the Hermitian Jacobi eigensolver and the PSD square root; and the
// group versions (products, norm, LU solve, expm, expm_frechet split over a group
// of std::threads, as a GPU warp or block runs them) against the same references.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <complex>
#include <random>
#include <unsupported/Eigen/MatrixFunctions>
#include <vector>

#include "kernels/dense.hpp"
#include "kernels/expm.hpp"
#include "unit/group_emu.hpp"

namespace {

namespace k = qfleet::kern;
using cd = std::complex<double>;
using Mat = Eigen::MatrixXcd;
template <class R>
using CxVec = std::vector<k::Cx<R>>;

template <class R>
CxVec<R> to_cx(const Mat& M) {
  const int n = static_cast<int>(M.rows());
  CxVec<R> out(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      out[i * n + j] = {static_cast<R>(M(i, j).real()), static_cast<R>(M(i, j).imag())};
  return out;
}

template <class R>
Mat to_eigen(const CxVec<R>& v, int n) {
  Mat M(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) M(i, j) = cd(v[i * n + j].re, v[i * n + j].im);
  return M;
}

Mat random_mat(std::mt19937_64& rng, int n) {
  std::normal_distribution<double> g;
  Mat M(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) M(i, j) = cd(g(rng), g(rng));
  return M;
}

double norm1(const Mat& M) {
  return M.cwiseAbs().colwise().sum().maxCoeff();
}

// Random complex matrix with ||M||_1 = target.
Mat random_with_norm(std::mt19937_64& rng, int n, double target) {
  Mat M = random_mat(rng, n);
  return M * (target / norm1(M));
}

Mat random_hermitian(std::mt19937_64& rng, int n) {
  const Mat G = random_mat(rng, n);
  return (G + G.adjoint()) * 0.5;
}

Mat random_unitary(std::mt19937_64& rng, int n) {
  Eigen::HouseholderQR<Mat> qr(random_mat(rng, n));
  return qr.householderQ() * Mat::Identity(n, n);
}

double rel_err(const Mat& got, const Mat& ref) {
  const double d = (got - ref).norm();
  const double s = ref.norm();
  return s > 0 ? d / s : d;
}

// The degree thresholds of expm/expm_frechet fall between these norms, so the
// list exercises m = 3, 5, 7, 9 and 13 (with s = 0, 2 and 4 squarings).
const double kNorms[] = {1e-4, 1e-2, 0.15, 0.7, 1.5, 4.0, 12.0, 50.0};
const int kSizes[] = {1, 2, 4, 5, 9, 16, 64};

template <class R>
Mat expm_of(const Mat& A) {
  const int n = static_cast<int>(A.rows());
  const CxVec<R> a = to_cx<R>(A);
  CxVec<R> x(a.size()), w(k::expm_work(n));
  EXPECT_EQ(k::expm(n, a.data(), x.data(), w.data()), 0);
  return to_eigen(x, n);
}

template <class R>
void frechet_of(const Mat& A, const Mat& E, Mat& X, Mat& L) {
  const int n = static_cast<int>(A.rows());
  const CxVec<R> a = to_cx<R>(A), e = to_cx<R>(E);
  CxVec<R> x(a.size()), l(a.size()), w(k::expm_frechet_work(n));
  EXPECT_EQ(k::expm_frechet(n, a.data(), e.data(), x.data(), l.data(), w.data()), 0);
  X = to_eigen(x, n);
  L = to_eigen(l, n);
}

// L(A, E) from exp of the 2n x 2n block matrix [[A, E], [0, A]].
Mat frechet_ref(const Mat& A, const Mat& E) {
  const int n = static_cast<int>(A.rows());
  Mat B = Mat::Zero(2 * n, 2 * n);
  B.topLeftCorner(n, n) = A;
  B.topRightCorner(n, n) = E;
  B.bottomRightCorner(n, n) = A;
  const Mat X = B.exp();
  return X.topRightCorner(n, n);
}

// <X, Y> = tr(X^dagger Y).
cd inner(const Mat& X, const Mat& Y) {
  return (X.adjoint() * Y).trace();
}

// ---------------------------------------------------------------------------

TEST(DenseBasic, ProductsAdjointNormTraceMatchEigen) {
  std::mt19937_64 rng(1);
  for (int n : {1, 3, 4, 16}) {
    const Mat A = random_mat(rng, n), B = random_mat(rng, n), C0 = random_mat(rng, n);
    const auto a = to_cx<double>(A), b = to_cx<double>(B);
    CxVec<double> c(a.size());
    k::mat_mul(n, a.data(), b.data(), c.data());
    EXPECT_LT(rel_err(to_eigen(c, n), A * B), 1e-15);
    c = to_cx<double>(C0);
    k::mat_mul_acc(n, a.data(), b.data(), c.data());
    EXPECT_LT(rel_err(to_eigen(c, n), C0 + A * B), 1e-15);
    k::mat_mul_adj_left(n, a.data(), b.data(), c.data());
    EXPECT_LT(rel_err(to_eigen(c, n), A.adjoint() * B), 1e-15);
    k::mat_mul_adj_right(n, a.data(), b.data(), c.data());
    EXPECT_LT(rel_err(to_eigen(c, n), A * B.adjoint()), 1e-15);
    k::mat_adjoint(n, a.data(), c.data());
    EXPECT_EQ(to_eigen(c, n), Mat(A.adjoint()));
    c = to_cx<double>(C0);
    k::mat_add_scaled(n, c.data(), k::Cx<double>{0.5, -2.0}, a.data());
    EXPECT_LT(rel_err(to_eigen(c, n), C0 + cd(0.5, -2.0) * A), 1e-15);
    k::mat_add_scaled(n, c.data(), 3.0, b.data());
    EXPECT_LT(rel_err(to_eigen(c, n), C0 + cd(0.5, -2.0) * A + 3.0 * B), 1e-15);
    EXPECT_NEAR(k::norm1(n, a.data()), norm1(A), 1e-13 * norm1(A));
    const auto tr = k::trace(n, a.data());
    EXPECT_NEAR(std::abs(cd(tr.re, tr.im) - A.trace()), 0.0, 1e-13);
    k::identity(n, c.data());
    EXPECT_EQ(to_eigen(c, n), Mat(Mat::Identity(n, n)));
  }
  // A compile-time order gives the same bits.
  const Mat A = random_mat(rng, 4), B = random_mat(rng, 4);
  const auto a = to_cx<double>(A), b = to_cx<double>(B);
  CxVec<double> c1(16), c2(16);
  k::mat_mul(4, a.data(), b.data(), c1.data());
  k::mat_mul(k::FixedDim<4>{}, a.data(), b.data(), c2.data());
  EXPECT_EQ(to_eigen(c1, 4), to_eigen(c2, 4));
}

TEST(DenseLu, SolvesRandomSystems) {
  std::mt19937_64 rng(2);
  for (int n : {1, 2, 4, 9, 16, 64}) {
    for (int nrhs : {1, n, 3 * n}) {
      const Mat A = random_mat(rng, n);
      Mat B(n, nrhs);
      for (int j = 0; j < nrhs; ++j) B.col(j) = random_mat(rng, n).col(0);
      auto a = to_cx<double>(A);
      CxVec<double> b(static_cast<std::size_t>(n) * nrhs);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < nrhs; ++j) b[i * nrhs + j] = {B(i, j).real(), B(i, j).imag()};
      ASSERT_EQ(k::lu_solve(n, a.data(), b.data(), nrhs), 0);
      Mat X(n, nrhs);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < nrhs; ++j) X(i, j) = cd(b[i * nrhs + j].re, b[i * nrhs + j].im);
      const Mat Xref = A.partialPivLu().solve(B);
      EXPECT_LT((A * X - B).norm() / (A.norm() * X.norm()), 1e-14) << n << " " << nrhs;
      EXPECT_LT(rel_err(X, Xref), 1e-10) << n << " " << nrhs;
    }
  }
  // complex64
  const Mat A = random_mat(rng, 16), B = random_mat(rng, 16);
  auto a = to_cx<float>(A), b = to_cx<float>(B);
  ASSERT_EQ(k::lu_solve(16, a.data(), b.data(), 16), 0);
  EXPECT_LT(rel_err(to_eigen(b, 16), A.partialPivLu().solve(B)), 1e-4);
}

TEST(DenseLu, ReportsSingularAndNonFiniteMatrices) {
  std::mt19937_64 rng(3);
  // rank 1 with exact arithmetic: [[1+i, 2+2i], [2+2i, 4+4i]] leaves a zero pivot
  CxVec<double> m = {{1, 1}, {2, 2}, {2, 2}, {4, 4}}, mb = {{1, 0}, {0, 1}};
  EXPECT_EQ(k::lu_solve(2, m.data(), mb.data(), 1), 2);
  // a zero column stays exactly zero under elimination
  Mat A = random_mat(rng, 6);
  A.col(2).setZero();
  auto a = to_cx<double>(A);
  auto b = to_cx<double>(random_mat(rng, 6));
  EXPECT_GT(k::lu_solve(6, a.data(), b.data(), 6), 0);
  CxVec<double> z(9, k::Cx<double>{0, 0}), zb(3, k::Cx<double>{1, 0});
  EXPECT_EQ(k::lu_solve(3, z.data(), zb.data(), 1), 1);
  Mat C = random_mat(rng, 4);
  C(2, 0) = cd(std::nan(""), 0.0);
  auto c = to_cx<double>(C);
  auto cb = to_cx<double>(random_mat(rng, 4));
  EXPECT_NE(k::lu_solve(4, c.data(), cb.data(), 4), 0);
}

TEST(DenseExpm, MatchesEigenOnEveryDegreeComplex128) {
  std::mt19937_64 rng(4);
  double worst = 0;
  for (int n : kSizes)
    for (double nrm : kNorms) {
      const Mat A = random_with_norm(rng, n, nrm);
      const double e = rel_err(expm_of<double>(A), A.exp());
      worst = std::max(worst, e);
      EXPECT_LT(e, 1e-12) << "n=" << n << " norm=" << nrm;
    }
  RecordProperty("worst_rel_err", std::to_string(worst));
}

TEST(DenseExpm, MatchesEigenOnEveryDegreeComplex64) {
  std::mt19937_64 rng(5);
  for (int n : kSizes)
    for (double nrm : kNorms) {
      const Mat A = random_with_norm(rng, n, nrm);
      // the float input is the rounded A: compare with exp of that. The relative
      // condition number of exp is at least ||A|| (scalar case: |z|), so the
      // tolerance grows with the norm beyond 8.
      const Mat Af = to_eigen(to_cx<float>(A), n);
      EXPECT_LT(rel_err(expm_of<float>(A), Af.exp()), 1e-5 * std::max(1.0, nrm / 8))
          << "n=" << n << " norm=" << nrm;
    }
}

TEST(DenseExpm, SpecialMatrices) {
  // exp(0) = I, exp(diag) = diag(exp), exp(-i t X) for a Hermitian X is unitary.
  std::mt19937_64 rng(6);
  const int n = 16;
  EXPECT_EQ(expm_of<double>(Mat::Zero(n, n)), Mat(Mat::Identity(n, n)));
  Mat D = Mat::Zero(n, n);
  for (int i = 0; i < n; ++i) D(i, i) = cd(0.3 * i - 2.0, 1.7 * i);
  const Mat X = expm_of<double>(D);
  for (int i = 0; i < n; ++i)
    EXPECT_LT(std::abs(X(i, i) - std::exp(D(i, i))), 1e-12 * std::abs(std::exp(D(i, i))));
  const Mat H = random_hermitian(rng, n);
  const Mat U = expm_of<double>(cd(0.0, -3.0) * H);
  EXPECT_LT((U.adjoint() * U - Mat::Identity(n, n)).norm(), 1e-12);
}

TEST(DenseExpm, CompileTimeOrderGivesTheSameBits) {
  std::mt19937_64 rng(7);
  for (double nrm : kNorms) {
    const auto a4 = to_cx<double>(random_with_norm(rng, 4, nrm));
    const auto a16 = to_cx<double>(random_with_norm(rng, 16, nrm));
    CxVec<double> x1(16), x2(16), y1(256), y2(256), w(k::expm_frechet_work(16));
    k::expm(4, a4.data(), x1.data(), w.data());
    k::expm(k::FixedDim<4>{}, a4.data(), x2.data(), w.data());
    EXPECT_EQ(to_eigen(x1, 4), to_eigen(x2, 4));
    k::expm(16, a16.data(), y1.data(), w.data());
    k::expm(k::FixedDim<16>{}, a16.data(), y2.data(), w.data());
    EXPECT_EQ(to_eigen(y1, 16), to_eigen(y2, 16));
    CxVec<double> l1(256), l2(256);
    k::expm_frechet(16, a16.data(), a16.data(), y1.data(), l1.data(), w.data());
    k::expm_frechet(k::FixedDim<16>{}, a16.data(), a16.data(), y2.data(), l2.data(), w.data());
    EXPECT_EQ(to_eigen(l1, 16), to_eigen(l2, 16));
  }
}

TEST(DenseExpm, NonFiniteInputGivesNaNAndStatus) {
  CxVec<double> a(16, k::Cx<double>{0.1, 0.2}), x(16), l(16), w(k::expm_frechet_work(4));
  a[5].re = std::nan("");
  EXPECT_EQ(k::expm(4, a.data(), x.data(), w.data()), -1);
  EXPECT_TRUE(std::isnan(x[0].re));
  EXPECT_EQ(k::expm_frechet(4, a.data(), a.data(), x.data(), l.data(), w.data()), -1);
  EXPECT_TRUE(std::isnan(l[3].im));
}

// Liouvillian of a random Lindblad master equation on a d-level system, with
// column-stacking vec: vec(A X B) = (B^T kron A) vec(X), vec(rho)[i + d j] = rho_ij.
Mat kron(const Mat& A, const Mat& B) {
  Mat K(A.rows() * B.rows(), A.cols() * B.cols());
  for (int i = 0; i < A.rows(); ++i)
    for (int j = 0; j < A.cols(); ++j)
      K.block(i * B.rows(), j * B.cols(), B.rows(), B.cols()) = A(i, j) * B;
  return K;
}

Mat liouvillian(std::mt19937_64& rng, int d, int n_jumps) {
  const Mat I = Mat::Identity(d, d);
  const Mat H = random_hermitian(rng, d);
  Mat Lv = cd(0, -1) * (kron(I, H) - kron(H.transpose(), I));
  for (int j = 0; j < n_jumps; ++j) {
    const Mat J = random_mat(rng, d) * 0.5;
    const Mat JJ = J.adjoint() * J;
    Lv += kron(J.conjugate(), J) - 0.5 * kron(I, JJ) - 0.5 * kron(JJ.transpose(), I);
  }
  return Lv;
}

TEST(DenseExpm, LiouvillianPropagatorIsTracePreservingAndMatchesEigen) {
  std::mt19937_64 rng(8);
  for (int d : {2, 4, 8}) {
    const Mat Lv = liouvillian(rng, d, 2);
    for (double t : {0.01, 0.5, 3.0}) {
      const Mat P = expm_of<double>(t * Lv);
      EXPECT_LT(rel_err(P, (t * Lv).exp()), 1e-12) << d << " " << t;
      // tr(unvec(P vec rho)) = tr(rho) for every rho <=> sum_i P(i + d i, c) = [c diagonal]
      double worst = 0;
      for (int c = 0; c < d * d; ++c) {
        cd s = 0;
        for (int i = 0; i < d; ++i) s += P(i + d * i, c);
        worst = std::max(worst, std::abs(s - (c % (d + 1) == 0 ? 1.0 : 0.0)));
      }
      EXPECT_LT(worst, 1e-12) << d << " " << t;
      // a density matrix stays a Hermitian, unit-trace matrix
      const Mat G = random_mat(rng, d);
      Mat rho = G * G.adjoint();
      rho /= rho.trace();
      const Eigen::VectorXcd v =
          Eigen::Map<const Eigen::VectorXcd>(rho.data(), d * d);  // column-major = column stacking
      const Eigen::VectorXcd w = P * v;
      const Mat rho_t = Eigen::Map<const Mat>(w.data(), d, d);
      EXPECT_NEAR(std::abs(rho_t.trace() - 1.0), 0.0, 1e-12);
      EXPECT_LT((rho_t - rho_t.adjoint()).norm(), 1e-12);
    }
  }
  // complex64 on the hot sizes
  for (int d : {2, 4}) {
    const Mat Lv = liouvillian(rng, d, 3);
    const Mat Lf = to_eigen(to_cx<float>(Lv), d * d);
    EXPECT_LT(rel_err(expm_of<float>(Lv), Lf.exp()), 1e-5);
  }
}

TEST(DenseFrechet, MatchesBlockExponentialComplex128) {
  std::mt19937_64 rng(9);
  double worst_l = 0, worst_x = 0;
  for (int n : kSizes)
    for (double nrm : kNorms) {
      if (n == 64 && !(nrm == 0.7 || nrm == 12.0)) continue;  // keep the suite fast
      const Mat A = random_with_norm(rng, n, nrm);
      const Mat E = random_with_norm(rng, n, 1.0);
      Mat X, L;
      frechet_of<double>(A, E, X, L);
      const double el = rel_err(L, frechet_ref(A, E));
      const double ex = rel_err(X, expm_of<double>(A));
      worst_l = std::max(worst_l, el);
      worst_x = std::max(worst_x, ex);
      EXPECT_LT(el, 1e-12) << "n=" << n << " norm=" << nrm;
      EXPECT_LT(ex, 1e-13) << "n=" << n << " norm=" << nrm;
    }
  RecordProperty("worst_rel_err_L", std::to_string(worst_l));
  RecordProperty("worst_rel_err_expA", std::to_string(worst_x));
}

TEST(DenseFrechet, MatchesBlockExponentialComplex64) {
  std::mt19937_64 rng(10);
  for (int n : {1, 2, 4, 5, 9, 16})
    for (double nrm : kNorms) {
      const Mat A = to_eigen(to_cx<float>(random_with_norm(rng, n, nrm)), n);
      const Mat E = to_eigen(to_cx<float>(random_with_norm(rng, n, 1.0)), n);
      Mat X, L;
      frechet_of<float>(A, E, X, L);
      const double tol = 1e-5 * std::max(1.0, nrm / 8);
      EXPECT_LT(rel_err(L, frechet_ref(A, E)), tol) << "n=" << n << " norm=" << nrm;
      EXPECT_LT(rel_err(X, A.exp()), tol) << "n=" << n << " norm=" << nrm;
    }
}

TEST(DenseFrechet, IsLinearInEAndAgreesWithFiniteDifferences) {
  std::mt19937_64 rng(11);
  const int n = 4;
  const Mat A = random_with_norm(rng, n, 3.0), E = random_mat(rng, n);
  Mat X, L;
  frechet_of<double>(A, E, X, L);
  const double h = 1e-6;
  const Mat fd = ((A + h * E).exp() - (A - h * E).exp()) / (2 * h);
  EXPECT_LT(rel_err(L, fd), 1e-8);
  Mat X2, L2;
  frechet_of<double>(A, cd(2.0, -1.0) * E, X2, L2);
  EXPECT_LT(rel_err(L2, cd(2.0, -1.0) * L), 1e-14);
}

TEST(DenseFrechet, AdjointIsTheDerivativeAtTheAdjoint) {
  // <W, L(A, E)> = <L(A^dagger, W), E>
  std::mt19937_64 rng(12);
  for (int n : {1, 2, 4, 9, 16})
    for (double nrm : kNorms) {
      const Mat A = random_with_norm(rng, n, nrm);
      const Mat E = random_mat(rng, n), W = random_mat(rng, n);
      Mat X, L, Xa, La;
      frechet_of<double>(A, E, X, L);
      frechet_of<double>(A.adjoint(), W, Xa, La);
      const cd lhs = inner(W, L), rhs = inner(La, E);
      const double scale = W.norm() * L.norm() + La.norm() * E.norm();
      EXPECT_LT(std::abs(lhs - rhs), 1e-12 * scale) << "n=" << n << " norm=" << nrm;
      EXPECT_LT(rel_err(Xa, Mat(X.adjoint())), 1e-13);
    }
}

template <class R>
void check_eig(const Mat& A, double tol) {
  const int n = static_cast<int>(A.rows());
  const auto a = to_cx<R>(A);
  std::vector<R> lam(n);
  CxVec<R> v(a.size()), w(k::hermitian_eig_work(n));
  ASSERT_EQ(k::hermitian_eig(n, a.data(), lam.data(), v.data(), w.data()), 0);
  const Mat V = to_eigen(v, n);
  Eigen::VectorXd L(n);
  for (int i = 0; i < n; ++i) L(i) = lam[i];
  for (int i = 0; i + 1 < n; ++i) EXPECT_LE(lam[i], lam[i + 1]);
  const Mat Ar = to_eigen(a, n);  // the matrix actually passed in
  const double s = std::max(1.0, Ar.norm());
  EXPECT_LT((Ar * V - V * L.cast<cd>().asDiagonal()).norm() / s, tol) << "n=" << n;
  EXPECT_LT((V.adjoint() * V - Mat::Identity(n, n)).norm(), tol) << "n=" << n;
  Eigen::SelfAdjointEigenSolver<Mat> es(Ar);
  EXPECT_LT((L - es.eigenvalues()).norm() / s, tol) << "n=" << n;
}

TEST(DenseEig, HermitianJacobiMatchesEigen) {
  std::mt19937_64 rng(13);
  for (int n : {1, 2, 3, 4, 7, 16, 64}) {
    // every rotation adds O(eps) to the columns it touches (~sweeps * n of them):
    // the orthogonality error grows with n
    const double grow = std::max(1.0, n / 8.0);
    check_eig<double>(random_hermitian(rng, n), 1e-13 * grow);
    check_eig<float>(random_hermitian(rng, n), 1e-5 * grow);
    // degenerate spectrum: a rank-2 projector and a multiple of I
    const Mat U = random_unitary(rng, n);
    Eigen::VectorXd d = Eigen::VectorXd::Zero(n);
    d(0) = 1;
    if (n > 1) d(n - 1) = 1;
    check_eig<double>(U * d.cast<cd>().asDiagonal() * U.adjoint(), 1e-13 * grow);
    check_eig<double>(2.5 * Mat::Identity(n, n), 1e-15);
    // widely spread eigenvalues
    for (int i = 0; i < n; ++i) d(i) = std::pow(10.0, -8 + 12.0 * i / std::max(1, n - 1));
    check_eig<double>(U * d.cast<cd>().asDiagonal() * U.adjoint(), 1e-13 * grow);
  }
}

template <class R>
Mat sqrtm_of(const Mat& A) {
  const int n = static_cast<int>(A.rows());
  const auto a = to_cx<R>(A);
  CxVec<R> s(a.size()), w(k::sqrtm_psd_work(n));
  EXPECT_EQ(k::sqrtm_psd(n, a.data(), s.data(), w.data()), 0);
  return to_eigen(s, n);
}

TEST(DenseSqrtm, FullRankPsdMatchesEigen) {
  std::mt19937_64 rng(14);
  for (int n : {1, 2, 4, 9, 16, 64}) {
    const Mat G = random_mat(rng, n);
    const Mat A = G * G.adjoint() + 0.1 * Mat::Identity(n, n);
    const Mat S = sqrtm_of<double>(A);
    EXPECT_LT(rel_err(S * S, A), 1e-13) << n;
    EXPECT_LT(rel_err(S, A.sqrt()), 1e-11) << n;
    EXPECT_LT((S - S.adjoint()).norm(), 1e-14 * S.norm());
    const Mat Sf = sqrtm_of<float>(A);
    EXPECT_LT(rel_err(Sf, A.sqrt()), 1e-5) << n;
  }
}

TEST(DenseSqrtm, RankDeficientAndPureStates) {
  std::mt19937_64 rng(15);
  for (int n : {2, 4, 16}) {
    // rank r < n with known spectrum: exact root U diag(sqrt(d)) U^dagger
    const Mat U = random_unitary(rng, n);
    Eigen::VectorXd dv = Eigen::VectorXd::Zero(n);
    for (int i = 0; i < n / 2; ++i) dv(i) = 0.2 + i;
    const Mat A = U * dv.cast<cd>().asDiagonal() * U.adjoint();
    const Mat Sx = U * dv.cwiseSqrt().cast<cd>().asDiagonal() * U.adjoint();
    const Mat S = sqrtm_of<double>(A);
    EXPECT_LT(rel_err(S * S, A), 1e-13) << n;
    // near a zero eigenvalue the root is only determined to ~sqrt(eps ||A||)
    EXPECT_LT(rel_err(S, Sx), 1e-7) << n;
    const Mat Se = A.sqrt();
    if (Se.allFinite()) {
      EXPECT_LT(rel_err(S, Se), 1e-6) << n;
    }
    // pure state: sqrt(rho) = rho, and F(rho, sigma) = <psi|sigma|psi>
    const Eigen::VectorXcd psi = random_mat(rng, n).col(0).normalized();
    const Mat rho = psi * psi.adjoint();
    const Mat R = sqrtm_of<double>(rho);
    EXPECT_LT((R - rho).norm(), 1e-7) << n;
    EXPECT_LT(rel_err(R * R, rho), 1e-13) << n;
    const Mat Rse = rho.sqrt();
    if (Rse.allFinite()) {
      EXPECT_LT((R - Rse).norm(), 1e-6) << n;
    }
    const Mat G = random_mat(rng, n);
    Mat sigma = G * G.adjoint();
    sigma /= sigma.trace();
    const Mat M = R * sigma * R;
    const auto m = to_cx<double>(M);
    std::vector<double> lam(n);
    CxVec<double> v(m.size()), w(k::hermitian_eig_work(n));
    ASSERT_EQ(k::hermitian_eig(n, m.data(), lam.data(), v.data(), w.data()), 0);
    double tr = 0;
    for (double l : lam) tr += l > 0 ? std::sqrt(l) : 0.0;
    EXPECT_NEAR(tr * tr, (psi.adjoint() * sigma * psi)(0, 0).real(), 1e-7) << n;
  }
}


// ---------------------------------------------------------------------------
// Group versions: every member gets the same status, the results match Eigen
// and the serial code, for group sizes that split the work evenly, unevenly and
// with more members than rows.

TEST(DenseGroup, ProductsNormAndLuSolveMatchEigen) {
  std::mt19937_64 rng(21);
  for (int n : {1, 3, 4, 9, 16}) {
    const Mat A = random_mat(rng, n), B = random_mat(rng, n);
    for (int G : {1, 3, 8, 32}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " G=" + std::to_string(G));
      CxVec<double> a = to_cx<double>(A), b = to_cx<double>(B), c(a.size()), acc = to_cx<double>(B);
      std::vector<double> norms = emu::run_groups(1, G, [&](int, const emu::TaskGroup& g) {
        k::mat_mul(n, a.data(), b.data(), c.data(), g);
        k::mat_mul_acc(n, a.data(), b.data(), acc.data(), g);
        return double(k::norm1(n, a.data(), g));
      });
      EXPECT_LT(rel_err(to_eigen(c, n), A * B), 1e-14);
      EXPECT_LT(rel_err(to_eigen(acc, n), B + A * B), 1e-14);
      for (double v : norms) EXPECT_NEAR(v, norm1(A), 1e-13 * norm1(A));
      const int nrhs = 2 * n + 1;
      const Mat X = random_mat(rng, n);
      Mat RHS = A * Mat(X.replicate(1, 3)).leftCols(nrhs);
      CxVec<double> lu = to_cx<double>(A), rhs(std::size_t(n) * nrhs);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < nrhs; ++j) rhs[i * nrhs + j] = {RHS(i, j).real(), RHS(i, j).imag()};
      const std::vector<int> st = emu::run_groups(1, G, [&](int, const emu::TaskGroup& g) {
        return k::lu_solve(n, lu.data(), rhs.data(), nrhs, g);
      });
      for (int v : st) EXPECT_EQ(v, 0);
      double err = 0;
      const Mat want = Mat(X.replicate(1, 3)).leftCols(nrhs);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < nrhs; ++j) err = std::max(err, std::abs(cd(rhs[i * nrhs + j].re, rhs[i * nrhs + j].im) - want(i, j)));
      EXPECT_LT(err, 1e-10 * (1 + want.cwiseAbs().maxCoeff()));
    }
  }
}

TEST(DenseGroup, LuSolveReportsTheSameStatusOnEveryMember) {
  std::mt19937_64 rng(22);
  Mat A = random_mat(rng, 6);
  A.col(2).setZero();  // a zero pivot at column 2 (or later)
  Mat C = random_mat(rng, 5);
  C(3, 1) = cd(std::nan(""), 0.0);
  for (int G : {2, 5, 32}) {
    CxVec<double> a = to_cx<double>(A), b = to_cx<double>(random_mat(rng, 6));
    const std::vector<int> st = emu::run_groups(1, G, [&](int, const emu::TaskGroup& g) {
      return k::lu_solve(6, a.data(), b.data(), 6, g);
    });
    for (int v : st) EXPECT_EQ(v, st[0]);
    EXPECT_GT(st[0], 0);
    CxVec<double> c = to_cx<double>(C), cb = to_cx<double>(random_mat(rng, 5));
    const std::vector<int> sc = emu::run_groups(1, G, [&](int, const emu::TaskGroup& g) {
      return k::lu_solve(5, c.data(), cb.data(), 5, g);
    });
    for (int v : sc) EXPECT_EQ(v, 1);
  }
}

TEST(DenseGroup, ExpmAndFrechetMatchTheSerialCodeOnEveryDegree) {
  std::mt19937_64 rng(23);
  for (int n : {2, 4, 9, 16}) {
    for (double nrm : kNorms) {
      const Mat A = random_with_norm(rng, n, nrm);
      const Mat E = random_with_norm(rng, n, 1.0);
      Mat X1, L1;
      frechet_of<double>(A, E, X1, L1);
      const Mat X0 = expm_of<double>(A);
      for (int G : {3, 8, 32}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " norm=" + std::to_string(nrm) + " G=" + std::to_string(G));
        const CxVec<double> a = to_cx<double>(A), e = to_cx<double>(E);
        CxVec<double> x(a.size()), x2(a.size()), l(a.size());
        CxVec<double> w(k::expm_work(n)), wf(k::expm_frechet_work(n));
        const std::vector<int> st = emu::run_groups(1, G, [&](int, const emu::TaskGroup& g) {
          const int s1 = k::expm(n, a.data(), x.data(), w.data(), g);
          const int s2 = k::expm_frechet(n, a.data(), e.data(), x2.data(), l.data(), wf.data(), g);
          return 10 * s1 + s2;
        });
        for (int v : st) EXPECT_EQ(v, 0);
        EXPECT_LT(rel_err(to_eigen(x, n), X0), 1e-13);
        EXPECT_LT(rel_err(to_eigen(x2, n), X1), 1e-13);
        EXPECT_LT(rel_err(to_eigen(l, n), L1), 1e-12);
        EXPECT_LT(rel_err(to_eigen(l, n), frechet_ref(A, E)), 1e-12);
      }
    }
  }
  // A non-finite input: NaN outputs and status -1 on every member.
  Mat A = random_mat(rng, 4);
  A(1, 2) = cd(std::nan(""), 0);
  const CxVec<double> a = to_cx<double>(A);
  CxVec<double> x(a.size()), w(k::expm_work(4));
  const std::vector<int> st = emu::run_groups(1, 5, [&](int, const emu::TaskGroup& g) {
    return k::expm(4, a.data(), x.data(), w.data(), g);
  });
  for (int v : st) EXPECT_EQ(v, -1);
  for (const auto& z : x) EXPECT_TRUE(std::isnan(z.re));
}

}  // namespace
