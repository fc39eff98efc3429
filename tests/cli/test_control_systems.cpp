// The shared qubit gate-control systems (qfleet/control_systems.hpp) against Kronecker
// products of the Eigen reference's Pauli matrices, their noise conventions against the
// Lindblad dissipator written out, and the JSON writers (matrix_json, vector_json)
// through `qfleet eval`'s reader on gates whose fidelity is known in closed form.
#include <cmath>
#include <numbers>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "qfleet/control_systems.hpp"
#include "qfleet/json_lindblad.hpp"
#include "qfleet/json_problem.hpp"
#include "reference/dense.hpp"
#include "unit/expect_error.hpp"

namespace control_systems_test {

using qfleet::ComplexMatrix;
using ref::eye;
using ref::kron;
using ref::Mat;
using ref::pauli;
namespace ctl = qfleet::control;

Mat to_mat(const ComplexMatrix& m) { return ref::from_row_major(m); }

void expect_ops(const std::vector<ComplexMatrix>& got, const std::vector<Mat>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_LT((to_mat(got[k]) - want[k]).cwiseAbs().maxCoeff(), 1e-15) << what << " " << k;
}

Mat lower() { return ref::mat2(0, 1, 0, 0); }

TEST(ControlSystems, AreTheKroneckerProductsTheyName) {
  const Mat X = pauli('X'), Y = pauli('Y'), Z = pauli('Z'), I = eye(2);
  const double h = std::sqrt(0.5);
  const auto q = ctl::qubit_gate_system("qubit_x");
  EXPECT_EQ(q.qubits, 1);
  expect_ops(q.controls, {0.5 * X, 0.5 * Y}, "qubit_x controls");
  expect_ops(q.jumps, {lower(), h * Z}, "qubit_x jumps");
  expect_ops({q.target}, {X}, "qubit_x target");
  EXPECT_TRUE(q.drift.empty());
  EXPECT_EQ(q.control_names, (std::vector<std::string>{"x", "y"}));

  const auto cz = ctl::qubit_gate_system("two_qubit_cz_xx_zz");
  expect_ops(cz.controls,
             {0.5 * kron(X, I), 0.5 * kron(Y, I), 0.5 * kron(I, X), 0.5 * kron(I, Y), 0.5 * kron(X, X), 0.5 * kron(Z, Z)},
             "cz controls");
  expect_ops(cz.jumps, {kron(lower(), I), h * kron(Z, I), kron(I, lower()), h * kron(I, Z)}, "cz jumps");
  Mat czm = eye(4);
  czm(3, 3) = -1;
  expect_ops({cz.target}, {czm}, "cz target");
  EXPECT_EQ(cz.control_names, (std::vector<std::string>{"x0", "y0", "x1", "y1", "xx", "zz"}));
}

// The documented rates: at unit rate the relaxation jump empties |1> into |0> at rate 1
// and the dephasing jump damps the coherence <0|rho|1> at rate 1 (D[L] rho =
// L rho L^dag - {L^dag L, rho} / 2).
TEST(ControlSystems, JumpsRelaxAndDephaseAtTheirRates) {
  const auto q = ctl::qubit_gate_system("qubit_x");
  auto dissipator = [](const Mat& L, const Mat& rho) {
    return Mat(L * rho * L.adjoint() - 0.5 * (L.adjoint() * L * rho + rho * L.adjoint() * L));
  };
  Mat rho(2, 2);
  rho << 0.3, ref::cd(0.2, 0.1), ref::cd(0.2, -0.1), 0.7;
  const Mat relax = dissipator(to_mat(q.jumps[0]), rho), deph = dissipator(to_mat(q.jumps[1]), rho);
  EXPECT_NEAR(relax(1, 1).real(), -0.7, 1e-15);
  EXPECT_NEAR(relax(0, 0).real(), 0.7, 1e-15);
  EXPECT_LT(std::abs(deph(0, 1) + rho(0, 1)), 1e-15);
  EXPECT_LT(std::abs(deph(0, 0)) + std::abs(deph(1, 1)), 1e-15);
}

// A pi pulse on the X/2 (Y/2) control for unit time is exp(-i pi X / 2) = -i X: the
// average gate fidelity against X (Y) is 1, and against the identity it is 1/3.
TEST(ControlSystems, WrittenAsJsonTheyRunAsQfleetEvalProblems) {
  const auto q = ctl::qubit_gate_system("qubit_x");
  namespace qj = qfleet::json_problem;
  auto fidelity = [&](double ux, double uy, const ComplexMatrix& target) {
    const nlohmann::json p = {{"kind", "lindblad"},
                              {"dim", 2},
                              {"controls", {qj::matrix_json(q.controls[0]), qj::matrix_json(q.controls[1])}},
                              {"segment_duration", 1.0},
                              {"amplitudes", {{ux, uy}}},
                              {"gate", true},
                              {"target", {{"unitary", qj::matrix_json(target)}}}};
    return qj::evaluate(p)["fidelity"][0].get<double>();
  };
  const double pi = std::numbers::pi;
  EXPECT_NEAR(fidelity(pi, 0, q.target), 1.0, 1e-9);
  EXPECT_NEAR(fidelity(0, pi, {0, qfleet::Complex(0, -1), qfleet::Complex(0, 1), 0}), 1.0, 1e-9);
  EXPECT_NEAR(fidelity(pi, 0, {1, 0, 0, 1}), 1.0 / 3.0, 1e-9);
  EXPECT_EQ(qj::vector_json({1.0, qfleet::Complex(0.5, -2)}), nlohmann::json::parse("[1.0, [0.5, -2.0]]"));
  EXPECT_QFLEET_ERROR(qj::matrix_json(ComplexMatrix(3, 1.0)), "3 entries", "not a square");
}

TEST(ControlSystems, UnknownNamesAndNonFiniteOptionsAreClearErrors) {
  EXPECT_QFLEET_ERROR(ctl::qubit_gate_system("qubit_y"), "unknown system", "did you mean \"qubit_x\"");
  EXPECT_QFLEET_ERROR(ctl::qubit_gate_system("two_qubit_cz"), "two_qubit_cz_xx_zz");
  EXPECT_QFLEET_ERROR(ctl::qubit_gate_system("qubit_x", {NAN}), "finite");
  EXPECT_QFLEET_ERROR(ctl::qubit_gate_system("two_qubit_cz_paper"), "unknown system");  // (the meta-control app's)
  EXPECT_EQ(ctl::qubit_gate_system_names().size(), 2u);
}

}  // namespace control_systems_test
