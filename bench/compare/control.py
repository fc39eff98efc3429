"""Optimal control in one run: qfleet beside qutip-qtrl 0.2.0 (GRAPE, CRAB) and qutip-qoc 0.2.0
(GRAPE, its default algorithm), one thread each, on five problems.

    PYTHONPATH=python python bench/compare/control.py --json out.json --md out.md   # ~10 min, 2 cores
    PYTHONPATH=python python bench/compare/control.py --quick                       # smoke run, < 1 min

krotov 1.3.0 is not compared: it needs QuTiP 4 (qutip<5) and this environment has QuTiP 5.3.1;
pip refuses the pair (ResolutionImpossible: "krotov 1.3.0 depends on qutip<5.0 and >=4.3.1"; the
JSON records the message). qutip-qoc 0.2.0 declares numpy<2.0, which no other pin here allows (jax
needs numpy>=2); its wheel (a Cython extension) imports and runs with numpy 2.4.6, so it is installed
with --no-deps (requirements.txt).

Problems (time in units of 1/amplitude for p1-p4, ns for p5; 60 or 80 segments of a length that
float32 holds exactly, because qutip-qtrl derives its slot lengths in float32 (Dynamics.init_timeslots:
np.ones(n, dtype="f") * T / n) and qutip-qoc passes it no other):

  p1  X gate, closed qubit: H = u_x X/2 + u_y Y/2, 60 segments of 0.125 (T = 7.5), |u| <= 0.5 (the
      pi rotation needs 84% of the largest area, 3.75), target 1 - F <= 1e-6.
  p2  the same with amplitude damping, jump sqrt(gamma) sigma^-, gamma = 0.05 / T; target
      F >= F* - 1e-6, F* the optimum a long run (L-BFGS-B to its end, ftol 0) reaches from the same
      x0, recorded below (--find-optimum recomputes it).
  p3  one robust pulse for 256 systems: drift term delta Z/2 and the damping rate, gamma in
      [0.5, 1.5] x 0.05/T (16 values) x delta in [-0.1, 0.1] (16 values); the cost is the members'
      mean; target F_mean >= F*_mean - 1e-6. QuTiP: qutip-qtrl has no ensemble mode (a loop written
      by hand over 256 qtrl Dynamics, summed into one scipy L-BFGS-B); qutip-qoc takes several
      Objectives (weights normalised to sum 1: the same mean), one qtrl optimiser each.
  p4  the same 256 systems, each its own pulse (256 independent tasks) in one batched optimisation
      in qfleet; QuTiP runs them one after another (timed on --qutip-tasks tasks, scaled to 256);
      target F_b >= F*_b - 1e-5 for every task, F*_b from a long batched run at the start (at 1e-6
      an L-BFGS-B path a rounding apart stalls within 1.5e-6 of F*_b on some tasks: qtrl's on task
      219 where qoc's, identical but for rounding from its third evaluation, went on).
  p5  CZ on two transmons, three levels each (d = 9), in the frame rotating at the transmons'
      common idle frequency (rotating-wave approximation; Krantz et al., Appl. Phys. Rev. 6, 021318
      (2019), Secs. II.D and IV.C-D: transmon Hamiltonian, tunable coupling, CZ through the
      |11>-|02>/|20> avoided crossings; leakage to the third level as in Motzoi et al., PRL 103,
      110501 (2009)): H = sum_q (alpha_q/2) n_q (n_q - 1) + sum_q Omega [u_xq (b_q + b_q^+)/2
      + u_yq i (b_q^+ - b_q)/2] + g_max u_c (b_1^+ b_2 + b_1 b_2^+) + delta_max u_z n_2, alpha/2pi =
      -0.20, -0.22 GHz, Omega/2pi = 50 MHz, g_max/2pi = 20 MHz, delta_max/2pi = 400 MHz (flux of
      transmon 2), |u| <= 1; 80 segments of 0.5 ns (T = 40 ns). Cost: 1 - |tr(CZ^+ U_c)|/4 + L,
      U_c the computational block {|00>, |01>, |10>, |11>}, L = 1 - ||U_c||_F^2 / 4 its leakage;
      target cost <= 1e-5. Reported F: the average gate fidelity on the subspace (Pedersen, Moller,
      Molmer, Phys. Lett. A 367, 47 (2007)): (4 (1 - L) + |tr(CZ^+ U_c)|^2) / 20.

Fidelity definitions and how they are made equal. F is the average gate fidelity throughout (p5:
on the subspace). qfleet's gate fidelity (docs/open_systems.md): closed (|tr U_t^+ U|^2 + d)/(d(d+1)),
open (d F_pro + 1)/(d + 1), F_pro = tr(S_U^+ S)/d^2. qutip-qtrl's (and so qutip-qoc's GRAPE):
closed (fid_type UNIT, phase option PSU) g = |tr(U_t^+ U)|/d, cost 1 - g; open its default
TRACEDIFF is a Frobenius distance of superoperators, not a fidelity, so the open problems set
fid_type UNIT (PSU) on the superoperators: |tr(S_U^+ S)|/d^2 = F_pro (S_U^+ S is a channel's
trace with real non-negative value), cost 1 - F_pro. Every tool optimises the same cost: qtrl's
(qfleet's cost functions compute it from its outputs: 1 - |tr(U_t^+ U)|/d from the final unitary,
(d+1)/d (1 - F) for the channels), so the same L-BFGS-B (maxcor 10, ftol 0, gtol 1e-12, from the
same x0 and bounds) walks the same path in every tool; the targets on F are turned into targets on
the cost (closed: F = (d g^2 + 1)/(d + 1); open: F = 1 - d c/(d + 1)). p5's leakage term enters
qtrl as a FidelityComputer subclass written here (its gradient from qtrl's propagators and their
exact derivatives) and qoc, which has no option for it, through the same class, set on the qtrl
optimisers it builds. Checks, first: each tool's fidelity and gradient at random pulses against the
others' and an independent scipy reference (expm of the Hamiltonian, or of the column-stacked
Lindblad generator written out here), 1e-8 (fidelity) and 1e-7 relative (gradient); after each
optimisation its pulse is evaluated by qfleet, qtrl and scipy (1e-8), and the final fidelities of
the runs that reached their target are compared (reported: within 1e-6).

Timing: the time to target is a run per tool from the same x0 (end to end: building the optimiser
or compiling the program, the optimisation; the median of --runs, 3, for p1 and p2), with its
evaluations (fidelity + gradient calls); qtrl GRAPE runs with its fastest exact gradient (measured
here) and with its Frechet one (not on p5 in --quick). The time per gradient is an interleaved
median of fidelity + gradient calls at alternating pulses (qtrl caches on unchanged amplitudes).
The libraries' objects are frozen out of the garbage collector's walks after the imports
(gc.freeze), for every tool alike. QuTiP runs that would take long are capped
(--qutip-ensemble-evals evaluations on p3, --qutip-tasks tasks on p4) and their time to target is
extrapolated (time per evaluation x the evaluations qfleet needed; time per task x 256), marked so.
qfleet's side runs through qfleet.control.optimize where that exists (the switch: `control_driver`),
otherwise through a loop written here (scipy L-BFGS-B on qfleet.open_outputs' autograd gradient;
p4 then runs as one joint problem on the sum of the 256 costs, without per-task line searches:
the row says "user loop").
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from control_problems import FTOL, GTOL, MAXCOR, Problem, lbfgsb, qubit_problems, reference, transmon_problem  # noqa: E402
from control_qutip import QTRL_PROPS, qoc_run, qtrl_ensemble_run, qtrl_optimizer, qtrl_run, qtrl_value_and_grad  # noqa: E402

SCRIPT = "control.py"
KROTOV = {"status": "not installed", "reason": "krotov: needs QuTiP 4 (qutip<5)",
          "pip_error": "ERROR: Cannot install krotov==1.3.0 and qutip==5.3.1 because these package versions have "
                       "conflicting dependencies. The conflict is caused by: The user requested qutip==5.3.1; "
                       "krotov 1.3.0 depends on qutip<5.0 and >=4.3.1 (ResolutionImpossible)"}
QOC_NOTE = "qutip-qoc 0.2.0 declares numpy<2.0; installed with --no-deps, runs with numpy 2.4.6"

# L-BFGS-B settings shared by every tool (qtrl: max_metric_corr, accuracy_factor = ftol/eps, min_grad).
FIDELITY_ATOL, GRADIENT_RTOL, SAME_FINAL = 1e-8, 1e-7, 1e-6
# F* of p2 and p3 for the default configuration (seed 0), by --find-optimum: L-BFGS-B from the
# problem's x0 to its end (ftol 0, gtol 1e-13, up to 6000 evaluations).
RECORDED_FSTAR = {"p2": 0.9836171150919206,  # 565 evaluations (qfleet.control.optimize, converged)
                  "p3": 0.9745505776438068}  # 2442 evaluations, 75 s on 1 thread


# --------------------------------------------------------------------------- the problems
def control_driver(choice: str):
    """The switch: qfleet.control.optimize where the module has it (choice "automatic" or "control"),
    else None: the loop written here ("user")."""
    if choice == "user":
        return None
    try:
        from qfleet import control
        optimize = control.optimize
    except (ImportError, AttributeError) as e:
        if choice == "control":
            raise SystemExit(f"{SCRIPT}: --qfleet-driver control: qfleet.control.optimize is not available ({e})")
        return None
    return control if callable(optimize) else None


class QfleetSide:
    """The problem as a qfleet.OpenSystem, its cost from qfleet's outputs (the tools' common cost),
    and a user-written evaluation for the loop and the checks."""

    def __init__(self, prob: Problem, threads: int):
        import numpy as np
        import qfleet
        import torch

        self.prob, self.torch, self.qfleet = prob, torch, qfleet
        s = qfleet.OpenSystem(prob.d).drift(prob.H0)
        for D in prob.drift_terms:
            s.drift_term(D)
        for Hc in prob.controls:
            s.control(Hc)
        for L in prob.jumps:
            s.jump(L)
        unitary = prob.target.copy()
        if prob.subspace:  # a unitary for the builder; the cost reads the subspace block itself
            rest = [i for i in range(prob.d) if i not in prob.subspace]
            unitary[rest, rest] = 1
        s.segments(prob.n_seg, prob.T).propagate_gate().target_unitary(unitary)
        if prob.subspace:
            s.computational_subspace(prob.subspace)
        self.system, self.threads = s, threads
        self.program = s.compile(num_threads=threads)
        t = lambda a: None if a.shape[1] == 0 else torch.tensor(a, dtype=torch.float64)  # noqa: E731
        self.rates, self.coeffs = t(prob.rates), t(prob.coeffs)
        tgt = prob.target if not prob.subspace else prob.target[np.ix_(prob.subspace, prob.subspace)]
        self.target_h = torch.tensor(tgt.conj().T)
        self.shift = None  # [M] cost at each task's optimum (p4: the cost is the distance to it)

    @property
    def native(self):
        """Whether qfleet's own fidelity orders pulses as the common cost does, so qfleet can also
        run its own problem: 1 - F, the loop in C++ on the engine's gradient (control's fast path).
        Open problems: the cost is (d+1)/d (1 - F), the same path. Closed: F = (d g^2 + 1)/(d + 1)
        of the common cost's g, another path to the same targets."""
        return self.prob.kind == "open" or (self.prob.kind == "closed" and self.prob.mode == "one")

    def native_target(self, cost_target):
        """A target on the common cost as a target on 1 - F (per task for tasks)."""
        import numpy as np

        return 1 - self.prob.fidelity(np.asarray(cost_target, dtype=float))

    def engine_value_and_grad(self, x):
        """qfleet's own 1 - F and its gradient, one engine call (torch.ops.qfleet.control_infidelity)."""
        torch, prob = self.torch, self.prob
        tasks = prob.mode == "tasks"
        a = torch.tensor(x.reshape(prob.M if tasks else 1, -1))
        idx = torch.arange(a.shape[0])
        w = torch.full((prob.M,), 1.0 / prob.M, dtype=torch.float64) if prob.mode == "ensemble" else None
        pick = (lambda t: None if t is None else (t if prob.mode != "one" else t[0]))
        return torch.ops.qfleet.control_infidelity(self.program, a, idx, pick(self.rates), pick(self.coeffs), w)

    def cost(self, out, ctx=None):
        """The common cost per task or member from qfleet's outputs (docstring: definitions)."""
        torch, prob = self.torch, self.prob
        if prob.kind == "open":
            c = (prob.d + 1) / prob.d * (1 - out.fidelity)
        else:
            U = out.final_state.reshape(-1, prob.d, prob.d)
            if prob.subspace:
                idx = torch.tensor(prob.subspace)
                U = U[:, idx][:, :, idx]
            dc = U.shape[-1]
            c = 1 - torch.einsum("ij,bji->b", self.target_h, U).abs() / dc
            if prob.subspace:
                c = c + prob.leak_weight * out.leakage.reshape(-1)
        if self.shift is not None:
            c = c - self.shift[ctx.tasks]
        return c

    def outputs(self, amps, members=None):
        torch = self.torch
        pick = (lambda t: t if t is None or members is None else t[torch.as_tensor(members)])
        return self.qfleet.open_outputs(self.program, amps, rates=pick(self.rates), drift_coeffs=pick(self.coeffs))

    def figures(self, x, members=None):
        """(cost [m], F [m]) of pulse(s) x, per member."""
        import numpy as np

        torch, prob = self.torch, self.prob
        with torch.no_grad():
            a = torch.tensor(np.asarray(x, dtype=float))
            out = self.outputs(a, members)
            shift, self.shift = self.shift, None
            c = self.cost(out).numpy()
            self.shift = shift
            if prob.kind != "cz":
                return c, prob.fidelity(c)
            U = out.final_state.reshape(-1, prob.d, prob.d).numpy()
            s, dc = prob.subspace, len(prob.subspace)
            Uc = U[:, s][:, :, s]
            g = abs(np.einsum("ij,bji->b", self.target_h.numpy(), Uc)) / dc
            leak = out.leakage.reshape(-1).numpy()
            return c, (dc * (1 - leak) + (dc * g) ** 2) / (dc * (dc + 1))

    def value_and_grad(self, x):
        """The user loop's evaluation: x flat -> (costs [P], total, gradient): one pulse (P = 1),
        the members' mean (P = 1) or the tasks' sum (P = M, each its own pulse)."""
        import numpy as np

        torch, prob = self.torch, self.prob
        shape = (prob.M, prob.n_seg, prob.n_ctrl) if prob.mode == "tasks" else (prob.n_seg, prob.n_ctrl)
        a = torch.tensor(x.reshape(shape), requires_grad=True)
        amps = a if prob.mode != "one" else a.unsqueeze(0)
        c = self.cost(self.outputs(amps), Ctx(torch.arange(prob.M)))
        total = c.mean() if prob.mode == "ensemble" else c.sum()
        total.backward()
        total = float(total.detach())
        parts = c.detach().numpy() if prob.mode == "tasks" else np.array([total])
        return parts, total, a.grad.numpy().reshape(-1)


