// Statistics of discrete distributions (distributions.hpp).
#include "distributions.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace qfleet::qgan {

void check_distribution(const Distribution& p, const std::string& what, double tolerance) {
  if (p.empty()) throw std::invalid_argument(what + ": an empty distribution");
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0 || p[i] > 1 + 1e-9)
      throw std::invalid_argument(what + ": entry " + std::to_string(i) + " = " + std::to_string(p[i]) +
                                  " is not a probability (finite, in [0, 1])");
    sum += p[i];
  }
  if (std::abs(sum - 1) > tolerance)
    throw std::invalid_argument(what + ": the probabilities sum to " + std::to_string(sum) + ", not 1");
}

void check_pair(const Distribution& p, const Distribution& q) {
  check_distribution(p, "p");
  check_distribution(q, "q");
  if (p.size() != q.size())
    throw std::invalid_argument("distributions over different outcomes: " + std::to_string(p.size()) + " and " +
                                std::to_string(q.size()) + " entries");
}

double kl_divergence(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double d = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    if (q[i] == 0) return kInfinity;
    d += p[i] * std::log(p[i] / q[i]);
  }
  return std::max(d, 0.0);  // rounding can leave -1e-17 for equal distributions
}

double js_distance(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double js = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double m = 0.5 * (p[i] + q[i]);
    if (p[i] > 0) js += 0.5 * p[i] * std::log(p[i] / m);
    if (q[i] > 0) js += 0.5 * q[i] * std::log(q[i] / m);
  }
  return std::sqrt(std::max(js, 0.0));
}

double total_variation(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double tv = 0;
  for (std::size_t i = 0; i < p.size(); ++i) tv += std::abs(p[i] - q[i]);
  return 0.5 * tv;
}

double bhattacharyya(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double bc = 0;
  for (std::size_t i = 0; i < p.size(); ++i) bc += std::sqrt(p[i] * q[i]);
  return std::min(bc, 1.0);
}

double ks_distance(const Distribution& p, const Distribution& q, int64_t rows) {
  check_pair(p, q);
  const auto k = int64_t(p.size());
  if (rows < 1 || k % rows != 0)
    throw std::invalid_argument("ks_distance: " + std::to_string(k) + " bins do not form " + std::to_string(rows) + " rows");
  const int64_t cols = k / rows;
  // F(i, j) = sum_{r <= i, c <= j} (p - q): column sums accumulated row by row.
  std::vector<double> col(std::size_t(cols), 0.0);
  double ks = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double f = 0;
    for (int64_t c = 0; c < cols; ++c) {
      col[std::size_t(c)] += p[std::size_t(r * cols + c)] - q[std::size_t(r * cols + c)];
      f += col[std::size_t(c)];
      ks = std::max(ks, std::abs(f));
    }
  }
  return ks;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("normal_quantile: p must be in (0, 1)");
  // Acklam's rational approximation (relative error 1.15e-9), then one Halley step.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  const double lo = 0.02425;
  double x;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - lo) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = normal_cdf(x) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

namespace {

// One side of the test: the true distribution `t` against the alternative `o`.
struct Side {
  double mass = 1;  // t(outcomes o can give): the chance a shot is not decisive
  double mu = 0, sigma = 0;  // of ln(t / o) under t restricted to those outcomes
};

Side side(const Distribution& t, const Distribution& o) {
  Side s;
  double m = 0, s1 = 0, s2 = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == 0 || o[i] == 0) continue;
    const double l = std::log(t[i] / o[i]);
    m += t[i];
    s1 += t[i] * l;
    s2 += t[i] * l * l;
  }
  s.mass = std::min(m, 1.0);
  if (m > 0) {
    s.mu = s1 / m;
    s.sigma = std::sqrt(std::max(s2 / m - s.mu * s.mu, 0.0));
  }
  return s;
}

// P(wrong answer after n shots) for one side, in the approximation of the header.
double side_error(const Side& s, double n) {
  if (s.mass == 0) return 0;  // every shot is decisive
  double phi;
  if (s.sigma <= 1e-300) phi = s.mu > 0 ? 0.0 : 1.0;  // a constant ratio: the sign decides (a tie counts as wrong)
  else phi = normal_cdf(-std::sqrt(n) * s.mu / s.sigma);
  return std::pow(s.mass, n) * phi;
}

}  // namespace

