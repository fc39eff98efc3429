"""System identification with qfleet: T1, T2 and the detuning of every qubit of a fleet, fitted
to noisy Ramsey and inversion-recovery traces with one batched Lindblad simulation (and its exact
gradient) per optimiser step.

    PYTHONPATH=python python docs/examples/system_identification.py            # 1,024 qubits
    PYTHONPATH=python python docs/examples/system_identification.py --qubits 32 --json report.json
    PYTHONPATH=python python docs/examples/system_identification.py --compare  # + dynamiqs, QuTiP

Model, per qubit (time in microseconds, the detuning delta in rad/us):
    H = delta Z / 2,
    jumps sigma^- = |0><1| at rate gamma_1 = 1/T1 and Z at rate gamma_phi,
so the coherence decays as exp(-t/T2) with 1/T2 = gamma_1/2 + 2 gamma_phi, i.e.
gamma_phi = (1/T2 - 1/(2 T1)) / 2 (T2 <= 2 T1). Two experiments per qubit:
    Ramsey: start in |+>, <X> and <Y> at every boundary of equal segments; X + iY = exp(-t/T2 + i delta t),
            two quadratures, so the sign of delta is seen;
    inversion recovery: start in |1>, <Z> = 1 - 2 exp(-t/T1), on a longer grid.

Both experiments of every qubit are tasks of ONE compiled program: 2N tasks with per-task initial
densities, per-task segment durations (the two grids) and per-task rates and drift coefficients
built from the per-qubit parameters (torch.cat), so that one qfleet.open_outputs call gives every
trace and one backward() the gradient of the whole fleet's likelihood.

The fitted parameters are the logarithms of the rates (positive) and the detuning. This model has
a closed form (above); the example uses it only to check qfleet's traces and for the Cramer-Rao
bound that judges the fit. The fit itself uses qfleet alone, so it carries over unchanged to
models without one (leakage to a third level, a drive, crosstalk).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pathlib
import sys
import time

import numpy as np
import torch

import qfleet

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.diag([1.0, -1.0]).astype(complex)
SIGMA_MINUS = np.array([[0, 1], [0, 0]], dtype=complex)  # |0><1|: |1> decays to |0>
PLUS = np.full((2, 2), 0.5, dtype=complex)  # |+><+|
ONE = np.diag([0.0, 1.0]).astype(complex)  # |1><1|


@dataclasses.dataclass
class Config:
    qubits: int = 1024
    segments: int = 80  # points per trace: segments + 1 (t = 0 included)
    ramsey_dt: float = 1.0  # us: Ramsey grid 0..80 us (Nyquist pi rad/us)
    recovery_dt: float = 3.0  # us: inversion-recovery grid 0..240 us
    noise: float = 0.02  # standard deviation of every measured expectation value
    steps: int = 40  # L-BFGS iterations
    seed: int = 2026  # the fleet's parameters
    noise_seed: int = 1  # the measurement noise
    threads: int = 0  # qfleet's threads (0: its default, every core)


# --------------------------------------------------------------------------- the experiment


def program(cfg: Config):
    """The compiled model: one qubit, the detuning as a per-task drift coefficient, two jump
    operators with per-task rates, <X>, <Y>, <Z> at every segment boundary. The grid given here
    and the default initial state |0> are placeholders: each call passes the tasks' own segment
    durations and initial densities."""
    s = qfleet.OpenSystem(2).drift_term(Z / 2).jump(SIGMA_MINUS).jump(Z)
    s.observable(X).observable(Y).observable(Z)
    s.segments(cfg.segments, cfg.segments * cfg.ramsey_dt)
    return s.compile("exact", num_threads=cfg.threads)


@dataclasses.dataclass
class Experiment:
    """What is fixed per task: tasks 0..N-1 are the qubits' Ramsey runs, N..2N-1 their
    inversion-recovery runs."""
    initial: torch.Tensor  # [2N, 2, 2] complex128
    durations: torch.Tensor  # [2N, n_seg]
    weight: torch.Tensor  # [2N, 1, 3]: which of <X>, <Y>, <Z> each task measures
    t_ramsey: torch.Tensor  # [n_seg + 1]
    t_recovery: torch.Tensor  # [n_seg + 1]


def experiment(cfg: Config) -> Experiment:
    n, k = cfg.qubits, cfg.segments
    initial = torch.cat([torch.as_tensor(PLUS).expand(n, 2, 2), torch.as_tensor(ONE).expand(n, 2, 2)])
    durations = torch.cat([torch.full((n, k), cfg.ramsey_dt), torch.full((n, k), cfg.recovery_dt)])
    weight = torch.cat([torch.tensor([1.0, 1.0, 0.0]).expand(n, 1, 3), torch.tensor([0.0, 0.0, 1.0]).expand(n, 1, 3)])
    steps = torch.arange(k + 1, dtype=torch.float64)
    return Experiment(initial.contiguous(), durations.double(), weight.double(), steps * cfg.ramsey_dt,
                      steps * cfg.recovery_dt)


def traces(prog, exp: Experiment, log_g1, log_gphi, delta):
    """<X>, <Y>, <Z> [2N, n_seg + 1, 3] of every task: one engine call. The per-qubit parameters
    [N] become per-task rates [2N, 2] and drift coefficients [2N, 1] by torch.cat, so their
    gradients gather both experiments of a qubit."""
    rates = torch.stack([log_g1.exp(), log_gphi.exp()], dim=1)
    rates = torch.cat([rates, rates])
    drift = torch.cat([delta, delta])[:, None]
    amplitudes = torch.zeros(exp.durations.shape[1], 0, dtype=torch.float64)  # no controls
    out = qfleet.open_outputs(prog, amplitudes, rates=rates, drift_coeffs=drift, durations=exp.durations,
                              initial=exp.initial)
    return out.expvals


def log_rates(t1, t2):
    """(log gamma_1, log gamma_phi) of T1, T2 (T2 < 2 T1)."""
    return torch.log(1 / t1), torch.log((1 / t2 - 1 / (2 * t1)) / 2)


def times(log_g1, log_gphi):
    """(T1, T2) of the log rates."""
    g1 = log_g1.exp()
    return 1 / g1, 1 / (g1 / 2 + 2 * log_gphi.exp())


def closed_form(exp: Experiment, t1, t2, delta):
    """The same traces from the closed form (module docstring), [2N, n_seg + 1, 3] with the
    unmeasured quadratures of each experiment as they evolve too: Ramsey's <Z> relaxes to +1 as
    1 - exp(-t/T1); inversion recovery's <X>, <Y> stay 0."""
    tr, ti = exp.t_ramsey, exp.t_recovery
    decay = torch.exp(-tr / t2[:, None])
    ramsey = torch.stack([decay * torch.cos(delta[:, None] * tr), decay * torch.sin(delta[:, None] * tr),
                          1 - torch.exp(-tr / t1[:, None])], dim=2)
    zero = torch.zeros(len(t1), len(ti), dtype=torch.float64)
    recovery = torch.stack([zero, zero, 1 - 2 * torch.exp(-ti / t1[:, None])], dim=2)
    return torch.cat([ramsey, recovery])


