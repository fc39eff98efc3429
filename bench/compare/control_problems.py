"""The problems of bench/compare/control.py (its docstring defines them), the L-BFGS-B settings
every tool shares, and the plain scipy L-BFGS-B loop (the user-written qfleet loop and qtrl's
hand-written ensemble run on it)."""
from __future__ import annotations

import dataclasses
import math
import time

# L-BFGS-B settings shared by every tool (qtrl: max_metric_corr, accuracy_factor = ftol/eps, min_grad).
MAXCOR, FTOL, GTOL = 10, 0.0, 1e-12




@dataclasses.dataclass
class Problem:
    key: str
    title: str
    kind: str  # "closed" (cost 1 - |tr U_t^+ U|/d), "open" (1 - F_pro), "cz" (subspace overlap + leakage)
    mode: str  # "one", "ensemble" (one pulse, mean over members), "tasks" (a pulse per member)
    d: int
    H0: object
    drift_terms: list
    controls: list
    jumps: list
    n_seg: int
    dt: float
    bound: float
    target: object  # d x d: qtrl's target (p5: CZ on the subspace, zero elsewhere)
    rates: object  # [M, J]
    coeffs: object  # [M, K]
    x0: object  # [n_seg, n_ctrl]
    subspace: list = None
    leak_weight: float = 0.0
    goal: float = 1e-6  # 1 - F <= goal (p1), F >= F* - goal (p2-p4), cost <= goal (p5)
    max_evals: int = 3000
    fstar: object = None
    cost_target: object = None  # the goal as a bound on the cost (scalar, or [M] for tasks)

    @property
    def T(self):
        return self.n_seg * self.dt

    @property
    def n_ctrl(self):
        return len(self.controls)

    @property
    def M(self):
        return self.rates.shape[0]

    def fidelity(self, cost):
        """F from the cost (closed, open; p5's evaluators give F themselves)."""
        import numpy as np

        c, d = np.asarray(cost, dtype=float), self.d
        return (d * (1 - c) ** 2 + 1) / (d + 1) if self.kind == "closed" else 1 - d * c / (d + 1)

    def cost_of(self, F):
        import numpy as np

        F, d = np.asarray(F, dtype=float), self.d
        return 1 - np.sqrt(((d + 1) * F - 1) / d) if self.kind == "closed" else (1 - F) * (d + 1) / d


def paulis():
    import numpy as np

    X = np.array([[0, 1], [1, 0]], complex)
    Y = np.array([[0, -1j], [1j, 0]])
    Z = np.diag([1.0, -1.0]).astype(complex)
    SM = np.array([[0, 1], [0, 0]], complex)  # sigma^- = |0><1|: decay to |0>
    return X, Y, Z, SM


def qubit_problems(args) -> list:
    import numpy as np

    X, Y, Z, SM = paulis()
    n, dt, bound = 60, 0.125, 0.5
    gamma = 0.05 / (n * dt)
    x0 = np.random.default_rng(args.seed).uniform(-0.5, 0.5, (n, 2)) * bound
    side = 2 if args.quick else 16
    g, dl = np.meshgrid(np.linspace(0.5, 1.5, side) * gamma, np.linspace(-0.1, 0.1, side), indexing="ij")
    grid_r, grid_c = g.reshape(-1, 1), dl.reshape(-1, 1)
    common = dict(d=2, H0=np.zeros((2, 2), complex), controls=[X / 2, Y / 2], n_seg=n, dt=dt, bound=bound,
                  target=X, x0=x0)
    return [
        Problem("p1", "p1 X gate, closed qubit", "closed", "one", drift_terms=[], jumps=[],
                rates=np.zeros((1, 0)), coeffs=np.zeros((1, 0)), max_evals=2000, **common),
        Problem("p2", "p2 X gate, amplitude damping", "open", "one", drift_terms=[], jumps=[SM],
                rates=np.array([[gamma]]), coeffs=np.zeros((1, 0)), max_evals=3000, **common),
        Problem("p3", f"p3 robust pulse, {side * side} systems", "open", "ensemble", drift_terms=[Z / 2], jumps=[SM],
                rates=grid_r, coeffs=grid_c, max_evals=4000, **common),
        Problem("p4", f"p4 {side * side} independent tasks", "open", "tasks", drift_terms=[Z / 2], jumps=[SM],
                rates=grid_r, coeffs=grid_c, max_evals=4000, goal=1e-5, **common),
    ]


