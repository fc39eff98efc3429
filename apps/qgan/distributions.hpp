// Statistics of discrete distributions over the same outcomes (a circuit's 2^n
// measurement results): the divergences the qGAN and the tournament report, the
// number of shots a likelihood-ratio test needs to tell two devices apart, and
// bootstrap confidence intervals for estimates from finite shots. Plain C++ (no
// torch): the tests compare every figure with scipy and with a simulation of the test.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace qfleet::qgan {

using Distribution = std::vector<double>;

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Throws std::invalid_argument naming `what` unless p is a probability vector: non-empty,
// every entry finite and in [0, 1 + 1e-9], summing to 1 within `tolerance`.
void check_distribution(const Distribution& p, const std::string& what, double tolerance = 1e-6);
// Both checked, and of the same length.
void check_pair(const Distribution& p, const Distribution& q);

// Relative entropy D(p || q) = sum_x p(x) ln(p(x) / q(x)) in nats, with 0 ln(0 / q) = 0.
// Where p(x) > 0 = q(x) the divergence is infinite and kInfinity is returned (the
// reports write it as the string "inf"; nothing is smoothed behind the user's back).
double kl_divergence(const Distribution& p, const Distribution& q);
// The Jensen-Shannon distance sqrt(JS(p, q)) with natural logarithms (scipy's
// jensenshannon with its default base e): symmetric, finite, at most sqrt(ln 2).
double js_distance(const Distribution& p, const Distribution& q);
// Total variation distance (1/2) sum_x |p(x) - q(x)|, in [0, 1].
double total_variation(const Distribution& p, const Distribution& q);
// The Bhattacharyya coefficient sum_x sqrt(p(x) q(x)), in [0, 1] (1: identical).
double bhattacharyya(const Distribution& p, const Distribution& q);
// The Kolmogorov-Smirnov distance between two distributions on a grid of rows x cols
// bins (row-major; rows = 1 for a 1-D distribution): the largest difference of the
// cumulative distributions F(i, j) = P(row <= i, col <= j).
double ks_distance(const Distribution& p, const Distribution& q, int64_t rows = 1);

// How many shots a likelihood-ratio test needs to tell p from q. The test: n shots
// are drawn from one of the two (equal prior); it answers "p" when the log-likelihood
// ratio L_n = sum_i ln(p(x_i) / q(x_i)) is > 0 (an outcome q cannot give makes L_n =
// +inf), else "q". Its error rates are alpha_n = P_p(L_n <= 0) and beta_n = P_q(L_n > 0).
// `shots` is the smallest n with max(alpha_n, beta_n) <= 1 - confidence, with each rate
// in the normal approximation of the per-shot ratio on the outcomes both can give,
// times the chance that no decisive outcome appears:
//   alpha_n ~= m_p^n Phi(-sqrt(n) mu_p / sigma_p),
// m_p = p(outcomes q can give), mu_p and sigma_p the mean and standard deviation of
// ln(p/q) under p restricted to them (and the same for beta with p and q exchanged).
// `bound` is guaranteed: max(alpha_n, beta_n) <= BC^n (Chernoff's bound at s = 1/2,
// BC the Bhattacharyya coefficient), so n = ceil(ln(1 - confidence) / ln BC) shots are
// always enough. Identical distributions: distinguishable = false, shots = bound = 0.
struct ShotsToDistinguish {
  bool distinguishable = false;
  int64_t shots = 0;   // normal approximation (the estimate)
  int64_t bound = 0;   // Chernoff-Bhattacharyya bound (always enough)
  double confidence = 0.95;
  double alpha = 0, beta = 0;  // the approximate error rates at `shots`
};
// Larger answers than this are reported as this cap with capped = true in the JSON.
inline constexpr int64_t kMaxShots = int64_t{1} << 50;
ShotsToDistinguish shots_to_distinguish(const Distribution& p, const Distribution& q, double confidence = 0.95);
// The approximate error rates (alpha_n, beta_n) above at a given n (for the tests).
std::pair<double, double> lr_test_error_rates(const Distribution& p, const Distribution& q, int64_t n);

// Empirical distribution of outcome indices (each < k).
Distribution histogram(const std::vector<uint64_t>& outcomes, std::size_t k);

// A statistic estimated from finite shots, with a bootstrap interval. Plug-in distances
// between histograms are biased upwards (sampling noise alone makes two histograms of
// one distribution differ), the more so the closer the distributions and the more
// outcomes, so the estimate and interval are the bootstrap's bias-corrected ones:
// value = 2 t - mean(t*), and the basic ("reverse percentile") interval
// [2 t - q_hi, 2 t - q_lo], with t the plug-in statistic, t* its resamples and q their
// (1 +- level) / 2 quantiles (Davison & Hinkley 1997, sec. 5.2); both clamped at 0.
struct Estimate {
  double value = 0;          // bias-corrected
  double plug_in = 0;        // the statistic of the observed histograms
  double low = 0, high = 0;  // the basic bootstrap interval
  double level = 0.95;
  int resamples = 0;
};
// The statistic f(hist_a, hist_b) of two samples, bootstrapped: each sample resampled
// with replacement (its own size), `resamples` times, from `rng`. Resampling a sample of
// n outcomes is a multinomial draw from its histogram.
Estimate bootstrap(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, std::size_t k,
                   double (*f)(const Distribution&, const Distribution&), int resamples, double level,
                   std::mt19937_64& rng);

// The standard normal distribution function and its inverse (Acklam's rational
// approximation refined by one Halley step: about 1e-15 relative).
double normal_cdf(double x);
double normal_quantile(double p);

}  // namespace qfleet::qgan
