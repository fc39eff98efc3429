"""Noisy circuits, same machine, same run: qfleet's density-matrix engine against
PennyLane default.mixed (backprop, torch) and Qiskit Aer's density-matrix simulator.

    PYTHONPATH=python \\
        python bench/compare/noisy.py [--threads 2] [--seed 0] [--json out.json] [--md out.md] [--quick] \\
        [--part classifier|large|all]

(or with the pip-installed package). Needs torch, pennylane, qiskit, qiskit-aer.

1. classifier: a batch of B = 64 noisy 4-qubit classifier circuits - AngleEmbedding (RX)
   and 3 StronglyEntanglingLayers written out as Rot and CNOT gates, a depolarizing
   channel (p = 0.01) on every wire of every gate, readout error 0.02 on every wire,
   <Z_i> on each wire. Forward + gradient w.r.t. the inputs and the 36 weights (cotangent
   all ones): qfleet (adjoint) vs default.mixed (backprop, torch; one call on the batch
   when PennyLane broadcasts it, else a loop). Forward only: Aer (density matrix, the 64
   circuits as one run with parameter binds; <Z_i> from saved expectation values times the
   readout factor 1 - 2 p_ro).
2. large: 10-qubit noisy circuits, 30 gates (random RY/RZ/CNOT) each followed by a
   depolarizing channel, B = 100, forward: time, and achieved FLOP/s as a fraction of the
   machine's double-precision peak (QFLEET_PEAK_GFLOPS, or build/bench/peak_flops run
   here). FLOPs are the arithmetic the kernels do (src/cpu/dm_cpu_impl.hpp): a dense
   D x D complex block costs 8 D^2 real flops per group of D amplitudes (4^n / D groups);
   a one-qubit gate is two such blocks (rows, columns); CNOT's X block is a swap (0
   flops); a one-wire catalogue channel costs 24 flops per group of 4 (8 real-complex
   products and 4 complex sums).

Outputs are checked equal before anything is timed (default.mixed to 1e-10; Aer to 1e-9,
see docs/noisy.md; harness.check_close); a disagreement exits with status 1. Figures are medians over repeats
(at least 3, about 5 s per figure; --quick: 1 and 1 s). The targets (qfleet >= 100x
default.mixed; faster than Aer forward-only) are printed beside the figures, never asserted.
"""
import json
import math
import os
import platform
import subprocess
import sys

import harness

N, LAYERS, B = 4, 3, 64
P_DEPOL, P_READOUT = 0.01, 0.02


def timed(fn, budget, min_repeats):
    """One warm-up call, then samples of one call for about `budget` seconds (at least
    min_repeats, at most 200)."""
    t = harness.timed(fn, repeats=min_repeats, budget_s=budget, max_repeats=200)
    return {"median_s": t.median, "min_s": t.min, "max_s": t.max, "repeats": t.reps}


def classifier_gates():
    """(name, wires, param) with param = ("x", i) | ("w", j, k) | None, in circuit order."""
    ops = [("RX", [q], ("x", q)) for q in range(N)]
    for layer in range(LAYERS):
        for q in range(N):
            ops.append(("Rot", [q], ("w", layer * N + q)))
        r = layer % (N - 1) + 1
        for q in range(N):
            ops.append(("CNOT", [q, (q + r) % N], None))
    return ops


def qfleet_classifier(qfleet):
    c = qfleet.Circuit(N)
    for name, wires, p in classifier_gates():
        if p is None:
            c.add(name, wires)
        elif p[0] == "x":
            c.add(name, wires, [qfleet.input(p[1])])
        else:
            j = 3 * p[1]
            c.add(name, wires, [qfleet.weight(j), qfleet.weight(j + 1), qfleet.weight(j + 2)])
        for w in wires:
            c.channel("Depolarizing", [w], [P_DEPOL])
    for q in range(N):
        c.readout_error(q, P_READOUT, P_READOUT)
        c.expval(f"Z{q}")
    return c


def pennylane_classifier(qml):
    dev = qml.device("default.mixed", wires=N)

    @qml.qnode(dev, interface="torch", diff_method="backprop")
    def f(x, w):
        for name, wires, p in classifier_gates():
            if p is None:
                qml.CNOT(wires=wires)
            elif p[0] == "x":
                qml.RX(x[..., p[1]], wires=wires)
            else:
                j = 3 * p[1]
                qml.Rot(w[j], w[j + 1], w[j + 2], wires=wires)
            for q in wires:
                qml.DepolarizingChannel(P_DEPOL, wires=q)
        for q in range(N):
            qml.BitFlip(P_READOUT, wires=q)  # readout error on the measured (Z) bits
        return [qml.expval(qml.PauliZ(q)) for q in range(N)]

    return f


