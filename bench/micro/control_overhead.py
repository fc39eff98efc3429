"""What qfleet.control's driver costs on top of the engine. Each problem of docs/control.md is
optimised, then the engine's own evaluations are replayed and timed: the same number of calls
of torch.ops.qfleet.control_infidelity (1 - F and its gradient, one OpenProgram::vjp) on
batches of the sizes the optimisation evaluated (independent tasks: round k evaluates the tasks
that had not stopped after k evaluations), at the pulses it found. The ratio optimize / replay
is the driver's own cost (setup, the C++ optimiser, the result's final forward); the control
guide's promise is at most 1.5x. "autograd" rows run the same problem through the autograd
path (a cost function given: Python evaluates each round) for comparison.

    PYTHONPATH=python python bench/micro/control_overhead.py [--rounds 5] [--threads 1] [--json out.json]
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
        for path in ("engine", "autograd"):
            extra = {} if path == "engine" else {"cost": lambda out: 1 - out.fidelity}
            if path == "autograd" and "ensemble" in kw:
                extra = {"cost": lambda out: 1 - out.fidelity}  # per member: averaged by the weights

            def optimise():
                return control.optimize(system, x0, bounds=(-2, 2), num_threads=a.threads, **kw, **extra)

            res = optimise()
            program = control._compiled(system, {"num_threads": a.threads})
            shared = "tasks" not in kw
            rates, drift, weights = (None, None, None)
            if "ensemble" in kw:
                e = kw["ensemble"]
                rates, drift, weights = e.rates, e.drift_coeffs, torch.full((e.rates.shape[0],), 1 / e.rates.shape[0],
                                                                            dtype=torch.float64)
            elif "tasks" in kw:
                rates, drift = kw["tasks"].rates, kw["tasks"].drift_coeffs
            else:
                rates = kw.get("rates")
            evals = torch.as_tensor(res.evaluations).reshape(-1)
            x = res.amplitudes.reshape(-1, 120) if not shared else res.amplitudes.reshape(1, 120)
            batches = [int((evals > k).sum()) for k in range(int(evals.max()))]

            def replay():
                for A in batches:
                    idx = torch.arange(A)
                    torch.ops.qfleet.control_infidelity(program, x[:A] if not shared else x, idx if not shared else
                                                        torch.zeros(1, dtype=torch.int64), rates, drift, weights)

            t_opt, t_rep = [], []
            optimise(), replay()  # warm
            for _ in range(a.rounds):
                for f, into in ((optimise, t_opt), (replay, t_rep)):
                    t = time.perf_counter()
                    f()
                    into.append(time.perf_counter() - t)
            row = dict(problem=name, path=path, engine_calls=len(batches), task_evaluations=int(evals.sum()),
                       reason=res.reason if shared else sorted(set(res.reason)), optimize_s=statistics.median(t_opt),
                       replay_s=statistics.median(t_rep))
            row["ratio"] = row["optimize_s"] / row["replay_s"]
            rows.append(row)
            print(f"{name:36s} {path:8s} calls {len(batches):4d} (task evals {row['task_evaluations']:6d})  "
                  f"optimize {row['optimize_s'] * 1e3:8.2f} ms  engine {row['replay_s'] * 1e3:8.2f} ms  "
                  f"ratio {row['ratio']:.2f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=a.threads, rounds=a.rounds, rows=rows), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
