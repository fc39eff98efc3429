// The Bayes limit of telling devices apart from shot records (bayes.hpp).
#include "bayes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace qfleet::qgan {
using json = nlohmann::json;

json BayesLimit::to_json() const {
  return {{"accuracy", accuracy}, {"error", error}, {"method", method}, {"records", records}};
}

uint64_t histogram_count(int64_t m, int64_t shots) {
  // C(shots + m - 1, k) with k = min(shots, m - 1), built up exactly: after step i it is
  // C(shots + m - 1 - k + i, i), an integer.
  // c * (n - k + i) / i with the common factor of c and i taken out first: i / g then
  // divides n - k + i, so nothing overflows before the result does.
  const uint64_t n = uint64_t(shots + m - 1), k = uint64_t(std::min(shots, m - 1));
  uint64_t c = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    const uint64_t g = std::gcd(c, i);
    if (__builtin_mul_overflow(c / g, (n - k + i) / (i / g), &c)) return std::numeric_limits<uint64_t>::max();
  }
  return c;
}

namespace {

void check_distributions(const std::vector<std::vector<double>>& p) {
  if (p.size() < 2) throw std::invalid_argument("the Bayes limit needs at least two devices");
  for (const auto& row : p) {
    if (row.size() != p[0].size() || row.empty()) throw std::invalid_argument("the devices' distributions differ in length");
    double s = 0;
    for (double x : row) {
      if (!(x >= 0)) throw std::invalid_argument("a device's distribution has a negative or NaN entry");
      s += x;
    }
    if (std::abs(s - 1) > 1e-6) throw std::invalid_argument("a device's distribution does not sum to 1");
  }
}

// Depth-first over the bins: partial[k] = sum over the bins so far of c log p_k - lgamma(c + 1).
struct Enumeration {
  const std::vector<std::vector<double>>& logp;  // [K][M], -inf where p = 0
  int64_t shots;
  double log_norm;  // lgamma(shots + 1)
  double total = 0;

  void visit(std::size_t bin, int64_t left, const std::vector<double>& partial) {
    const std::size_t K = logp.size(), M = logp[0].size();
    std::vector<double> next(K);
    const int64_t first = bin + 1 == M ? left : 0;  // the last bin takes what is left
    for (int64_t c = first; c <= left; ++c) {
      for (std::size_t k = 0; k < K; ++k)
        next[k] = partial[k] + (c == 0 ? 0.0 : double(c) * logp[k][bin]) - std::lgamma(double(c) + 1);
      if (bin + 1 == M) {
        double best = 0;
        for (double v : next) best = std::max(best, std::exp(log_norm + v));
        total += best;
      } else {
        visit(bin + 1, left - c, next);
      }
    }
  }
};

}  // namespace

double bayes_accuracy_exact(const std::vector<std::vector<double>>& p, int64_t shots, uint64_t max_histograms) {
  check_distributions(p);
  if (shots < 1) throw std::invalid_argument("the Bayes limit needs at least one shot");
  const uint64_t n = histogram_count(int64_t(p[0].size()), shots);
  if (n > max_histograms)
    throw std::invalid_argument(std::to_string(n) + " histograms of " + std::to_string(shots) + " shots over " +
                                std::to_string(p[0].size()) + " outcomes: too many to enumerate (at most " +
                                std::to_string(max_histograms) + ")");
  std::vector<std::vector<double>> logp = p;
  for (auto& row : logp)
    for (double& x : row) x = std::log(x);  // log 0 = -inf: exp gives 0 for a histogram that uses it
  Enumeration e{logp, shots, std::lgamma(double(shots) + 1)};
  e.visit(0, shots, std::vector<double>(p.size(), 0.0));
  return e.total / double(p.size());
}

torch::Tensor distributions_tensor(const std::vector<std::vector<double>>& p) {
  torch::Tensor t = torch::empty({int64_t(p.size()), p.empty() ? 0 : int64_t(p[0].size())}, torch::kFloat64);
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (p[k].size() != p[0].size()) throw std::invalid_argument("the devices' distributions differ in length");
    std::copy(p[k].begin(), p[k].end(), t[int64_t(k)].data_ptr<double>());
  }
  return t;
}

torch::Tensor log_likelihoods(const torch::Tensor& counts, const torch::Tensor& probabilities) {
  // log 0 -> -1e30: a count times it stays finite (counts < 2^60) and below any
  // real log-likelihood (>= shots * log(smallest double) > -1e22), and 0 * -1e30 = 0.
  const torch::Tensor logp = probabilities.to(torch::kFloat64).log().clamp_min(-1e30);
  return counts.to(torch::kFloat64).matmul(logp.t());
}

torch::Tensor map_credit(const torch::Tensor& scores, const torch::Tensor& labels) {
  const torch::Tensor best = std::get<0>(scores.max(1, true));
  const torch::Tensor top = scores == best;
  const torch::Tensor ties = top.sum(1).to(torch::kFloat64);
  const torch::Tensor hit = top.gather(1, labels.view({-1, 1})).squeeze(1).to(torch::kFloat64);
  return hit / ties;
}

torch::Tensor draw_histograms(const std::vector<double>& p, int64_t shots, int64_t records, at::Generator& gen) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor out = torch::zeros({records, int64_t(p.size())}, f64);
  torch::Tensor left = torch::full({records}, double(shots), f64);
  double mass = 1;
  for (std::size_t x = 0; x + 1 < p.size(); ++x) {
    const double q = mass > 0 ? std::clamp(p[x] / mass, 0.0, 1.0) : 0.0;
    const torch::Tensor c = at::binomial(left, torch::full({records}, q, f64), gen);
    out.select(1, int64_t(x)).copy_(c);
    left -= c;
    mass -= p[x];
  }
  out.select(1, int64_t(p.size()) - 1).copy_(left);
  return out;
}

BayesLimit bayes_accuracy_monte_carlo(const std::vector<std::vector<double>>& p, int64_t shots, int64_t records,
                                      uint64_t seed) {
  check_distributions(p);
  if (shots < 1 || records < 2) throw std::invalid_argument("the Monte Carlo Bayes limit needs shots >= 1 and records >= 2");
  const auto K = int64_t(p.size());
  const torch::Tensor probs = distributions_tensor(p);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  double mean = 0, var = 0;
  for (int64_t k = 0; k < K; ++k) {
    const torch::Tensor h = draw_histograms(p[k], shots, records, gen);
    const torch::Tensor credit = map_credit(log_likelihoods(h, probs), torch::full({records}, k, torch::kInt64));
    mean += credit.mean().item<double>() / double(K);
    var += credit.var().item<double>() / double(records) / double(K * K);
  }
  return {mean, std::sqrt(var), "monte_carlo", records};
}

BayesLimit bayes_limit(const std::vector<std::vector<double>>& p, int64_t shots, int64_t records, uint64_t seed,
                       uint64_t exact_limit) {
  check_distributions(p);
  const uint64_t n = histogram_count(int64_t(p[0].size()), shots);
  if (n <= exact_limit) return {bayes_accuracy_exact(p, shots, exact_limit), 0.0, "exact", int64_t(n)};
  return bayes_accuracy_monte_carlo(p, shots, records, seed);
}

}  // namespace qfleet::qgan
