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
std::mt19937_64 case_rng(std::string_view name, std::initializer_list<std::uint64_t> ids = {});

double uniform(std::mt19937_64& rng, double lo, double hi);
int randint(std::mt19937_64& rng, int lo, int hi);  // inclusive
std::vector<double> uniform_vec(std::mt19937_64& rng, std::size_t n, double lo, double hi);
// k distinct wires out of n, in random order.
std::vector<int> random_wires(std::mt19937_64& rng, int n, int k);
// A scale away from zero: +-[0.5, 2].
double random_scale(std::mt19937_64& rng);

// A standard complex Gaussian; the real part is drawn first (named, because the
// order of evaluation of a constructor's arguments is unspecified).
cd gauss(std::mt19937_64& rng);
Mat random_matrix(std::mt19937_64& rng, Index r, Index c, double scale = 1.0);
Mat random_hermitian(std::mt19937_64& rng, Index d, double scale = 1.0);
Vec random_state(std::mt19937_64& rng, Index d);
// A full-rank density matrix: (1 - mix) W W^dag / tr + mix I/d.
Mat random_density(std::mt19937_64& rng, Index d, double mix = 0.2);
// The Q factor of a Gaussian matrix: a random d x d unitary.
Mat random_unitary(std::mt19937_64& rng, Index d);

}  // namespace ref
