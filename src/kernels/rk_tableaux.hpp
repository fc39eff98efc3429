// Butcher tableaux of the open-system step solvers (kernels/open_task.hpp runs them):
// rk4, euler, and the error-controlled dopri5 and tsit5. Device code reads these
// constants, not the host table in qfleet/solver.hpp.
#pragma once

#include "kernels/hd.hpp"
#include "qfleet/solver.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {
namespace open_detail {

// Butcher tableaux of the fixed-step and adaptive solvers.
struct Tableau {
  int s;  // stages that build the solution
  double a[7][7];
  double b[7];
  double b_err[7];  // b - b* (embedded error estimate), adaptive solvers only
};

// The error-controlled solvers: 7 stages, the 7th (FSAL, f at the new state) only
// feeds the error estimate.
QFLEET_HD inline bool adaptive(Solver s) { return s == Solver::dopri5 || s == Solver::tsit5; }

// Dormand & Prince (1980) RK5(4)7M and Tsitouras (2011) 5(4) (Comput. Math. Appl. 62,
// 770; coefficients to double precision as in OrdinaryDiffEq.jl's Tsit5); for both,
// the 7th stage (FSAL) only feeds the error estimate.
QFLEET_HD inline const Tableau& tableau(Solver solver) {
  static constexpr Tableau kTab[4] = {
      {4, {{0}, {0.5}, {0, 0.5}, {0, 0, 1}}, {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, {0}},  // rk4
      {1, {{0}}, {1}, {0}},                                                                 // euler
      {6,
       {{0},
        {1.0 / 5},
        {3.0 / 40, 9.0 / 40},
        {44.0 / 45, -56.0 / 15, 32.0 / 9},
        {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
        {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
        {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
       {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0},
       {35.0 / 384 - 5179.0 / 57600, 0, 500.0 / 1113 - 7571.0 / 16695, 125.0 / 192 - 393.0 / 640,
        -2187.0 / 6784 + 92097.0 / 339200, 11.0 / 84 - 187.0 / 2100, -1.0 / 40}},
      {6,
       {{0},
        {0.161},
        {-0.008480655492356989, 0.335480655492357},
        {2.8971530571054935, -6.359448489975075, 4.3622954328695815},
        {5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525},
        {5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383},
        {0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081, 2.324710524099774}},
       {0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081, 2.324710524099774, 0},
       {-0.00178001105222577714, -0.0008164344596567469, 0.007880878010261995, -0.1447110071732629,
        0.5823571654525552, -0.45808210592918697, 1.0 / 66}}};
  return kTab[solver == Solver::rk4 ? 0 : solver == Solver::euler ? 1 : solver == Solver::dopri5 ? 2 : 3];
}

}  // namespace open_detail
}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