@dataclasses.dataclass
class Ctx:
    tasks: object


def qfleet_solve(side: QfleetSide, driver, target, max_evals, max_time=None, x0=None, native=False) -> dict:
    """One qfleet optimisation: qfleet.control.optimize where the driver is the module, else the
    user loop (scipy L-BFGS-B on the autograd gradient; tasks as one joint problem). native: qfleet's
    own 1 - F (no cost function: the loop in C++), `target` on the common cost converted to it."""
    import numpy as np

    prob, torch = side.prob, side.torch
    x0 = prob.x0 if x0 is None else x0
    start = np.broadcast_to(x0, (prob.M, *x0.shape)).copy() if prob.mode == "tasks" else x0.copy()
    t0 = time.perf_counter()
    if driver is None:
        side.program = side.system.compile(num_threads=side.threads)  # timed, as control.optimize compiles
        res = lbfgsb(side.value_and_grad, start.reshape(-1), prob.bound, target=target, max_evals=max_evals,
                     max_time=max_time, history=[])
        res["x"] = res["x"].reshape(start.shape)
        res["how"] = "user loop" + (" (joint L-BFGS-B on the sum; no per-task line search)"
                                    if prob.mode == "tasks" else "")
    else:
        import inspect

        kw = {}
        if prob.mode == "ensemble":
            kw["ensemble"] = driver.Ensemble(rates=side.rates, drift_coeffs=side.coeffs)
        elif prob.mode == "tasks":
            kw["tasks"] = driver.Tasks(rates=side.rates, drift_coeffs=side.coeffs)
        elif side.rates is not None or side.coeffs is not None:  # one system with jumps
            if "rates" in inspect.signature(driver.optimize).parameters:
                kw.update(rates=None if side.rates is None else side.rates[0],
                          drift_coeffs=None if side.coeffs is None else side.coeffs[0])
            else:
                kw["ensemble"] = driver.Ensemble(rates=side.rates, drift_coeffs=side.coeffs)
        if native:
            t = side.native_target(target)
            target = t.tolist() if t.ndim else float(t)
        elif target is not None and not isinstance(target, list) and target != -math.inf:
            target = float(target)
        r = driver.optimize(side.system, torch.tensor(start), bounds=(-prob.bound, prob.bound), method="lbfgsb",
                            target=None if target is None or (not isinstance(target, list) and target == -math.inf)
                            else target, max_evals=max_evals, max_time=max_time,
                            cost=None if native else side.cost, gtol=GTOL, ftol=FTOL, memory=MAXCOR,
                            num_threads=side.threads, **kw)
        ev = r.evaluations
        per_task = hasattr(ev, "max")
        res = {"x": r.amplitudes.detach().numpy().reshape(start.shape),
               "evals": int(ev.max()) if per_task else int(ev),
               "reason": (", ".join(f"{k} x{r.reason.count(k)}" for k in sorted(set(r.reason)))
                          if isinstance(r.reason, (list, tuple)) else str(r.reason)),
               "how": "qfleet.control.optimize, lbfgsb" + (", a line search per task" if per_task else "")
               + ("; its own 1 - F, the loop in C++" if native else "; the common cost through autograd")}
        if not per_task and getattr(r, "history", None) is not None:
            res["history"] = [float(v) for v in (r.history.tolist() if hasattr(r.history, "tolist") else r.history)]
        if per_task:
            res["evals_per_task"] = ev.tolist()
            res["note"] = (f"evaluations per task: mean {float(ev.double().mean()):.0f}, max {int(ev.max())} "
                           "(one batched call evaluates every running task)")
    res["seconds"] = time.perf_counter() - t0
    return res