# --------------------------------------------------------------------------- the fleet and its data


def fleet(cfg: Config):
    """True parameters: T1 ~ U[30, 90] us, T2 = T1 x U[0.3, 1.5], |delta| ~ U[0.1, 0.8] rad/us with
    a random sign."""
    g = torch.Generator().manual_seed(cfg.seed)
    u = torch.rand(4, cfg.qubits, generator=g, dtype=torch.float64)
    t1 = 30 + 60 * u[0]
    t2 = t1 * (0.3 + 1.2 * u[1])
    delta = torch.where(u[2] < 0.5, -1.0, 1.0) * (0.1 + 0.7 * u[3])
    return t1, t2, delta


def measure(clean: torch.Tensor, exp: Experiment, cfg: Config) -> torch.Tensor:
    g = torch.Generator().manual_seed(cfg.noise_seed)
    return clean + cfg.noise * torch.randn(clean.shape, generator=g, dtype=torch.float64) * exp.weight


# --------------------------------------------------------------------------- the fit


def _first(t, hit):
    """t at each row's first True (the last t where none is)."""
    idx = torch.where(hit.any(1), hit.to(torch.int64).argmax(1), len(t) - 1)
    return t[idx.clamp(min=1)]


def initial_guess(data: torch.Tensor, exp: Experiment, n: int):
    """delta from the peak of the FFT of X + iY (zero-padded to 4096 points: a 1.5e-3 rad/us
    grid); T1 from where <Z> of inversion recovery crosses 0 (t = T1 ln 2); T2 from where the
    Ramsey envelope |X + iY| falls below 1/e. Crude: with the defaults T1 and T2 are 4% off
    (median), 11% and 22% at the 95th percentile (the --json report's initial_guess)."""
    s = torch.complex(data[:n, :, 0], data[:n, :, 1])
    nfft, dt = 4096, float(exp.t_ramsey[1])
    omega = 2 * math.pi * torch.fft.fftfreq(nfft, d=dt, dtype=torch.float64)
    delta = omega[torch.fft.fft(s, n=nfft, dim=1).abs().argmax(1)]
    t1 = _first(exp.t_recovery, data[n:, :, 2] > 0) / math.log(2)
    t2 = torch.minimum(_first(exp.t_ramsey, s.abs() < math.exp(-1)), 1.8 * t1)  # gamma_phi > 0
    return t1, t2, delta


