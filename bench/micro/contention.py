"""Threads under contention: what a call costs with the default threads (every core) against
one thread, on an idle machine and with one busy process per core beside it, as users run
qfleet on shared nodes (several experiments per node, DataLoader workers, environment
processes).

Four workloads, from Python, complex128; the first three forward + backward of the sum:
* circuit: a classifier layer like the hybrid classifier's (qfleet.QuantumLayer:
  AngleEmbedding, then three StronglyEntanglingLayers of one layer each on 4 qubits, <Z_i>);
* noisy: the same circuit as density matrices, depolarizing noise (p = 0.01) on every qubit
  after each entangling layer;
* open: the meta-learning open system (qfleet.OpenSystemLayer: one qubit, 60 segments, X/2
  and Y/2 controls, relaxation and dephasing, average gate fidelity to X, exact solver);
* env: one step of qfleet.rl's vector environments (the qubit_x task, B environments; the
  engine's step and the environments' own bookkeeping).

Each (threads, load) configuration runs in its own process (OpenMP fixes its team at start)
and the configurations alternate round by round, so a drift of the machine hits all alike.
Before the table, the gradients (env: the observations) of every configuration are checked
bit for bit equal.
Prints per workload and batch the median time per call of each configuration, and the two
ratios the engine answers for: default/one thread under load (should stay near 1) and
one/default thread idle (the speed-up threads give when the cores are free).

    PYTHONPATH=python python bench/micro/contention.py                  # B = 64, 1,024, 65,536
    PYTHONPATH=python python bench/micro/contention.py --batches 64 1024 --rounds 3 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKLOADS = ("circuit", "noisy", "open", "env")


# --------------------------------------------------------------------------- the measured side

def build(workload: str, batch: int):
    """A callable running one forward + backward of the sum on `batch` samples, and a callable
    returning what it computed (the leaf's gradient; env: one step, the observations)."""
    import numpy as np
    import torch

    import qfleet
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(0)
    if workload in ("circuit", "noisy"):
        n, layers = 4, 3
        c = qfleet.Circuit(n).angle_embedding(list(range(n)))
        for layer in range(layers):
            c.strongly_entangling_layers(list(range(n)), 1, first_weight=3 * n * layer)
            if workload == "noisy":
                for q in range(n):
                    c.channel("Depolarizing", [q], [0.01])
        for q in range(n):
            c.expval(f"Z{q}")
        module = qfleet.QuantumLayer(c, seed=1)
        x = torch.rand(batch, n, generator=gen).requires_grad_()
        return (lambda: module(x).sum().backward()), (lambda: x.grad)
    if workload == "env":
        from qfleet.rl import QfleetVectorEnv
        env = QfleetVectorEnv("qubit_x", num_envs=batch)
        env.reset(seed=0)
        actions = 2 * torch.rand(batch, env.single_action_space.shape[0], generator=gen) - 1
        last = []

        def step():
            last[:] = [env.step(actions)[0]]
        return step, (lambda: last[0])
    x, y = np.array([[0, 1], [1, 0]]), np.array([[0, -1j], [1j, 0]])
    lower, z = np.array([[0, 1], [0, 0]]), np.array([[1, 0], [0, -1]])
    system = (qfleet.OpenSystem(2).control(x / 2).control(y / 2).jump(lower).jump(np.sqrt(0.5) * z)
              .segments(60, 1.0).propagate_gate().target_unitary(x))
    module = qfleet.OpenSystemLayer(system)
    amps = (0.3 * torch.randn(batch, 60, 2, generator=gen)).requires_grad_()
    rates = torch.tensor([0.01, 0.02]).expand(batch, 2).contiguous()
    return (lambda: module(amps, rates).sum().backward()), (lambda: amps.grad)


def measure(workload: str, batch: int, seconds: float) -> tuple[float, str]:
    """Median seconds per call over about `seconds` of calls (after a warm-up call), and the
    hex digest of the warm-up call's gradient (the threads must not change a bit of it)."""
    import hashlib
    fn, result = build(workload, batch)
    fn()
    digest = hashlib.sha1(result().detach().contiguous().numpy().tobytes()).hexdigest()
    times, spent = [], 0.0
    while spent < seconds or len(times) < 3:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return statistics.median(times), digest


def child(args) -> None:
    out = {f"{w}/{b}": measure(w, b, args.seconds) for w in args.workloads for b in args.batches}
    print(json.dumps(out))


# --------------------------------------------------------------------------- the driver

def busy(n: int):
    """n processes that keep a core each busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run_config(threads: int | None, load: bool, args) -> dict:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    hogs = busy(os.cpu_count() or 1) if load else []
    try:
        cmd = [sys.executable, __file__, "--child", "--seconds", str(args.seconds),
               "--workloads", *args.workloads, "--batches", *map(str, args.batches)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    if r.returncode != 0:
        sys.exit(f"the measuring process failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 1024, 65536])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the four configurations, alternating")
    ap.add_argument("--seconds", type=float, default=1.0, help="time spent on calls per workload and batch")
    ap.add_argument("--json", help="write the medians and ratios here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    configs = {"default, idle": (None, False), "1 thread, idle": (1, False),
               "default, busy": (None, True), "1 thread, busy": (1, True)}
    samples: dict[str, dict[str, list[float]]] = {k: {} for k in configs}
    digests: dict[str, set[str]] = {}
    for r in range(args.rounds):
        for name, (threads, load) in configs.items():
            for key, (t, digest) in run_config(threads, load, args).items():
                samples[name].setdefault(key, []).append(t)
                digests.setdefault(key, set()).add(digest)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    differ = sorted(k for k, d in digests.items() if len(d) > 1)
    if differ:
        sys.exit(f"the gradients differ between thread counts for {', '.join(differ)}")
    print("gradients bit for bit the same with every thread count and load")
    med = {name: {k: statistics.median(v) for k, v in s.items()} for name, s in samples.items()}
    cores = os.cpu_count()
    print(f"{cores} cores; busy = one spinning process per core; median per call over {args.rounds} rounds")
    print("| workload | B | default idle | 1 thread idle | default busy | 1 thread busy | "
          "busy: default / 1 thread | idle: 1 thread / default |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for key in med["default, idle"]:
        w, b = key.split("/")
        m = {name: med[name][key] for name in configs}
        row = {"workload": w, "batch": int(b), **{name: m[name] for name in configs},
               "busy_default_over_one": m["default, busy"] / m["1 thread, busy"],
               "idle_one_over_default": m["1 thread, idle"] / m["default, idle"]}
        rows.append(row)
        cells = " | ".join(f"{m[name] * 1e3:.3g} ms" for name in configs)
        print(f"| {w} | {b} | {cells} | {row['busy_default_over_one']:.2f}x | {row['idle_one_over_default']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cores": cores, "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
