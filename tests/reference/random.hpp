// The tests' independent dense reference: random test data (numbers, wires,
// Gaussian matrices, Hermitian matrices, states, density matrices, unitaries).
// Plain <random> and Eigen; shares no code with qfleet.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string_view>
#include <vector>

#include "dense.hpp"

namespace ref {

// A generator seeded from a test case's identity (a name and numbers such as a batch
// size), so the case draws the same numbers whatever ran before it: every machine
// checks the same inputs for the cases it shares with another, whichever instruction
// sets, lane widths or GPUs it has. (std::seed_seq's mixing is specified by the
// standard, so the seed does not depend on the library either.)
inline std::mt19937_64 case_rng(std::string_view name, std::initializer_list<std::uint64_t> ids = {}) {
  std::vector<std::uint32_t> words(name.begin(), name.end());
  for (const std::uint64_t id : ids) {
    words.push_back(static_cast<std::uint32_t>(id));
    words.push_back(static_cast<std::uint32_t>(id >> 32));
  }
  std::seed_seq seq(words.begin(), words.end());
  return std::mt19937_64(seq);
}

inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline int randint(std::mt19937_64& rng, int lo, int hi) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline std::vector<double> uniform_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& t : v) t = uniform(rng, lo, hi);
  return v;
}
// k distinct wires out of n, in random order.
inline std::vector<int> random_wires(std::mt19937_64& rng, int n, int k) {
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  return all;
}
// A scale away from zero: +-[0.5, 2].
inline double random_scale(std::mt19937_64& rng) {
  return (rng() & 1 ? 1.0 : -1.0) * uniform(rng, 0.5, 2.0);
}

// A standard complex Gaussian; the real part is drawn first (named, because the
// order of evaluation of a constructor's arguments is unspecified).
inline cd gauss(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  const double re = n(rng);
  return {re, n(rng)};
}
inline Mat random_matrix(std::mt19937_64& rng, Index r, Index c, double scale = 1.0) {
  Mat m(r, c);
  for (Index i = 0; i < r; ++i)
    for (Index j = 0; j < c; ++j) m(i, j) = scale * gauss(rng);
  return m;
}
inline Mat random_hermitian(std::mt19937_64& rng, Index d, double scale = 1.0) {
  Mat g = random_matrix(rng, d, d, scale / std::sqrt(double(d)));
  return 0.5 * (g + g.adjoint());
}
inline Vec random_state(std::mt19937_64& rng, Index d) {
  Vec v = random_matrix(rng, d, 1);
  return v / v.norm();
}
// A full-rank density matrix: (1 - mix) W W^dag / tr + mix I/d.
inline Mat random_density(std::mt19937_64& rng, Index d, double mix = 0.2) {
  Mat w = random_matrix(rng, d, d);
  Mat r = w * w.adjoint();
  r /= r.trace().real();
  r = (1 - mix) * r + mix * eye(d) / double(d);
  return 0.5 * (r + r.adjoint());
}
// The Q factor of a Gaussian matrix: a random d x d unitary.
inline Mat random_unitary(std::mt19937_64& rng, Index d) {
  Eigen::HouseholderQR<Mat> qr(random_matrix(rng, d, d));
  return qr.householderQ() * eye(d);
}

}  // namespace ref