def sample(M: int, k: int) -> list:
    import numpy as np

    return sorted({int(i) for i in np.linspace(0, M - 1, min(M, k)).round()})


def qfleet_member_grad(side: QfleetSide, x, m: int):
    """The cost of member m alone and its gradient with respect to the pulse x [n_seg, n_ctrl]."""
    torch = side.torch
    a = torch.tensor(x, requires_grad=True)
    shift, side.shift = side.shift, None
    c = side.cost(side.outputs(a.unsqueeze(0), [m]))
    side.shift = shift
    c.sum().backward()
    return float(c.sum().detach()), a.grad.numpy()


def check_physics(prob: Problem, side: QfleetSide, seed: int, log) -> dict:
    """Before anything is timed: the cost and F of two pulses in qfleet, qtrl (every propagator) and
    the scipy reference, and qfleet's gradient against qtrl's, on up to 4 members."""
    import numpy as np

    xs = [prob.x0, np.random.default_rng(seed + 101).uniform(-1, 1, prob.x0.shape) * prob.bound]
    members = sample(prob.M, 4)
    got = {"qfleet": [], "scipy": []}
    grads = {"qfleet": []}
    for x in xs:
        c, F = side.figures(x, members) if prob.mode != "tasks" else side.figures(np.stack([x] * len(members)), members)
        rc, rF = reference(prob, x, members)
        got["qfleet"].append(np.concatenate([c, F]))
        got["scipy"].append(np.concatenate([rc, rF]))
        grads["qfleet"].append(np.stack([qfleet_member_grad(side, x, m)[1] for m in members]))
    out = {"members": members,
           "qfleet_vs_scipy": harness.check_close(f"{prob.key}: cost and F, qfleet vs scipy reference", got["qfleet"],
                                                  got["scipy"], atol=FIDELITY_ATOL, prog=SCRIPT)}
    for prop in QTRL_PROPS[prob.kind]:
        costs, gr = [], []
        for x in xs:
            cs, gs = [], []
            for m in members:
                dyn = qtrl_optimizer(prob, m, prop).dynamics
                e, g = qtrl_value_and_grad(dyn, x, prob.n_seg, prob.n_ctrl)
                cs.append(e)
                gs.append(np.array(g))
            costs.append(np.array(cs))
            gr.append(np.stack(gs))
        ref = [g[: len(members)] for g in got["scipy"]]
        out[f"qtrl_{prop}_cost"] = harness.check_close(f"{prob.key}: cost, qtrl {prop} vs scipy reference", costs, ref,
                                                       atol=FIDELITY_ATOL, prog=SCRIPT)
        out[f"qtrl_{prop}_gradient"] = harness.check_close(f"{prob.key}: gradient, qfleet vs qtrl {prop}",
                                                           grads["qfleet"], gr, rtol=GRADIENT_RTOL, floor=1.0,
                                                           prog=SCRIPT)
    log(f"{prob.key}: qfleet, qtrl ({', '.join(QTRL_PROPS[prob.kind])}) and scipy agree on {len(members)} member(s)")
    return out