def transmon_problem(args) -> Problem:
    import numpy as np

    two_pi = 2 * math.pi
    b = np.diag([1.0, math.sqrt(2)], 1).astype(complex)
    b1, b2 = np.kron(b, np.eye(3)), np.kron(np.eye(3), b)
    n1, n2 = b1.conj().T @ b1, b2.conj().T @ b2
    eye = np.eye(9)
    alpha = (-two_pi * 0.20, -two_pi * 0.22)
    H0 = alpha[0] / 2 * n1 @ (n1 - eye) + alpha[1] / 2 * n2 @ (n2 - eye)
    omega, g_max, delta_max = two_pi * 0.05, two_pi * 0.02, two_pi * 0.4
    controls = []
    for bq in (b1, b2):
        controls += [omega * (bq + bq.conj().T) / 2, omega * 1j * (bq.conj().T - bq) / 2]
    controls += [g_max * (b1.conj().T @ b2 + b1 @ b2.conj().T), delta_max * n2]
    sub = [0, 1, 3, 4]  # |q1 q2> = 3 q1 + q2
    target = np.zeros((9, 9), complex)
    target[sub, sub] = [1, 1, 1, -1]
    n = 80
    x0 = np.random.default_rng(args.seed).uniform(-0.5, 0.5, (n, len(controls)))
    return Problem("p5", "p5 CZ, two 3-level transmons (d = 9)", "cz", "one", d=9, H0=H0, drift_terms=[],
                   controls=controls, jumps=[], n_seg=n, dt=0.5, bound=1.0, target=target,
                   rates=np.zeros((1, 0)), coeffs=np.zeros((1, 0)), x0=x0, subspace=sub, leak_weight=1.0,
                   goal=1e-2 if args.quick else 1e-5, max_evals=300 if args.quick else 3000)


# --------------------------------------------------------------------------- an independent reference (scipy)


def reference(prob: Problem, x, members=None):
    """(cost [m], F [m]) of pulse(s) x ([n_seg, n_ctrl], or [m, n_seg, n_ctrl] for tasks) by
    scipy.linalg.expm per segment: of -i dt H (closed) or of dt times the column-stacked Lindblad
    generator -i(I (x) H - H^T (x) I) + sum_j gamma_j (conj(L) (x) L - (I (x) L^+L + (L^+L)^T (x) I)/2)."""
    import numpy as np
    from scipy.linalg import expm

    members = range(prob.M) if members is None else members
    d, eye = prob.d, np.eye(prob.d)
    costs, fids = [], []
    for i, m in enumerate(members):
        u = x[i] if x.ndim == 3 else x
        H = prob.H0 + sum(c * D for c, D in zip(prob.coeffs[m], prob.drift_terms))
        if prob.kind in ("closed", "cz"):
            U = np.eye(d, dtype=complex)
            for k in range(prob.n_seg):
                U = expm(-1j * prob.dt * (H + sum(a * Hc for a, Hc in zip(u[k], prob.controls)))) @ U
            if prob.kind == "closed":
                g = abs(np.trace(prob.target.conj().T @ U)) / d
                costs.append(1 - g)
                fids.append((d * g * g + 1) / (d + 1))
            else:
                s = prob.subspace
                Uc, dc = U[np.ix_(s, s)], len(s)
                g = abs(np.trace(prob.target[np.ix_(s, s)].conj().T @ Uc)) / dc
                leak = 1 - np.sum(abs(Uc) ** 2) / dc
                costs.append(1 - g + prob.leak_weight * leak)
                fids.append((dc * (1 - leak) + (dc * g) ** 2) / (dc * (dc + 1)))
            continue
        diss = sum(r * (np.kron(L.conj(), L) - 0.5 * (np.kron(eye, L.conj().T @ L) + np.kron((L.conj().T @ L).T, eye)))
                   for r, L in zip(prob.rates[m], prob.jumps))
        S = np.eye(d * d, dtype=complex)
        for k in range(prob.n_seg):
            Hk = H + sum(a * Hc for a, Hc in zip(u[k], prob.controls))
            S = expm(prob.dt * (-1j * (np.kron(eye, Hk) - np.kron(Hk.T, eye)) + diss)) @ S
        SU = np.kron(prob.target.conj(), prob.target)
        f_pro = abs(np.trace(SU.conj().T @ S)) / d ** 2
        costs.append(1 - f_pro)
        fids.append((d * f_pro + 1) / (d + 1))
    return np.array(costs), np.array(fids)


# --------------------------------------------------------------------------- qfleet




class _Stop(Exception):
    pass


def lbfgsb(vg, x0, bound, *, target, max_evals, max_time=None, history=None) -> dict:
    """scipy's L-BFGS-B (the shared settings) on vg(x) -> (costs [P], total, gradient), stopping at
    the first evaluation where every cost is <= target (a scalar or [P]), as qtrl's driver does."""
    import numpy as np
    from scipy.optimize import minimize

    state = {"evals": 0, "best": (math.inf, x0, None)}
    t0 = time.perf_counter()

    def fun(x):
        parts, total, grad = vg(x)
        state["evals"] += 1
        if history is not None:
            history.append(total)
        if total < state["best"][0]:
            state["best"] = (total, x.copy(), parts)
        if np.all(parts <= target):
            state["stop"] = ("target", x.copy(), parts)
            raise _Stop
        if max_time is not None and time.perf_counter() - t0 > max_time:
            state["stop"] = ("time", *state["best"][1:])
            raise _Stop
        return total, grad

    try:
        r = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=[(-bound, bound)] * x0.size,
                     options={"maxcor": MAXCOR, "ftol": FTOL, "gtol": GTOL, "maxfun": max_evals,
                              "maxiter": 10 * max_evals})
        reason, x, parts = r.message if isinstance(r.message, str) else r.message.decode(), *state["best"][1:]
    except _Stop:
        reason, x, parts = state["stop"]
    out = {"x": x, "parts": parts, "evals": state["evals"], "reason": reason}
    if history is not None:
        out["history"] = history
    return out
