// What an environment's agent sees (docs/rl.md, "Observations"): features of the current
// channel (gate tasks, as a column-stacked superoperator S, vec(A X B) = (B^T kron A) vec X)
// or state (state tasks, vec(rho)), and the figure of merit.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tasks.hpp"

namespace qfleet::rl {

enum class ObsKind { expectations, density, measurements };

class Observer {
 public:
  Observer(const TaskSpec& task, ObsKind kind, int64_t shots);
  int64_t n_physical() const { return n_physical_; }  // features before the time and task parameters
  ObsKind kind() const { return kind_; }
  int64_t shots() const { return shots_; }
  // The features without sampling into x[0 .. n_physical): the density's entries, or the
  // exact expectations (for measurements: the values their records estimate). Linear in
  // the state, which lets the tensor path (tensor_envs.hpp) apply them as one matrix.
  void exact_features(const Cx* state, double* x) const;
  // The features of `state` (S [d^2 * d^2] or vec(rho) [d^2]) into out[0 .. n_physical);
  // measurements draw their shots from `rng`.
  void features(const Cx* state, float* out, std::mt19937_64& rng) const;
  // Average gate fidelity (d F_pro + 1)/(d + 1), F_pro = Re tr(S_V^dag S)/d^2 (gate tasks), or
  // <psi|rho|psi> (state tasks).
  double fidelity(const Cx* state) const;

 private:
  // A Pauli string as a permutation with phases: P[a][col[a]] = phase[a].
  struct Sparse {
    std::vector<int> col;
    std::vector<Cx> phase;
  };
  void expectation_features(const Cx* state, double* x) const;
  int64_t n_expectations() const;

  TaskSpec task_;
  ObsKind kind_;
  int64_t shots_;
  int d_;
  int64_t n_physical_;
  std::vector<Sparse> paulis_;  // qubit registers: all 4^n strings, qubit 0 the leftmost factor
  Mat target_super_;            // gate tasks: conj(V) kron V
};

}  // namespace qfleet::rl