def cross_evaluate(prob: Problem, side: QfleetSide, runs: dict, log) -> dict:
    """Each run's pulse evaluated by qfleet, qtrl (its first propagator) and scipy: cost and F agree
    to 1e-8 (exit 1 otherwise). Returns {tool: (cost [m], F [m], members)} from qfleet."""
    import numpy as np

    out, errors = {}, {}
    prop = QTRL_PROPS[prob.kind][0]
    for tool, r in runs.items():
        members = r.get("members") or list(range(prob.M))  # qfleet's runs: every member or task
        pulses = r["x"]  # [n_seg, n_ctrl], or one per member (tasks)
        c, F = side.figures(pulses, members)
        check = sample(len(members), 4)  # scipy and qtrl on up to 4 of them
        sub = [members[i] for i in check]
        px = pulses[check] if pulses.ndim == 3 else pulses
        rc, rF = reference(prob, px, sub)
        qc = np.array([qtrl_value_and_grad(qtrl_optimizer(prob, m, prop).dynamics,
                                           px[i] if px.ndim == 3 else px, prob.n_seg, prob.n_ctrl)[0]
                       for i, m in enumerate(sub)])
        errors[tool] = harness.check_close(f"{prob.key}: {tool}'s pulse, cost and F in qfleet, qtrl, scipy",
                                           [c[check], F[check], qc], [rc, rF, rc], atol=FIDELITY_ATOL, prog=SCRIPT,
                                           quiet=True)
        if "reported_cost" in r:  # qoc's own figure at its pulse (the members' mean)
            errors[tool] = max(errors[tool], harness.check_close(
                f"{prob.key}: {tool}'s reported cost vs qfleet's", r["reported_cost"], float(np.mean(c)),
                atol=FIDELITY_ATOL, prog=SCRIPT, quiet=True))
        out[tool] = (c, F, members)
    log(f"{prob.key}: every run's pulse has the same cost and F in qfleet, qtrl and scipy "
        f"(max error {max(errors.values()):.1e})")
    return out, errors


