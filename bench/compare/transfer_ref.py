"""Reference for the local-qubit state-transfer sweep (d = 2..64), without d^4 dense work.

The Liouvillian A_k = -i[H_k, .] + sum_j gamma_j D_j of every segment is a sparse
d^2 x d^2 matrix (column stacking, as open_models.py): local terms on n qubits give
O(d^2) nonzeros. Per segment rho_k = exp(dt A_k) rho_{k-1} by
scipy.sparse.linalg.expm_multiply (Al-Mohy & Higham 2011: truncated Taylor series
with scaling, chosen for double-precision backward error), float64/complex128.
F = <target| rho_N |target> = Re <vec P, rho_N>, P = |target><target|.

Gradient of Loss = sum_b (1 - F_b), exact (no finite differences): with the adjoint
states lam_N = vec P, lam_{k-1} = exp(dt A_k)^dag lam_k (expm_multiply of dt A_k^dag),

    dF/dtheta = Re <lam_k, L(dt A_k, dt dA_k/dtheta) rho_{k-1}>,

L(A, E) the Fréchet derivative of exp at A in direction E, whose action on a vector is
the top half of exp([[A, E], [0, A]]) [0; v] (Higham, Functions of Matrices, 2008,
Thm. 3.6), again by expm_multiply on the sparse 2 d^2 block matrix. One such call per
(segment, parameter), so at large d the amplitude gradient is checked on a sample of
segments (all controls of each sampled segment) and the rate gradient (a sum over all
segments) only where it is affordable; entries not computed are NaN and not compared.
Its accuracy is that of expm_multiply (~1e-15 relative per call); the self-check
`tests/python/test_bench_compare_transfer.py` compares it with a dense expm of the superoperator
and with central finite differences at d = 2 and 4.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import expm_multiply


def sparse_lh(H) -> sp.csr_matrix:
    """Superoperator of rho -> -i[H, rho] (column stacking), sparse."""
    H = sp.csr_matrix(H)
    I = sp.identity(H.shape[0], dtype=complex, format="csr")
    return (-1j * (sp.kron(I, H) - sp.kron(H.T, I))).tocsr()


def sparse_dissipator(L) -> sp.csr_matrix:
    """Superoperator of rho -> L rho L^dag - {L^dag L, rho}/2 (column stacking), sparse."""
    L = sp.csr_matrix(L)
    I = sp.identity(L.shape[0], dtype=complex, format="csr")
    LdL = (L.conj().T @ L).tocsr()
    return (sp.kron(L.conj(), L) - 0.5 * sp.kron(I, LdL) - 0.5 * sp.kron(LdL.T, I)).tocsr()


def vec(M: np.ndarray) -> np.ndarray:
    return np.asarray(M).reshape(-1, order="F")


def frechet_action(A, E, v):
    """L(A, E) v: the top half of exp([[A, E], [0, A]]) [0; v]."""
    n = A.shape[0]
    big = sp.bmat([[A, E], [None, A]], format="csr")
    x = np.concatenate([np.zeros(n, dtype=complex), v])
    return expm_multiply(big, x)[:n]


class SparseTransferReference:
    """State transfer psi0 -> target on a Model with psi0 / psi_target set."""

    def __init__(self, model):
        self.m = model
        self.dt = model.T / model.n_seg
        self.G0 = sparse_lh(model.drift)
        self.Gc = [sparse_lh(H) for H in model.controls]
        self.Dj = [sparse_dissipator(L) for L in model.jumps]
        self.rho0 = vec(np.outer(model.psi0, model.psi0.conj()))
        self.obs = vec(np.outer(model.psi_target, model.psi_target.conj()))

    def generator(self, u_k, rates) -> sp.csr_matrix:
        A = self.G0.copy()
        for c, G in enumerate(self.Gc):
            A = A + u_k[c] * G
        for j, D in enumerate(self.Dj):
            A = A + rates[j] * D
        return A.tocsr()

    def fidelity(self, rho: np.ndarray) -> float:
        return float(np.real(np.vdot(self.obs, rho)))

    def task(self, u_b, r_b, grad_segments=None, grad_rates=False):
        """One task -> (F, dLoss/du [n_seg, n_ctrl] (NaN where not computed),
        dLoss/drates [n_jump] (NaN when grad_rates is False)).
        grad_segments: segments whose amplitude gradient is computed (None: none, "all": all)."""
        m, dt = self.m, self.dt
        As = [dt * self.generator(u_b[k], r_b) for k in range(m.n_seg)]
        rhos = [self.rho0.astype(complex)]
        for A in As:
            rhos.append(expm_multiply(A, rhos[-1]))
        F = self.fidelity(rhos[-1])
        gu = np.full((m.n_seg, m.n_ctrl), np.nan)
        gr = np.full(m.n_jump, np.nan)
        if grad_segments is None and not grad_rates:
            return F, gu, gr
        segs = set(range(m.n_seg)) if grad_segments == "all" else set(grad_segments or ())
        if grad_rates:
            gr[:] = 0.0
        lam = self.obs.astype(complex)  # lam_N
        for k in range(m.n_seg - 1, -1, -1):  # lam is lam_{k+1} in 1-based segment numbering
            if k in segs:
                for c, G in enumerate(self.Gc):
                    gu[k, c] = -np.real(np.vdot(lam, frechet_action(As[k], dt * G, rhos[k])))
            if grad_rates:
                for j, D in enumerate(self.Dj):
                    gr[j] -= np.real(np.vdot(lam, frechet_action(As[k], dt * D, rhos[k])))
            lam = expm_multiply(As[k].conj().T.tocsr(), lam)
        return F, gu, gr

    def forward(self, u, rates) -> np.ndarray:
        return np.array([self.task(u[b], rates[b])[0] for b in range(u.shape[0])])

    def forward_grad(self, u, rates, grad_segments="all", grad_rates=True):
        out = [self.task(u[b], rates[b], grad_segments, grad_rates) for b in range(u.shape[0])]
        return (np.array([o[0] for o in out]), np.stack([o[1] for o in out]), np.stack([o[2] for o in out]))


def dense_fidelity(model, u_b, r_b) -> float:
    """Independent route for small d (tests): dense scipy.linalg.expm of the superoperator
    built by open_models.lh / dissipator, applied segment by segment."""
    import scipy.linalg as sla

    from open_models import dissipator, lh

    dt = model.T / model.n_seg
    rho = vec(np.outer(model.psi0, model.psi0.conj())).astype(complex)
    for k in range(model.n_seg):
        A = lh(model.drift) + sum(u_b[k, c] * lh(H) for c, H in enumerate(model.controls))
        A = A + sum(r_b[j] * dissipator(L) for j, L in enumerate(model.jumps))
        rho = sla.expm(dt * A) @ rho
    P = vec(np.outer(model.psi_target, model.psi_target.conj()))
    return float(np.real(np.vdot(P, rho)))
