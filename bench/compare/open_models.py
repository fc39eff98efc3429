"""Open-system workloads (2: qubit X gate, 3: two-qubit CZ, sweeps: d-level ladders),
their parameters, the average gate fidelity and the float64 reference.

Conventions (shared by every alternative):

* Lindblad: d rho/dt = -i[H, rho] + sum_j gamma_j (L_j rho L_j^dag - {L_j^dag L_j, rho}/2),
  i.e. collapse operators sqrt(gamma_j) L_j; H = H0 + sum_c u_c(t) H_c with u
  piecewise constant on n_seg equal segments of [0, T].
* Superoperators use column stacking: vec(A X B) = (B^T kron A) vec(X), so
  vec(X)[i + d j] = X[i, j] (numpy: X.reshape(-1, order="F")).
* F_pro = Re tr(S_U^dag S) / d^2 with S_U = conj(U) kron U; F_avg = (d F_pro + 1)/(d + 1).
  (For a CP map tr(S_U^dag S) = sum_k |tr(U^dag K_k)|^2 is real and >= 0.)
* Loss = sum over tasks of (1 - F_avg).

The reference ("truth" for every integrator) is the exact piecewise-constant
propagator product, scipy.linalg.expm of dt * Liouvillian per segment, float64;
its gradient is exact too: dF/dtheta = Re tr(C_k dP_k)/d^2 * d/(d+1) with
C_k = P_{k-1}..P_1 S_U^dag P_N..P_{k+1} and dP_k = expm_frechet(dt A_k, dt dA_k/dtheta).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
Z = np.array([[1, 0], [0, -1]], dtype=complex)
I2 = np.eye(2, dtype=complex)
SIGMA_MINUS = np.array([[0, 1], [0, 0]], dtype=complex)  # |0><1|, |0> = (1, 0)

RELAX_RANGE = (0.01, 0.08)
DEPH_RANGE = (0.02, 0.15)


@dataclass
class Model:
    name: str
    d: int
    controls: list  # [d, d] complex Hermitian
    jumps: list  # [d, d] complex (rates multiply as sqrt(gamma) L)
    jump_kinds: list  # "relax" | "deph" (which rate distribution)
    n_seg: int
    T: float
    U_target: np.ndarray | None  # gate target (propagate the channel); None for state transfer
    H0: np.ndarray | None = None
    notes: str = ""
    psi0: np.ndarray | None = None  # state transfer: initial pure state ...
    psi_target: np.ndarray | None = None  # ... and target; F = <target| rho(T) |target>
    amp_range: tuple = (-4.0, 4.0)
    relax_range: tuple = RELAX_RANGE
    deph_range: tuple = DEPH_RANGE

    @property
    def n_ctrl(self) -> int:
        return len(self.controls)

    @property
    def n_jump(self) -> int:
        return len(self.jumps)

    @property
    def drift(self) -> np.ndarray:
        return self.H0 if self.H0 is not None else np.zeros((self.d, self.d), dtype=complex)


def qubit_x_model(n_seg: int = 60, T: float = 1.0) -> Model:
    return Model(
        name="qubit X gate", d=2, controls=[X / 2, Y / 2],
        jumps=[SIGMA_MINUS, Z / np.sqrt(2)], jump_kinds=["relax", "deph"],
        n_seg=n_seg, T=T, U_target=X.copy(),
        notes="H = u_x X/2 + u_y Y/2; L = sqrt(g_relax) |0><1|, sqrt(g_deph/2) Z; target X")


def two_qubit_cz_model(n_seg: int = 30, T: float = 1.0) -> Model:
    k = np.kron
    controls = [k(X, I2) / 2, k(Y, I2) / 2, k(I2, X) / 2, k(I2, Y) / 2, k(X, X) / 2, k(Z, Z) / 2]
    jumps = [k(SIGMA_MINUS, I2), k(Z, I2) / np.sqrt(2), k(I2, SIGMA_MINUS), k(I2, Z) / np.sqrt(2)]
    return Model(
        name="two-qubit CZ", d=4, controls=controls, jumps=jumps,
        jump_kinds=["relax", "deph", "relax", "deph"], n_seg=n_seg, T=T,
        U_target=np.diag([1, 1, 1, -1]).astype(complex),
        notes="qubit 0 = first kron factor; controls X0/2 Y0/2 X1/2 Y1/2 XX/2 ZZ/2; "
              "jumps q0 relax, q0 deph, q1 relax, q1 deph; target CZ")


def ladder_model(d: int, n_seg: int = 60, T: float = 1.0) -> Model:
    """d-level generalisation of the qubit workload (identical to it at d = 2):
    a = sum_n sqrt(n) |n-1><n|, controls (a + a^dag)/2 and i(a^dag - a)/2,
    jumps sqrt(g_relax) a and sqrt(g_deph/2) (I - 2 n), target exp(-i pi (a + a^dag)/2)
    (= -i X at d = 2)."""
    a = np.diag(np.sqrt(np.arange(1, d)), 1).astype(complex)
    ad = a.conj().T
    num = ad @ a
    hx = (a + ad) / 2
    hy = 1j * (ad - a) / 2
    U = sla.expm(-1j * np.pi * hx)
    return Model(
        name=f"ladder d={d}", d=d, controls=[hx, hy],
        jumps=[a, (np.eye(d) - 2 * num) / np.sqrt(2)], jump_kinds=["relax", "deph"],
        n_seg=n_seg, T=T, U_target=U,
        notes="a = truncated lowering operator; controls (a+a^dag)/2, i(a^dag-a)/2; "
              "jumps a, (I-2n)/sqrt2; target exp(-i pi (a+a^dag)/2)")


def on_qubit(op: np.ndarray, q: int, n: int) -> np.ndarray:
    """op on qubit q of n (qubit 0 the first, most significant Kronecker factor)."""
    out = np.eye(1, dtype=complex)
    for i in range(n):
        out = np.kron(out, op if i == q else I2)
    return out


def local_qubits_model(n: int, n_seg: int = 60, T: float = 2.0) -> Model:
    """The state-transfer workload (docs/benchmarks.md, "Open systems: state transfer, d = 2 to
    64"), bench/micro/bench_open.cpp's local_qubits: n qubits (d = 2^n),
    H0 = sum_q (0.3 + 0.1 q) Z_q + 0.05 sum_q Z_q Z_{q+1}, controls X_q/2 and Y_q/2 on
    every qubit (order X0/2, Y0/2, X1/2, ...), jumps sigma^-_q (relaxation) and Z_q/sqrt2
    (dephasing) on every qubit (order q0 relax, q0 deph, q1 relax, ...), state transfer
    |0...0> -> |1...1>, 60 segments over T = 2; amplitudes U[-2, 2], relaxation rates
    U[0.01, 0.05], dephasing U[0.02, 0.1]."""
    d = 2**n
    H0 = np.zeros((d, d), dtype=complex)
    for q in range(n):
        H0 += (0.3 + 0.1 * q) * on_qubit(Z, q, n)
        if q + 1 < n:
            H0 += 0.05 * on_qubit(Z, q, n) @ on_qubit(Z, q + 1, n)
    controls, jumps, kinds = [], [], []
    for q in range(n):
        controls += [on_qubit(X, q, n) / 2, on_qubit(Y, q, n) / 2]
        jumps += [on_qubit(SIGMA_MINUS, q, n), on_qubit(Z, q, n) / np.sqrt(2)]
        kinds += ["relax", "deph"]
    psi0 = np.zeros(d, dtype=complex)
    psi0[0] = 1
    target = np.zeros(d, dtype=complex)
    target[-1] = 1
    return Model(
        name=f"local qubits n={n}", d=d, controls=controls, jumps=jumps, jump_kinds=kinds,
        n_seg=n_seg, T=T, U_target=None, H0=H0, psi0=psi0, psi_target=target,
        amp_range=(-2.0, 2.0), relax_range=(0.01, 0.05), deph_range=(0.02, 0.1),
        notes="H0 = sum_q (0.3+0.1q) Z_q + 0.05 sum Z_q Z_q+1; controls X_q/2, Y_q/2; jumps sigma^-_q, "
              "Z_q/sqrt2; |0..0> -> |1..1>, F = <1..1|rho(T)|1..1> (bench/micro/bench_open.cpp local_qubits)")


def sample_params(model: Model, B: int, seed: int):
    """Amplitudes [B, n_seg, n_ctrl] ~ U[amp_range]; rates [B, n_jump] per jump kind."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(*model.amp_range, size=(B, model.n_seg, model.n_ctrl))
    rates = np.empty((B, model.n_jump))
    for j, kind in enumerate(model.jump_kinds):
        lo, hi = model.relax_range if kind == "relax" else model.deph_range
        rates[:, j] = rng.uniform(lo, hi, size=B)
    return u, rates


# --------------------------------------------------------------------------- superoperators


def vec(Xm: np.ndarray) -> np.ndarray:
    """Column stacking over the last two axes: vec(X)[i + d j] = X[i, j]."""
    return np.swapaxes(Xm, -1, -2).reshape(Xm.shape[:-2] + (-1,))


def unvec(v: np.ndarray, d: int) -> np.ndarray:
    return v.reshape(d, d, order="F")


def lh(H: np.ndarray) -> np.ndarray:
    """Superoperator of rho -> -i[H, rho]."""
    d = H.shape[0]
    I = np.eye(d)
    return -1j * (np.kron(I, H) - np.kron(H.T, I))


def dissipator(L: np.ndarray) -> np.ndarray:
    """Superoperator of rho -> L rho L^dag - {L^dag L, rho}/2."""
    d = L.shape[0]
    I = np.eye(d)
    LdL = L.conj().T @ L
    return np.kron(L.conj(), L) - 0.5 * np.kron(I, LdL) - 0.5 * np.kron(LdL.T, I)


def target_super(U: np.ndarray) -> np.ndarray:
    return np.kron(U.conj(), U)


def f_pro(S: np.ndarray, U: np.ndarray) -> np.ndarray:
    """S: [..., d^2, d^2] -> Re tr(S_U^dag S)/d^2."""
    d = U.shape[0]
    SU = target_super(U)
    return np.real(np.einsum("ij,...ij->...", SU.conj(), S)) / d**2


def f_avg_from_super(S: np.ndarray, U: np.ndarray) -> np.ndarray:
    d = U.shape[0]
    return (d * f_pro(S, U) + 1) / (d + 1)


# Independent route (used only by the self-checks): Nielsen's formula with a
# unitary operator basis {P_j} (generalised Paulis, tr(P_j^dag P_k) = d delta_jk):
# F_avg = (sum_j tr(U P_j^dag U^dag E(P_j)) + d^2) / (d^2 (d + 1)).


def weyl_basis(d: int) -> list:
    w = np.exp(2j * np.pi / d)
    Xs = np.roll(np.eye(d), 1, axis=0)
    Zs = np.diag(w ** np.arange(d))
    return [np.linalg.matrix_power(Xs, a) @ np.linalg.matrix_power(Zs, b)
            for a in range(d) for b in range(d)]


def f_avg_nielsen(channel, U: np.ndarray) -> float:
    d = U.shape[0]
    tot = 0.0
    for P in weyl_basis(d):
        tot += np.trace(U @ P.conj().T @ U.conj().T @ channel(P))
    return float(np.real(tot + d**2) / (d**2 * (d + 1)))


def apply_super(S: np.ndarray, rho: np.ndarray) -> np.ndarray:
    d = rho.shape[0]
    return unvec(S @ vec(rho), d)


# --------------------------------------------------------------------------- reference


class Reference:
    """Exact piecewise-constant propagator product, scipy expm, float64."""

    def __init__(self, model: Model):
        self.m = model
        self.G0 = lh(model.drift)
        self.Gc = [lh(H) for H in model.controls]
        self.Dj = [dissipator(L) for L in model.jumps]
        self.SU = target_super(model.U_target)

    def generator(self, u_k: np.ndarray, rates: np.ndarray) -> np.ndarray:
        A = self.G0.copy()
        for c, G in enumerate(self.Gc):
            A = A + u_k[c] * G
        for j, D in enumerate(self.Dj):
            A = A + rates[j] * D
        return A

    def superop(self, u: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """One task: u [n_seg, n_ctrl], rates [n_jump] -> S [d^2, d^2]."""
        dt = self.m.T / self.m.n_seg
        S = np.eye(self.m.d**2, dtype=complex)
        for k in range(self.m.n_seg):
            S = sla.expm(dt * self.generator(u[k], rates)) @ S
        return S

    def forward(self, u: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """u [B, n_seg, n_ctrl], rates [B, n_jump] -> F_avg [B]."""
        return np.array([f_avg_from_super(self.superop(u[b], rates[b]), self.m.U_target)
                         for b in range(u.shape[0])])

    def forward_grad(self, u: np.ndarray, rates: np.ndarray):
        """-> (F_avg [B], dLoss/du [B, n_seg, n_ctrl], dLoss/drates [B, n_jump]),
        Loss = sum_b (1 - F_avg_b)."""
        m = self.m
        d = m.d
        dt = m.T / m.n_seg
        B = u.shape[0]
        F = np.empty(B)
        gu = np.zeros_like(u)
        gr = np.zeros_like(rates)
        scale = -(d / (d + 1)) / d**2  # dLoss/dtr(S_U^dag S) (real part)
        for b in range(B):
            As = [dt * self.generator(u[b, k], rates[b]) for k in range(m.n_seg)]
            Ps = [sla.expm(A) for A in As]
            prefix = [np.eye(d * d, dtype=complex)]
            for P in Ps:
                prefix.append(P @ prefix[-1])
            S = prefix[-1]
            F[b] = f_avg_from_super(S, m.U_target)
            suffix = np.eye(d * d, dtype=complex)  # P_N .. P_{k+1}
            SUd = self.SU.conj().T
            for k in range(m.n_seg - 1, -1, -1):
                C = prefix[k] @ SUd @ suffix
                for c, G in enumerate(self.Gc):
                    dP = sla.expm_frechet(As[k], dt * G, compute_expm=False)
                    gu[b, k, c] = scale * np.real(np.trace(C @ dP))
                for j, D in enumerate(self.Dj):
                    dP = sla.expm_frechet(As[k], dt * D, compute_expm=False)
                    gr[b, j] += scale * np.real(np.trace(C @ dP))
                suffix = suffix @ Ps[k]
        return F, gu, gr


def model_for(workload: str, d: int | None = None) -> Model:
    if workload == "meta":
        return qubit_x_model()
    if workload == "cz":
        return two_qubit_cz_model()
    if workload == "ladder":
        return ladder_model(d)
    raise ValueError(workload)