# --------------------------------------------------------------------------- runs


def timing_of(seconds: list):
    import statistics

    return harness.Timing(statistics.median(seconds), min(seconds), max(seconds), len(seconds), 1, float("nan"))


def repeated(fn, runs: int) -> dict:
    """fn() `runs` times (deterministic: the same path each time); the first result with every time."""
    results = [fn() for _ in range(runs)]
    out = results[0]
    out["all_seconds"] = [r["seconds"] for r in results]
    return out


def find_optimum(prob: Problem, side: QfleetSide, driver, log, max_evals: int = 6000):
    """F* per member (tasks) or of the mean: L-BFGS-B from x0 to its end (ftol 0), never stopping at a target."""
    import numpy as np

    t0 = time.perf_counter()
    r = qfleet_solve(side, driver, -math.inf, max_evals)
    c, F = side.figures(r["x"])
    fstar = F if prob.mode == "tasks" else np.array([float(np.mean(F))])
    log(f"{prob.key}: F* by a long run: {r['evals']} evaluations, {time.perf_counter() - t0:.1f} s, "
        f"F* {'mean ' if prob.mode == 'tasks' else ''}{float(np.mean(fstar)):.12f} ({r['reason']})")
    return fstar, {"evaluations": r["evals"], "seconds": time.perf_counter() - t0, "reason": r["reason"]}


def set_targets(prob: Problem, side: QfleetSide, args, driver, log) -> dict:
    import numpy as np

    rec = {}
    if prob.key == "p1":
        prob.cost_target = float(prob.cost_of(1 - prob.goal))
    elif prob.key == "p5":
        prob.cost_target = prob.goal
    else:
        recorded = RECORDED_FSTAR.get(prob.key)
        default = not args.quick and args.seed == 0 and not args.find_optimum
        if recorded is not None and default:
            prob.fstar, rec["fstar_source"] = np.array([recorded]), "recorded (--find-optimum recomputes it)"
        else:
            prob.fstar, rec["fstar_run"] = find_optimum(prob, side, driver, log)
            rec["fstar_source"] = "long run in this process"
        prob.cost_target = prob.cost_of(prob.fstar - prob.goal)
        if prob.mode == "tasks":  # qfleet's cost: the distance to each task's optimum
            side.shift = side.torch.tensor(prob.cost_of(prob.fstar))
        else:
            prob.cost_target = float(prob.cost_target[0])
        rec["fstar"] = prob.fstar.tolist() if prob.mode == "tasks" else float(prob.fstar[0])
    rec["cost_target"] = prob.cost_target.tolist() if hasattr(prob.cost_target, "tolist") else prob.cost_target
    return rec


def qfleet_target(prob: Problem, side: QfleetSide):
    """qfleet's target on its cost (tasks: on the distance to each task's optimum, the same for all)."""
    if prob.mode == "tasks":
        return float((prob.cost_target - side.shift.numpy()).max())
    return prob.cost_target


