"""qutip-qtrl's and qutip-qoc's side of bench/compare/control.py: their objects for a problem's
members, the leakage fidelity computer written for p5, and the runs (GRAPE, CRAB, qoc's
objectives)."""
from __future__ import annotations

import contextlib
import math
import time

from control_problems import FTOL, GTOL, MAXCOR, Problem, lbfgsb


# --------------------------------------------------------------------------- qutip-qtrl and qutip-qoc


def qt_objects(prob: Problem, m: int):
    """(drift, controls, initial, target, dyn_type, fid_type) of member m for qtrl/qoc: Hamiltonians
    (closed) or Liouvillians (open, qutip.liouvillian: column stacking, as the reference)."""
    import numpy as np
    import qutip as qt

    H = qt.Qobj(prob.H0 + sum(c * D for c, D in zip(prob.coeffs[m], prob.drift_terms)))
    ctrls = [qt.Qobj(Hc) for Hc in prob.controls]
    if prob.kind != "open":
        return H, ctrls, qt.qeye(prob.d), qt.Qobj(prob.target), "UNIT", "UNIT"
    c_ops = [math.sqrt(r) * qt.Qobj(L) for r, L in zip(prob.rates[m], prob.jumps)]
    U = qt.Qobj(prob.target)
    return (qt.liouvillian(H, c_ops), [qt.liouvillian(h) for h in ctrls], qt.to_super(qt.qeye(prob.d)),
            qt.to_super(U) if np.any(prob.target) else U, "GEN_MAT", "UNIT")


def leakage_fid_class():
    """qtrl's FidCompUnitary (PSU) plus weight x leakage of the computational block: a
    FidelityComputer written by hand (qtrl has none). Gradient of L = 1 - tr(P U^+ P U)/d_c:
    dL/du_kj = -(2/d_c) Re tr(M A_{k+1} dP_kj F_k), M = P U^+ P, A_{k+1} the propagation after
    slot k, F_k qtrl's forward evolution to slot k, dP_kj its exact propagator derivative."""
    import numpy as np
    from qutip_qtrl import fidcomp

    class LeakageFid(fidcomp.FidCompUnitary):
        levels, weight = None, 1.0

        def _final(self):
            dyn = self.parent
            dyn.compute_evolution()
            return np.asarray(dyn._fwd_evo[dyn.num_tslots].full() if hasattr(dyn._fwd_evo[0], "full")
                              else dyn._fwd_evo[dyn.num_tslots])

        def leakage(self):
            s = self.levels
            return 1 - np.sum(abs(self._final()[np.ix_(s, s)]) ** 2) / len(s)

        def get_fid_err(self):
            return fidcomp.FidCompUnitary.get_fid_err(self) + self.weight * self.leakage()

        def get_fid_err_gradient(self):
            g = np.array(fidcomp.FidCompUnitary.get_fid_err_gradient(self))
            dyn, s = self.parent, self.levels
            arr = (lambda A: np.asarray(A.full()) if hasattr(A, "full") else np.asarray(A))  # noqa: E731
            U = self._final()
            P = np.zeros_like(U)
            P[s, s] = 1
            W = P @ U.conj().T @ P
            gl = np.zeros(g.shape)
            for k in range(dyn.num_tslots - 1, -1, -1):
                F = arr(dyn._fwd_evo[k])
                for j in range(dyn.num_ctrls):
                    gl[k, j] = -2 / len(s) * np.real(np.trace(W @ arr(dyn._get_prop_grad(k, j)) @ F))
                W = W @ arr(dyn._prop[k])
            return g + self.weight * gl

    return LeakageFid


