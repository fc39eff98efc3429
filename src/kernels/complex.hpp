// A minimal complex number usable on host and device (std::complex is host-only
// in device code before libcu++; keeping our own avoids two code paths).
#pragma once

#include <cmath>

#include "kernels/hd.hpp"
#include "kernels/types.hpp"

namespace qfleet::kern {
inline namespace QFLEET_KERN_ISA {

template <class R>
struct Cx {
  R re, im;
};

template <class R>
QFLEET_HD inline Cx<R> operator*(Cx<R> a, Cx<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class R>
QFLEET_HD inline Cx<R> operator+(Cx<R> a, Cx<R> b) {
  return {a.re + b.re, a.im + b.im};
}
template <class R>
QFLEET_HD inline Cx<R> operator*(R s, Cx<R> a) {
  return {s * a.re, s * a.im};
}
template <class R>
QFLEET_HD inline Cx<R> conj(Cx<R> a) {
  return {a.re, -a.im};
}
// exp(i * phi)
template <class R>
QFLEET_HD inline Cx<R> expi(R phi) {
  using std::cos;
  using std::sin;
  return {cos(phi), sin(phi)};
}

}  // namespace QFLEET_KERN_ISA
}  // namespace qfleet::kern
