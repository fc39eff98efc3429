// The catalogue's channels as superoperators, and their parameter derivatives,
// written once for host and device.
//
// A channel on k wires acts on the 2k index bits (row bits of its wires, then column
// bits) of a vectorised density matrix: rho'_{ab} = sum_{cd} S[(a,b),(c,d)] rho_{cd},
// local index a * 2^k + b (first wire most significant in a and b). For Kraus
// operators S = sum_k K_k (x) conj(K_k). The entries below are those sums worked
// out per channel (docs/noisy.md), so they are linear or smooth in the parameters
// and their derivatives exist where the Kraus square roots' do not (p = 0).
#pragma once

#include <cmath>

#include "kernels/complex.hpp"
#include "qfleet/channels.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

// Dimension of a channel's superoperator block: 4 (one wire) or 16 (two).
QFLEET_HD constexpr int superop_dim(int wires) { return 1 << (2 * wires); }

namespace detail_channel {

template <class T>
QFLEET_HD inline void zero16(Cx<T>* s, int n) {
  for (int i = 0; i < n; ++i) s[i] = {0, 0};
}

// One-qubit superoperator entry S[(a,b),(c,d)] (4 x 4, row-major).
template <class T>
QFLEET_HD inline void set1(Cx<T>* s, int a, int b, int c, int d, T v) {
  s[(a * 2 + b) * 4 + (c * 2 + d)] = {v, 0};
}

// The one-qubit "population / coherence" form every catalogue channel but the Pauli
// ones has: rho'00 = p00 rho00 + p01 rho11, rho'11 = p10 rho00 + p11 rho11,
// rho'01 = coh rho01, rho'10 = coh rho10.
template <class T>
QFLEET_HD inline void relaxation(Cx<T>* s, T p00, T p01, T p10, T p11, T coh) {
  zero16(s, 16);
  set1(s, 0, 0, 0, 0, p00);
  set1(s, 0, 0, 1, 1, p01);
  set1(s, 1, 1, 0, 0, p10);
  set1(s, 1, 1, 1, 1, p11);
  set1(s, 0, 1, 0, 1, coh);
  set1(s, 1, 0, 1, 0, coh);
}

// (1-px-py-pz) rho + px X rho X + py Y rho Y + pz Z rho Z; with p0 = 1-px-py-pz:
// rho'00 = (p0+pz) rho00 + (px+py) rho11, rho'01 = (p0-pz) rho01 + (px-py) rho10.
// The derivative forms pass (dp0, dpx, dpy, dpz) instead.
template <class T>
QFLEET_HD inline void pauli(Cx<T>* s, T p0, T px, T py, T pz) {
  zero16(s, 16);
  set1(s, 0, 0, 0, 0, p0 + pz);
  set1(s, 0, 0, 1, 1, px + py);
  set1(s, 1, 1, 0, 0, px + py);
  set1(s, 1, 1, 1, 1, p0 + pz);
  set1(s, 0, 1, 0, 1, p0 - pz);
  set1(s, 0, 1, 1, 0, px - py);
  set1(s, 1, 0, 0, 1, px - py);
  set1(s, 1, 0, 1, 0, p0 - pz);
}

// (1 - lam) rho + lam Tr(rho) I/4 on two qubits, 16 x 16: S = (1-lam) Id + lam/4 |I>><<I|.
template <class T>
QFLEET_HD inline void depolarizing2(Cx<T>* s, T keep, T mix) {
  zero16(s, 256);
  for (int r = 0; r < 16; ++r) s[r * 16 + r] = {keep, 0};
  for (int a = 0; a < 4; ++a) {
    for (int c = 0; c < 4; ++c) s[(a * 4 + a) * 16 + (c * 4 + c)].re += mix / 4;
  }
}

}  // namespace detail_channel