def qtrl_optimizer(prob: Problem, m: int, prop: str, target_cost=0.0, max_evals=10000, max_time=1e9, alg="GRAPE",
                   crab_coeffs=3):
    """A qtrl pulse optimiser for member m with x0 loaded (GRAPE), as pulseoptim.optimize_pulse
    builds it, with the shared L-BFGS-B settings."""
    import qutip_qtrl.logging_utils as logging
    from qutip_qtrl import pulseoptim as cpo

    drift, ctrls, initial, target, dyn_type, fid_type = qt_objects(prob, m)
    grape = alg == "GRAPE"
    opt = cpo.create_pulse_optimizer(
        drift, ctrls, initial, target, prob.n_seg, prob.T, amp_lbound=-prob.bound, amp_ubound=prob.bound,
        fid_err_targ=target_cost, min_grad=GTOL, max_iter=100000, max_wall_time=max_time, alg=alg,
        method_params={"max_metric_corr": MAXCOR, "accuracy_factor": FTOL / 2.220446049250313e-16} if grape else None,
        alg_params=None if grape else {"num_coeffs": crab_coeffs}, dyn_type=dyn_type, prop_type=prop,
        fid_type=fid_type, init_pulse_type="ZERO" if grape else None, log_level=logging.WARN)
    opt.termination_conditions.max_fid_func_calls = max_evals
    dyn = opt.dynamics
    if prob.kind == "cz":
        dyn.fid_computer = leakage_fid_class()(dyn)
        dyn.fid_computer.levels, dyn.fid_computer.weight = prob.subspace, prob.leak_weight
    dyn.init_timeslots()
    if grape:
        dyn.initialize_controls(prob.x0.copy())
    else:  # CRAB: its own random Fourier coefficients (numpy's global generator, seeded by the caller)
        import numpy as np

        for pgen in opt.pulse_generator:
            pgen.init_pulse()
        dyn.initialize_controls(np.column_stack([pgen.gen_pulse() for pgen in opt.pulse_generator]))
    return opt


def qtrl_value_and_grad(dyn, x, n_seg, n_ctrl):
    dyn.update_ctrl_amps(x.reshape(n_seg, n_ctrl).copy())
    fc = dyn.fid_computer
    return fc.get_fid_err(), fc.get_fid_err_gradient()


def qtrl_run(prob: Problem, m: int, prop: str, target_cost, max_evals, max_time=1e9, alg="GRAPE") -> dict:
    """qtrl's own driver (Optimizer.run_optimization: fmin_l_bfgs_b, or CRAB's Nelder-Mead) on member m."""
    t0 = time.perf_counter()
    opt = qtrl_optimizer(prob, m, prop, target_cost, max_evals, max_time, alg)
    r = opt.run_optimization()
    return {"x": r.final_amps.copy(), "seconds": time.perf_counter() - t0, "evals": opt.num_fid_func_calls,
            "grads": opt.num_grad_func_calls, "reason": r.termination_reason}


def qtrl_ensemble_run(prob: Problem, prop: str, target_cost, max_evals, max_time=None, history=None) -> dict:
    """qtrl has no ensemble mode: one Dynamics per member, their mean cost and gradient summed by
    hand into one scipy L-BFGS-B (the shared settings)."""
    import numpy as np

    t0 = time.perf_counter()
    dyns = [qtrl_optimizer(prob, m, prop).dynamics for m in range(prob.M)]
    setup = time.perf_counter() - t0

    def vg(x):
        total, grad = 0.0, 0.0
        for dyn in dyns:
            e, g = qtrl_value_and_grad(dyn, x, prob.n_seg, prob.n_ctrl)
            total, grad = total + e, grad + g
        return np.array([total / len(dyns)]), total / len(dyns), (grad / len(dyns)).reshape(-1)

    res = lbfgsb(vg, prob.x0.reshape(-1).copy(), prob.bound, target=target_cost, max_evals=max_evals,
                 max_time=max_time, history=history)
    res["x"] = res["x"].reshape(prob.n_seg, prob.n_ctrl)
    res["seconds"], res["setup_s"] = time.perf_counter() - t0, setup
    return res