def gradient_timing(prob: Problem, side: QfleetSide, args, props, qutip_members) -> dict:
    """Interleaved medians of one fidelity + gradient evaluation (the whole problem: every member
    or task) per tool, at two alternating pulses (qtrl skips unchanged amplitudes)."""
    import numpy as np

    xs = [prob.x0, np.clip(prob.x0 + 0.01, -prob.bound, prob.bound)]
    if prob.mode == "tasks":
        xs = [np.broadcast_to(x, (prob.M, *x.shape)).copy() for x in xs]

    def alternating(fn):
        i = [0]

        def call():
            i[0] += 1
            return fn(xs[i[0] % 2])
        return call

    if side.native:  # qfleet's own 1 - F from the engine (the reference), then the common cost by autograd
        cases = {"qfleet": alternating(side.engine_value_and_grad),
                 "qfleet, the common cost by autograd": alternating(lambda x: side.value_and_grad(x.reshape(-1)))}
    else:
        cases = {"qfleet": alternating(lambda x: side.value_and_grad(x.reshape(-1)))}
    members = range(prob.M) if prob.mode == "ensemble" else qutip_members
    for prop in props:
        dyns = [qtrl_optimizer(prob, m, prop).dynamics for m in members]
        cases[f"qtrl {prop}"] = alternating(
            lambda x, dyns=dyns: [qtrl_value_and_grad(d, x if x.ndim == 2 else x[0], prob.n_seg, prob.n_ctrl)
                                  for d in dyns])
    cases["qfleet"]()
    t0 = time.perf_counter()
    cases["qfleet"]()
    number = min(10, max(1, round(0.01 / (time.perf_counter() - t0))))  # samples of >= ~10 ms where cheap
    spread = harness.interleaved(cases, args.rounds, number=number)
    if prob.mode == "tasks":  # QuTiP timed on len(members) tasks: scaled to all
        f = prob.M / len(members)
        spread = {k: (v if k.startswith("qfleet") else tuple(s * f for s in v)) for k, v in spread.items()}
    return spread


def qutip_runs(prob: Problem, args, props, log, qfleet_run: dict, runs_each: int) -> dict:
    """The QuTiP tools' runs on the problem (capped and scaled where marked)."""
    import numpy as np

    qfleet_evals, q_hist = qfleet_run["evals"], qfleet_run.get("history")

    runs = {}
    tgt, cap = prob.cost_target, prob.max_evals
    if prob.mode == "one":
        for prop in props:
            runs[f"qutip-qtrl GRAPE {prop}"] = repeated(lambda p=prop: qtrl_run(prob, 0, p, tgt, cap), runs_each)
        if prob.key == "p1":  # CRAB (qtrl's Nelder-Mead on 3 Fourier terms a control, its own random start)
            np.random.seed(args.seed)
            r = qtrl_run(prob, 0, "DEF", tgt, 5000, max_time=20 if not args.quick else 2, alg="CRAB")
            r["note"] = "own random start (CRAB coefficients); fidelity calls only"
            runs["qutip-qtrl CRAB (Nelder-Mead)"] = r
        runs["qutip-qoc GRAPE (defaults)"] = repeated(lambda: qoc_run(prob, [0], tgt, cap), runs_each)
        return runs
    if prob.mode == "ensemble":
        cap = args.qutip_ensemble_evals
        for name, fn in ((f"qutip-qtrl GRAPE {props[0]}, loop over members by hand",
                          lambda: qtrl_ensemble_run(prob, props[0], tgt, cap, history=[])),
                         ("qutip-qoc GRAPE (defaults), one Objective per member",
                          lambda: qoc_run(prob, list(range(prob.M)), tgt, cap))):
            r = fn()
            if r["evals"] < qfleet_evals and not r["reason"].startswith(("target", "fid_err_targ")):
                per = (r["seconds"] - r.get("setup_s", 0.0)) / r["evals"]
                r["measured_seconds"], r["seconds_per_evaluation"] = r["seconds"], per
                r["seconds"] = r.get("setup_s", 0.0) + per * qfleet_evals
                r["note"] = (f"capped at {r['evals']} evaluations ({r['measured_seconds']:.1f} s); time extrapolated "
                             f"to qfleet's {qfleet_evals}")
                r["extrapolated"] = True
            r["members"] = list(range(prob.M))
            if q_hist and r.get("history"):  # the same path as qfleet's, evaluation by evaluation
                k = min(len(q_hist), len(r["history"]))
                r["path_difference"] = float(np.max(np.abs(np.array(q_hist[:k]) - np.array(r["history"][:k]))))
                r["note"] = r.get("note", "") + (f"; its first {k} costs equal qfleet's to "
                                                 f"{r['path_difference']:.1e}")
            runs[name] = r
            log(f"{prob.key}: {name}: {r['evals']} evaluations, {r.get('measured_seconds', r['seconds']):.1f} s")
        return runs
    members = sample(prob.M, args.qutip_tasks)
    for name, fn in ((f"qutip-qtrl GRAPE {props[0]}, task after task",
                      lambda m: qtrl_run(prob, m, props[0], float(tgt[m]), cap)),
                     ("qutip-qoc GRAPE (defaults), task after task", lambda m: qoc_run(prob, [m], float(tgt[m]), cap))):
        per_task = [fn(m) for m in members]
        seconds = sum(r["seconds"] for r in per_task)
        r = {"x": np.stack([r["x"] for r in per_task]), "members": members, "measured_seconds": seconds,
             "seconds": seconds * prob.M / len(members), "evals": int(sum(r["evals"] for r in per_task)),
             "evals_per_task": [r["evals"] for r in per_task],
             "reason": "; ".join(sorted({r["reason"] for r in per_task})),
             "extrapolated": len(members) < prob.M,
             "note": f"timed on {len(members)} of {prob.M} tasks ({seconds:.1f} s), x {prob.M / len(members):g}"}
        runs[name] = r
        log(f"{prob.key}: {name}: {len(members)} tasks, {seconds:.1f} s")
    return runs


