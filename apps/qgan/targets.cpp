// The qGAN's target distributions and the PGM reader (targets.hpp).
#include "targets.hpp"

#include <cctype>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "qfleet/files.hpp"

namespace qfleet::qgan {

const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names = {"lognormal", "bimodal", "heavy_tailed", "gaussian2d", "image"};
  return names;
}

namespace {

std::string join_names() {
  std::string s;
  for (const auto& n : target_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Masses of a 1-D distribution with distribution function `cdf` over 2^n equal bins of
// [lo, hi], renormalised to the interval.
void one_dimensional(Target& t, int n, double lo, double hi, const std::function<double(double)>& cdf) {
  const int64_t k = int64_t{1} << n;
  t.n_qubits = n;
  t.rows = 1;
  t.cols = k;
  t.probabilities.assign(std::size_t(k), 0.0);
  t.x.resize(std::size_t(k));
  const double h = (hi - lo) / double(k);
  double total = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double a = lo + double(i) * h, b = a + h;
    t.probabilities[std::size_t(i)] = std::max(cdf(b) - cdf(a), 0.0);
    total += t.probabilities[std::size_t(i)];
    t.x[std::size_t(i)] = a + h / 2;
  }
  if (!(total > 0)) throw std::invalid_argument("target " + t.name + ": no mass on its interval");
  for (double& p : t.probabilities) p /= total;
}

double normal_cdf_at(double x, double mu, double sigma) { return 0.5 * std::erfc(-(x - mu) / (sigma * std::sqrt(2.0))); }

// Grid coordinates in [-1, 1] and their Fourier features sin/cos(2^k pi c), k < n_freq.
void make_features(Target& t, int n_freq) {
  const int dims = t.rows > 1 ? 2 : 1;
  t.n_features = dims * (1 + 2 * n_freq);
  t.features.clear();
  t.features.reserve(std::size_t(t.rows * t.cols * t.n_features));
  auto scaled = [](int64_t i, int64_t n) { return n > 1 ? -1.0 + 2.0 * double(i) / double(n - 1) : 0.0; };
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t c = 0; c < t.cols; ++c) {
      std::vector<double> coords = {scaled(c, t.cols)};
      if (dims == 2) coords.insert(coords.begin(), scaled(r, t.rows));
      for (double v : coords) t.features.push_back(v);
      for (double v : coords)
        for (int k = 0; k < n_freq; ++k) {
          t.features.push_back(std::sin(std::ldexp(M_PI, k) * v));
          t.features.push_back(std::cos(std::ldexp(M_PI, k) * v));
        }
    }
}

int log2_exact(int64_t v) {
  int k = 0;
  while ((int64_t{1} << k) < v) ++k;
  return (int64_t{1} << k) == v ? k : -1;
}

}  // namespace

Target make_target(const TargetOptions& o) {
  Target t;
  t.name = o.name;
  auto qubits = [&](int dflt) {
    const int n = o.qubits == 0 ? dflt : o.qubits;
    if (n < 1 || n > 12) throw std::invalid_argument("qubits = " + std::to_string(n) + ": 1 to 12 for target " + o.name);
    return n;
  };
  if (o.fourier_features < -1 || o.fourier_features > 10)
    throw std::invalid_argument("fourier_features = " + std::to_string(o.fourier_features) + ": 0 to 10 (or -1, the target's default)");
  int n_freq = 0;
  if (o.name == "lognormal") {
    const double mu = 1, sigma = 1;
    one_dimensional(t, qubits(3), 0.0, 3.0, [&](double x) { return x <= 0 ? 0.0 : normal_cdf_at(std::log(x), mu, sigma); });
    t.description = "log-normal (ln X ~ N(1, 1)) on [0, 3], " + std::to_string(t.cols) + " bins";
  } else if (o.name == "bimodal") {
    one_dimensional(t, qubits(5), 0.0, 1.0,
                    [](double x) { return 0.6 * normal_cdf_at(x, 0.3, 0.08) + 0.4 * normal_cdf_at(x, 0.7, 0.1); });
    t.description = "bimodal 0.6 N(0.3, 0.08^2) + 0.4 N(0.7, 0.1^2) on [0, 1], " + std::to_string(t.cols) + " bins";
  } else if (o.name == "heavy_tailed") {
    one_dimensional(t, qubits(5), -8.0, 8.0, [](double x) { return 0.5 + std::atan(x) / M_PI; });
    t.description = "standard Cauchy on [-8, 8], " + std::to_string(t.cols) + " bins";
  } else if (o.name == "gaussian2d") {
    if (o.qubits != 0 && o.qubits != 6) throw std::invalid_argument("target gaussian2d has 6 qubits (an 8 x 8 grid)");
    t.n_qubits = 6;
    t.rows = t.cols = 8;
    const double lo = -2, h = 0.5, rho = 0.5;
    t.x.resize(8);
    for (int i = 0; i < 8; ++i) t.x[std::size_t(i)] = lo + h * (i + 0.5);
    t.y = t.x;
    t.probabilities.assign(64, 0.0);
    double total = 0;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        double m = 0;
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) {
            const double yv = lo + h * (r + (a + 0.5) / 4), xv = lo + h * (c + (b + 0.5) / 4);
            m += std::exp(-(xv * xv - 2 * rho * xv * yv + yv * yv) / (2 * (1 - rho * rho)));
          }
        t.probabilities[std::size_t(r * 8 + c)] = m;
        total += m;
      }
    for (double& p : t.probabilities) p /= total;
    t.description = "2-D Gaussian N(0, [[1, 0.5], [0.5, 1]]) on the 8 x 8 grid of [-2, 2]^2";
  } else if (o.name == "image") {
    if (o.image.empty())
      throw std::invalid_argument("target image needs an image file (--image FILE.pgm); python -m qfleet.qgan.image FILE.pgm "
                                  "writes scikit-learn's bundled sample image as one");
    const GreyImage img = read_pgm(o.image);
    const int a = log2_exact(img.rows), b = log2_exact(img.cols);
    if (a < 0 || b < 0 || a + b > 12 || a + b < 1)
      throw TargetError(o.image + ": " + std::to_string(img.rows) + " x " + std::to_string(img.cols) +
                        " pixels; the image target needs 2^a x 2^b pixels with 1 <= a + b <= 12 (a 12-qubit register at most)");
    if (o.qubits != 0 && o.qubits != a + b)
      throw std::invalid_argument("qubits = " + std::to_string(o.qubits) + ", but the image has " + std::to_string(a + b));
    t.n_qubits = a + b;
    t.rows = img.rows;
    t.cols = img.cols;
    double total = 0;
    for (double v : img.pixels) total += v;
    if (!(total > 0)) throw TargetError(o.image + ": an all-black image is no distribution");
    t.probabilities = img.pixels;
    for (double& p : t.probabilities) p /= total;
    for (int64_t i = 0; i < t.cols; ++i) t.x.push_back(double(i));
    if (t.rows > 1)
      for (int64_t i = 0; i < t.rows; ++i) t.y.push_back(double(i));
    t.x_label = "column";
    t.y_label = "row";
    t.description = "grey image " + o.image + " (" + std::to_string(t.rows) + " x " + std::to_string(t.cols) +
                    " pixels) as a distribution over its pixels";
    n_freq = 6;  // a 64 x 64 picture needs more than two coordinates for the discriminator to see detail
  } else {
    throw std::invalid_argument("unknown target \"" + o.name + "\" (known: " + join_names() + ")");
  }
  if (o.name != "image" && !o.image.empty()) throw std::invalid_argument("--image is for target image");
  make_features(t, o.fourier_features >= 0 ? o.fourier_features : n_freq);
  return t;
}

