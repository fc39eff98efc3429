// The bodies of reference/random.hpp, compiled once into the tests' reference library
// (tests/CMakeLists.txt, qfleet_reference) rather than in every test that includes the
// header (the QR of random_unitary and <random>'s distributions, ~5 s of GCC 12 per unit).
#include "reference/random.hpp"

namespace ref {

std::mt19937_64 case_rng(std::string_view name, std::initializer_list<std::uint64_t> ids) {
  std::vector<std::uint32_t> words(name.begin(), name.end());
  for (const std::uint64_t id : ids) {
    words.push_back(static_cast<std::uint32_t>(id));
    words.push_back(static_cast<std::uint32_t>(id >> 32));
  }
  std::seed_seq seq(words.begin(), words.end());
  return std::mt19937_64(seq);
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

int randint(std::mt19937_64& rng, int lo, int hi) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

std::vector<double> uniform_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& t : v) t = uniform(rng, lo, hi);
  return v;
}

std::vector<int> random_wires(std::mt19937_64& rng, int n, int k) {
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  return all;
}

double random_scale(std::mt19937_64& rng) {
  return (rng() & 1 ? 1.0 : -1.0) * uniform(rng, 0.5, 2.0);
}

cd gauss(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  const double re = n(rng);
  return {re, n(rng)};
}

Mat random_matrix(std::mt19937_64& rng, Index r, Index c, double scale) {
  Mat m(r, c);
  for (Index i = 0; i < r; ++i)
    for (Index j = 0; j < c; ++j) m(i, j) = scale * gauss(rng);
  return m;
}

Mat random_hermitian(std::mt19937_64& rng, Index d, double scale) {
  Mat g = random_matrix(rng, d, d, scale / std::sqrt(double(d)));
  return 0.5 * (g + g.adjoint());
}

Vec random_state(std::mt19937_64& rng, Index d) {
  Vec v = random_matrix(rng, d, 1);
  return v / v.norm();
}

Mat random_density(std::mt19937_64& rng, Index d, double mix) {
  Mat w = random_matrix(rng, d, d);
  Mat r = w * w.adjoint();
  r /= r.trace().real();
  r = (1 - mix) * r + mix * eye(d) / double(d);
  return 0.5 * (r + r.adjoint());
}

Mat random_unitary(std::mt19937_64& rng, Index d) {
  Eigen::HouseholderQR<Mat> qr(random_matrix(rng, d, d));
  return qr.householderQ() * eye(d);
}

}  // namespace ref
