"""What qfleet.control's driver costs on top of the engine: each problem of docs/control.md
is optimised once while every batch it evaluates is recorded; the same batches are then
replayed straight through the engine (qfleet.open_outputs forward, 1 - F, backward: what a
user-written loop would call) and timed. The ratio optimize / replay is the driver's own
overhead (Python cost composition, the C++ optimiser, the reverse-communication round trips);
the control issue's target is at most 1.5x.

    PYTHONPATH=python python bench/micro/control_overhead.py [--rounds 5] [--threads 1] [--json out.json]

Prints per problem: evaluations (engine calls; for independent tasks the rounds and the task
evaluations), the median wall time of the optimisation and of the replay over the rounds,
and their ratio.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time


def problems(torch, qfleet, control):
    c = torch.complex128
    X = torch.tensor([[0, 1], [1, 0]], dtype=c)
    Y = torch.tensor([[0, -1j], [1j, 0]], dtype=c)
    Z = torch.tensor([[1, 0], [0, -1]], dtype=c)
    lower = torch.tensor([[0, 1], [0, 0]], dtype=c)
    g = torch.Generator().manual_seed(2)
    rates = 0.02 * torch.rand(256, 1, generator=g, dtype=torch.float64)
    det = 0.4 * torch.rand(256, 1, generator=g, dtype=torch.float64) - 0.2
    x0 = 0.3 * torch.rand(60, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    closed = qfleet.OpenSystem(2).control(X / 2).control(Y / 2).segments(60, math.pi).target_unitary(X).propagate_gate()
    damped = (qfleet.OpenSystem(2).control(X / 2).control(Y / 2).jump(lower).segments(60, math.pi)
              .target_unitary(X).propagate_gate())
    fleet = (qfleet.OpenSystem(2).drift_term(Z / 2).control(X / 2).control(Y / 2).jump(lower).segments(60, math.pi)
             .target_unitary(X).propagate_gate())
    return [
        ("X gate, closed, to 1 - F <= 1e-6", closed, x0, dict(target=1e-6)),
        ("X gate, amplitude damping", damped, x0, dict(rates=torch.tensor([0.02], dtype=torch.float64), ftol=1e-12)),
        ("robust pulse, 256 members", fleet, x0, dict(ensemble=control.Ensemble(rates=rates, drift_coeffs=det),
                                                      ftol=1e-10)),
        ("256 independent tasks", fleet, x0, dict(tasks=control.Tasks(rates=rates, drift_coeffs=det), ftol=1e-10)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="engine and torch threads (default 1)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    import qfleet
    from qfleet import control
    torch.set_num_threads(a.threads)
    rows = []
    for name, system, x0, kw in problems(torch, qfleet, control):
        program = system.compile(num_threads=a.threads)
        recorded = []
        original = control._Problem.value_and_grad

        def recording(self, x, idx):
            recorded.append((x.clone(), idx.clone()))
            return original(self, x, idx)

        control._Problem.value_and_grad = recording
        try:
            res = control.optimize(system, x0, bounds=(-2, 2), num_threads=a.threads, **kw)
        finally:
            control._Problem.value_and_grad = original
        calls = list(recorded)
        shared = "tasks" not in kw
        rates, drift = (kw["ensemble"].rates, kw["ensemble"].drift_coeffs) if "ensemble" in kw else \
            (kw["tasks"].rates, kw["tasks"].drift_coeffs) if "tasks" in kw else (kw.get("rates"), None)

        def replay():
            for x, idx in calls:
                u = x.reshape(x.shape[0], 60, 2)
                u = (u[0] if shared else u).detach().requires_grad_(True)
                r = rates if shared or rates is None else rates.index_select(0, idx)
                d = drift if shared or drift is None else drift.index_select(0, idx)
                out = qfleet.open_outputs(program, u, r, d)
                (1 - out.fidelity).sum().backward()

        def optimise():
            control.optimize(system, x0, bounds=(-2, 2), num_threads=a.threads, **kw)

        t_opt, t_rep = [], []
        optimise(), replay()  # warm
        for _ in range(a.rounds):
            for f, into in ((optimise, t_opt), (replay, t_rep)):
                t = time.perf_counter()
                f()
                into.append(time.perf_counter() - t)
        evals = int(res.evaluations.sum()) if not shared else res.evaluations
        row = dict(problem=name, engine_calls=len(calls), task_evaluations=evals, reason=res.reason if shared else
                   sorted(set(res.reason)), optimize_s=statistics.median(t_opt), replay_s=statistics.median(t_rep))
        row["ratio"] = row["optimize_s"] / row["replay_s"]
        rows.append(row)
        print(f"{name:40s} calls {len(calls):4d} (task evals {evals:6d})  optimize {row['optimize_s'] * 1e3:8.1f} ms  "
              f"engine replay {row['replay_s'] * 1e3:8.1f} ms  ratio {row['ratio']:.2f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=a.threads, rounds=a.rounds, rows=rows), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
