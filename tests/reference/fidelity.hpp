// The tests' independent dense reference: figures of merit of open and closed
// systems, from their textbook definitions (each with second constructions that
// tests/unit/test_open_reference.cpp checks the first against):
//   Uhlmann fidelity (tr sqrt(sqrt(sigma) rho sqrt(sigma)))^2 from Hermitian
//     eigendecompositions; again with Eigen's .sqrt(), and from the spectrum of rho sigma
//   average gate fidelity by Nielsen's formula over the Weyl operator basis,
//     F = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d+1)); again as the state
//     fidelity averaged over a 2-design, and from the Choi matrix
// Plain Eigen; shares no code with qfleet.
#pragma once

#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "dense.hpp"

namespace ref {

Mat psd_sqrt(const Mat& a);

// Uhlmann fidelity (tr sqrt(sqrt(sigma) rho sqrt(sigma)))^2 from Hermitian eigendecompositions.
double uhlmann(const Mat& rho, const Mat& sigma);
// The same with Eigen's general matrix square root (full-rank arguments only).
double uhlmann_sqrtm(const Mat& rho, const Mat& sigma);
// The same from the spectrum of rho sigma (similar to sqrt(rho) sigma sqrt(rho)).
double uhlmann_spectrum(const Mat& rho, const Mat& sigma);

using Channel = std::function<Mat(const Mat&)>;

// Weyl (clock-and-shift) operators X^a Z^b, a unitary operator basis with tr(P^dag Q) = d delta.
Mat weyl(Index d, Index a, Index b);

// Nielsen (2002): F_avg = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d + 1)).
double avg_fidelity_weyl(const Channel& e, const Mat& u, Index d);

// Average over a 2-design of <psi|U^dag E(|psi><psi|) U|psi>: the six Pauli
// eigenstates (d = 2) or the d + 1 mutually unbiased bases (odd prime d).
double avg_fidelity_design(const Channel& e, const Mat& u, Index d);

// Via the Choi matrix J = sum_ij |i><j| kron E(|i><j|): F_pro = <<U|J|U>>/d^2.
double avg_fidelity_choi(const Channel& e, const Mat& u, Index d);

}  // namespace ref
