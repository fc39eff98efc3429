"""The shortest X gate under amplitude damping: the segments' durations optimised together with
the amplitudes, through qfleet's gradient with respect to the durations.

    PYTHONPATH=python python docs/examples/shortest_gate.py            # a few seconds
    PYTHONPATH=python python docs/examples/shortest_gate.py --json gate.json

A qubit driven by H = u_x X/2 + u_y Y/2, its drive bounded, |u| <= A_max (time in units of
1/A_max), relaxes at the rate gamma (jump sigma^- = |0><1|). The whole channel is propagated and
F is its average gate fidelity to X. The pulse has n_seg piecewise-constant segments, and both
their amplitudes and their durations are optimised:
    u_k = A_max tanh(|r_k|) r_k / |r_k|   (bounded in norm: rotation rate <= A_max),
    dt_k = exp(s_k)                        (positive),
    loss = (1 - F) + lambda T,             T = sum_k dt_k.
Each value of lambda is one task of one batched call: the whole trade-off between time and
fidelity is optimised at once (Adam on the sum: the tasks do not interact).

The reference is the bang-bang bound: the Bloch vector turns at most at the rate A_max, so an
exact X gate (a pi rotation) takes T >= pi / A_max; a gate with F < 1 may stop short of pi, and a
full-amplitude X pulse of length T_bb(F*) (computed here on a grid of lengths, with the damping)
is the shortest such pulse of that kind that reaches F >= F*.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import sys
import time

import numpy as np
import torch

import qfleet

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
SIGMA_MINUS = np.array([[0, 1], [0, 0]], dtype=complex)


@dataclasses.dataclass
class Config:
    segments: int = 10
    a_max: float = 1.0
    gamma: float = 0.003  # relaxation rate, in units of A_max (T1 = 333 / A_max)
    target: float = 0.99  # the fidelity the shortest gate must reach
    # The weights of time, one task each: 12 from 10^-2.5 to 10^-0.75. Beyond lambda ~ 0.25 no
    # pulse at all is best (T = 0: the identity, F = 1/3, loss 2/3).
    lambdas: tuple = tuple(10 ** (-2.5 + 1.75 * k / 11) for k in range(12))
    initial_time: float = 2 * math.pi  # twice the bound
    steps: int = 1500  # Adam steps
    lr: float = 0.05
    seed: int = 0
    # 12 tasks are ~1 ms of work a step, too little to share: on 2 busy cores one thread took
    # 0.9-1.1 ms a step and two 16-51 ms.
    threads: int = 1


def program(cfg: Config):
    """The controlled, damped qubit; its compiled grid is a placeholder (each call passes durations)."""
    s = qfleet.OpenSystem(2).control(X / 2).control(Y / 2).jump(SIGMA_MINUS)
    s.segments(cfg.segments, cfg.initial_time).propagate_gate().target_unitary(X)
    return s.compile("exact", num_threads=cfg.threads)


def amplitudes(raw: torch.Tensor, a_max: float) -> torch.Tensor:
    """[..., 2] raw -> amplitudes of norm < a_max. The norm, not each component: a box bound would
    let both controls run at a_max and turn the Bloch vector at sqrt(2) a_max."""
    norm = torch.sqrt((raw ** 2).sum(-1, keepdim=True) + 1e-30)
    return a_max * torch.tanh(norm) * raw / norm


def optimise(prog, cfg: Config, log=print) -> dict:
    b, n = len(cfg.lambdas), cfg.segments
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    g = torch.Generator().manual_seed(cfg.seed)
    raw_u = (0.5 * torch.randn(b, n, 2, generator=g, dtype=torch.float64)).requires_grad_()
    log_dt = torch.full((b, n), math.log(cfg.initial_time / n), dtype=torch.float64, requires_grad=True)
    rates = torch.tensor([cfg.gamma], dtype=torch.float64)
    opt = torch.optim.Adam([raw_u, log_dt], lr=cfg.lr)
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        opt.zero_grad()
        dt = log_dt.exp()
        f = qfleet.open_outputs(prog, amplitudes(raw_u, cfg.a_max), rates=rates, durations=dt).fidelity
        loss = ((1 - f) + lam * dt.sum(1)).sum()
        loss.backward()
        opt.step()
        if step % 500 == 0:
            log(f"  step {step:4d}: T = {', '.join(f'{t:.3f}' for t in dt.sum(1).tolist())}")
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        dt = log_dt.exp()
        u = amplitudes(raw_u, cfg.a_max)
        f = qfleet.open_outputs(prog, u, rates=rates, durations=dt).fidelity
    return {"lambda": cfg.lambdas, "total_time": dt.sum(1).tolist(), "fidelity": f.tolist(),
            "amplitudes": u.tolist(), "durations": dt.tolist(), "seconds": seconds,
            "seconds_per_step": seconds / cfg.steps}


def x_pulse_fidelity(prog, cfg: Config, t: torch.Tensor) -> torch.Tensor:
    """F of full-amplitude X pulses u = (A_max, 0) of the lengths t [B], one batched call."""
    b = len(t)
    u = torch.tensor([cfg.a_max, 0.0], dtype=torch.float64).expand(b, cfg.segments, 2).contiguous()
    dt = (t / cfg.segments)[:, None].expand(b, cfg.segments).contiguous()
    with torch.no_grad():
        return qfleet.open_outputs(prog, u, rates=torch.tensor([cfg.gamma], dtype=torch.float64), durations=dt).fidelity


def bang_bang(prog, cfg: Config, points: int = 4001) -> dict:
    """X pulses of lengths T in [pi/2, 3 pi/2] / A_max: the shortest reaching cfg.target (to the
    grid's step, 2.5e-4 pi) and the best."""
    t = torch.linspace(0.5 * math.pi, 1.5 * math.pi, points, dtype=torch.float64) / cfg.a_max
    f = x_pulse_fidelity(prog, cfg, t)
    reach = (f >= cfg.target).nonzero()
    best = int(f.argmax())
    return {"shortest_time": float(t[reach[0, 0]]) if len(reach) else None,
            "best_fidelity": float(f[best]), "time_of_best": float(t[best])}


def run(cfg: Config, log=print) -> dict:
    torch.set_num_threads(max(cfg.threads, 1))
    prog = program(cfg)
    bound = math.pi / cfg.a_max
    log(f"X gate, |u| <= {cfg.a_max:g}, relaxation rate {cfg.gamma:g}, {cfg.segments} segments; "
        f"{len(cfg.lambdas)} values of lambda as one batch, {cfg.steps} Adam steps")
    opt = optimise(prog, cfg, log)
    # What a plain X pulse of each optimised length reaches: below pi / A_max nothing beats it.
    lengths = torch.tensor(opt["total_time"], dtype=torch.float64)
    opt["x_pulse_fidelity"] = x_pulse_fidelity(prog, cfg, lengths).tolist()
    bb = bang_bang(prog, cfg)
    ok = [i for i, f in enumerate(opt["fidelity"]) if f >= cfg.target]
    shortest = min(ok, key=lambda i: opt["total_time"][i]) if ok else None
    return {"config": {**dataclasses.asdict(cfg), "lambdas": list(cfg.lambdas)}, "bound": bound, "optimised": opt,
            "bang_bang": bb, "shortest_index": shortest,
            "shortest_time": opt["total_time"][shortest] if ok else None,
            "shortest_fidelity": opt["fidelity"][shortest] if ok else None}


def print_report(r: dict) -> None:
    cfg, opt, bb = r["config"], r["optimised"], r["bang_bang"]
    print(f"\n{'lambda':>8} {'T':>8} {'T A_max / pi':>13} {'F':>9} {'X pulse of length T':>20}")
    for lam, t, f, fx in zip(opt["lambda"], opt["total_time"], opt["fidelity"], opt["x_pulse_fidelity"]):
        print(f"{lam:8.2g} {t:8.4f} {t / r['bound']:13.4f} {f:9.5f} {fx:20.5f}")
    print(f"({opt['seconds']:.2f} s, {1e3 * opt['seconds_per_step']:.2f} ms a step)")
    reach = "never" if bb["shortest_time"] is None else f"from T = {bb['shortest_time']:.4f}"
    print(f"bang-bang bound pi / A_max = {r['bound']:.4f}; a full-amplitude X pulse reaches F >= {cfg['target']} "
          f"{reach} (its best F {bb['best_fidelity']:.5f} at T = {bb['time_of_best']:.4f})")
    if r["shortest_index"] is None:
        print(f"no lambda reached F >= {cfg['target']}")
    else:
        print(f"shortest optimised gate with F >= {cfg['target']}: T = {r['shortest_time']:.4f} "
              f"(lambda = {opt['lambda'][r['shortest_index']]:g}, F = {r['shortest_fidelity']:.5f})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=Config.steps, help="Adam steps")
    ap.add_argument("--segments", type=int, default=Config.segments)
    ap.add_argument("--gamma", type=float, default=Config.gamma, help="relaxation rate (units of A_max)")
    ap.add_argument("--target", type=float, default=Config.target, help="fidelity the shortest gate must reach")
    ap.add_argument("--lambdas", type=lambda s: tuple(float(x) for x in s.split(",")), default=Config.lambdas,
                    help="comma-separated weights of the total time in the loss")
    ap.add_argument("--seed", type=int, default=Config.seed, help="seed of the initial amplitudes")
    ap.add_argument("--json", metavar="PATH", help="write the results here")
    args = ap.parse_args(argv)
    cfg = Config(segments=args.segments, gamma=args.gamma, target=args.target, lambdas=args.lambdas,
                 steps=args.steps, seed=args.seed)
    r = run(cfg)
    print_report(r)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(r, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