// ---- PGM ----------------------------------------------------------------------

GreyImage parse_pgm(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& why) -> GreyImage { throw TargetError(name + ": " + why); };
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '2'))
    return fail("not a PGM file (it does not start with P5 or P2)");
  const bool binary = bytes[1] == '5';
  std::size_t pos = 2;
  // Header fields are whitespace-separated decimal numbers; '#' starts a comment to the line's end.
  auto next_number = [&](const char* what) -> int64_t {
    while (pos < bytes.size()) {
      if (bytes[pos] == '#') {
        while (pos < bytes.size() && bytes[pos] != '\n') ++pos;
      } else if (std::isspace(static_cast<unsigned char>(bytes[pos]))) {
        ++pos;
      } else {
        break;
      }
    }
    if (pos >= bytes.size() || !std::isdigit(static_cast<unsigned char>(bytes[pos])))
      throw TargetError(name + ": truncated or bad header (expected " + what + ")");
    int64_t v = 0;
    while (pos < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[pos]))) {
      v = v * 10 + (bytes[pos] - '0');
      if (v > 1'000'000'000) throw TargetError(name + ": " + what + " is too large");
      ++pos;
    }
    return v;
  };
  GreyImage img;
  img.cols = next_number("the width");
  img.rows = next_number("the height");
  const int64_t maxval = next_number("the maximum value");
  if (img.cols < 1 || img.rows < 1) return fail("a width and height of at least 1 are needed");
  if (img.cols * img.rows > (int64_t{1} << 24)) return fail("more than 2^24 pixels");
  if (maxval < 1 || maxval > 65535) return fail("maximum value " + std::to_string(maxval) + " outside 1..65535");
  const auto n = std::size_t(img.rows * img.cols);
  img.pixels.resize(n);
  if (binary) {
    if (pos >= bytes.size() || !std::isspace(static_cast<unsigned char>(bytes[pos])))
      return fail("no whitespace between the header and the pixels");
    ++pos;
    const std::size_t width = maxval < 256 ? 1 : 2;
    if (bytes.size() - pos < n * width)
      return fail("truncated: " + std::to_string(n * width) + " pixel bytes expected, " + std::to_string(bytes.size() - pos) + " found");
    if (bytes.size() - pos > n * width) return fail("extra bytes after the pixels");
    for (std::size_t i = 0; i < n; ++i) {
      const auto b0 = static_cast<unsigned char>(bytes[pos + i * width]);
      const unsigned v = width == 1 ? b0 : (b0 << 8) | static_cast<unsigned char>(bytes[pos + i * width + 1]);
      if (int64_t(v) > maxval) return fail("pixel " + std::to_string(i) + " exceeds the maximum value");
      img.pixels[i] = double(v) / double(maxval);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t v = next_number("a pixel value");
      if (v > maxval) return fail("pixel " + std::to_string(i) + " exceeds the maximum value");
      img.pixels[i] = double(v) / double(maxval);
    }
    while (pos < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[pos]))) ++pos;
    if (pos != bytes.size()) return fail("extra data after the pixels");
  }
  return img;
}

GreyImage read_pgm(const std::string& path) {
  std::string bytes;
  try {  // a regular file of at most 64 MiB (an 8192 x 8192 image): /dev/zero is refused, not read forever
    bytes = read_file_bounded(path);
  } catch (const std::runtime_error& e) {
    throw TargetError(std::string(e.what()) + " (the image file)");
  }
  return parse_pgm(bytes, path);
}

}  // namespace qfleet::qgan
