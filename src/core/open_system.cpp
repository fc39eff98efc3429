// The open-system builder: every argument checked before anything changes.
#include <algorithm>
#include <cmath>
#include <string>

#include "qfleet/error.hpp"
#include "qfleet/open_system.hpp"

namespace qfleet {

namespace {

constexpr int kMaxDim = 1024;
constexpr double kHermitianTol = 1e-10;

double max_abs(const ComplexMatrix& m) {
  double a = 0;
  for (const auto& z : m) a = std::max(a, std::abs(z));
  return a;
}

void check_finite(const std::vector<Complex>& v, std::string_view what) {
  for (const auto& z : v) {
    if (!std::isfinite(z.real()) || !std::isfinite(z.imag())) {
      throw Error(std::string(what) + " has a non-finite entry");
    }
  }
}

double norm2(const ComplexVector& v) {
  double s = 0;
  for (const auto& z : v) s += std::norm(z);
  return s;
}

}  // namespace

OpenSystem::OpenSystem(int dim) : dim_(dim) {
  if (dim < 1 || dim > kMaxDim) {
    throw Error("an open system needs dimension 1.." + std::to_string(kMaxDim) + ", got " + std::to_string(dim));
  }
  h0_.assign(std::size_t(dim) * dim, Complex(0));
  psi0_.assign(dim, Complex(0));
  psi0_[0] = 1;  // |0> unless told otherwise
}

ComplexMatrix OpenSystem::checked_matrix(const ComplexMatrix& m, std::string_view what, bool hermitian) const {
  const std::size_t d = dim_;
  if (m.size() != d * d) {
    throw Error(std::string(what) + " must be " + std::to_string(d) + "x" + std::to_string(d) + " (" +
                std::to_string(d * d) + " entries), got " + std::to_string(m.size()));
  }
  check_finite(m, what);
  if (hermitian) {
    const double scale = std::max(1.0, max_abs(m));
    for (std::size_t r = 0; r < d; ++r) {
      for (std::size_t c = 0; c <= r; ++c) {
        const double off = std::abs(m[r * d + c] - std::conj(m[c * d + r]));
        if (off > kHermitianTol * scale) {
          throw Error(std::string(what) + " is not Hermitian: |H[" + std::to_string(r) + "][" + std::to_string(c) +
                      "] - conj(H[" + std::to_string(c) + "][" + std::to_string(r) + "])| = " + std::to_string(off));
        }
      }
    }
  }
  return m;
}

OpenSystem& OpenSystem::drift(const ComplexMatrix& h0) {
  h0_ = checked_matrix(h0, "drift Hamiltonian H0", true);
  return *this;
}

OpenSystem& OpenSystem::drift_term(const ComplexMatrix& h) {
  drift_terms_.push_back(checked_matrix(h, "drift term H0_" + std::to_string(drift_terms_.size()), true));
  return *this;
}

OpenSystem& OpenSystem::control(const ComplexMatrix& h) {
  controls_.push_back(checked_matrix(h, "control Hamiltonian H_" + std::to_string(controls_.size()), true));
  return *this;
}

OpenSystem& OpenSystem::jump(const ComplexMatrix& l) {
  jumps_.push_back(checked_matrix(l, "jump operator L_" + std::to_string(jumps_.size()), false));
  return *this;
}

OpenSystem& OpenSystem::segments(int n_seg, double total_time) {
  if (n_seg < 1 || n_seg > (1 << 20)) throw Error("segments: n_seg must be 1..2^20, got " + std::to_string(n_seg));
  if (!std::isfinite(total_time) || total_time <= 0) {
    throw Error("segments: total time must be finite and > 0, got " + std::to_string(total_time));
  }
  durations_.assign(n_seg, total_time / n_seg);
  return *this;
}

OpenSystem& OpenSystem::durations(const std::vector<double>& dt) {
  if (dt.empty() || dt.size() > (1u << 20)) throw Error("durations: need 1..2^20 segments");
  for (std::size_t k = 0; k < dt.size(); ++k) {
    if (!std::isfinite(dt[k]) || dt[k] <= 0) {
      throw Error("durations: segment " + std::to_string(k) + " has duration " + std::to_string(dt[k]) +
                  "; durations must be finite and > 0");
    }
  }
  durations_ = dt;
  return *this;
}

OpenSystem& OpenSystem::initial_density(const ComplexMatrix& rho0) {
  ComplexMatrix r = checked_matrix(rho0, "initial density matrix", true);
  Complex tr = 0;
  for (int i = 0; i < dim_; ++i) tr += r[std::size_t(i) * dim_ + i];
  if (std::abs(tr - 1.0) > 1e-8) {
    throw Error("initial density matrix must have trace 1, got " + std::to_string(tr.real()));
  }
  // Positivity is checked at compile time (it needs an eigendecomposition).
  rho0_ = std::move(r);
  initial_kind_ = Initial::Density;
  return *this;
}

OpenSystem& OpenSystem::initial_state(const ComplexVector& psi0) {
  if (psi0.size() != std::size_t(dim_)) {
    throw Error("initial state must have " + std::to_string(dim_) + " amplitudes, got " + std::to_string(psi0.size()));
  }
  check_finite(psi0, "initial state");
  if (std::abs(norm2(psi0) - 1.0) > 1e-8) {
    throw Error("initial state must be normalised, |psi|^2 = " + std::to_string(norm2(psi0)));
  }
  psi0_ = psi0;
  initial_kind_ = Initial::Pure;
  return *this;
}

OpenSystem& OpenSystem::propagate_gate() {
  initial_kind_ = Initial::Gate;
  return *this;
}

OpenSystem& OpenSystem::target_state(const ComplexVector& psi) {
  if (psi.size() != std::size_t(dim_)) {
    throw Error("target state must have " + std::to_string(dim_) + " amplitudes, got " + std::to_string(psi.size()));
  }
  check_finite(psi, "target state");
  if (std::abs(norm2(psi) - 1.0) > 1e-8) {
    throw Error("target state must be normalised, |psi|^2 = " + std::to_string(norm2(psi)));
  }
  target_psi_ = psi;
  target_kind_ = Target::Pure;
  return *this;
}

OpenSystem& OpenSystem::target_density(const ComplexMatrix& rho) {
  ComplexMatrix r = checked_matrix(rho, "target density matrix", true);
  Complex tr = 0;
  for (int i = 0; i < dim_; ++i) tr += r[std::size_t(i) * dim_ + i];
  if (std::abs(tr - 1.0) > 1e-8) throw Error("target density matrix must have trace 1, got " + std::to_string(tr.real()));
  target_mat_ = std::move(r);
  target_kind_ = Target::Mixed;
  return *this;
}

OpenSystem& OpenSystem::target_unitary(const ComplexMatrix& u) {
  ComplexMatrix m = checked_matrix(u, "target unitary", false);
  const std::size_t d = dim_;
  double worst = 0;
  for (std::size_t r = 0; r < d; ++r) {
    for (std::size_t c = 0; c < d; ++c) {
      Complex s = 0;
      for (std::size_t k = 0; k < d; ++k) s += std::conj(m[k * d + r]) * m[k * d + c];
      worst = std::max(worst, std::abs(s - (r == c ? 1.0 : 0.0)));
    }
  }
  if (worst > 1e-8) throw Error("target unitary is not unitary (max |U^dag U - I| = " + std::to_string(worst) + ")");
  target_mat_ = std::move(m);
  target_kind_ = Target::Unitary;
  return *this;
}

OpenSystem& OpenSystem::observable(const ComplexMatrix& o) {
  observables_.push_back(checked_matrix(o, "observable " + std::to_string(observables_.size()), true));
  return *this;
}

OpenSystem& OpenSystem::computational_subspace(const std::vector<int>& levels) {
  if (levels.empty()) throw Error("computational subspace needs at least one level");
  std::vector<int> sorted = levels;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= dim_) {
      throw Error("computational subspace: level " + std::to_string(sorted[i]) + " out of range 0.." +
                  std::to_string(dim_ - 1));
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      throw Error("computational subspace: level " + std::to_string(sorted[i]) + " repeated");
    }
  }
  subspace_ = std::move(sorted);
  return *this;
}

}  // namespace qfleet
