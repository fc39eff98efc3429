"""docs/examples/system_identification.py's loss and gradient (a fleet's Ramsey and
inversion-recovery likelihood, 2N Lindblad tasks) in qfleet, dynamiqs and QuTiP + scipy.

    python bench/compare/system_identification.py --threads 2 --json out.json
    python docs/examples/system_identification.py --compare        # the same after the example's fit

* qfleet: one qfleet.open_outputs call on the 2N tasks and one backward() (what each L-BFGS
  evaluation of the example runs).
* dynamiqs: jax.value_and_grad through dq.mesolve with method Expm (the exact propagator, as
  qfleet's `exact` solver), flat batching over the 2N tasks (cartesian_batching=False: per-task
  Hamiltonians, jump operators and initial densities), double precision, jit-compiled, timed
  after the compiling call. dynamiqs takes one time grid for the batch, so every task runs on
  unit segments with its Hamiltonian and rates multiplied by its segment length (the same map:
  exp(dt L) = exp(1 (dt L))).
* QuTiP + scipy: what a user without batched gradients runs, scipy.optimize.least_squares per
  qubit with residuals from qutip.mesolve (one call per experiment) and its 2-point
  finite-difference Jacobian. A gradient step is one Jacobian evaluation (the residuals and 3
  more evaluations: 8 mesolve calls a qubit); it is timed on --qutip-qubits qubits and scaled to
  N (linear: the qubits are fitted one by one). Two integrators: `adams` (QuTiP's default) and
  `diag` (exact, by diagonalising the constant Liouvillian), at atol = rtol = 1e-10: the
  finite differences (relative step 1e-6) need the residuals far below their step.

Checks before any timing: at the true parameters every expectation value of qfleet against
dynamiqs' (all 2N tasks) and QuTiP's (the QuTiP qubits), max |difference| < 1e-6; qfleet's
gradient of the loss at the example's initial guess against dynamiqs' jax.grad (relative 1e-8).
"""
from __future__ import annotations

import importlib.util
import math
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import harness  # noqa: E402

QUTIP_METHODS = ("adams", "diag")


def example():
    """docs/examples/system_identification.py as a module (its file name is this script's)."""
    name = "qfleet_example_system_identification"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "docs" / "examples" / "system_identification.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


class Problem:
    """The example's fleet, data and program, and two parameter points: the truth (for the
    output checks) and the example's initial guess (for the gradient check and the timing)."""

    def __init__(self, cfg):
        import torch

        ex = example()
        self.cfg, self.ex = cfg, ex
        self.prog, self.exp = ex.program(cfg), ex.experiment(cfg)
        t1, t2, delta = ex.fleet(cfg)
        self.truth_times = (t1, t2)
        self.truth = (*ex.log_rates(t1, t2), delta)
        with torch.no_grad():
            self.clean = ex.traces(self.prog, self.exp, *self.truth)
        self.data = ex.measure(self.clean, self.exp, cfg)
        g1, g2, d0 = ex.initial_guess(self.data, self.exp, cfg.qubits)
        self.guess = (*ex.log_rates(g1, g2), d0)

    def qfleet_loss_and_grad(self, params):
        """The example's loss at (log gamma_1, log gamma_phi, delta) [N] each and its gradient."""
        import torch

        p = [x.detach().clone().requires_grad_() for x in params]
        r = (self.ex.traces(self.prog, self.exp, *p) - self.data) * self.exp.weight
        loss = (r ** 2).sum() / (2 * self.cfg.noise ** 2 * self.cfg.qubits)
        loss.backward()
        return float(loss.detach()), torch.stack([x.grad for x in p])


# --------------------------------------------------------------------------- dynamiqs


