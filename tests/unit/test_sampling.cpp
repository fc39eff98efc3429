// Program::sample: reproducible streams, independence from the thread count, and
// outcome frequencies that match the reference probabilities.
#include <gtest/gtest.h>

#include "unit/harness.hpp"

namespace {

struct Sampler {
  std::unique_ptr<ref::Twin> t;
  ref::Batch b;
};

Sampler random_sampler(int n, std::size_t B, std::mt19937_64& rng) {
  Sampler s;
  s.t = std::make_unique<ref::Twin>(n);
  ref::RandomSpec spec;
  spec.items = 4 * n;
  spec.measure = false;
  ref::random_circuit(*s.t, rng, spec);
  s.t->expval(ref::word({{'Z', 0}}));
  s.b = ref::random_batch(rng, B, s.t->r.n_inputs, s.t->r.n_weights, false);
  return s;
}

template <class R = double>
std::vector<std::uint64_t> draw(const qfleet::Program& p, const ref::Batch& b, const std::vector<int>& wires,
                                std::size_t shots, std::uint64_t seed) {
  const ref::Run<R> run(b);
  std::vector<std::uint64_t> out(b.B * shots, ~std::uint64_t{0});
  p.sample<R>(run.args(b.B), wires, shots, seed, out);
  return out;
}

TEST(Sampling, SameSeedGivesIdenticalSamples) {
  std::mt19937_64 rng(1);
  const Sampler s = random_sampler(4, 5, rng);
  const qfleet::Program p = qfleet::compile(s.t->q);
  const auto a = draw(p, s.b, {}, 500, 1234);
  const auto b = draw(p, s.b, {}, 500, 1234);
  EXPECT_EQ(a, b);
  const auto c = draw(p, s.b, {3, 1}, 500, 99);
  EXPECT_EQ(c, draw(p, s.b, {3, 1}, 500, 99));
}

TEST(Sampling, AnotherSeedGivesOtherSamples) {
  std::mt19937_64 rng(2);
  const Sampler s = random_sampler(4, 3, rng);
  const qfleet::Program p = qfleet::compile(s.t->q);
  const auto a = draw(p, s.b, {}, 400, 1);
  const auto b = draw(p, s.b, {}, 400, 2);
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  // Two independent streams over >= 2 likely outcomes agree on far fewer than all draws.
  EXPECT_LT(same, a.size() * 9 / 10);
}

TEST(Sampling, ResultsDoNotDependOnTheThreadCountOrTheIsa) {
  std::mt19937_64 rng(3);
  const Sampler s = random_sampler(5, 37, rng);
  std::vector<std::uint64_t> first;
  for (const std::string& isa : qfleet::available_isas()) {
    for (int threads : {1, 2, 0}) {
      qfleet::CompileOptions o;
      o.isa = isa;
      o.num_threads = threads;
      const auto got = draw(qfleet::compile(s.t->q, o), s.b, {4, 0, 2}, 300, 77);
      if (first.empty()) first = got;
      // Different ISAs may round probabilities differently in the last bit, which can
      // move a draw that falls exactly on a CDF boundary; with 53-bit uniforms that
      // does not happen in 11100 draws, so the samples must be identical.
      EXPECT_EQ(got, first) << "isa " << isa << ", num_threads " << threads;
    }
  }
}

TEST(Sampling, EachSampleHasItsOwnStreamWhateverTheBatchSize) {
  std::mt19937_64 rng(4);
  Sampler s = random_sampler(3, 6, rng);
  const qfleet::Program p = qfleet::compile(s.t->q);
  const std::size_t shots = 200;
  const auto all = draw(p, s.b, {}, shots, 42);
  const auto head = draw(p, s.b.prefix(2), {}, shots, 42);
  ASSERT_EQ(head.size(), 2 * shots);
  EXPECT_TRUE(std::equal(head.begin(), head.end(), all.begin()));
  // Two samples with the same inputs still draw different (independent) outcomes.
  ref::Batch twin = s.b.prefix(2);
  std::copy(twin.x.begin(), twin.x.begin() + twin.ni, twin.x.begin() + twin.ni);
  const auto tw = draw(p, twin, {}, shots, 42);
  EXPECT_FALSE(std::equal(tw.begin(), tw.begin() + shots, tw.begin() + shots));
}

TEST(Sampling, DeterministicStatesAlwaysGiveTheirOutcome) {
  qfleet::Circuit c(3);
  c.add("PauliX", {0}).add("PauliX", {2}).expval("Z0");  // |101>
  const qfleet::Program p = qfleet::compile(c);
  const ref::Batch b;
  for (const auto& [wires, want] : std::vector<std::pair<std::vector<int>, std::uint64_t>>{
           {{}, 5}, {{0, 1, 2}, 5}, {{2, 1, 0}, 5}, {{1, 0}, 1}, {{0, 1}, 2}, {{1}, 0}, {{2}, 1}}) {
    const auto got = draw(p, b, wires, 50, 7);
    for (std::uint64_t v : got) EXPECT_EQ(v, want) << "wires " << testing::PrintToString(wires);
  }
}

// Per-outcome check: the count of outcome j in N shots is Binomial(N, p_j), so the
// frequency f_j has standard deviation sigma_j = sqrt(p_j (1 - p_j) / N). We accept
// |f_j - p_j| <= 5 sigma_j + 1/N. Under the normal approximation a 5-sigma miss has
// probability 5.7e-7 per outcome, so over the few hundred outcomes checked here a
// correct sampler fails with probability < 1e-3 for an arbitrary seed (and the
// seeds are fixed, so the test is deterministic). The 1/N slack covers outcomes so
// rare (N p << 1) that the normal approximation does not hold and a single stray
// count would otherwise exceed 5 sigma. A sampler using the wrong probabilities,
// wire order or stream misses by far more than this.
void expect_frequencies_match(const std::vector<std::uint64_t>& draws, std::size_t b, std::size_t shots,
                              const std::vector<double>& p, const std::string& what) {
  std::vector<double> f(p.size(), 0.0);
  for (std::size_t s = 0; s < shots; ++s) {
    const std::uint64_t v = draws[b * shots + s];
    ASSERT_LT(v, p.size()) << what;
    f[v] += 1.0 / static_cast<double>(shots);
  }
  const double N = static_cast<double>(shots);
  for (std::size_t j = 0; j < p.size(); ++j) {
    const double bound = 5 * std::sqrt(p[j] * (1 - p[j]) / N) + 1 / N;
    EXPECT_LE(std::abs(f[j] - p[j]), bound) << what << ": outcome " << j << " p=" << p[j] << " f=" << f[j];
  }
}

TEST(Sampling, FrequenciesMatchTheReferenceProbabilities) {
  std::mt19937_64 rng(5);
  const std::size_t shots = 20000;
  for (int n : {1, 3, 5}) {
    const Sampler s = random_sampler(n, 3, rng);
    const std::vector<std::vector<int>> subsets = {{}, ref::random_wires(rng, n, std::min(n, 2)),
                                                   ref::random_wires(rng, n, 1)};
    for (const auto& wires : subsets) {
      const std::vector<int> w = wires.empty() ? ref::wire_order({}, n) : wires;
      for (bool f32 : {false, true}) {
        qfleet::CompileOptions o;
        if (f32) o.precision = qfleet::Precision::complex64;
        const qfleet::Program p = qfleet::compile(s.t->q, o);
        const auto draws = f32 ? draw<float>(p, s.b, wires, shots, 2024 + n) : draw(p, s.b, wires, shots, 2024 + n);
        for (std::size_t b = 0; b < s.b.B; ++b) {
          const ref::Vec psi = ref::state(s.t->r, s.b.xrow(b), s.b.wrow(b));
          expect_frequencies_match(draws, b, shots, ref::probs(psi, w, n),
                                   "n=" + std::to_string(n) + " wires " + testing::PrintToString(wires) +
                                       " sample " + std::to_string(b) + (f32 ? " complex64" : ""));
        }
      }
    }
  }
}

TEST(Sampling, ZeroShotsWritesNothing) {
  qfleet::Circuit c(2);
  c.add("Hadamard", {0}).expval("Z0");
  const qfleet::Program p = qfleet::compile(c);
  std::vector<std::uint64_t> out;
  EXPECT_NO_THROW(p.sample<double>(qfleet::BatchArgs<double>{}, {}, 0, 1, out));
}

TEST(Sampling, LargeRegisterFrequenciesMatchTheReference) {
  // n = 13 with 2 threads: a batch of 1 runs amplitude-parallel, a batch of 3 one sample per tile.
  std::mt19937_64 rng(6);
  const Sampler s = random_sampler(13, 3, rng);
  const std::size_t shots = 20000;
  const std::vector<int> wires = {12, 3, 7};
  qfleet::CompileOptions o;
  o.num_threads = 2;
  const qfleet::Program p = qfleet::compile(s.t->q, o);
  for (std::size_t B : {std::size_t{1}, std::size_t{3}}) {
    const auto draws = draw(p, s.b.prefix(B), wires, shots, 31);
    for (std::size_t b = 0; b < B; ++b) {
      const ref::Vec psi = ref::state(s.t->r, s.b.xrow(b), s.b.wrow(b));
      expect_frequencies_match(draws, b, shots, ref::probs(psi, wires, 13),
                               "n=13 batch " + std::to_string(B) + " sample " + std::to_string(b));
    }
  }
}

}  // namespace

// The call record holds at most kern::kMaxSampleWires (26) measured positions: more
// is refused before anything runs (a 27-qubit circuit compiles without allocating;
// complex64, so that a machine with 2 GiB of memory compiles it too: compile refuses
// a register whose two states do not fit).
TEST(Sampling, RefusesMoreWiresThanTheCallRecordHolds) {
  qfleet::Circuit c(27);
  c.add("Hadamard", {0}).expval("Z0");
  qfleet::CompileOptions o;
  o.precision = qfleet::Precision::complex64;
  const qfleet::Program p = qfleet::compile(c, o);
  std::vector<std::uint64_t> out(1);
  qfleet::BatchArgs<float> a;
  a.batch = 1;
  try {
    p.sample<float>(a, {}, 1, 1, out);
    FAIL() << "sampling 27 wires was accepted";
  } catch (const qfleet::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 26 wires"), std::string::npos) << e.what();
  }
}
