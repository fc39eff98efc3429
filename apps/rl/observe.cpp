// Observations and fidelities of the environments (observe.hpp; docs/rl.md).
#include "observe.hpp"

#include <algorithm>
#include <cmath>

namespace qfleet::rl {

namespace {

// The 4 one-qubit Paulis as permutations with phases: I, X, Y, Z.
void pauli_factor(int k, int a, int& col, Cx& phase) {
  switch (k) {
    case 0: col = a; phase = 1; return;
    case 1: col = 1 - a; phase = 1; return;
    case 2: col = 1 - a; phase = a == 0 ? Cx(0, -1) : Cx(0, 1); return;  // Y = [[0, -i], [i, 0]]
    default: col = a; phase = a == 0 ? 1 : -1; return;
  }
}

// A +-1 measurement record's mean: `shots` outcomes with P(+1) = (1 + x)/2.
double sampled_mean(double x, int64_t shots, std::mt19937_64& rng) {
  const double p = std::clamp((1 + x) / 2, 0.0, 1.0);
  std::binomial_distribution<int64_t> b(shots, p);
  return 2.0 * double(b(rng)) / double(shots) - 1.0;
}

}  // namespace

Observer::Observer(const TaskSpec& task, ObsKind kind, int64_t shots)
    : task_(task), kind_(kind), shots_(shots), d_(task.dim) {
  const int d = d_;
  if (task.qubits > 0) {
    const int n = task.qubits;
    const int count = 1 << (2 * n);
    for (int s = 0; s < count; ++s) {
      Sparse p;
      p.col.resize(std::size_t(d));
      p.phase.resize(std::size_t(d));
      for (int a = 0; a < d; ++a) {
        int col = 0;
        Cx ph = 1;
        for (int q = 0; q < n; ++q) {  // qubit 0 is the most significant bit (kron(op, I) acts on qubit 0)
          const int k = (s >> (2 * (n - 1 - q))) & 3;
          const int bit = (a >> (n - 1 - q)) & 1;
          int c;
          Cx f;
          pauli_factor(k, bit, c, f);
          col |= c << (n - 1 - q);
          ph *= f;
        }
        p.col[std::size_t(a)] = col;
        p.phase[std::size_t(a)] = ph;
      }
      paulis_.push_back(p);
    }
  }
  if (task.gate) {
    const auto& v = task.target_unitary;
    const int d2 = d * d;
    target_super_.assign(std::size_t(d2) * d2, 0);
    for (int p = 0; p < d; ++p)
      for (int q = 0; q < d; ++q)
        for (int i = 0; i < d; ++i)
          for (int j = 0; j < d; ++j)
            target_super_[std::size_t(p * d + i) * d2 + (q * d + j)] = std::conj(v[std::size_t(p) * d + q]) * v[std::size_t(i) * d + j];
  }
  n_physical_ = kind == ObsKind::density ? (task.gate ? 2 * int64_t(d) * d * d * d : int64_t(d) * d) : n_expectations();
}

int64_t Observer::n_expectations() const {
  const int64_t d2 = int64_t(d_) * d_;
  if (task_.qubits > 0) return task_.gate ? (d2 - 1) * d2 : d2 - 1;
  return d_ + 2 * (d_ - 1);  // ladder: populations, then <X_k>, <Y_k> of each adjacent pair
}

void Observer::expectation_features(const Cx* state, double* x) const {
  const int d = d_, d2 = d * d;
  if (task_.qubits > 0 && task_.gate) {
    // R_ij = tr(P_i E(P_j)) / d for i >= 1: the Pauli transfer matrix without its trivial first row.
    int64_t o = 0;
    for (std::size_t i = 1; i < paulis_.size(); ++i) {
      const Sparse& pi = paulis_[i];
      for (const Sparse& pj : paulis_) {
        Cx acc = 0;
        for (int b = 0; b < d; ++b) {
          const Cx* row = state + std::size_t(b * d + pi.col[std::size_t(b)]) * d2;
          Cx inner = 0;
          for (int a = 0; a < d; ++a) inner += row[pj.col[std::size_t(a)] * d + a] * pj.phase[std::size_t(a)];
          acc += pi.phase[std::size_t(b)] * inner;
        }
        x[o++] = acc.real() / d;
      }
    }
    return;
  }
  auto rho = [&](int i, int j) { return state[std::size_t(j) * d + i]; };  // vec(rho)[j d + i] = rho_ij
  if (task_.qubits > 0) {
    for (std::size_t i = 1; i < paulis_.size(); ++i) {
      Cx acc = 0;
      for (int a = 0; a < d; ++a) acc += paulis_[i].phase[std::size_t(a)] * rho(paulis_[i].col[std::size_t(a)], a);
      x[i - 1] = acc.real();
    }
    return;
  }
  for (int k = 0; k < d; ++k) x[k] = rho(k, k).real();
  for (int k = 0; k + 1 < d; ++k) {
    x[d + 2 * k] = 2 * rho(k, k + 1).real();       // <|k><k+1| + |k+1><k|>
    x[d + 2 * k + 1] = -2 * rho(k, k + 1).imag();  // <-i|k><k+1| + i|k+1><k|>
  }
}

void Observer::exact_features(const Cx* state, double* x) const {
  const int d = d_;
  if (kind_ != ObsKind::density) {
    expectation_features(state, x);
    return;
  }
  if (task_.gate) {
    const int64_t n = int64_t(d) * d * d * d;
    for (int64_t k = 0; k < n; ++k) {
      x[2 * k] = state[k].real();
      x[2 * k + 1] = state[k].imag();
    }
    return;
  }
  int64_t o = 0;
  for (int k = 0; k < d; ++k) x[o++] = state[std::size_t(k) * d + k].real();
  for (int i = 0; i < d; ++i)
    for (int j = i + 1; j < d; ++j) {
      const Cx z = state[std::size_t(j) * d + i];
      x[o++] = z.real();
      x[o++] = z.imag();
    }
}

void Observer::features(const Cx* state, float* out, std::mt19937_64& rng) const {
  const int d = d_;
  thread_local std::vector<double> x;  // no allocation per step
  x.assign(std::size_t(n_physical_), 0.0);
  exact_features(state, x.data());
  if (kind_ == ObsKind::measurements) {
    if (task_.qubits > 0) {
      for (auto& v : x) v = sampled_mean(v, shots_, rng);
    } else {
      // Populations: `shots` computational-basis outcomes (multinomial, by conditional binomials).
      int64_t left = shots_;
      double mass = 1;
      std::vector<double> p(x.begin(), x.begin() + d);
      for (int k = 0; k < d; ++k) {
        const double q = k + 1 == d ? 1.0 : std::clamp(p[std::size_t(k)] / std::max(mass, 1e-300), 0.0, 1.0);
        std::binomial_distribution<int64_t> b(left, q);
        const int64_t got = k + 1 == d ? left : b(rng);
        x[std::size_t(k)] = double(got) / double(shots_);
        left -= got;
        mass -= p[std::size_t(k)];
      }
      // <X_k>, <Y_k>: eigenvalues +1, -1 (and 0 outside levels k, k+1): outcomes +-1 with
      // probabilities (P_k +- x)/2, P_k = rho_kk + rho_k+1,k+1, else 0.
      for (int k = 0; k + 1 < d; ++k) {
        const double pk = std::clamp(p[std::size_t(k)] + p[std::size_t(k) + 1], 0.0, 1.0);
        for (int c = 0; c < 2; ++c) {
          double& v = x[std::size_t(d + 2 * k + c)];
          const double plus = std::clamp((pk + v) / 2, 0.0, 1.0), minus = std::clamp((pk - v) / 2, 0.0, 1.0 - plus);
          std::binomial_distribution<int64_t> bp(shots_, plus);
          const int64_t np = bp(rng);
          const double rest = 1 - plus;
          std::binomial_distribution<int64_t> bm(shots_ - np, rest > 0 ? std::clamp(minus / rest, 0.0, 1.0) : 0.0);
          const int64_t nm = bm(rng);
          v = double(np - nm) / double(shots_);
        }
      }
    }
  }
  for (std::size_t k = 0; k < x.size(); ++k) out[k] = float(x[k]);
}

double Observer::fidelity(const Cx* state) const {
  const int d = d_;
  if (task_.gate) {
    const int64_t n = int64_t(d) * d * d * d;
    double tr = 0;
    for (int64_t k = 0; k < n; ++k) tr += (std::conj(target_super_[std::size_t(k)]) * state[k]).real();
    const double f_pro = tr / (double(d) * d);  // tr(S_V^dag S_V) = d^2
    return (d * f_pro + 1) / (d + 1);
  }
  const auto& psi = task_.target_state;
  Cx acc = 0;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) acc += std::conj(psi[std::size_t(i)]) * state[std::size_t(j) * d + i] * psi[std::size_t(j)];
  return acc.real();
}

}  // namespace qfleet::rl