def aer_classifier():
    from qiskit import QuantumCircuit
    from qiskit.circuit import ParameterVector
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    x, w = ParameterVector("x", N), ParameterVector("w", 3 * N * LAYERS)
    qc = QuantumCircuit(N)
    for name, wires, p in classifier_gates():
        q = [N - 1 - v for v in wires]  # qfleet wire 0 = most significant = Qiskit qubit n-1
        if name == "RX":
            qc.rx(x[p[1]], q[0])
        elif name == "Rot":  # RZ(w2) RY(w1) RZ(w0)
            j = 3 * p[1]
            qc.rz(w[j], q[0])
            qc.ry(w[j + 1], q[0])
            qc.rz(w[j + 2], q[0])
        else:
            qc.cx(q[0], q[1])
        for v in q:
            qc.id(v)  # the channel's slot: Aer puts the depolarizing error after each id
    for v in range(N):
        qc.save_expectation_value(SparsePauliOp("I" * (N - 1 - v) + "Z" + "I" * v), list(range(N)), label=f"z{v}")
    model = NoiseModel()
    # PennyLane/qfleet's Depolarizing(p) is Aer's depolarizing_error(4p/3, 1).
    model.add_all_qubit_quantum_error(depolarizing_error(4 * P_DEPOL / 3, 1), ["id"])
    sim = AerSimulator(method="density_matrix", noise_model=model)
    return sim, qc, x, w


def run_classifier(args, results):
    import numpy as np
    import torch
    import qfleet
    import pennylane as qml

    rng = np.random.default_rng(args.seed)
    xs = torch.tensor(rng.uniform(-math.pi / 2, math.pi / 2, (B, N)), dtype=torch.float64)
    ws = torch.tensor(rng.uniform(0, 2 * math.pi, 3 * N * LAYERS), dtype=torch.float64)
    prog = qfleet_classifier(qfleet).compile(num_threads=args.threads)

    def qfleet_step():
        x, w = xs.clone().requires_grad_(), ws.clone().requires_grad_()
        out = qfleet.circuit_forward(prog, x, w)
        out.sum().backward()
        return out.detach(), x.grad, w.grad

    f = pennylane_classifier(qml)
    try:
        f(xs[:2], ws)  # broadcasting over the batch?
        broadcast = True
    except Exception:  # noqa: BLE001 - PennyLane raises various types here
        broadcast = False

    def pl_step():
        x, w = xs.clone().requires_grad_(), ws.clone().requires_grad_()
        if broadcast:
            out = torch.stack(f(x, w), dim=-1)
        else:
            out = torch.stack([torch.stack(f(x[b], w)) for b in range(B)])
        out.sum().backward()
        return out.detach(), x.grad, w.grad

    q, p = qfleet_step(), pl_step()
    for name, a, b in zip(("outputs", "input gradients", "weight gradients"), q, p):
        results.setdefault("checks", {})[f"default.mixed {name}"] = harness.check_close(
            f"default.mixed {name} against qfleet's", b, a, atol=1e-10)
    sim, qc, xp, wp = aer_classifier()
    binds = {xp[i]: xs[:, i].tolist() for i in range(N)}
    binds.update({wp[j]: [ws[j].item()] * B for j in range(len(wp))})

    def aer_forward():
        res = sim.run(qc, parameter_binds=[binds]).result()
        # wire q is Qiskit's qubit N-1-q
        return np.array([[res.data(b)[f"z{N - 1 - q}"] for q in range(N)] for b in range(B)]) * (1 - 2 * P_READOUT)

    results["checks"]["aer outputs"] = harness.check_close("Aer outputs against qfleet's", aer_forward(), q[0],
                                                           atol=1e-9)
    budget, reps = (1.0, 1) if args.quick else (5.0, 3)
    t = {"qfleet forward+gradient": timed(qfleet_step, budget, reps),
         "qfleet forward": timed(lambda: qfleet.circuit_forward(prog, xs, ws), budget, reps),
         "default.mixed backprop forward+gradient": timed(pl_step, budget, reps),
         "aer density_matrix forward": timed(aer_forward, budget, reps)}
    results["classifier"] = {"timings": t, "pennylane_broadcast": broadcast,
                             "ratio default.mixed / qfleet (forward+gradient)":
                                 t["default.mixed backprop forward+gradient"]["median_s"]
                                 / t["qfleet forward+gradient"]["median_s"],
                             "ratio aer forward / qfleet forward+gradient":
                                 t["aer density_matrix forward"]["median_s"] / t["qfleet forward+gradient"]["median_s"],
                             "ratio aer forward / qfleet forward":
                                 t["aer density_matrix forward"]["median_s"] / t["qfleet forward"]["median_s"]}


def peak_gflops():
    env = os.environ.get("QFLEET_PEAK_GFLOPS")
    if env:
        return float(env), "QFLEET_PEAK_GFLOPS"
    exe = os.path.join(harness.REPO, "build", "bench", "peak_flops")
    if os.path.exists(exe):
        out = subprocess.run([exe], capture_output=True, text=True).stdout
        for tok in out.replace("=", " ").split():
            try:
                v = float(tok)
            except ValueError:
                continue
            if v > 1:  # the first number above 1 is its GFLOP/s figure
                return v, "build/bench/peak_flops"
    return None, "unknown (set QFLEET_PEAK_GFLOPS or build bench/peak_flops)"


