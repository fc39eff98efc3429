// qfleet-qgan classify (apps/qgan/bayes.hpp, classifier.hpp): the Bayes limit against a
// brute-force sum over every ordered shot sequence and against its own Monte Carlo,
// the MAP rule's ties, the binomial histogram sampler, the engine's records, and a
// short training run whose network stays below the limit (and above chance) and
// resumes bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "bayes.hpp"
#include "classifier.hpp"
#include "../apps_common/settings_checks.hpp"

namespace fs = std::filesystem;
using namespace qfleet::qgan;

namespace classifier_tests {

// (1/K) sum over all M^s ordered sequences of max_k prod_i p_k(x_i): the Bayes accuracy
// from its definition, without histograms or multinomial coefficients.
double brute_force_bayes(const std::vector<std::vector<double>>& p, int shots) {
  const std::size_t M = p[0].size();
  std::vector<std::size_t> seq(std::size_t(shots), 0);
  double total = 0;
  while (true) {
    double best = 0;
    for (const auto& row : p) {
      double prob = 1;
      for (std::size_t x : seq) prob *= row[x];
      best = std::max(best, prob);
    }
    total += best;
    std::size_t i = 0;
    while (i < seq.size() && ++seq[i] == M) seq[i++] = 0;
    if (i == seq.size()) break;
  }
  return total / double(p.size());
}

const std::vector<std::vector<double>> kThree = {
    {0.5, 0.2, 0.2, 0.1}, {0.25, 0.25, 0.25, 0.25}, {0.1, 0.3, 0.2, 0.4}};

TEST(BayesLimit, ExactEqualsTheSumOverEveryShotSequence) {
  for (int shots : {1, 2, 3, 5, 7}) EXPECT_NEAR(bayes_accuracy_exact(kThree, shots), brute_force_bayes(kThree, shots), 1e-12) << shots;
  // A device that never gives an outcome, and one shot: max_x p_k(x) summed by hand.
  const std::vector<std::vector<double>> two = {{0.7, 0.3, 0.0}, {0.2, 0.3, 0.5}};
  EXPECT_NEAR(bayes_accuracy_exact(two, 1), (0.7 + 0.3 + 0.5) / 2, 1e-15);
  EXPECT_NEAR(bayes_accuracy_exact(two, 4), brute_force_bayes(two, 4), 1e-12);
  // Identical devices: chance, whatever the shots; disjoint supports: certainty.
  EXPECT_NEAR(bayes_accuracy_exact({kThree[0], kThree[0], kThree[0]}, 6), 1.0 / 3, 1e-12);
  EXPECT_NEAR(bayes_accuracy_exact({{0.5, 0.5, 0, 0}, {0, 0, 0.5, 0.5}}, 3), 1.0, 1e-15);
}

TEST(BayesLimit, HistogramCountIsTheBinomialCoefficient) {
  // C(s + m - 1, m - 1) from Pascal's triangle.
  std::vector<std::vector<double>> c(40, std::vector<double>(40, 0));
  for (int n = 0; n < 40; ++n) {
    c[n][0] = 1;
    for (int k = 1; k <= n; ++k) c[n][k] = c[n - 1][k - 1] + c[n - 1][k];
  }
  for (int m = 1; m <= 8; ++m)
    for (int s = 1; s <= 30; ++s) EXPECT_EQ(double(histogram_count(m, s)), c[s + m - 1][m - 1]) << m << " " << s;
  EXPECT_EQ(histogram_count(64, 100000), UINT64_MAX);
}

TEST(BayesLimit, MonteCarloAgreesWithTheExactValue) {
  for (int shots : {3, 12}) {
    const double exact = bayes_accuracy_exact(kThree, shots);
    const BayesLimit mc = bayes_accuracy_monte_carlo(kThree, shots, 20000, 7);
    EXPECT_GT(mc.error, 0);
    EXPECT_LT(std::abs(mc.accuracy - exact), 4 * mc.error) << shots << ": " << mc.accuracy << " vs " << exact;
  }
  EXPECT_EQ(bayes_limit(kThree, 5, 100, 1).method, "exact");
  EXPECT_EQ(bayes_limit(kThree, 5, 100, 1, 10).method, "monte_carlo");
}

TEST(BayesLimit, TiesAreSplitAndBadInputIsRefused) {
  const torch::Tensor scores = torch::tensor({1.0, 1.0, 0.0, 2.0, 1.0, 1.0, 3.0, 3.0, 3.0}, torch::kFloat64).view({3, 3});
  const torch::Tensor credit = map_credit(scores, torch::tensor({0, 1, 2}, torch::kInt64));
  EXPECT_DOUBLE_EQ(credit[0].item<double>(), 0.5);
  EXPECT_DOUBLE_EQ(credit[1].item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(credit[2].item<double>(), 1.0 / 3);
  // An outcome a device never gives rules it out, and 0 * log 0 counts as 0.
  const torch::Tensor ll = log_likelihoods(torch::tensor({{2.0, 0.0}}, torch::kFloat64),
                                           torch::tensor({{0.5, 0.5}, {1.0, 0.0}, {0.0, 1.0}}, torch::kFloat64));
  EXPECT_NEAR(ll[0][0].item<double>(), 2 * std::log(0.5), 1e-15);
  EXPECT_EQ(ll[0][1].item<double>(), 0.0);
  EXPECT_LT(ll[0][2].item<double>(), -1e29);
  EXPECT_THROW(bayes_accuracy_exact({{0.5, 0.5}}, 3), std::invalid_argument);
  EXPECT_THROW(bayes_accuracy_exact({{0.5, 0.6}, {0.5, 0.5}}, 3), std::invalid_argument);
  EXPECT_THROW(bayes_accuracy_exact({{0.5, 0.5}, {1.0}}, 3), std::invalid_argument);
  EXPECT_THROW(bayes_accuracy_exact(kThree, 1000, 1000), std::invalid_argument);
}

TEST(BayesLimit, BinomialHistogramsHaveTheMultinomialMoments) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const std::vector<double> p = {0.1, 0.0, 0.6, 0.3};
  const torch::Tensor h = draw_histograms(p, 50, 40000, gen);
  EXPECT_TRUE(torch::all(h.sum(1) == 50).item<bool>());
  EXPECT_EQ(h.select(1, 1).abs().sum().item<double>(), 0.0);
  const torch::Tensor mean = h.mean(0), var = h.var(0);
  for (int x = 0; x < 4; ++x) {
    const double m = 50 * p[std::size_t(x)], v = 50 * p[std::size_t(x)] * (1 - p[std::size_t(x)]);
    EXPECT_NEAR(mean[x].item<double>(), m, 5 * std::sqrt(v / 40000) + 1e-12) << x;
    EXPECT_NEAR(var[x].item<double>(), v, 0.05 * v + 1e-12) << x;
  }
}

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("qfleet_classifier_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

ClassifierConfig small_config(const fs::path& out) {
  ClassifierConfig c;
  c.qubits = 3;
  c.shots = {4, 32};
  c.train_records = 1500;
  c.test_records = 1000;
  c.bayes_records = 20000;
  c.hidden = {64};
  c.epochs = 6;
  c.threads = 2;
  c.progress = false;
  c.out = out.string();
  return c;
}

TEST(DeviceClassifier, EngineRecordsFollowTheExactDistributions) {
  ClassifierConfig c = small_config(temp_dir("records"));
  const ClassifierData d = classifier_distributions(c);
  ASSERT_EQ(d.devices.size(), 6u);
  ASSERT_EQ(d.probabilities[0].size(), 8u);
  const Records r = draw_records(d, 16, 3000, 5, 2);
  ASSERT_EQ(r.counts.sizes(), (std::vector<int64_t>{6 * 3000, 8}));
  EXPECT_TRUE(torch::all(r.counts.sum(1) == 16).item<bool>());
  for (int64_t k = 0; k < 6; ++k) {
    EXPECT_TRUE(torch::all(r.labels.narrow(0, k * 3000, 3000) == k).item<bool>());
    const torch::Tensor freq = r.counts.narrow(0, k * 3000, 3000).to(torch::kFloat64).sum(0) / (16.0 * 3000);
    for (int64_t x = 0; x < 8; ++x) {
      const double p = d.probabilities[std::size_t(k)][std::size_t(x)];
      EXPECT_NEAR(freq[x].item<double>(), p, 5 * std::sqrt(p * (1 - p) / (16.0 * 3000)) + 1e-12) << k << " " << x;
    }
  }
  c.circuit = "random_x";
  EXPECT_THROW(classifier_distributions(c), std::invalid_argument);
  c.circuit = "teleport";
  EXPECT_THROW(classifier_distributions(c), std::invalid_argument);
}

TEST(DeviceClassifier, StaysBelowTheBayesLimitAndResumesBitForBit) {
  const fs::path d = temp_dir("train");
  ClassifierConfig c = small_config(d / "full");
  const auto full = run_classifier(c);
  ASSERT_EQ(full["results"].size(), 2u);
  for (const auto& r : full["results"]) {
    const double acc = r["accuracy"], err = r["accuracy_error"];
    const double bayes = r["bayes"]["accuracy"], berr = r["bayes"]["error"];
    const double sigma = std::hypot(err, berr);
    EXPECT_LE(acc, bayes + 3 * sigma) << r["shots"] << " shots: the network above the Bayes limit";
    EXPECT_GT(acc, full["chance"].get<double>() + 5 * err) << r["shots"] << " shots: the network learned nothing";
    // The MAP rule on the engine's test records estimates the same limit.
    const double map = r["map_rule_on_test"];
    EXPECT_LT(std::abs(map - bayes), 4 * std::hypot(std::sqrt(bayes * (1 - bayes) / 6000.0), berr)) << r["shots"];
  }
  EXPECT_EQ(full["results"][0]["bayes"]["method"], "exact");  // C(11, 7) = 330 histograms of 4 shots
  EXPECT_LT(full["results"][0]["accuracy"].get<double>(), full["results"][1]["accuracy"].get<double>());
  // 3 epochs, then --resume to 6: the same network, bit for bit.
  c.out = (d / "split").string();
  c.epochs = 3;
  run_classifier(c);
  c.epochs = 6;
  c.resume = true;
  const auto resumed = run_classifier(c);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed["results"][i]["history"], full["results"][i]["history"]);
    EXPECT_EQ(resumed["results"][i]["confusion"], full["results"][i]["confusion"]);
    EXPECT_EQ(resumed["results"][i]["resumed_from_step"], full["results"][i]["timing"]["steps_per_epoch"].get<int64_t>() * 3);
  }
  c.lr = 0.01;  // another configuration
  EXPECT_THROW(run_classifier(c), std::exception);
  fs::remove_all(d);
}

// classifier.json and ClassifierConfig agree (every key bound, the defaults the schema's); a
// struct built in code is checked by the schema, plus the rules it cannot state.
TEST(DeviceClassifier, SettingsAreBoundToTheSchema) {
  settings_checks::expect_bound(classifier_settings(), classifier_schema());
  settings_checks::expect_refused(settings_checks::Edits<ClassifierConfig>{
      {[](ClassifierConfig& c) { c.qubits = 11; }, "key 'qubits': expected an integer in [1, 10], got 11"},
      {[](ClassifierConfig& c) { c.shots = {16, 0}; }, "key 'shots'"},
      {[](ClassifierConfig& c) { c.shots = {}; }, "shots: 1 to 32 shot counts"},
      {[](ClassifierConfig& c) { c.train_records = 1 << 20; }, "more than 2^27 outcomes per device"},
      {[](ClassifierConfig& c) { c.lr = 0; }, "lr must be in (0, 10)"},
      {[](ClassifierConfig& c) { c.circuit = "qgan_generator"; }, "needs generator_report"}});
}

}  // namespace classifier_tests
