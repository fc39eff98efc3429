#include "lbfgsb.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

// setulb from liblbfgsb (Fortran 77: arguments by reference, LOGICAL as a 4-byte int, the
// lengths of the two CHARACTER*60 arguments appended, as size_t since gfortran 8).
extern "C" void setulb_(const int* n, const int* m, double* x, const double* l, const double* u, const int* nbd,
                        double* f, double* g, const double* factr, const double* pgtol, double* wa, int* iwa,
                        char* task, const int* iprint, char* csave, int* lsave, int* isave, double* dsave,
                        std::size_t task_len, std::size_t csave_len);

namespace qfleet::control {
namespace {

void set_task(std::array<char, 60>& task, std::string_view s) {
  task.fill(' ');
  std::memcpy(task.data(), s.data(), std::min(s.size(), task.size()));
}

bool starts_with(const std::array<char, 60>& task, std::string_view s) {
  return std::string_view(task.data(), task.size()).substr(0, s.size()) == s;
}

}  // namespace

Lbfgsb::Lbfgsb(std::vector<double> x0, const std::vector<double>& lower, const std::vector<double>& upper, int memory,
               double factr, double pgtol)
    : n_(static_cast<int>(x0.size())), m_(memory), x_(std::move(x0)), l_(lower), u_(upper), g_(x_.size(), 0.0),
      wa_(2 * std::size_t(m_) * n_ + 5 * std::size_t(n_) + 11 * std::size_t(m_) * m_ + 8 * std::size_t(m_)),
      nbd_(x_.size()), iwa_(3 * x_.size()), factr_(factr), pgtol_(pgtol) {
  // nbd: 0 unbounded, 1 lower only, 2 both, 3 upper only (the code's convention).
  for (int i = 0; i < n_; ++i) {
    const bool lo = std::isfinite(l_[i]), hi = std::isfinite(u_[i]);
    nbd_[i] = lo ? (hi ? 2 : 1) : (hi ? 3 : 0);
    if (!lo) l_[i] = 0;
    if (!hi) u_[i] = 0;
  }
  set_task(task_, "START");
  csave_.fill(' ');
}

Lbfgsb::Ask Lbfgsb::advance() {
  const int iprint = -1;
  setulb_(&n_, &m_, x_.data(), l_.data(), u_.data(), nbd_.data(), &f_, g_.data(), &factr_, &pgtol_, wa_.data(),
          iwa_.data(), task_.data(), &iprint, csave_.data(), lsave_.data(), isave_.data(), dsave_.data(),
          task_.size(), csave_.size());
  if (starts_with(task_, "FG")) {
    // The line search's trial points are feasible in exact arithmetic (its step is capped at
    // the box); rounding may leave one an ulp outside, and every point handed out is inside.
    for (int i = 0; i < n_; ++i) {
      if (nbd_[i] == 1 || nbd_[i] == 2) x_[i] = std::max(x_[i], l_[i]);
      if (nbd_[i] == 2 || nbd_[i] == 3) x_[i] = std::min(x_[i], u_[i]);
    }
    return Ask::evaluate;
  }
  if (starts_with(task_, "NEW_X")) return Ask::iterated;
  if (starts_with(task_, "CONVERGENCE: NORM")) return Ask::converged_gradient;
  if (starts_with(task_, "CONVERGENCE: REL")) return Ask::converged_reduction;
  if (starts_with(task_, "ABNORMAL")) return Ask::line_search;
  return Ask::error;
}

std::string_view Lbfgsb::message() const {
  std::string_view s(task_.data(), task_.size());
  return s.substr(0, s.find_last_not_of(' ') + 1);
}

double Lbfgsb::projected_gradient() const { return dsave_[12]; }  // dsave(13): sbgnrm
int64_t Lbfgsb::iterations() const { return isave_[29]; }          // isave(30): iter

}  // namespace qfleet::control
