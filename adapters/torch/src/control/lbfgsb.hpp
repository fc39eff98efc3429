// One bound-constrained problem's L-BFGS-B state, stepped by reverse communication: the
// reference code (L-BFGS-B 3.0, Morales and Nocedal, ACM TOMS 38(1), 2011), from Debian's
// liblbfgsb. All its state lives in the arrays passed to each call (no SAVE variables), so
// any number of problems advance side by side.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace qfleet::control {

class Lbfgsb {
 public:
  enum class Ask { evaluate, iterated, converged_gradient, converged_reduction, line_search, error };

  // lower/upper: -inf/+inf where unbounded. factr: L-BFGS-B's tolerance on the relative
  // reduction (in units of the machine epsilon); pgtol: on the projected gradient.
  Lbfgsb(std::vector<double> x0, const std::vector<double>& lower, const std::vector<double>& upper, int memory,
         double factr, double pgtol);

  // Runs the code until it wants a cost and gradient at x() (evaluate), has finished an
  // iteration (iterated), or stops. After evaluate, set f and g and call again.
  Ask advance();
  const std::vector<double>& x() const { return x_; }
  std::vector<double>& grad() { return g_; }
  double& cost() { return f_; }
  std::string_view message() const;    // the code's task string, trimmed
  double projected_gradient() const;   // its infinity norm at the last iterate
  int64_t iterations() const;

 private:
  int n_, m_;
  std::vector<double> x_, l_, u_, g_, wa_;
  std::vector<int> nbd_, iwa_;
  double f_ = 0, factr_, pgtol_;
  std::array<char, 60> task_{}, csave_{};
  std::array<int, 4> lsave_{};
  std::array<int, 44> isave_{};
  std::array<double, 29> dsave_{};
};

}  // namespace qfleet::control
