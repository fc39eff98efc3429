// Operators of systems made of subsystems (qubits, qutrits, modes), built from local
// pieces as the d x d matrices OpenSystem takes (docs/open_systems.md#structured-operators).
// Subsystem 0 is the most significant tensor factor, as wire 0 is in circuits: basis
// index i = sum_k i_k * prod_{l > k} dims[l]. The Lindblad form (OpenForm::lindblad)
// then applies them by their nonzeros, so a local term on one qubit of n costs O(d)
// per column, not d^2; nothing of size d^4 is formed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "qfleet/open_system.hpp"

namespace qfleet {

// `op` (D x D row-major, D = the product of dims[on]) acting on subsystems `on`, in
// the order of op's own tensor factors (on[0] most significant), identity on the
// others. Throws qfleet::Error on bad dims (each >= 1, product at most 4096), an `on`
// entry out of range or repeated, a wrong op size, or a value that is not finite.
ComplexMatrix local_operator(const ComplexMatrix& op, const std::vector<int>& on, const std::vector<int>& dims);

// sum_k c_k P_k over Pauli words such as "X0 Z2" ("" = identity) on n_qubits qubits
// (qubit 0 most significant). Throws on a bad word, a qubit >= n_qubits, n_qubits
// outside [1, 12], or a coefficient that is not finite.
ComplexMatrix pauli_operator(const std::vector<std::pair<Complex, std::string>>& terms, int n_qubits);

}  // namespace qfleet
