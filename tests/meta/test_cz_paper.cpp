// The paper's CZ system (apps/meta_control/cz_paper.hpp) is the Kronecker products it names,
// built independently here from the dense reference's Paulis.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cz_paper.hpp"
#include "reference/dense.hpp"

namespace cz_paper_test {

using ref::eye;
using ref::kron;
using ref::Mat;
using ref::pauli;

void expect_ops(const std::vector<qfleet::ComplexMatrix>& got, const std::vector<Mat>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_LT((ref::from_row_major(got[k]) - want[k]).cwiseAbs().maxCoeff(), 1e-15) << what << " " << k;
}

TEST(CzPaper, IsTheKroneckerProductsItNames) {
  const Mat X = pauli('X'), Y = pauli('Y'), Z = pauli('Z'), I = eye(2), raise = ref::mat2(0, 0, 1, 0);
  const double h = std::sqrt(0.5);
  const auto s = qfleet::meta::cz_paper_system(1.0, 2.0);
  EXPECT_EQ(s.qubits, 2);
  expect_ops(s.controls, {kron(X, I), kron(Y, I), kron(I, X), kron(I, Y), kron(Z, I), kron(I, Z)}, "controls");
  EXPECT_EQ(s.control_names, (std::vector<std::string>{"x0", "y0", "x1", "y1", "z0", "z1"}));
  expect_ops({s.drift}, {2.0 * kron(Z, Z)}, "drift");
  expect_ops(s.jumps, {kron(raise, I), h * kron(Z, I), kron(I, raise), h * kron(I, Z)}, "jumps");
  Mat cz = eye(4);
  cz(3, 3) = -1;
  expect_ops({s.target}, {cz}, "target");
  // X/2 and Y/2 at scale 0.5, the coupling as given
  const auto half = qfleet::meta::cz_paper_system(0.5, 0.25);
  expect_ops({half.controls[0], half.drift}, {0.5 * kron(X, I), 0.25 * kron(Z, Z)}, "scaled");
}

TEST(CzPaper, TheConfigurationNamesItOrALibrarySystem) {
  EXPECT_EQ(qfleet::meta::system_named("two_qubit_cz_paper", 1.0, 2.0).control_names.size(), 6u);
  EXPECT_EQ(qfleet::meta::system_named("qubit_x", 0.5, 2.0).name, "qubit_x");
  try {
    qfleet::meta::cz_paper_system(1.0, NAN);
    FAIL() << "a non-finite coupling was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("must be finite"), std::string::npos) << e.what();
  }
}

}  // namespace cz_paper_test