@contextlib.contextmanager
def counted(cls, *names):
    """Counts calls of cls's methods (qoc's objective evaluations) while the block runs, and the
    time of the first (counts["first"]: the end of qoc's set-up)."""
    counts = dict.fromkeys(names, 0)
    counts["first"], counts["values"] = None, []
    orig = {n: getattr(cls, n) for n in names}

    def wrap(n):
        def call(self, *a, **k):
            counts[n] += 1
            counts["first"] = counts["first"] or time.perf_counter()
            value = orig[n](self, *a, **k)
            if n == names[0]:
                counts["values"].append(float(value))
            return value
        return call

    for n in names:
        setattr(cls, n, wrap(n))
    try:
        yield counts
    finally:
        for n in names:
            setattr(cls, n, orig[n])


@contextlib.contextmanager
def qoc_leakage(prob: Problem):
    """p5: the leakage FidelityComputer on the qtrl optimisers qoc builds (qoc has no option for it)."""
    if prob.kind != "cz":
        yield
        return
    from qutip_qtrl import pulseoptim as cpo

    orig, cls = cpo.create_pulse_optimizer, leakage_fid_class()

    def create(*a, **k):
        opt = orig(*a, **k)
        opt.dynamics.fid_computer = cls(opt.dynamics)
        opt.dynamics.fid_computer.levels, opt.dynamics.fid_computer.weight = prob.subspace, prob.leak_weight
        return opt

    cpo.create_pulse_optimizer = create
    try:
        yield
    finally:
        cpo.create_pulse_optimizer = orig


def qoc_run(prob: Problem, members, target_cost, max_evals, max_time=1e9) -> dict:
    """qutip_qoc.optimize_pulses, GRAPE (its default algorithm and propagator), one Objective per
    member (several: the weighted mean, qoc's multi-objective), the shared L-BFGS-B settings."""
    import numpy as np
    from qutip_qoc import Objective, optimize_pulses
    from qutip_qoc.objective import _MultiObjective

    t0 = time.perf_counter()
    objectives = []
    for m in members:
        drift, ctrls, initial, target, _, _ = qt_objects(prob, m)
        if prob.kind == "open":  # qoc turns these into superoperators itself
            import qutip as qt

            initial, target = qt.qeye(prob.d), qt.Qobj(prob.target)
        objectives.append(Objective(initial, [drift, *ctrls], target))
    params = {f"u{k}": {"guess": prob.x0[:, k].copy(), "bounds": [(-prob.bound, prob.bound)]}
              for k in range(prob.n_ctrl)}
    tlist = prob.dt * np.arange(1, prob.n_seg + 1)  # qoc reads n_tslots = len(tlist), T = tlist[-1]
    alg = {"alg": "GRAPE", "fid_err_targ": float(target_cost), "max_iter": 100000, "max_wall_time": max_time}
    if prob.kind == "open":
        alg["fid_type"] = "UNIT"
    mini = {"method": "L-BFGS-B", "options": {"maxcor": MAXCOR, "ftol": FTOL, "gtol": GTOL, "maxfun": max_evals}}
    with counted(_MultiObjective, "goal_fun", "grad_fun") as n, qoc_leakage(prob):
        r = optimize_pulses(objectives, params, tlist, algorithm_kwargs=alg, minimizer_kwargs=mini)
    x = np.array(r.optimized_params, dtype=float).T
    return {"x": x, "seconds": time.perf_counter() - t0, "evals": n["goal_fun"], "grads": n["grad_fun"],
            "reason": str(r.message), "reported_cost": float(r.infidelity), "setup_s": (n["first"] or t0) - t0,
            "history": n["values"]}


# --------------------------------------------------------------------------- checks


QTRL_PROPS = {"closed": ("DIAG", "AUG_MAT", "FRECHET"), "cz": ("DIAG", "AUG_MAT", "FRECHET"),
              "open": ("AUG_MAT", "FRECHET")}  # qtrl's exact gradients (APPROX needs TDAPPROX)


