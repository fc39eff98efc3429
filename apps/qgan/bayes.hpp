// The best accuracy any classifier can reach at telling devices apart from a record of
// `shots` independent measurement outcomes, given the devices' exact outcome
// distributions p_1..p_K (what the engine computes) and equal priors: the Bayes
// (maximum a posteriori) rule picks argmax_k P_k(record), and
//   P(correct) = (1/K) sum_h max_k P_k(h),
// h over the histograms of `shots` outcomes (the histogram is a sufficient statistic of
// i.i.d. shots; P_k(h) is multinomial). No classifier of the same records does better
// in expectation (e.g. Devroye, Gyorfi & Lugosi, A Probabilistic Theory of Pattern
// Recognition (1996), Thm 2.1), so a trained network's accuracy is reported as a
// fraction of it (qfleet-qgan classify, docs/qgan.md).
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qfleet::qgan {

struct BayesLimit {
  double accuracy = 0;
  double error = 0;     // standard error (0 when exact)
  std::string method;   // "exact" | "monte_carlo"
  int64_t records = 0;  // Monte Carlo: records drawn per device; exact: histograms enumerated
  nlohmann::json to_json() const;
};

// Histograms of `shots` outcomes over m bins: C(shots + m - 1, m - 1), saturating at
// UINT64_MAX.
uint64_t histogram_count(int64_t m, int64_t shots);

// The Bayes accuracy by enumerating every histogram (log-space multinomials);
// std::invalid_argument when there are more than `max_histograms` or the rows are not
// distributions of one length.
double bayes_accuracy_exact(const std::vector<std::vector<double>>& p, int64_t shots,
                            uint64_t max_histograms = 2000000);

// Rows of equal length as a [rows, length] float64 tensor (the devices' distributions).
torch::Tensor distributions_tensor(const std::vector<std::vector<double>>& p);

// The MAP rule's scores: the log-likelihood of each record under each device, up to the
// multinomial coefficient they share. counts [N, M] and probabilities [K, M] (float64);
// returns [N, K]. An outcome a device never gives scores it below any possible record.
torch::Tensor log_likelihoods(const torch::Tensor& counts, const torch::Tensor& probabilities);

// The MAP rule's credit per record: 1 when the true label alone has the highest score,
// 1/t when it ties with t - 1 others (a fair coin among them), else 0. scores [N, K],
// labels [N] (int64); returns [N] float64.
torch::Tensor map_credit(const torch::Tensor& scores, const torch::Tensor& labels);

// `records` histograms [records, M] (float64) of `shots` draws from p, by sequential
// binomials (count_x ~ Bin(remaining, p_x / mass left)): independent of the engine's
// sampler, O(records * M) whatever the shots.
torch::Tensor draw_histograms(const std::vector<double>& p, int64_t shots, int64_t records, at::Generator& gen);

// Monte Carlo of the MAP rule: `records` histograms per device; the error is the
// standard error of the mean credit (devices' estimates independent).
BayesLimit bayes_accuracy_monte_carlo(const std::vector<std::vector<double>>& p, int64_t shots, int64_t records,
                                      uint64_t seed);

// Exact when there are at most `exact_limit` histograms, else Monte Carlo.
BayesLimit bayes_limit(const std::vector<std::vector<double>>& p, int64_t shots, int64_t records, uint64_t seed,
                       uint64_t exact_limit = 200000);

}  // namespace qfleet::qgan