def dynamiqs_side(pb: Problem):
    """(expvals at given parameters, jitted value_and_grad of the loss), both on numpy arrays."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import dynamiqs as dq
    import jax.numpy as jnp
    import numpy as np

    dq.set_precision("double")
    dq.set_progress_meter(False)
    ex, cfg = pb.ex, pb.cfg
    n, k = cfg.qubits, cfg.segments
    scale = jnp.asarray(pb.exp.durations[:, 0].numpy())  # each task's segment length
    rho0 = jnp.asarray(pb.exp.initial.numpy())
    Zh, Lm, Zj = (jnp.asarray(m) for m in (ex.Z / 2, ex.SIGMA_MINUS, ex.Z))
    ops = [jnp.asarray(m) for m in (ex.X, ex.Y, ex.Z)]
    tsave = jnp.arange(k + 1, dtype=jnp.float64)
    data = jnp.asarray(pb.data.numpy())
    weight = jnp.asarray(pb.exp.weight.numpy())

    def expvals(lg1, lgp, delta):
        g1, gp, d = (jnp.concatenate([x, x]) for x in (jnp.exp(lg1), jnp.exp(lgp), delta))
        H = (scale * d)[:, None, None] * Zh
        jumps = [jnp.sqrt(scale * g1)[:, None, None] * Lm, jnp.sqrt(scale * gp)[:, None, None] * Zj]
        res = dq.mesolve(H, jumps, rho0, tsave, exp_ops=ops, method=dq.method.Expm(), save_states=False,
                         cartesian_batching=False)
        return jnp.real(res.expects).transpose(0, 2, 1)  # [2N, 3, n_seg + 1] -> [2N, n_seg + 1, 3]

    def loss(params):
        r = (expvals(*params) - data) * weight
        return jnp.sum(r ** 2) / (2 * cfg.noise ** 2 * n)

    grad = jax.jit(jax.value_and_grad(loss))
    ev = jax.jit(expvals)

    def value_and_grad(params):
        v, g = grad(tuple(jnp.asarray(x.numpy()) for x in params))
        jax.block_until_ready(g)
        return float(v), np.stack([np.asarray(x) for x in g])

    return (lambda params: np.asarray(ev(*(jnp.asarray(x.numpy()) for x in params)))), value_and_grad


def xla_threads() -> str:
    flags = os.environ.get("XLA_FLAGS", "")
    return ("XLA CPU, 1 (multi_thread_eigen off)" if "multi_thread_eigen=false" in flags
            else f"XLA CPU, its default ({os.cpu_count()} cores)")


# --------------------------------------------------------------------------- QuTiP + scipy


class QutipQubit:
    """One qubit's residuals (model - data) / noise from qutip.mesolve, Ramsey then inversion
    recovery, at x = (log gamma_1, log gamma_phi, delta)."""

    def __init__(self, pb: Problem, q: int, method: str):
        import qutip as qt

        ex, n = pb.ex, pb.cfg.qubits
        self.qt, self.noise = qt, pb.cfg.noise
        self.sz, self.sm, self.zj = qt.Qobj(ex.Z / 2), qt.Qobj(ex.SIGMA_MINUS), qt.Qobj(ex.Z)
        self.ops = [qt.Qobj(m) for m in (ex.X, ex.Y, ex.Z)]
        self.rho = [qt.Qobj(ex.PLUS), qt.Qobj(ex.ONE)]
        self.t = [pb.exp.t_ramsey.numpy(), pb.exp.t_recovery.numpy()]
        self.data = [pb.data[q, :, :2].numpy(), pb.data[n + q, :, 2:].numpy()]
        self.opts = {"method": method, "atol": 1e-10, "rtol": 1e-10, "store_states": False, "progress_bar": False}
        if method == "diag":
            self.opts = {"method": "diag", "store_states": False, "progress_bar": False}

    def expvals(self, x):
        """[Ramsey's <X>, <Y> (n, 2), inversion recovery's <Z> (n, 1)]."""
        import numpy as np

        g1, gp, delta = math.exp(x[0]), math.exp(x[1]), x[2]
        H, c_ops = delta * self.sz, [math.sqrt(g1) * self.sm, math.sqrt(gp) * self.zj]
        out = []
        for rho, t, ops in zip(self.rho, self.t, (self.ops[:2], self.ops[2:])):
            res = self.qt.mesolve(H, rho, t, c_ops, e_ops=ops, options=self.opts)
            out.append(np.stack([np.real(e) for e in res.expect], axis=1))
        return out

    def residuals(self, x):
        import numpy as np

        return np.concatenate([(m - d).ravel() for m, d in zip(self.expvals(x), self.data)]) / self.noise


def qutip_jacobian_step(qubits: list, x0):
    """One least_squares Jacobian evaluation per qubit: max_nfev=1 stops it after the residuals
    and their finite-difference Jacobian at the start."""
    from scipy.optimize import least_squares

    for q, x in zip(qubits, x0):
        r = least_squares(q.residuals, x, max_nfev=1, diff_step=1e-6)
        assert r.nfev == 1 and r.njev == 1, (r.nfev, r.njev)


# --------------------------------------------------------------------------- the run


def check_outputs(pb: Problem, dq_expvals, dq_grad, qutip: dict) -> dict:
    """Every check, before anything is timed (harness.check_close exits with status 1 on a failure)."""
    import numpy as np

    n, ours = pb.cfg.qubits, pb.clean.numpy()
    checks = {"dynamiqs_expvals": harness.check_close("expvals qfleet vs dynamiqs (all tasks)", ours,
                                                      dq_expvals(pb.truth), atol=1e-6)}
    for method, qubits in qutip.items():
        sub = range(len(qubits))
        got = [np.concatenate([e.ravel() for e in qq.expvals([float(v[q]) for v in pb.truth])])
               for q, qq in zip(sub, qubits)]
        ref = [np.concatenate([ours[q, :, :2].ravel(), ours[n + q, :, 2:].ravel()]) for q in sub]
        checks[f"qutip_{method}_expvals"] = harness.check_close(
            f"expvals qfleet vs QuTiP {method} ({len(qubits)} qubits)", ref, got, atol=1e-6)
    lq, gq = pb.qfleet_loss_and_grad(pb.guess)
    ld, gd = dq_grad(pb.guess)
    checks["gradient"] = harness.check_close("loss and gradient qfleet vs dynamiqs jax.grad", [lq, gq.numpy()],
                                             [ld, gd], rtol=1e-8)
    return checks


def scaled(t, factor: float):
    return harness.Timing(t.median * factor, t.min * factor, t.max * factor, t.reps, t.number, t.warmup_s)


def whole_fits(pb: Problem, qubits: list, log=print) -> tuple:
    """qfleet's fit of every qubit (the example's L-BFGS) and scipy's least_squares to convergence
    (its default tolerances) on the QuTiP qubits from the same initial guess, scaled to N; the
    largest difference of the two fits on those qubits in units of the Cramer-Rao deviation."""
    from scipy.optimize import least_squares

    ex, cfg = pb.ex, pb.cfg
    # (info["seconds"]: the optimiser's steps; constructing the first torch optimiser of a
    # process imports torch._dynamo, ~2 s once, outside them)
    fitted, _, info = ex.fit(pb.prog, pb.exp, pb.data, cfg, log=lambda *_: None)
    ours = harness.Timing(*(3 * [info["seconds"]]), 1, 1, float("nan"))
    t0, evals, apart = time.perf_counter(), [0, 0], 0.0
    for q, qq in enumerate(qubits):
        r = least_squares(qq.residuals, [float(v[q]) for v in pb.guess], diff_step=1e-6)
        evals[0] += r.nfev
        evals[1] += r.njev
        g1, gp = math.exp(r.x[0]), math.exp(r.x[1])
        theirs = {"T1": 1 / g1, "T2": 1 / (g1 / 2 + 2 * gp), "delta": r.x[2]}
        t1, t2 = pb.truth_times
        sd = {k: float(v[q]) for k, v in ex.cramer_rao(pb.exp, t1, t2, cfg).items()}
        for k in ("T1", "T2", "delta"):
            mine = float(fitted[k][q])
            diff = abs(math.log(theirs[k] / mine)) if k != "delta" else abs(theirs[k] - mine)
            apart = max(apart, diff / sd[k])
    t = time.perf_counter() - t0
    log(f"whole fits: qfleet {info['engine_calls']} engine calls; least_squares {evals[0]} residual and "
        f"{evals[1]} Jacobian evaluations on {len(qubits)} qubits; the fits differ by <= {apart:.3f} Cramer-Rao "
        f"deviations")
    theirs_t = scaled(harness.Timing(t, t, t, 1, 1, float("nan")), cfg.qubits / len(qubits))
    return ours, theirs_t, {"engine_calls": info["engine_calls"], "least_squares_nfev": evals[0],
                            "least_squares_njev": evals[1], "max_apart_in_cramer_rao_sd": apart}


def compare(cfg, threads: int, qutip_qubits: int = 4, repeats: int = 5, log=print) -> dict:
    """Checks, then per-gradient-step medians of qfleet, dynamiqs and QuTiP + scipy, and the whole
    fits of qfleet and QuTiP + scipy; the rows."""
    import torch

    if threads == 1 and "jax" not in sys.modules:  # XLA's own pool otherwise takes every core
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    torch.set_num_threads(threads)
    pb = Problem(cfg)
    n = cfg.qubits
    prog_threads = cfg.threads or "default"
    log(f"\ncomparison: {n} qubits ({2 * n} tasks x {cfg.segments} segments); torch {torch.get_num_threads()} "
        f"threads, qfleet {prog_threads}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, {xla_threads()}")
    t0 = time.perf_counter()
    dq_expvals, dq_grad = dynamiqs_side(pb)
    dq_grad(pb.guess)
    first_call = time.perf_counter() - t0
    qutip = {m: [QutipQubit(pb, q, m) for q in range(min(qutip_qubits, n))] for m in QUTIP_METHODS}
    sub = len(qutip[QUTIP_METHODS[0]])
    checks = check_outputs(pb, dq_expvals, dq_grad, qutip)

    timing = {"qfleet": harness.timed(lambda: pb.qfleet_loss_and_grad(pb.guess), repeats=repeats, warmup=2),
              "dynamiqs": harness.timed(lambda: dq_grad(pb.guess), repeats=repeats, warmup=1)}
    x0 = [[float(v[q]) for v in pb.guess] for q in range(sub)]
    for method, qubits in qutip.items():  # the qubits are independent problems, fitted one by one
        t = harness.timed(lambda: qutip_jacobian_step(qubits, x0), repeats=max(3, repeats // 2), warmup=1)
        timing[f"qutip_{method}"] = scaled(t, n / sub)
    work, scale_note = f"{n} qubits: loss + gradient", f"1 thread; timed on {sub} qubits, x {n / sub:g}"
    rows = [harness.row(work, "qfleet open_outputs + backward", timing["qfleet"], timing["qfleet"],
                        note=f"qfleet threads {prog_threads}, torch {torch.get_num_threads()}"),
            harness.row(work, "dynamiqs mesolve Expm, jax.value_and_grad (jit)", timing["dynamiqs"], timing["qfleet"],
                        error=checks["dynamiqs_expvals"],
                        note=f"{xla_threads()}; first call incl. jit {first_call:.1f} s")]
    for method in QUTIP_METHODS:
        rows.append(harness.row(work, f"QuTiP mesolve ({method}) + least_squares 2-point Jacobian",
                                timing[f"qutip_{method}"], timing["qfleet"], error=checks[f"qutip_{method}_expvals"],
                                note=scale_note))
    ours, theirs, fits = whole_fits(pb, qutip["diag"], log)
    work = f"{n} qubits: whole fit"
    rows += [harness.row(work, f"qfleet, L-BFGS ({fits['engine_calls']} engine calls)", ours, ours,
                         note=f"qfleet threads {prog_threads}"),
             harness.row(work, "QuTiP mesolve (diag) + least_squares to convergence", theirs, ours,
                         note=f"{scale_note}; {fits['least_squares_nfev']} residual + {fits['least_squares_njev']} "
                              "Jacobian evaluations")]
    print(harness.markdown_table(rows), flush=True)
    return {"checks": checks, "rows": rows, "dynamiqs_first_call_s": first_call, "qutip_qubits": sub,
            "whole_fits": fits,
            "threads": {"torch": torch.get_num_threads(), "qfleet": prog_threads,
                        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "xla": xla_threads(),
                        "qutip": "1 (serial loop over qubits)"}}


def main() -> int:
    ap = harness.parser(__doc__.split("\n\n")[0], threads=2, seed=2026)
    ap.add_argument("--qubits", type=int, default=1024)
    ap.add_argument("--qutip-qubits", type=int, default=4, help="qubits QuTiP + scipy is timed on (scaled to --qubits)")
    ap.add_argument("--repeats", type=int, default=5)
    args = harness.validate(ap, ap.parse_args())
    if args.quick:
        args.qubits, args.qutip_qubits, args.repeats = min(args.qubits, 16), 1, 3
    harness.threads_env(args.threads)
    cfg = example().Config(qubits=args.qubits, seed=args.seed, threads=args.threads)
    doc = compare(cfg, args.threads, args.qutip_qubits, args.repeats)
    doc["machine"] = harness.run_machine(args.threads)
    doc["versions"] = harness.versions("dynamiqs", "jax", "qutip", "scipy")
    harness.finish(args, "system_identification.py", doc.pop("rows"), doc, print_table=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