def run_problem(prob: Problem, args, driver, log, fastest_open: str) -> tuple:
    """Checks, targets, per-gradient timing, the runs, their cross-evaluation; the rows and the record."""
    import numpy as np

    side = QfleetSide(prob, args.threads)
    rec = {"title": prob.title, "kind": prob.kind, "mode": prob.mode, "members": prob.M, "segments": prob.n_seg,
           "dt": prob.dt, "bound": prob.bound, "goal": prob.goal}
    rec["check"] = check_physics(prob, side, args.seed, log)
    rec.update(set_targets(prob, side, args, driver, log))
    props = QTRL_PROPS[prob.kind] if prob.mode == "one" else (fastest_open,)
    qutip_members = [0] if prob.mode == "one" else sample(prob.M, args.qutip_tasks)
    spread = gradient_timing(prob, side, args, props, qutip_members)
    rec["gradient_seconds"] = {k: v[0] for k, v in spread.items()}
    if prob.mode == "one":  # runs: qtrl's fastest exact gradient here, and its Frechet one (not p5's in --quick)
        fastest = min(props, key=lambda p: spread[f"qtrl {p}"][0])
        props = (fastest,) + (("FRECHET",) if fastest != "FRECHET" and not (args.quick and prob.kind == "cz") else ())
        rec["qtrl_fastest"] = fastest

    t_q = qfleet_target(prob, side)
    runs_each = args.runs if prob.key in ("p1", "p2") else 1  # p3-p5: one run each (minutes for QuTiP)
    runs = {}
    if driver is not None and side.native:
        t_n = prob.cost_target if prob.mode == "tasks" else t_q  # per task: each task's own goal
        qn = repeated(lambda: qfleet_solve(side, driver, t_n, prob.max_evals, native=True), runs_each)
        log(f"{prob.key}: qfleet, its own 1 - F: {qn['evals']} evaluations, {qn['seconds']:.3f} s ({qn['reason']})")
        runs[f"qfleet ({qn['how']})"] = qn
    q = repeated(lambda: qfleet_solve(side, driver, t_q, prob.max_evals), runs_each)
    log(f"{prob.key}: qfleet: {q['evals']} evaluations, {q['seconds']:.2f} s ({q['reason']})")
    runs[f"qfleet ({q['how']})"] = q
    q = next(iter(runs.values()))
    runs.update(qutip_runs(prob, args, props, log, q, runs_each))
    figures, errors = cross_evaluate(prob, side, runs, log)

    # rows: time to target, then fidelity + gradient
    rows, qname = [], next(iter(runs))
    # The final fidelities are compared with qfleet's run on the common cost (the same path as
    # the QuTiP tools'); the time ratios with the first qfleet run (its own 1 - F where it has one).
    same_ref = [k for k in runs if k.startswith("qfleet")][-1]
    work = f"{prob.title}: time to target"
    q_t = timing_of(runs[qname].get("all_seconds", [runs[qname]["seconds"]]))
    c_q, F_q, _ = figures[same_ref]
    rec["runs"], same = {}, {}
    for tool, r in runs.items():
        c, F, members = figures[tool]
        tgt = prob.cost_target if prob.mode != "tasks" else prob.cost_target[members]
        cost = float(np.mean(c)) if prob.mode == "ensemble" else c
        reached = bool(np.all(np.asarray(cost) <= np.asarray(tgt) + 1e-12))
        F_report = float(np.mean(F)) if prob.mode != "tasks" else F
        if reached and tool != same_ref:
            F_ref = float(np.mean(F_q)) if prob.mode != "tasks" else F_q[members]
            same[tool] = float(np.max(np.abs(np.asarray(F_report) - F_ref)))
        t = timing_of(r.get("all_seconds", [r["seconds"]]))
        evals = r["evals"]
        per_eval = r.get("seconds_per_evaluation", r["seconds"] / max(evals, 1))
        Fs = (f"F = {F_report:.10f}" if prob.mode != "tasks" else
              f"F - F* >= {float(np.min(F - prob.fstar[members])):.2e} on {len(members)} tasks")
        note = (f"{evals} evals{' (sum over tasks)' if prob.mode == 'tasks' and tool != qname else ''}, {Fs}, "
                f"{'target reached' if reached else 'target NOT reached'}; {r['reason']}"
                + (f"; {r['note']}" if r.get("note") else ""))
        rows.append(harness.row(work, tool, t, q_t, error=errors[tool], note=note, evaluations=evals,
                                fidelity=F_report if prob.mode != "tasks" else float(np.mean(F)), reached=reached,
                                extrapolated=bool(r.get("extrapolated")), seconds_per_evaluation=per_eval))
        rec["runs"][tool] = {k: v for k, v in r.items() if k not in ("x",)}
        rec["runs"][tool].update(reached=reached, final_cost=np.asarray(cost).tolist(),
                                 final_fidelity=np.asarray(F_report).tolist(), cross_evaluation_error=errors[tool])
    band = max(SAME_FINAL, prob.goal)  # runs stop anywhere within their target: apart by up to the goal
    rec["same_final_fidelity"] = {"tolerance": SAME_FINAL, "max_difference_to_qfleet": same,
                                  "pass": all(v <= SAME_FINAL for v in same.values()),
                                  "within_goal": all(v <= band for v in same.values())}
    log(f"{prob.key}: final fidelities of the runs that reached the target, |F - F_qfleet|: "
        + (", ".join(f"{k} {v:.1e}" for k, v in same.items()) or "none besides qfleet's")
        + ("" if not same else " (all within 1e-6)" if rec["same_final_fidelity"]["pass"] else
           f" (NOT all within 1e-6; {'all' if rec['same_final_fidelity']['within_goal'] else 'NOT all'} "
           f"within the goal, {prob.goal:g})"))
    work = f"{prob.title}: fidelity + gradient"
    q_g = harness.as_timing(spread["qfleet"], args.rounds)
    for k, v in spread.items():
        scaled = prob.mode == "tasks" and not k.startswith("qfleet")
        note = ("one call: " + {"one": "the system", "ensemble": f"all {prob.M} members",
                                "tasks": f"all {prob.M} tasks"}[prob.mode]
                + (f"; timed on {len(qutip_members)} tasks, scaled" if scaled else ""))
        rows.append(harness.row(work, k if k.startswith("qfleet") else f"qutip-{k}", harness.as_timing(v, args.rounds),
                                q_g, note=note))
    return rows, rec


