// The one-parameter gates' derivative identity the circuit executor relies on
// (kern::one_parameter_group): U(t) = exp(t K), so dU/dt = K U(t) with K = dU/dt at
// t = 0. Checked at many angles against the catalogue's own derivative formulas
// (the shift rule and the written-out phase gates), and against a central finite
// difference of the block, so a gate listed there that is not a group fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "kernels/gate_matrix.hpp"
#include "qfleet/gates.hpp"

namespace {

using Cx = qfleet::kern::Cx<double>;
using std::complex;

complex<double> z(Cx a) { return {a.re, a.im}; }

TEST(GateGenerators, OneParameterGroupsDifferentiateAsTheGeneratorTimesTheBlock) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> angle(-7.0, 7.0);
  int groups = 0;
  for (const auto& row : qfleet::kGateTable) {
    const qfleet::Gate g = row.id;
    if (!qfleet::kern::one_parameter_group(g)) continue;
    ++groups;
    ASSERT_EQ(qfleet::kern::gate_param_count(g), 1) << row.name;
    const int D = qfleet::kern::gate_block_dim(g);
    Cx k[16], u[16], du[16], up[16], um[16];
    const double zero[qfleet::kMaxGateParams] = {};
    qfleet::kern::gate_block_derivative<double>(g, zero, 0, k);
    for (int trial = 0; trial < 20; ++trial) {
      const double t[qfleet::kMaxGateParams] = {angle(rng), 0, 0};
      qfleet::kern::gate_block<double>(g, t, u);
      qfleet::kern::gate_block_derivative<double>(g, t, 0, du);
      const double h = 1e-5, tp[3] = {t[0] + h, 0, 0}, tm[3] = {t[0] - h, 0, 0};
      qfleet::kern::gate_block<double>(g, tp, up);
      qfleet::kern::gate_block<double>(g, tm, um);
      for (int r = 0; r < D; ++r) {
        for (int c = 0; c < D; ++c) {
          complex<double> ku = 0;
          for (int q = 0; q < D; ++q) ku += z(k[r * D + q]) * z(u[q * D + c]);
          const complex<double> fd = (z(up[r * D + c]) - z(um[r * D + c])) / (2 * h);
          EXPECT_LT(std::abs(ku - z(du[r * D + c])), 1e-14) << row.name << " t=" << t[0] << " entry " << r << c;
          EXPECT_LT(std::abs(ku - fd), 1e-9) << row.name << " t=" << t[0] << " entry " << r << c;
        }
      }
    }
  }
  // Every one-parameter gate of the catalogue is one: a new one that is not should
  // be left out of kern::one_parameter_group deliberately, and this count changed.
  int one_param = 0;
  for (const auto& row : qfleet::kGateTable) one_param += qfleet::kern::gate_param_count(row.id) == 1;
  EXPECT_EQ(groups, 11);
  EXPECT_EQ(groups, one_param);
}

}  // namespace
