// Runs of consecutive diagonal gates (see diag_runs.hpp).
//
// A diagonal gate scales each amplitude by itself, so a group member can apply a
// whole run of them to the amplitudes it owns, one gate after another, without
// waiting for the rest of the group: the run takes the one barrier after it, where
// its gates take one each (a QAOA cost layer of IsingZZ, an RZ layer). The reverse
// sweep likewise undoes the run amplitude by amplitude, each gate's gradient summed
// as before (kernels/sv_group.hpp, group_diagonal_run and group_diagonal_adjoint).
#include "core/diag_runs.hpp"

namespace qfleet::detail {

bool gate_is_diagonal(Gate g) {
  switch (g) {
    case Gate::RZ:
    case Gate::PhaseShift:
    case Gate::CRZ:
    case Gate::ControlledPhaseShift:
    case Gate::IsingZZ:
      return true;
    default:
      return false;
  }
}

namespace {

bool block_is_diagonal(const double* m, int d) {
  for (int r = 0; r < d; ++r) {
    for (int c = 0; c < d; ++c) {
      if (r != c && (m[2 * (r * d + c)] != 0 || m[2 * (r * d + c) + 1] != 0)) return false;
    }
  }
  return true;
}

bool op_is_diagonal(const kern::OpDesc& op, const std::vector<double>& fixed_blocks) {
  if (op.run >= 0) return false;  // applied by its permutation run
  if (op.fixed >= 0) return block_is_diagonal(fixed_blocks.data() + 2 * std::size_t(op.fixed), 1 << op.site.kt);
  return op.n_params == 1 && gate_is_diagonal(op.gate);  // the run's reverse step takes one derivative
}

}  // namespace

int mark_diag_runs(std::vector<kern::OpDesc>& ops, const std::vector<double>& fixed_blocks) {
  const int n_ops = static_cast<int>(ops.size());
  int runs = 0, first = 0;
  for (int k = 0; k <= n_ops; ++k) {
    if (k < n_ops && op_is_diagonal(ops[std::size_t(k)], fixed_blocks)) continue;
    if (k - first >= kern::kMinDiagRun) {
      for (int j = first; j < k; ++j) {
        ops[std::size_t(j)].diag_first = first;
        ops[std::size_t(j)].diag_last = k - 1;
      }
      ++runs;
    }
    first = k + 1;
  }
  return runs;
}

}  // namespace qfleet::detail
