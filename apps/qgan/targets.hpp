// The distributions a qGAN learns: each a probability vector over the 2^n outcomes of
// the generator's register (outcome index = bin index, wire 0 the most significant
// bit), on a grid of rows x cols bins (rows = 1 for a 1-D distribution), with the
// coordinates the discriminator sees for each bin.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "distributions.hpp"

namespace qfleet::qgan {

struct TargetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TargetOptions {
  // lognormal | bimodal | heavy_tailed | gaussian2d | image
  std::string name = "lognormal";
  int qubits = 0;          // 1-D targets: bins = 2^qubits (0: the target's default)
  std::string image;       // image: a PGM file (python -m qfleet.qgan.image writes scikit-learn's)
  int fourier_features = -1;  // discriminator inputs: sin/cos of 2^k pi c, k < this (-1: the target's default)
};

struct Target {
  std::string name, description;
  int n_qubits = 0;
  int64_t rows = 1, cols = 0;
  Distribution probabilities;  // rows * cols, row-major
  std::vector<double> x, y;     // bin centres along columns (x) and rows (y; 2-D only), in the target's units
  std::string x_label = "x", y_label = "y";
  // The discriminator's input per bin [rows * cols, n_features], row-major: the grid
  // coordinates scaled to [-1, 1], then the Fourier features of each.
  std::vector<double> features;
  int n_features = 0;
};

// The names make_target knows, for messages and --help.
const std::vector<std::string>& target_names();
// Builds a target; std::invalid_argument for unknown names / out-of-range sizes,
// TargetError for an unreadable image.
//   lognormal    ln X ~ N(1, 1) on [0, 3] (the classic qGAN test of Zoufal et al., npj
//                Quantum Inf. 5, 103 (2019)); default 3 qubits
//   bimodal      0.6 N(0.3, 0.08^2) + 0.4 N(0.7, 0.1^2) on [0, 1]; default 5 qubits
//   heavy_tailed the standard Cauchy distribution on [-8, 8]; default 5 qubits
//   gaussian2d   N(0, [[1, 0.5], [0.5, 1]]) on the 8 x 8 grid of [-2, 2]^2 (6 qubits)
//   image        a grey image's intensities as probabilities (2^a x 2^b pixels, a + b <= 12)
// Bin masses of the 1-D targets are the distribution's integral over each of 2^n equal
// bins, renormalised to the interval; the 2-D Gaussian's the 4 x 4-point midpoint rule.
Target make_target(const TargetOptions& options);

// A binary (P5) or plain (P2) PGM file as [rows, cols] intensities scaled by maxval to
// [0, 1], row-major. TargetError naming the file and the fault (not a PGM, truncated,
// bad header, maxval outside 1..65535, extra bytes).
struct GreyImage {
  int64_t rows = 0, cols = 0;
  std::vector<double> pixels;
};
GreyImage read_pgm(const std::string& path);
GreyImage parse_pgm(const std::string& bytes, const std::string& name);

}  // namespace qfleet::qgan