def fit(prog, exp: Experiment, data: torch.Tensor, cfg: Config, log=print):
    """Maximum likelihood (least squares / (2 noise^2), per qubit) by L-BFGS over all qubits at once.

    The detuning is fitted as delta = delta_0 + phi / T2_0 (T2_0 from the initial guess): then
    every parameter moves the likelihood on a comparable scale (the curvature in delta grows as
    T2^3, in log rates as T2), which L-BFGS needs, its one curvature model serving all the qubits."""
    n = cfg.qubits
    t1, t2, delta0 = initial_guess(data, exp, n)
    lg1, lgp = (x.clone().requires_grad_() for x in log_rates(t1, t2))
    phi = torch.zeros(n, dtype=torch.float64, requires_grad=True)
    scale = t2.clone()
    opt = torch.optim.LBFGS([lg1, lgp, phi], lr=1, max_iter=cfg.steps, history_size=50,
                            line_search_fn="strong_wolfe", tolerance_grad=0, tolerance_change=0)
    calls, history = [0], []

    def closure():
        opt.zero_grad()
        r = (traces(prog, exp, lg1, lgp, delta0 + phi / scale) - data) * exp.weight
        loss = (r ** 2).sum() / (2 * cfg.noise ** 2 * n)
        loss.backward()
        calls[0] += 1
        history.append(float(loss.detach()))
        if calls[0] % 10 == 0:
            log(f"  engine call {calls[0]:3d}: -log likelihood per qubit {history[-1]:.3f}")
        return loss

    t0 = time.perf_counter()  # (after the optimiser's construction: a process's first imports torch._dynamo)
    opt.step(closure)
    seconds = time.perf_counter() - t0
    t1f, t2f = times(lg1.detach(), lgp.detach())
    guess = {"T1": t1, "T2": t2, "delta": delta0}
    return {"T1": t1f, "T2": t2f, "delta": (delta0 + phi / scale).detach()}, guess, {
        "seconds": seconds, "engine_calls": calls[0], "loss_first": history[0], "loss_last": history[-1]}


# --------------------------------------------------------------------------- judging the fit


def cramer_rao(exp: Experiment, t1, t2, cfg: Config):
    """Standard deviations of log T1, log T2 and delta that no unbiased estimator beats, from the
    Fisher information of Gaussian noise on the closed-form traces: I = J^T J / noise^2. The three
    parameters decouple (inversion recovery sees T1 alone; in Ramsey the X and Y derivatives in
    log T2 and delta are orthogonal), so each is 1 / sqrt(I_kk):
        log T1: sum_t (2 t/T1 exp(-t/T1))^2;  log T2: sum_t (t/T2)^2 exp(-2t/T2);  delta: sum_t t^2 exp(-2t/T2)."""
    tr, ti = exp.t_ramsey, exp.t_recovery
    e2 = torch.exp(-2 * tr / t2[:, None])
    return {"T1": cfg.noise / ((2 * ti / t1[:, None] * torch.exp(-ti / t1[:, None])) ** 2).sum(1).sqrt(),
            "T2": cfg.noise / ((tr / t2[:, None]) ** 2 * e2).sum(1).sqrt(),
            "delta": cfg.noise / (tr ** 2 * e2).sum(1).sqrt()}


def judge(fitted: dict, truth: dict, crb: dict) -> dict:
    """Per parameter: the median and 95th percentile of |fit - truth| / truth (T1, T2) or
    |fit - truth| (delta, rad/us), the same of the Cramer-Rao standard deviation, and the errors
    in units of it: z = (log fit - log truth) / sd (T1, T2) or (fit - truth) / sd (delta).
    An efficient fit has rms(z) ~ 1 and |z| < 4 for 1,024 qubits."""
    out = {}
    for k in ("T1", "T2", "delta"):
        rel = k != "delta"
        err = (fitted[k] - truth[k]).abs() / (truth[k] if rel else 1)
        z = (torch.log(fitted[k] / truth[k]) if rel else fitted[k] - truth[k]) / crb[k]
        out[k] = {"median": float(err.median()), "p95": float(torch.quantile(err, 0.95)),
                  "crb_median": float(crb[k].median()), "crb_p95": float(torch.quantile(crb[k], 0.95)),
                  "z_rms": float(z.pow(2).mean().sqrt()), "z_max": float(z.abs().max()),
                  "relative": rel}
    return out