def run_large(args, results):
    import numpy as np
    import torch
    import qfleet

    n, gates, batch = 10, 30, 100
    rng = np.random.default_rng(args.seed + 1)
    c = qfleet.Circuit(n)
    flops = 0.0
    for g in range(gates):
        kind = ["RY", "RZ", "CNOT"][g % 3]
        if kind == "CNOT":
            a, b = rng.choice(n, 2, replace=False)
            c.add("CNOT", [int(a), int(b)])  # swaps: no flops
            wires = [int(a), int(b)]
        else:
            q = int(rng.integers(n))
            c.add(kind, [q], [qfleet.input(g)])
            flops += 2 * 8 * 4 * 4 ** n / 2
            wires = [q]
        for q in wires:
            c.channel("Depolarizing", [q], [0.01])
            flops += 24 * 4 ** n / 4
    c.expval("Z0 Z9").probs([0, 1, 2])
    prog = c.compile(num_threads=args.threads)
    x = torch.tensor(rng.uniform(-3, 3, (batch, prog.n_inputs())), dtype=torch.float64)
    w = torch.zeros(0, dtype=torch.float64)
    # Check one sample against the 4-qubit-free path: a density matrix has trace 1.
    rho = prog.density_matrices(x[:1], w)[0]
    results.setdefault("checks", {})["large trace - 1"] = harness.check_close(
        "10-qubit density matrix: trace - 1", torch.trace(rho).real, 1.0, atol=1e-12)
    budget, reps = (1.0, 1) if args.quick else (5.0, 3)
    t = timed(lambda: qfleet.circuit_forward(prog, x, w), budget, reps)
    peak, src = peak_gflops()
    achieved = flops * batch / t["median_s"] / 1e9
    results["large"] = {"qubits": n, "gates": gates, "channels": sum(1 for op in c._doc["ops"] if "channel" in op),
                        "batch": batch, "forward": t, "gflop_per_call": flops * batch / 1e9,
                        "achieved_gflops": achieved, "peak_gflops": peak, "peak_source": src,
                        "fraction_of_peak": achieved / peak if peak else None}


def table_rows(results):
    """The harness's rows: each alternative beside qfleet's row of the same call."""
    from common import Timing

    def t(d):
        return Timing(d["median_s"], d["min_s"], d["max_s"], d["repeats"], 1, float("nan"))

    rows = []
    if "classifier" in results:
        c, err = results["classifier"]["timings"], results["checks"]
        fb, fwd = t(c["qfleet forward+gradient"]), t(c["qfleet forward"])
        w = f"noisy classifier n{N} B{B}"
        rows += [harness.row(f"{w} fwd+grad", "qfleet (adjoint)", fb, fb),
                 harness.row(f"{w} fwd+grad", "default.mixed (backprop)",
                             t(c["default.mixed backprop forward+gradient"]), fb,
                             error=max(v for k, v in err.items() if k.startswith("default.mixed"))),
                 harness.row(f"{w} fwd", "qfleet", fwd, fwd),
                 harness.row(f"{w} fwd", "Aer density_matrix", t(c["aer density_matrix forward"]), fwd,
                             error=err["aer outputs"])]
    if "large" in results:
        r = results["large"]
        rows.append(harness.row("noisy n10 30 gates B100 fwd", "qfleet", t(r["forward"]), t(r["forward"]),
                                note=f"{r['achieved_gflops']:.1f} GFLOP/s"))
    return rows


def main(argv=None):
    ap = harness.parser(__doc__.split("\n\n")[0], threads=2, seed=0,
                        quick_help="one repeat, about 1 s per figure: a smoke run")
    ap.add_argument("--part", choices=["classifier", "large", "all"], default="all")
    args = harness.validate(ap, ap.parse_args(argv))
    harness.threads_env(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    results = {"machine": {"cpu": platform.processor() or platform.machine(), "threads": args.threads,
                           "python": platform.python_version()}}
    if args.part in ("classifier", "all"):
        run_classifier(args, results)
    if args.part in ("large", "all"):
        run_large(args, results)
    print(json.dumps(results, indent=1))
    if "classifier" in results:
        r = results["classifier"]
        print(f"classifier B={B}: default.mixed / qfleet = {r['ratio default.mixed / qfleet (forward+gradient)']:.0f}x "
              f"(target >= 100x); Aer forward / qfleet forward+gradient = "
              f"{r['ratio aer forward / qfleet forward+gradient']:.1f}x (target > 1)")
    if "large" in results:
        r = results["large"]
        frac = r["fraction_of_peak"]
        print(f"10 qubits, 30 gates, B=100 forward: {r['forward']['median_s']:.3f} s, {r['achieved_gflops']:.1f} GFLOP/s"
              + (f" = {100 * frac:.1f}% of peak {r['peak_gflops']:.0f}" if frac else ""))
    harness.finish(args, "noisy.py", table_rows(results), results,
                   title="noisy circuits; ratio alternative / qfleet (> 1: qfleet faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
