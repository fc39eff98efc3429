// The adaptive solvers' tableaux (kernels/open_task.hpp): on a linear problem
// dX/dt = A X (every problem the engine solves) a Runge-Kutta method is the
// polynomial 1 + sum_k (b^T A^(k-1) 1) (hA)^k, so it has order p exactly when
// b^T A^(k-1) 1 = 1/k! for k = 1..p. Checked for the 5th-order solutions and the
// 4th-order embedded ones of dopri5 and tsit5 (b* = b - b_err over 7 stages, whose
// 7th stage evaluates at the new state: its row of A is b), and that the embedded
// solution is not also 5th order (the error estimate would vanish). Then tsit5 on
// open and closed problems against the reference's exact dynamics.
#include <gtest/gtest.h>

#include "kernels/open_task.hpp"
#include "unit/open_harness.hpp"

namespace {

using namespace ref;
using qfleet::Solver;

// b^T A^(k-1) 1 for a 7-stage tableau whose last row is the solution's weights.
double tall_tree(const qfleet::kern::open_detail::Tableau& t, const double* w, int k) {
  double a[7][7] = {};
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < i; ++j) a[i][j] = i == 6 ? t.b[j] : t.a[i][j];
  double v[7];
  for (double& x : v) x = 1;
  for (int p = 1; p < k; ++p) {
    double nv[7] = {};
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 7; ++j) nv[i] += a[i][j] * v[j];
    for (int i = 0; i < 7; ++i) v[i] = nv[i];
  }
  double s = 0;
  for (int i = 0; i < 7; ++i) s += w[i] * v[i];
  return s;
}

TEST(OpenTsit5, TableauxHaveOrderFiveWithAnOrderFourEstimateOnLinearProblems) {
  for (Solver s : {Solver::dopri5, Solver::tsit5}) {
    const auto& t = qfleet::kern::open_detail::tableau(s);
    double b[7], bstar[7];
    for (int i = 0; i < 7; ++i) {
      b[i] = i < t.s ? t.b[i] : 0.0;
      bstar[i] = b[i] - t.b_err[i];
    }
    double factorial = 1;
    for (int k = 1; k <= 5; ++k) {
      factorial *= k;
      EXPECT_NEAR(tall_tree(t, b, k), 1 / factorial, 1e-14) << int(s) << " solution, k = " << k;
      if (k <= 4) {
        EXPECT_NEAR(tall_tree(t, bstar, k), 1 / factorial, 1e-14) << int(s) << " embedded, k = " << k;
      }
    }
    EXPECT_GT(std::abs(tall_tree(t, bstar, 5) - 1 / factorial), 1e-5) << int(s) << ": the embedded solution is order 5";
  }
}

TEST(OpenTsit5, ConvergesToTheExactDynamics) {
  std::mt19937_64 rng(720);
  for (const ProblemKind& k : kProblemKinds) {
    const Model m = kind_model(k, rng, 3);
    const TaskBatch b = random_batch(rng, m, 2, true, true, false);
    qfleet::OpenCompileOptions o;
    o.solver = Solver::tsit5;
    o.rtol = o.atol = 1e-10;
    const auto w = want_all(m);
    expect_outputs(qforward<double>(qfleet::compile(build(m), o), m, b, w), simulate_batch(m, b), w, 1e-7, 0,
                   std::string(k.name) + " tsit5");
  }
}

}  // namespace
