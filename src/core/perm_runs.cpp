// Runs of constant phased-permutation gates fused for the group bodies
// (kern::PermRun; the bodies' side: kernels/sv_group.hpp's group_permute,
// sv_lanes.hpp's lanes_permute, dm_group.hpp's dm_group_permute).
//
// A CNOT ring of n gates is n dependent steps of a group, each ending at a barrier,
// that move amplitudes without arithmetic; fused, it is one gather and two barriers.
// The maps are found by running each basis index through the run's blocks, so any
// constant gate with one nonzero per column joins (CNOT, SWAP, X, Y, Z, S, T, CZ,
// Toffoli, a QubitUnitary permutation), and its phases ride along.
#include <complex>

#include "core/perm_runs.hpp"

namespace qfleet::detail {
namespace {

constexpr int kMaxD = 1 << kern::kMaxBlockTargets;

// A constant op's block as a phased permutation of its local indices: column c's
// one nonzero is in row row[c] with value val[c]. False when the op is not constant
// or its block is not of that form (a column with no or several nonzeros, or two
// columns sharing a row).
struct Monomial {
  int row[kMaxD] = {};
  std::complex<double> val[kMaxD];
};

bool monomial_of(const PermCandidate& op, Monomial& out) {
  if (op.block == nullptr) return false;
  const int d = 1 << op.site.kt;
  const double* m = op.block;
  unsigned used = 0;
  for (int c = 0; c < d; ++c) {
    int found = -1;
    for (int r = 0; r < d; ++r) {
      const double re = m[2 * (r * d + c)], im = m[2 * (r * d + c) + 1];
      if (re == 0 && im == 0) continue;
      if (found >= 0) return false;
      found = r;
      out.val[c] = {re, im};
    }
    if (found < 0 || (used >> found & 1u)) return false;
    used |= 1u << found;
    out.row[c] = found;
  }
  return true;
}

// Basis index i through one op: (index, phase) after it.
void through(const kern::GateSite& site, const Monomial& mono, std::uint64_t& i, std::complex<double>& phase) {
  if ((i & site.ctrl) != site.ctrl) return;
  const int d = 1 << site.kt;
  const std::uint64_t targets = site.off[d - 1];  // local index d - 1 has every target bit set
  int c = 0;
  while (site.off[c] != (i & targets)) ++c;
  phase *= mono.val[c];
  i = (i & ~targets) | site.off[mono.row[c]];
}

void add_run(int first, int last, const std::vector<PermCandidate>& ops, const std::vector<Monomial>& mono,
             std::uint64_t dim, PermRuns& out, std::vector<int>& run_of) {
  kern::PermRun run;
  run.first = first;
  run.last = last;
  run.index = out.index.size();
  out.index.resize(run.index + 2 * dim);
  std::uint32_t* src = out.index.data() + run.index;
  std::uint32_t* dst = src + dim;
  std::vector<std::complex<double>> phase(dim);
  bool phased = false;
  for (std::uint64_t i = 0; i < dim; ++i) {
    std::uint64_t j = i;
    std::complex<double> ph = 1.0;
    for (int k = first; k <= last; ++k) through(ops[std::size_t(k)].site, mono[std::size_t(k - first)], j, ph);
    dst[i] = static_cast<std::uint32_t>(j);
    src[j] = static_cast<std::uint32_t>(i);
    phase[i] = ph;
    phased |= ph != 1.0;
  }
  if (phased) {
    run.phase = static_cast<std::int64_t>(out.phase.size() / 2);
    for (const std::complex<double>& z : phase) {
      out.phase.push_back(z.real());
      out.phase.push_back(z.imag());
    }
  }
  const int id = static_cast<int>(out.runs.size());
  for (int k = first; k <= last; ++k) run_of[std::size_t(k)] = id;
  out.runs.push_back(run);
}

}  // namespace

std::vector<int> find_perm_runs(int n, const std::vector<PermCandidate>& ops, PermRuns& out) {
  std::vector<int> run_of(ops.size(), -1);
  if (n > kern::kMaxPermQubits) return run_of;
  const std::uint64_t dim = std::uint64_t{1} << n;
  const int n_ops = static_cast<int>(ops.size());
  std::vector<Monomial> run;  // the blocks of the run ending before op k
  for (int k = 0; k <= n_ops; ++k) {
    Monomial m;
    if (k < n_ops && monomial_of(ops[std::size_t(k)], m)) {
      run.push_back(m);
      continue;
    }
    const int len = static_cast<int>(run.size());
    if (len >= kern::kMinPermRun) add_run(k - len, k - 1, ops, run, dim, out, run_of);
    run.clear();
  }
  return run_of;
}

}  // namespace qfleet::detail