// Writes channel ch's superoperator for parameters p (superop_dim^2 entries). Kraus
// channels are data: callers take their block from the plan.
template <class T>
QFLEET_HD inline void channel_superop(Channel ch, const T* p, Cx<T>* s) {
  using namespace detail_channel;
  switch (ch) {
    case Channel::Depolarizing:
      return pauli<T>(s, 1 - p[0], p[0] / 3, p[0] / 3, p[0] / 3);
    case Channel::BitFlip:
      return pauli<T>(s, 1 - p[0], p[0], 0, 0);
    case Channel::PhaseFlip:
      return pauli<T>(s, 1 - p[0], 0, 0, p[0]);
    case Channel::PauliChannel:
      return pauli<T>(s, 1 - p[0] - p[1] - p[2], p[0], p[1], p[2]);
    case Channel::AmplitudeDamping:
      return relaxation<T>(s, 1, p[0], 0, 1 - p[0], std::sqrt(1 - p[0]));
    case Channel::GeneralizedAmplitudeDamping: {
      // (gamma, p): relaxation towards the thermal state (1-p, p) (p = excited population).
      const T g = p[0], q = p[1];
      return relaxation<T>(s, 1 - q * g, (1 - q) * g, q * g, 1 - (1 - q) * g, std::sqrt(1 - g));
    }
    case Channel::PhaseDamping:
      return relaxation<T>(s, 1, 0, 0, 1, std::sqrt(1 - p[0]));
    case Channel::ThermalRelaxation: {
      // (pe, t1, t2, tg): populations relax towards (1-pe, pe) with 1 - exp(-tg/t1),
      // coherences decay with exp(-tg/t2).
      const T pe = p[0], reset = 1 - std::exp(-p[3] / p[1]), e2 = std::exp(-p[3] / p[2]);
      return relaxation<T>(s, 1 - pe * reset, (1 - pe) * reset, pe * reset, 1 - (1 - pe) * reset, e2);
    }
    case Channel::TwoQubitDepolarizing: {
      const T lam = p[0] * T(16) / T(15);
      return depolarizing2<T>(s, 1 - lam, lam);
    }
    case Channel::Kraus:
    case Channel::None:
      return;
  }
}

// d S / d p[j] for channel ch at parameters p.
template <class T>
QFLEET_HD inline void channel_superop_derivative(Channel ch, const T* p, int j, Cx<T>* s) {
  using namespace detail_channel;
  switch (ch) {
    case Channel::Depolarizing:
      return pauli<T>(s, -1, T(1) / 3, T(1) / 3, T(1) / 3);
    case Channel::BitFlip:
      return pauli<T>(s, -1, 1, 0, 0);
    case Channel::PhaseFlip:
      return pauli<T>(s, -1, 0, 0, 1);
    case Channel::PauliChannel:
      return pauli<T>(s, -1, j == 0 ? 1 : 0, j == 1 ? 1 : 0, j == 2 ? 1 : 0);
    case Channel::AmplitudeDamping:
      return relaxation<T>(s, 0, 1, 0, -1, -T(0.5) / std::sqrt(1 - p[0]));
    case Channel::GeneralizedAmplitudeDamping: {
      const T g = p[0], q = p[1];
      if (j == 0) return relaxation<T>(s, -q, 1 - q, q, -(1 - q), -T(0.5) / std::sqrt(1 - g));
      return relaxation<T>(s, -g, -g, g, g, 0);
    }
    case Channel::PhaseDamping:
      return relaxation<T>(s, 0, 0, 0, 0, -T(0.5) / std::sqrt(1 - p[0]));
    case Channel::ThermalRelaxation: {
      const T pe = p[0], t1 = p[1], t2 = p[2], tg = p[3];
      const T e1 = std::exp(-tg / t1), e2 = std::exp(-tg / t2), reset = 1 - e1;
      if (j == 0) return relaxation<T>(s, -reset, -reset, reset, reset, 0);
      // d reset / d t1 = -e1 tg / t1^2, d reset / d tg = e1 / t1; d e2 / d t2 = e2 tg / t2^2,
      // d e2 / d tg = -e2 / t2.
      const T dreset = j == 1 ? -e1 * tg / (t1 * t1) : (j == 3 ? e1 / t1 : T(0));
      const T de2 = j == 2 ? e2 * tg / (t2 * t2) : (j == 3 ? -e2 / t2 : T(0));
      return relaxation<T>(s, -pe * dreset, (1 - pe) * dreset, pe * dreset, -(1 - pe) * dreset, de2);
    }
    case Channel::TwoQubitDepolarizing: {
      const T dlam = T(16) / T(15);
      return depolarizing2<T>(s, -dlam, dlam);
    }
    case Channel::Kraus:
    case Channel::None:
      return;
  }
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
