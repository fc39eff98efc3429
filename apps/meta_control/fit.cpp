// Least-squares fits (fit.hpp).
#include "fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qfleet::meta {

namespace {

void check(const std::vector<double>& x, const std::vector<double>& y, std::size_t min_points) {
  if (x.size() != y.size()) throw std::invalid_argument("fit: x and y differ in length");
  if (x.size() < min_points) throw std::invalid_argument("fit: needs at least " + std::to_string(min_points) + " points");
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) throw std::invalid_argument("fit: a point is not finite");
}

double r_squared(const std::vector<double>& y, double ss_res) {
  double mean = 0;
  for (double v : y) mean += v;
  mean /= double(y.size());
  double ss_tot = 0;
  for (double v : y) ss_tot += (v - mean) * (v - mean);
  return ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
}

}  // namespace

SaturationFit fit_saturation(const std::vector<double>& K, const std::vector<double>& G, double c_lo, double c_hi,
                             double beta_lo, double beta_hi) {
  check(K, G, 2);
  // The best c for a given beta and the residual sum of squares there.
  auto at = [&](double beta, double& c) {
    double fy = 0, ff = 0;
    for (std::size_t i = 0; i < K.size(); ++i) {
      const double f = 1 - std::exp(-beta * K[i]);
      fy += f * G[i];
      ff += f * f;
    }
    c = std::clamp(ff > 0 ? fy / ff : 0.0, c_lo, c_hi);
    double ss = 0;
    for (std::size_t i = 0; i < K.size(); ++i) {
      const double r = G[i] - c * (1 - std::exp(-beta * K[i]));
      ss += r * r;
    }
    return ss;
  };
  const int n = 2000;
  const double l0 = std::log(beta_lo), l1 = std::log(beta_hi);
  int best = 0;
  double best_ss = INFINITY, c = 0;
  for (int i = 0; i <= n; ++i) {
    const double ss = at(std::exp(l0 + (l1 - l0) * i / n), c);
    if (ss < best_ss) best_ss = ss, best = i;
  }
  // Golden-section search on log beta between the scan's neighbours of the best point.
  double a = l0 + (l1 - l0) * std::max(best - 1, 0) / n, b = l0 + (l1 - l0) * std::min(best + 1, n) / n;
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = at(std::exp(x1), c), f2 = at(std::exp(x2), c);
  for (int it = 0; it < 100; ++it) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = at(std::exp(x1), c);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = at(std::exp(x2), c);
    }
  }
  SaturationFit fit;
  fit.beta = std::exp((a + b) / 2);
  const double ss = at(fit.beta, fit.c);
  fit.r2 = r_squared(G, ss);
  return fit;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  check(x, y, 2);
  const double n = double(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  if (sxx == 0) throw std::invalid_argument("fit: every x is the same");
  LineFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double ss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) ss += std::pow(y[i] - f.slope * x[i] - f.intercept, 2);
  f.r2 = r_squared(y, ss);
  return f;
}

LineFit fit_through_origin(const std::vector<double>& x, const std::vector<double>& y) {
  check(x, y, 1);
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxx += x[i] * x[i], sxy += x[i] * y[i];
  if (sxx == 0) throw std::invalid_argument("fit: every x is 0");
  LineFit f;
  f.slope = sxy / sxx;
  double ss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) ss += std::pow(y[i] - f.slope * x[i], 2);
  f.r2 = r_squared(y, ss);
  return f;
}

}  // namespace qfleet::meta