def parse_args(argv=None):
    ap = harness.parser(__doc__.split("\n\n")[0], threads=1, seed=0,
                        quick_help="p3/p4 on 4 systems, QuTiP capped lower, p5 to 1e-2: a smoke run (< 1 min)")
    ap.add_argument("--only", default=None, help="comma-separated problems (p1,p2,p3,p4,p5; default all)")
    ap.add_argument("--qfleet-driver", choices=("automatic", "control", "user"), default="automatic",
                    help="qfleet.control.optimize (automatic: where it exists) or the loop written here")
    ap.add_argument("--qutip-tasks", type=int, default=None, help="p4: tasks QuTiP runs, scaled to all (default 16)")
    ap.add_argument("--qutip-ensemble-evals", type=int, default=None,
                    help="p3: QuTiP's evaluation cap, time extrapolated (default 10)")
    ap.add_argument("--runs", type=int, default=None, help="runs to target of p1, p2, p5 per tool (default 3)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds of the gradient timing (default 5)")
    ap.add_argument("--find-optimum", action="store_true",
                    help="recompute F* of p2/p3 by long runs (see RECORDED_FSTAR)")
    args = harness.validate(ap, ap.parse_args(argv))
    q = args.quick
    for name, full, quick in (("qutip_tasks", 16, 1), ("qutip_ensemble_evals", 10, 3), ("runs", 3, 1), ("rounds", 5, 2)):
        if getattr(args, name) is None:
            setattr(args, name, quick if q else full)
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be positive")
    known = ("p1", "p2", "p3", "p4", "p5")
    args.only = [p.strip() for p in (args.only or ",".join(known)).split(",") if p.strip()]
    if any(p not in known for p in args.only):
        ap.error(f"--only: known problems are {', '.join(known)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # before numpy, torch, scipy load
        os.environ[var] = str(args.threads)
    t_start = time.perf_counter()
    import numpy as np  # noqa: F401
    import torch

    torch.set_num_threads(args.threads)
    missing = [m for m in ("qutip", "qutip_qtrl", "qutip_qoc") if not _importable(m)]
    if missing:
        print(f"{SCRIPT}: {', '.join(missing)} not importable: pip install qutip-qtrl==0.2.0 and "
              "qutip-qoc==0.2.0 --no-deps (bench/compare/requirements.txt)", file=sys.stderr)
        return 2
    import gc

    import qfleet  # noqa: F401
    import qutip_qoc  # noqa: F401 (its import, and qutip's, before the freeze)

    gc.freeze()  # the libraries' objects out of the collector's walks, for every tool alike
    driver = control_driver(args.qfleet_driver)
    log = lambda *a: print(*a, flush=True)  # noqa: E731
    log(f"{SCRIPT}: qfleet's side through {'qfleet.control.optimize' if driver else 'a user loop (scipy L-BFGS-B)'}; "
        f"{args.threads} thread(s) for every tool; {KROTOV['reason']}")
    problems = [p for p in qubit_problems(args) + [transmon_problem(args)] if p.key in args.only]
    if args.find_optimum:
        for p in problems:
            if p.key in ("p2", "p3"):
                fstar, _ = find_optimum(p, QfleetSide(p, args.threads), driver, log)
                log(f"RECORDED_FSTAR[{p.key!r}] = {float(fstar[0])!r}")
        return 0
    rows, doc, fastest = [], {"problems": {}}, "AUG_MAT"
    for p in problems:
        t0 = time.perf_counter()
        r, rec = run_problem(p, args, driver, log, fastest)
        if p.key == "p2":
            fastest = rec["qtrl_fastest"]
        rec["wall_seconds"] = time.perf_counter() - t0
        log(f"{p.key}: done in {rec['wall_seconds']:.1f} s")
        rows += r
        doc["problems"][p.key] = rec
    doc.update(krotov=KROTOV, qutip_qoc_install=QOC_NOTE,
               qfleet_driver="qfleet.control.optimize" if driver else "user loop (scipy L-BFGS-B on open_outputs)",
               settings={"lbfgsb": {"maxcor": MAXCOR, "ftol": FTOL, "gtol": GTOL}, "fidelity_atol": FIDELITY_ATOL,
                         "gradient_rtol": GRADIENT_RTOL, "same_final_fidelity": SAME_FINAL},
               same_final_fidelity_pass=all(rec["same_final_fidelity"]["pass"] for rec in doc["problems"].values()),
               machine=harness.run_machine(args.threads),
               versions=harness.versions("qutip", "qutip-qtrl", "qutip-qoc", "scipy"),
               wall_seconds=time.perf_counter() - t_start)
    harness.finish(args, SCRIPT, rows, doc, title="Optimal control: qfleet, qutip-qtrl, qutip-qoc (1 thread each)")
    log(f"{SCRIPT}: {time.perf_counter() - t_start:.0f} s")
    return 0


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