std::pair<double, double> lr_test_error_rates(const Distribution& p, const Distribution& q, int64_t n) {
  check_pair(p, q);
  if (n < 1) throw std::invalid_argument("lr_test_error_rates: n must be at least 1");
  // alpha: truth p, wrong when L_n <= 0; beta: truth q, wrong when L_n > 0, i.e. when
  // ln(q/p) summed is < 0 - the same form with the roles exchanged.
  return {side_error(side(p, q), double(n)), side_error(side(q, p), double(n))};
}

ShotsToDistinguish shots_to_distinguish(const Distribution& p, const Distribution& q, double confidence) {
  check_pair(p, q);
  if (!(confidence > 0.5 && confidence < 1)) throw std::invalid_argument("confidence must be in (0.5, 1)");
  ShotsToDistinguish r;
  r.confidence = confidence;
  const double delta = 1 - confidence;
  const double bc = bhattacharyya(p, q);
  if (total_variation(p, q) < 1e-15) return r;  // identical: no number of shots tells them apart
  r.distinguishable = true;
  r.bound = bc <= 0 ? 1 : std::clamp<int64_t>(int64_t(std::ceil(std::log(delta) / std::log(bc))), 1, kMaxShots);
  const Side sp = side(p, q), sq = side(q, p);
  auto err = [&](double n) { return std::max(side_error(sp, n), side_error(sq, n)); };
  // The smallest n with err(n) <= delta: double until it holds (never past the
  // guaranteed bound, where the bound's n is the answer too), then bisect.
  int64_t hi = 1;
  while (hi < r.bound && err(double(hi)) > delta) hi *= 2;
  hi = std::min(hi, r.bound);
  int64_t lo = hi / 2;  // err(lo) > delta, or lo = 0
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (err(double(mid)) > delta ? lo : hi) = mid;
  }
  r.shots = hi;
  r.alpha = side_error(sp, double(hi));
  r.beta = side_error(sq, double(hi));
  return r;
}

Distribution histogram(const std::vector<uint64_t>& outcomes, std::size_t k) {
  if (outcomes.empty()) throw std::invalid_argument("histogram: no outcomes");
  Distribution h(k, 0.0);
  for (uint64_t x : outcomes) {
    if (x >= k) throw std::invalid_argument("histogram: outcome " + std::to_string(x) + " outside 0.." + std::to_string(k - 1));
    h[x] += 1;
  }
  for (double& v : h) v /= double(outcomes.size());
  return h;
}

namespace {

// A multinomial draw of n outcomes from h (conditional binomials), as frequencies.
Distribution resample(const Distribution& h, std::size_t n, std::mt19937_64& rng) {
  Distribution out(h.size(), 0.0);
  std::size_t left = n;
  double mass = 1;
  for (std::size_t i = 0; i < h.size() && left > 0; ++i) {
    if (h[i] <= 0) continue;
    const double pi = mass > 0 ? std::min(1.0, h[i] / mass) : 1.0;
    const auto c = std::binomial_distribution<std::size_t>(left, pi)(rng);
    out[i] = double(c) / double(n);
    left -= c;
    mass -= h[i];
  }
  return out;
}

}  // namespace

Estimate bootstrap(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, std::size_t k,
                   double (*f)(const Distribution&, const Distribution&), int resamples, double level,
                   std::mt19937_64& rng) {
  if (resamples < 10) throw std::invalid_argument("bootstrap: at least 10 resamples");
  if (!(level > 0 && level < 1)) throw std::invalid_argument("bootstrap: level must be in (0, 1)");
  const Distribution ha = histogram(a, k), hb = histogram(b, k);
  Estimate e;
  e.plug_in = f(ha, hb);
  e.level = level;
  e.resamples = resamples;
  std::vector<double> stats(static_cast<std::size_t>(resamples));
  double mean = 0;
  for (auto& s : stats) mean += (s = f(resample(ha, a.size(), rng), resample(hb, b.size(), rng))) / double(resamples);
  std::sort(stats.begin(), stats.end());
  auto quantile = [&](double u) {  // linear interpolation between order statistics (numpy's default)
    const double pos = u * double(stats.size() - 1);
    const auto i = std::size_t(std::floor(pos));
    const double frac = pos - double(i);
    return i + 1 < stats.size() ? stats[i] * (1 - frac) + stats[i + 1] * frac : stats[i];
  };
  e.value = std::max(0.0, 2 * e.plug_in - mean);
  e.low = std::max(0.0, 2 * e.plug_in - quantile((1 + level) / 2));
  e.high = std::max(0.0, 2 * e.plug_in - quantile((1 - level) / 2));
  return e;
}

}  // namespace qfleet::qgan
