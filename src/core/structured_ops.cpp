// Dense d x d matrices from local operators and Pauli sums (qfleet/structured_ops.hpp).
#include "qfleet/structured_ops.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "qfleet/error.hpp"
#include "qfleet/observable.hpp"

namespace qfleet {

namespace {

// d at most 2^12: the dense d x d result is then 256 MiB at most (an open system's
// state alone is d^2 entries per task, so larger d would not run anyway).
constexpr std::int64_t kMaxDim = std::int64_t{1} << 12;

std::int64_t checked_dim(const std::vector<int>& dims) {
  if (dims.empty()) throw Error("local_operator: dims is empty; give every subsystem's dimension, e.g. {2, 2, 3}");
  std::int64_t d = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 1) {
      throw Error("local_operator: subsystem " + std::to_string(k) + " has dimension " + std::to_string(dims[k]) +
                  "; each must be >= 1");
    }
    d *= dims[k];
    if (d > kMaxDim) {
      throw Error("local_operator: the subsystems' dimensions multiply to more than " + std::to_string(kMaxDim) +
                  " (the largest d an OpenSystem takes here)");
    }
  }
  return d;
}

}  // namespace

ComplexMatrix local_operator(const ComplexMatrix& op, const std::vector<int>& on, const std::vector<int>& dims) {
  const std::int64_t d = checked_dim(dims);
  const int n = static_cast<int>(dims.size());
  std::vector<bool> used(dims.size(), false);
  std::int64_t D = 1;
  for (const int k : on) {
    if (k < 0 || k >= n) {
      throw Error("local_operator: subsystem " + std::to_string(k) + " is not in [0, " + std::to_string(n) + ")");
    }
    if (used[std::size_t(k)]) throw Error("local_operator: subsystem " + std::to_string(k) + " is named twice in `on`");
    used[std::size_t(k)] = true;
    D *= dims[std::size_t(k)];
  }
  if (on.empty()) throw Error("local_operator: `on` is empty; name the subsystems the operator acts on");
  if (std::int64_t(op.size()) != D * D) {
    throw Error("local_operator: the operator has " + std::to_string(op.size()) + " entries; acting on subsystems of "
                "dimensions multiplying to " + std::to_string(D) + " it must be " + std::to_string(D) + "x" +
                std::to_string(D) + " (" + std::to_string(D * D) + " entries, row-major)");
  }
  for (std::size_t i = 0; i < op.size(); ++i) {
    if (!std::isfinite(op[i].real()) || !std::isfinite(op[i].imag())) {
      throw Error("local_operator: entry (" + std::to_string(i / std::size_t(D)) + ", " +
                  std::to_string(i % std::size_t(D)) + ") is not finite");
    }
  }
  // stride[k]: the basis-index weight of subsystem k.
  std::vector<std::int64_t> stride(dims.size());
  std::int64_t s = 1;
  for (int k = n - 1; k >= 0; --k) {
    stride[std::size_t(k)] = s;
    s *= dims[std::size_t(k)];
  }
  // offset(a): the basis-index part of local index a (op's factors on on[0], on[1], ...).
  std::vector<std::int64_t> offset(std::size_t(D), 0);
  for (std::int64_t a = 0; a < D; ++a) {
    std::int64_t rest = a, off = 0;
    for (int t = int(on.size()) - 1; t >= 0; --t) {
      const int k = on[std::size_t(t)];
      off += (rest % dims[std::size_t(k)]) * stride[std::size_t(k)];
      rest /= dims[std::size_t(k)];
    }
    offset[std::size_t(a)] = off;
  }
  ComplexMatrix m(std::size_t(d * d), Complex(0, 0));
  for (std::int64_t base = 0; base < d; ++base) {  // basis states with the `on` digits all zero
    bool zero_on_on = true;
    for (const int k : on) zero_on_on = zero_on_on && (base / stride[std::size_t(k)]) % dims[std::size_t(k)] == 0;
    if (!zero_on_on) continue;
    for (std::int64_t a = 0; a < D; ++a) {
      for (std::int64_t b = 0; b < D; ++b) {
        m[std::size_t((base + offset[std::size_t(a)]) * d + base + offset[std::size_t(b)])] =
            op[std::size_t(a * D + b)];
      }
    }
  }
  return m;
}

ComplexMatrix pauli_operator(const std::vector<std::pair<Complex, std::string>>& terms, int n_qubits) {
  if (n_qubits < 1 || n_qubits > 12) {
    throw Error("pauli_operator: n_qubits must be in [1, 12] (d at most 4096), got " + std::to_string(n_qubits));
  }
  const std::uint64_t d = std::uint64_t{1} << n_qubits;
  ComplexMatrix m(d * d, Complex(0, 0));
  for (const auto& [c, text] : terms) {
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) {
      throw Error("pauli_operator: the coefficient of \"" + text + "\" is not finite");
    }
    const PauliWord w = PauliWord::parse(text);
    if (w.max_wire() >= n_qubits) {
      throw Error("pauli_operator: \"" + text + "\" names qubit " + std::to_string(w.max_wire()) + " but the system has " +
                  std::to_string(n_qubits) + " qubit(s)");
    }
    // P|j> = phase(j) |j ^ flip>: X and Y flip their qubit's bit, Y|0> = i|1>, Y|1> = -i|0>, Z|1> = -|1>.
    std::uint64_t flip = 0;
    for (const auto& [p, q] : w.factors) {
      if (p != 'Z') flip |= std::uint64_t{1} << (n_qubits - 1 - q);
    }
    for (std::uint64_t j = 0; j < d; ++j) {
      Complex phase = c;
      for (const auto& [p, q] : w.factors) {
        const bool one = (j >> (n_qubits - 1 - q)) & 1u;
        if (p == 'Z' && one) phase = -phase;
        if (p == 'Y') phase *= one ? Complex(0, -1) : Complex(0, 1);
      }
      m[(j ^ flip) * d + j] += phase;
    }
  }
  return m;
}

}  // namespace qfleet
