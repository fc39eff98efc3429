// Least-squares fits of the reproduction's laws (docs/reproduction.md): the adaptation gap's
// saturation G_K = c (1 - exp(-beta K)) and straight lines, each with its R^2.
#pragma once

#include <vector>

namespace qfleet::meta {

struct SaturationFit {
  double c = 0, beta = 0, r2 = 0;
};
// Minimises sum (G_k - c (1 - e^{-beta K_k}))^2 over c in [c_lo, c_hi], beta in [beta_lo,
// beta_hi] (the original code's scipy curve_fit bounds: [0, 2] x [0.001, 10]): for a fixed
// beta the best c is linear least squares, so the fit is a search over beta alone (a
// log-spaced scan, then golden-section refinement around the best point). R^2 = 1 - SS_res / SS_tot.
SaturationFit fit_saturation(const std::vector<double>& K, const std::vector<double>& G, double c_lo = 0,
                             double c_hi = 2, double beta_lo = 1e-3, double beta_hi = 10);

struct LineFit {
  double slope = 0, intercept = 0, r2 = 0;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);
// y = slope x (through the origin), R^2 against the mean as the original code computed it.
LineFit fit_through_origin(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace qfleet::meta