def print_report(result: dict) -> None:
    print("\nfitted against the truth (T1, T2: |fit - truth| / truth; delta: |fit - truth| in rad/us)")
    print(f"{'':6} {'median':>10} {'p95':>10} {'CR median':>10} {'CR p95':>10} {'rms z':>7} {'max |z|':>8}")
    for k, v in result["accuracy"].items():
        print(f"{k:6} {v['median']:10.2e} {v['p95']:10.2e} {v['crb_median']:10.2e} {v['crb_p95']:10.2e} "
              f"{v['z_rms']:7.3f} {v['z_max']:8.2f}")
    print("(CR: the Cramer-Rao standard deviation per qubit; z: the error in units of it)")


# --------------------------------------------------------------------------- the run


def run(cfg: Config, log=print) -> dict:
    prog = program(cfg)
    exp = experiment(cfg)
    t1, t2, delta = fleet(cfg)
    with torch.no_grad():
        lg1, lgp = log_rates(t1, t2)
        clean = traces(prog, exp, lg1, lgp, delta)
    # qfleet's traces against the closed form: the check that the model is the one meant.
    model_error = float((clean - closed_form(exp, t1, t2, delta)).abs().max())
    log(f"{cfg.qubits} qubits, {2 * cfg.qubits} tasks of {cfg.segments} segments; qfleet's noiseless traces "
        f"against the closed form: max |difference| {model_error:.1e}")
    if model_error > 1e-9:
        raise SystemExit(f"qfleet's traces differ from the closed form by {model_error:.3g}")
    data = measure(clean, exp, cfg)
    fitted, guess, timing = fit(prog, exp, data, cfg, log)
    truth = {"T1": t1, "T2": t2, "delta": delta}
    timing["seconds_per_engine_call"] = timing["seconds"] / timing["engine_calls"]
    log(f"fit: {timing['engine_calls']} engine calls (forward + gradient of {2 * cfg.qubits} tasks) in "
        f"{timing['seconds']:.2f} s, {1e3 * timing['seconds_per_engine_call']:.1f} ms each")
    n_residuals = 3 * (cfg.segments + 1)
    return {"config": dataclasses.asdict(cfg), "threads": {"qfleet": cfg.threads or "default (every core)",
                                                           "torch": torch.get_num_threads()},
            "closed_form_max_error": model_error, "timing": timing,
            "loss_at_optimum_expected": (n_residuals - 3) / 2,  # E[chi^2 / 2] at the fit: n - p degrees of freedom
            "initial_guess": judge(guess, truth, cramer_rao(exp, t1, t2, cfg)),
            "accuracy": judge(fitted, truth, cramer_rao(exp, t1, t2, cfg))}


def _comparison():
    """bench/compare/system_identification.py (the comparison scripts' harness is beside it)."""
    import importlib.util

    path = pathlib.Path(__file__).resolve().parents[2] / "bench" / "compare" / "system_identification.py"
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("qfleet_bench_system_identification", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qubits", type=int, default=Config.qubits)
    ap.add_argument("--steps", type=int, default=Config.steps, help="L-BFGS iterations")
    ap.add_argument("--seed", type=int, default=Config.seed, help="seed of the fleet's parameters")
    ap.add_argument("--noise-seed", type=int, default=Config.noise_seed, help="seed of the measurement noise")
    ap.add_argument("--threads", type=int, default=0, help="qfleet's and torch's threads (0: their default)")
    ap.add_argument("--compare", action="store_true",
                    help="then time the loss and gradient beside dynamiqs and QuTiP + scipy "
                         "(bench/compare/system_identification.py)")
    ap.add_argument("--json", metavar="PATH", help="write the report (config, seeds, results) here")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config(qubits=args.qubits, steps=args.steps, seed=args.seed, noise_seed=args.noise_seed,
                 threads=args.threads)
    result = run(cfg)
    print_report(result)
    if args.compare:
        result["compare"] = _comparison().compare(cfg, threads=args.threads or os.cpu_count())
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
