"""Physics self-checks run before any timing (recorded in the JSON, printed).

They test the conventions every alternative is graded with, by routes that do
not share code with the thing checked:

* F_avg of known channels in closed form (identity, pure dephasing, amplitude
  damping, a unitary X pulse, an orthogonal target);
* the superoperator formula F_avg = (d F_pro + 1)/(d + 1) against Nielsen's
  formula with a unitary operator basis on random noisy channels (d = 2, 3, 4);
* sigma_minus = |0><1| moves population from |1> to |0>;
* the ladder model at d = 2 is the qubit workload;
* the reference gradient against central finite differences;
* the float64 reference against mpmath (30 digits) on one task per workload;
* the extended-precision circuit reference against an independent float64
  dense-matrix simulation (kron of 2x2 gates, numpy).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from open_models import (
    I2, SIGMA_MINUS, X, Y, Z, Reference, apply_super, dissipator, f_avg_from_super, f_avg_nielsen,
    ladder_model, lh, qubit_x_model, sample_params, two_qubit_cz_model, Model)


def _channel_super(H, jumps_rates, t):
    """exp(t * Liouvillian) for constant H and (L, gamma) pairs."""
    A = lh(H)
    for L, g in jumps_rates:
        A = A + g * dissipator(L)
    return sla.expm(t * A)


def _record(out, name, value, expected, tol):
    err = float(abs(value - expected))
    ok = err <= tol
    out.append({"check": name, "value": float(value), "expected": float(expected),
                "abs_error": err, "tolerance": tol, "pass": bool(ok)})


def open_system_checks(full: bool) -> list:
    out = []
    zero2 = np.zeros((2, 2), dtype=complex)
    # 1. identity channel, U = I
    S = _channel_super(zero2, [], 1.0)
    _record(out, "F_avg(identity channel, U = I) = 1", f_avg_from_super(S, I2), 1.0, 1e-14)
    # 2. pure dephasing L = sqrt(g/2) Z for time t: coherences decay as e^{-g t};
    #    E = (1-p) rho + p Z rho Z with 1 - 2p = e^{-g t}; F_avg = 1 - 2p/3 = (2 + e^{-g t})/3
    g, t = 0.7, 1.3
    S = _channel_super(zero2, [(Z / np.sqrt(2), g)], t)
    _record(out, "pure dephasing: F_avg = (2 + exp(-g t))/3", f_avg_from_super(S, I2),
            (2 + math.exp(-g * t)) / 3, 1e-13)
    rho = np.array([[0.5, 0.5], [0.5, 0.5]], dtype=complex)
    _record(out, "pure dephasing: rho_01 = exp(-g t)/2", apply_super(S, rho)[0, 1].real,
            0.5 * math.exp(-g * t), 1e-13)
    # 3. amplitude damping L = sqrt(g) |0><1|: eta = e^{-g t},
    #    Kraus K0 = diag(1, sqrt(eta)), K1 = sqrt(1-eta)|0><1|;
    #    F_pro = |tr K0|^2/4 = (1 + sqrt(eta))^2/4, F_avg = (2 F_pro + 1)/3
    g, t = 0.4, 2.0
    eta = math.exp(-g * t)
    S = _channel_super(zero2, [(SIGMA_MINUS, g)], t)
    _record(out, "amplitude damping: F_avg = ((1+sqrt(eta))^2/2 + 1)/3", f_avg_from_super(S, I2),
            ((1 + math.sqrt(eta)) ** 2 / 2 + 1) / 3, 1e-13)
    rho1 = np.array([[0, 0], [0, 1]], dtype=complex)
    _record(out, "sigma_minus = |0><1| moves |1> to |0>: rho_00 = 1 - eta",
            apply_super(S, rho1)[0, 0].real, 1 - eta, 1e-13)
    # 4. unitary pi pulse about X: U = exp(-i pi X/2) = -i X -> F_avg(target X) = 1,
    #    F_avg(target I) = (|tr U|^2 + d)/(d(d+1)) = 1/3
    S = _channel_super(math.pi * X / 2, [], 1.0)
    _record(out, "X pi pulse, target X: F_avg = 1", f_avg_from_super(S, X), 1.0, 1e-13)
    _record(out, "X pi pulse, target I: F_avg = 1/3", f_avg_from_super(S, I2), 1 / 3, 1e-13)
    # 5. superoperator formula vs Nielsen's formula on the workloads' random channels
    for model in (qubit_x_model(), ladder_model(3), two_qubit_cz_model()):
        u, r = sample_params(model, 2, 99)
        ref = Reference(model)
        for b in range(2):
            S = ref.superop(u[b], r[b])
            v1 = f_avg_from_super(S, model.U_target)
            v2 = f_avg_nielsen(lambda P: apply_super(S, P), model.U_target)
            _record(out, f"{model.name}: superoperator F_avg = Nielsen F_avg (task {b})", v1, v2, 1e-13)
    # 6. ladder d = 2 is the qubit workload (same generator, target up to phase)
    q, l2 = qubit_x_model(), ladder_model(2)
    u, r = sample_params(q, 1, 5)
    _record(out, "ladder d=2 == qubit workload", Reference(l2).forward(u, r)[0],
            Reference(q).forward(u, r)[0], 1e-13)
    # 7. reference gradient vs central finite differences
    for model in (qubit_x_model(), two_qubit_cz_model()):
        u, r = sample_params(model, 1, 7)
        ref = Reference(model)
        _, gu, gr = ref.forward_grad(u, r)
        h = 1e-5
        loss = lambda uu, rr: float(np.sum(1 - ref.forward(uu, rr)))
        for (k, c) in [(0, 0), (model.n_seg // 2, model.n_ctrl - 1), (model.n_seg - 1, 1)]:
            up, um = u.copy(), u.copy()
            up[0, k, c] += h
            um[0, k, c] -= h
            fd = (loss(up, r) - loss(um, r)) / (2 * h)
            _record(out, f"{model.name}: dLoss/du[{k},{c}] reference = finite difference", gu[0, k, c], fd, 1e-8)
        for j in range(model.n_jump):
            rp, rm = r.copy(), r.copy()
            rp[0, j] += h
            rm[0, j] -= h
            fd = (loss(u, rp) - loss(u, rm)) / (2 * h)
            _record(out, f"{model.name}: dLoss/drate[{j}] reference = finite difference", gr[0, j], fd, 1e-8)
    # 8. float64 reference vs mpmath at 30 digits (one task)
    models = [qubit_x_model()] + ([two_qubit_cz_model()] if full else [])
    for model in models:
        u, r = sample_params(model, 1, 11)
        v = Reference(model).forward(u, r)[0]
        _record(out, f"{model.name}: float64 reference = mpmath 30-digit product", v,
                _mpmath_favg(model, u[0], r[0]), 1e-12)
    return out


def _mpmath_favg(model: Model, u, rates) -> float:
    import mpmath as mp

    mp.mp.dps = 30
    ref = Reference(model)
    d = model.d
    dt = mp.mpf(model.T) / model.n_seg
    S = mp.eye(d * d)
    for k in range(model.n_seg):
        A = ref.generator(u[k], rates)
        Am = mp.matrix([[mp.mpc(complex(A[i, j])) for j in range(d * d)] for i in range(d * d)])
        S = mp.expm(Am * dt) * S
    SU = np.kron(model.U_target.conj(), model.U_target)
    tr = mp.mpf(0)
    for i in range(d * d):
        for j in range(d * d):
            tr += mp.conj(mp.mpc(complex(SU[i, j]))) * S[i, j]
    fpro = mp.re(tr) / d**2
    return float((d * fpro + 1) / (d + 1))


def circuit_checks() -> list:
    from circuit_ref import default_ranges, reference

    out = []
    rng = np.random.default_rng(3)
    n, L, B = 4, 3, 3
    x = rng.uniform(-3, 3, (B, n))
    w = rng.uniform(0, 6, (L, n, 3))
    ref_out, _, _ = reference(x, w)

    def kron_all(ms):
        m = ms[0]
        for a in ms[1:]:
            m = np.kron(m, a)
        return m

    def on(wire, g):
        return kron_all([g if i == wire else I2 for i in range(n)])

    def rx(a):
        return np.cos(a / 2) * I2 - 1j * np.sin(a / 2) * X

    def rot(p, t, o):
        rz = lambda a: np.diag([np.exp(-0.5j * a), np.exp(0.5j * a)])
        ry = lambda a: np.cos(a / 2) * I2 - 1j * np.sin(a / 2) * Y
        return rz(o) @ ry(t) @ rz(p)

    def cnot(c, t):
        P0 = np.diag([1, 0]).astype(complex)
        P1 = np.diag([0, 1]).astype(complex)
        return (kron_all([P0 if i == c else I2 for i in range(n)])
                + kron_all([P1 if i == c else (X if i == t else I2) for i in range(n)]))

    ranges = default_ranges(n, L)
    worst = 0.0
    for b in range(B):
        psi = np.zeros(2**n, dtype=complex)
        psi[0] = 1
        for i in range(n):
            psi = on(i, rx(x[b, i])) @ psi
        for l in range(L):
            for i in range(n):
                psi = on(i, rot(*w[l, i])) @ psi
            for i in range(n):
                psi = cnot(i, (i + ranges[l]) % n) @ psi
        for i in range(n):
            z = np.real(psi.conj() @ on(i, Z) @ psi)
            worst = max(worst, abs(z - float(ref_out[b, i])))
    out.append({"check": "circuit reference (extended precision) = dense float64 kron simulation",
                "value": worst, "expected": 0.0, "abs_error": worst, "tolerance": 1e-13,
                "pass": bool(worst <= 1e-13)})
    # parameter-shift on the reference itself: exact for these gates
    from circuit_ref import reference as refn

    _, gx, gw = refn(x, w)
    s = np.pi / 2
    wp, wm = w.copy(), w.copy()
    wp[1, 2, 1] += s
    wm[1, 2, 1] -= s
    ps = (np.sum(refn(x, wp)[0].astype(float)) - np.sum(refn(x, wm)[0].astype(float))) / 2
    e = abs(ps - float(gw[1, 2, 1]))
    out.append({"check": "circuit reference adjoint gradient = parameter-shift (w[1,2,1])",
                "value": float(gw[1, 2, 1]), "expected": float(ps), "abs_error": e, "tolerance": 1e-13,
                "pass": bool(e <= 1e-13)})
    return out


def run_all(full: bool) -> list:
    return circuit_checks() + open_system_checks(full)


if __name__ == "__main__":
    import sys

    res = run_all("--full" in sys.argv)
    for r in res:
        print(f"{'PASS' if r['pass'] else 'FAIL'}  {r['check']}: err {r['abs_error']:.1e} (tol {r['tolerance']:.0e})")
    sys.exit(0 if all(r["pass"] for r in res) else 1)
