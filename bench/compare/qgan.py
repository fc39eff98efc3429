"""One training epoch of a quantum GAN whose generator is a circuit from qfleet, PennyLane or
Qiskit Machine Learning, on the same circuit, weights, discriminator and target, in one run.

    PYTHONPATH=python \\
        python bench/compare/qgan.py [--qubits 12] [--reps 2] [--repeats 5] [--threads 2] [--seed 0] \\
        [--json out.json] [--md out.md] [--quick] [--device cuda]

(or with the pip-installed package). OMP_NUM_THREADS defaults to --threads and OMP_WAIT_POLICY
to passive (harness.threads_env). Needs torch; PennyLane and qiskit +
qiskit-machine-learning are optional: a missing one skips its rows, with the reason.

Generator on n qubits (wire 0 = most significant bit of an outcome): Hadamard on every wire;
for r < reps: RY(w[r n + i]) on wire i for every i, then CNOT(i, i + 1) for i < n - 1; a final
RY(w[reps n + i]) on every wire; exact probabilities of all 2^n outcomes. (reps + 1) n weights.

Epoch (identical for every generator, float64 throughout): the 2^n outcomes are the cells of a
2^(n//2) x 2^(n - n//2) grid (row = the first n//2 bits, column = the rest), the discriminator
D an MLP 2 -> 64 -> 32 -> 1 (LeakyReLU 0.2) on the cell's two coordinates scaled to [-1, 1],
the target p a normalised 2-D Gaussian on the grid. pg = generator(w) once (with autograd);
5 discriminator steps on loss_D = -sum_x [p logsigmoid(D) + pg.detach() logsigmoid(-D)]; then
the generator step: loss_G = -sum_x pg logsigmoid(D).detach() with that same pg (w has not
changed since it was computed, so it is the G step's forward), backward through the generator,
Adam step on w. Both optimisers Adam(lr 1e-2, betas (0.5, 0.999)).

Generators:
  qfleet                     qfleet.QuantumLayer (complex128; adjoint backward), inputs [1, 0]
  default.qubit backprop     PennyLane qnode, torch interface, qml.probs, diff_method="backprop"
  default.qubit adjoint      the same with diff_method="adjoint" (a row saying why, if it fails)
  qiskit-ml SamplerQNN       qiskit_machine_learning SamplerQNN over the same QuantumCircuit (the
                             weights its parameters, no inputs) in a TorchConnector, with its
                             defaults: QMLSampler(shots=None), which computes the probabilities
                             from the statevector (no sampling), and ParamShiftSamplerGradient
                             (2 shifted circuits per weight per backward)
  classical floor            softmax of 2^n free logits instead of a circuit: the epoch's cost
                             without any generator circuit (the discriminator's share)

Qiskit orders bits little-endian, so wire i is Qiskit's qubit n - 1 - i: then Qiskit's outcome
index is PennyLane's and qfleet's, and no output is permuted.

Before anything is timed, every generator is checked against qfleet on the same weights (drawn
uniform in [0, 2 pi), rounded to float32 so that Qiskit's float32 connector holds them exactly):
probabilities (max absolute difference <= 1e-10) and the gradient of loss_G for the initial
discriminator (max difference relative to the largest entry <= 1e-8). TorchConnector converts
everything to float32 (torch.float, hard-coded in qiskit_machine_learning/connectors/
torch_connector.py), so the SamplerQNN is checked twice: its own float64 forward/backward to
the tolerances above, and through the connector to float32 rounding: outputs to 1e-6 of the
largest, the gradient to (2^n + 2) 2^-24 (float32's worst-case bound for a sum of 2^n terms) of
max_j sum_x |dloss_G/dpg(x) dpg(x)/dw_j|: its terms cancel heavily (sum_x dpg/dw = 0 and
logsigmoid(D) varies little over x), so float32 errors are not small relative to the gradient.
QMLSampler's exact mode hands SamplerQNN integer counts over 2^k "shots" (ExactProbArray.
get_counts: k about 40, each probability rounded to ~1e-12, the rounding's sum put on the likeliest
outcome), so its probabilities agree to ~1e-11 at n = 12, inside 1e-10; that conversion, a Python
loop over the outcomes of each of the 2 x n_weights shifted circuits, is most of its backward's
time. A disagreement stops the script with exit status 1.

Timing: per generator a fresh copy of the same initial discriminator and weights and new
optimisers; one warm-up epoch, then the median (min, max) over --repeats epochs; a generator
whose warm-up epoch takes longer than 5 s is timed over --slow-repeats epochs (default 2), as
its row says. The table gives each epoch's median and its ratio to qfleet's, and "generator" =
epoch - classical floor (the generator's forward, backward and Adam step; a difference of
medians, so an estimate) with its ratio. --quick: n = 4, one repeat, a smoke test.

--device cuda: everything on one GPU (the weights, discriminator, grid and target; qfleet's layer
compiled for its CUDA backend, default.qubit's backprop on CUDA tensors; Qiskit, whose connector
is CPU-only, skipped with the reason); each timed sample waits for the GPU's queue
(torch.cuda.synchronize) before its clock stops.
"""
import copy
import math
import os
import sys
import time

import harness

D_STEPS = 5
LR, BETAS = 1e-2, (0.5, 0.999)
LEAKY_SLOPE = 0.2
GAUSS_MEAN, GAUSS_SIGMA = (0.25, -0.3), 0.35  # the target, in the scaled [-1, 1] coordinates
PROBS_TOL = 1e-10  # max |difference| of probabilities (float64 on both sides)
GRAD_RTOL = 1e-8  # max |difference| of loss_G's gradient / its largest entry
# TorchConnector returns float32 outputs (rounded to 2^-24 relative, within 1e-6 of the largest)
# and a float32 gradient: the Jacobian and the cotangent rounded, then a float32 sum over the 2^n
# outcomes, whose error is at most (2^n + 2) 2^-24 sum_x |term_x| (Higham's bound for recursive
# summation; see float32_gradient_tol and check_qnn_float64).
FLOAT32_RTOL = 1e-6
FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24
SLOW_EPOCH_S = 5.0
QFLEET = "qfleet"
QISKIT = "qiskit-ml SamplerQNN"
FLOOR = "classical floor"


def parse_args():
    ap = harness.parser(__doc__.split("\n\n")[0], threads=2, seed=0, quick_help="n = 4, one repeat: a smoke test")
    ap.add_argument("--qubits", type=int, default=None, help="generator qubits (default 12; --quick: 4)")
    ap.add_argument("--reps", type=int, default=2, help="RY + CNOT-chain layers before the final RY layer")
    ap.add_argument("--repeats", type=int, default=None, help="timed epochs per generator (default 5; --quick: 1)")
    ap.add_argument("--slow-repeats", type=int, default=2,
                    help=f"timed epochs for a generator whose warm-up epoch took > {SLOW_EPOCH_S:g} s")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: the GAN and the qfleet and default.qubit generators on one GPU")
    args = harness.validate(ap, ap.parse_args())
    if args.qubits is None:
        args.qubits = 4 if args.quick else 12
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.quick:
        args.slow_repeats = min(args.slow_repeats, args.repeats)
    if args.qubits < 2 or args.reps < 0:
        ap.error("--qubits must be >= 2 (the grid has two axes) and --reps >= 0")
    if args.threads < 1 or args.repeats < 1 or args.slow_repeats < 1:
        ap.error("--threads, --repeats and --slow-repeats must be positive")
    return args


ARGS = parse_args()
# Both set before the imports: OpenMP runtimes (qfleet's via torch, numpy's BLAS under Qiskit)
# read them once, when they load. Passive waiting: see harness.threads_env.
harness.threads_env(ARGS.threads, passive=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    import qfleet  # noqa: E402
except ImportError as e:
    sys.exit(f"qgan: needs qfleet ({e}); set PYTHONPATH=python (the "
             "libraries of ./build are found from there), or pip install .")


def fail(message):
    harness.fail("qgan", message)


DEV = torch.device(ARGS.device)


def sync():
    """Waits for the GPU's queue (--device cuda), so that a timed sample includes its work."""
    if DEV.type == "cuda":
        torch.cuda.synchronize()


class Skip(Exception):
    """A generator that cannot run here (package missing, method refused): its row says why."""


# ---- the generator circuit, three ways ---------------------------------------------------------

def n_weights(n, reps):
    return (reps + 1) * n


def qfleet_generator(n, reps, w0, threads):
    c = qfleet.Circuit(n)
    for i in range(n):
        c.add("Hadamard", [i])
    for r in range(reps):
        for i in range(n):
            c.add("RY", [i], [qfleet.weight(r * n + i)])
        for i in range(n - 1):
            c.add("CNOT", [i, i + 1])
    for i in range(n):
        c.add("RY", [i], [qfleet.weight(reps * n + i)])
    c.probs(list(range(n)))
    layer = qfleet.QuantumLayer(c, precision="complex128", num_threads=threads, device=ARGS.device).to(DEV)
    if layer.program.n_weights() != w0.numel() or layer.n_outputs != 2 ** n:
        fail(f"qfleet's circuit has {layer.program.n_weights()} weights and {layer.n_outputs} outputs, "
             f"expected {w0.numel()} and {2 ** n}")
    with torch.no_grad():
        layer.weight.copy_(w0)
    no_inputs = torch.zeros(1, 0, dtype=torch.float64, device=DEV)
    return layer, layer.weight, lambda: layer(no_inputs)[0]


class PennyLaneGenerator(torch.nn.Module):
    def __init__(self, qnode, w0):
        super().__init__()
        self.qnode = qnode
        self.weight = torch.nn.Parameter(w0.clone())

    def forward(self):
        return self.qnode(self.weight)


def pennylane_generator(n, reps, w0, diff_method):
    try:
        import pennylane as qml
    except ImportError as e:
        raise Skip(f"PennyLane not installed ({e})") from e
    dev = qml.device("default.qubit", wires=n)

    @qml.qnode(dev, interface="torch", diff_method=diff_method)
    def circuit(w):
        for i in range(n):
            qml.Hadamard(wires=i)
        for r in range(reps):
            for i in range(n):
                qml.RY(w[r * n + i], wires=i)
            for i in range(n - 1):
                qml.CNOT(wires=[i, i + 1])
        for i in range(n):
            qml.RY(w[reps * n + i], wires=i)
        return qml.probs(wires=range(n))

    module = PennyLaneGenerator(circuit, w0)
    return module, module.weight, module


def qiskit_circuit(n, reps):
    from qiskit import QuantumCircuit
    from qiskit.circuit import ParameterVector

    w = ParameterVector("w", n_weights(n, reps))
    qc = QuantumCircuit(n)

    def q(i):  # wire i (most significant first) is Qiskit's qubit n - 1 - i (little-endian)
        return n - 1 - i

    for i in range(n):
        qc.h(q(i))
    for r in range(reps):
        for i in range(n):
            qc.ry(w[r * n + i], q(i))
        for i in range(n - 1):
            qc.cx(q(i), q(i + 1))
    for i in range(n):
        qc.ry(w[reps * n + i], q(i))
    return qc, list(w)


def qiskit_qnn(n, reps):
    if DEV.type == "cuda":
        raise Skip("Qiskit's TorchConnector runs on the CPU only (--device cuda)")
    try:
        from qiskit_machine_learning.neural_networks import SamplerQNN
    except ImportError as e:
        raise Skip(f"qiskit / qiskit-machine-learning not installed ({e})") from e
    qc, params = qiskit_circuit(n, reps)
    # The defaults (sampler=None, gradient=None): QMLSampler() and ParamShiftSamplerGradient.
    qnn = SamplerQNN(circuit=qc, weight_params=params)
    if not getattr(qnn.sampler, "_exact_mode", False):
        raise Skip(f"SamplerQNN's default sampler {type(qnn.sampler).__name__} is not in exact mode")
    return qnn


def qiskit_generator(qnn, w0):
    from qiskit_machine_learning.connectors import TorchConnector

    module = TorchConnector(qnn, initial_weights=w0.numpy())  # float32 parameter (torch.float)
    no_inputs = torch.zeros(1, 0)
    return module, module.weight, lambda: module(no_inputs)[0].double()


def floor_generator(n):
    logits = torch.nn.Parameter(torch.zeros(2 ** n, dtype=torch.float64, device=DEV))
    return None, logits, lambda: torch.softmax(logits, 0)


def describe(obj):
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


# ---- the GAN around it ---------------------------------------------------------------------------

def grid(n):
    """Scaled coordinates [2^n, 2] of the outcomes (row = first n//2 bits) and the target [2^n]."""
    rows, cols = 2 ** (n // 2), 2 ** (n - n // 2)
    index = torch.arange(2 ** n)
    r = (index // cols).double() / (rows - 1) * 2 - 1
    c = (index % cols).double() / (cols - 1) * 2 - 1
    coords = torch.stack([r, c], 1)
    p = torch.exp(-((r - GAUSS_MEAN[0]) ** 2 + (c - GAUSS_MEAN[1]) ** 2) / (2 * GAUSS_SIGMA ** 2))
    return coords.to(DEV), (p / p.sum()).to(DEV)


def discriminator():
    return torch.nn.Sequential(
        torch.nn.Linear(2, 64), torch.nn.LeakyReLU(LEAKY_SLOPE),
        torch.nn.Linear(64, 32), torch.nn.LeakyReLU(LEAKY_SLOPE),
        torch.nn.Linear(32, 1)).double().to(DEV)


def loss_g(pg, disc, coords):
    with torch.no_grad():
        reward = F.logsigmoid(disc(coords).squeeze(-1))
    return -(pg * reward).sum()


def epoch(generate, disc, opt_d, opt_g, coords, target):
    pg = generate()
    pg_fixed = pg.detach().double()
    for _ in range(D_STEPS):
        opt_d.zero_grad(set_to_none=True)
        logits = disc(coords).squeeze(-1)
        loss_d = -(target * F.logsigmoid(logits) + pg_fixed * F.logsigmoid(-logits)).sum()
        loss_d.backward()
        opt_d.step()
    opt_g.zero_grad(set_to_none=True)
    loss_g(pg, disc, coords).backward()
    opt_g.step()


# ---- agreement, before any timing ----------------------------------------------------------------

def probs_and_gradient(generate, weight, disc, coords):
    pg = generate()
    (grad,) = torch.autograd.grad(loss_g(pg, disc, coords), weight)
    return pg.detach().double().cpu(), grad.double().cpu()


def float32_gradient_tol(n):
    """Bound on |float32 gradient - exact| / max_j sum_x |term_xj| for 2^n outcomes."""
    return (2 ** n + 2) * FLOAT32_UNIT_ROUNDOFF


def check(name, probs, grad, ref, probs_tol, grad_rtol, relative_probs=False, grad_scale=None):
    """Differences to qfleet's (probs, grad); fails the run beyond the tolerances. The gradient's
    difference is relative to its largest entry, or to grad_scale where given."""
    p_what = "relative" if relative_probs else "absolute"
    g_what = "relative" if grad_scale is None else "of sum|terms|"
    tol = {"rtol": probs_tol} if relative_probs else {"atol": probs_tol}
    dp = harness.check_close(f"{name}: probabilities", probs, ref[0], prog="qgan", quiet=True, **tol)
    if grad_scale is None:
        dg = harness.check_close(f"{name}: gradient of loss_G", grad, ref[1], rtol=grad_rtol, prog="qgan", quiet=True)
    else:  # the float32 connector: judged against the scale of the terms it sums
        dg = harness.check_close(f"{name}: gradient of loss_G / sum|terms|", grad / grad_scale, ref[1] / grad_scale,
                                 atol=grad_rtol, prog="qgan", quiet=True)
    print(f"agree with qfleet: {name:48s} probabilities {dp:.1e} {p_what}, gradient {dg:.1e} {g_what}",
          flush=True)
    return {"probs": dp, "probs_measure": p_what, "gradient": dg, "gradient_measure": g_what}


def check_qnn_float64(qnn, w0, disc, coords, ref):
    """The SamplerQNN's own float64 forward and backward (numpy), before TorchConnector's float32.
    Also returns max_j sum_x |dloss_G/dpg(x) dpg(x)/dw_j|, the scale of the terms the float32
    connector sums: loss_G's gradient is a sum of terms that mostly cancel (sum_x dpg/dw = 0 and
    logsigmoid(D) varies little over x), so float32 rounding is judged against that scale."""
    w = w0.numpy()
    probs = torch.from_numpy(np.asarray(qnn.forward(None, w))[0])
    _, jac = qnn.backward(None, w)  # [1, 2^n, n_weights]
    jac = torch.from_numpy(np.asarray(jac)[0])
    with torch.no_grad():
        reward = F.logsigmoid(disc(coords).squeeze(-1))
    grad = -(reward @ jac)
    figures = check("qiskit-ml SamplerQNN float64 (no connector)", probs, grad, ref, PROBS_TOL, GRAD_RTOL)
    return figures, (reward.abs() @ jac.abs()).max().item()


# ---- timing ----------------------------------------------------------------------------------------

def time_generator(generate, weight, disc0, coords, target, repeats, slow_repeats):
    disc = copy.deepcopy(disc0)
    opt_d = torch.optim.Adam(disc.parameters(), lr=LR, betas=BETAS)
    opt_g = torch.optim.Adam([weight], lr=LR, betas=BETAS)
    t0 = time.perf_counter()
    epoch(generate, disc, opt_d, opt_g, coords, target)  # warm-up
    sync()
    warm = time.perf_counter() - t0
    slow = warm > SLOW_EPOCH_S
    count = min(repeats, slow_repeats) if slow else repeats
    t = harness.timed(lambda: epoch(generate, disc, opt_d, opt_g, coords, target), repeats=count, warmup=0,
                      sync=sync)
    return {"median_ms": t.median * 1e3, "min_ms": t.min * 1e3, "max_ms": t.max * 1e3,
            "repeats": count, "warmup_ms": warm * 1e3, "slow": slow}


def time_generator_step(generate, weight, reward, repeats, slow_repeats):
    """The generator's part alone, timed directly: forward, loss_G against a fixed reward
    (log D of the shared discriminator) and backward - what the tools differ in."""
    def step():
        if weight.grad is not None:
            weight.grad = None
        (-(generate().double() * reward).sum()).backward()
    t0 = time.perf_counter()
    step()  # warm-up
    sync()
    warm = time.perf_counter() - t0
    count = min(repeats, slow_repeats) if warm > SLOW_EPOCH_S else max(repeats, 20)
    t = harness.timed(step, repeats=count, warmup=0, sync=sync)
    return {"median_ms": t.median * 1e3, "min_ms": t.min * 1e3, "max_ms": t.max * 1e3, "repeats": count}


# ---- report -----------------------------------------------------------------------------------------

def main():
    if DEV.type == "cuda" and (not torch.cuda.is_available() or qfleet.cuda_device_count() == 0):
        fail("--device cuda: no CUDA device is visible to torch and qfleet")
    torch.set_num_threads(ARGS.threads)
    n, reps = ARGS.qubits, ARGS.reps
    nw = n_weights(n, reps)
    v = harness.versions("pennylane", "qiskit", "qiskit-machine-learning")
    print(f"torch {v['torch']}, pennylane {v['pennylane']}, qiskit {v['qiskit']}, "
          f"qiskit-machine-learning {v['qiskit-machine-learning']}, qfleet {v['qfleet']}; "
          f"threads {ARGS.threads} (OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}); {harness.cpu_model()}, "
          f"{os.cpu_count()} CPUs")
    print(f"generator: {n} qubits, reps {reps}, {nw} weights, {2 ** n} probabilities; "
          f"epoch = {D_STEPS} discriminator steps + 1 generator step", flush=True)

    # Shared weights, float32-representable: Qiskit's TorchConnector holds its weights in float32.
    w0 = (torch.rand(nw, generator=torch.Generator().manual_seed(ARGS.seed + 1), dtype=torch.float64)
          * (2 * math.pi))
    w0 = w0.float().double().to(DEV)
    torch.manual_seed(ARGS.seed)
    disc0 = discriminator()
    coords, target = grid(n)

    generators, skipped, checks = {}, {}, {}
    generators[QFLEET] = qfleet_generator(n, reps, w0, ARGS.threads)
    ref = probs_and_gradient(generators[QFLEET][2], generators[QFLEET][1], disc0, coords)
    if not abs(ref[0].sum().item() - 1) <= 1e-12:
        fail(f"qfleet's probabilities sum to {ref[0].sum().item():.15f}")

    for diff_method in ("backprop", "adjoint"):
        name = f"default.qubit {diff_method}"
        try:
            gen = pennylane_generator(n, reps, w0, diff_method)
            out = probs_and_gradient(gen[2], gen[1], disc0, coords)
        except Skip as e:
            skipped[name] = str(e)
            continue
        except Exception as e:  # noqa: BLE001 - PennyLane refuses a method with various types
            skipped[name] = f"PennyLane refused diff_method={diff_method!r} for qml.probs: {type(e).__name__}: {e}"
            continue
        checks[name] = check(name, *out, ref, PROBS_TOL, GRAD_RTOL)
        generators[name] = gen

    qiskit_info = None
    try:
        qnn = qiskit_qnn(n, reps)
    except Skip as e:
        skipped[QISKIT] = str(e)
    else:
        qiskit_info = {"sampler": describe(qnn.sampler), "sampler_exact_mode": True,
                       "gradient": describe(qnn.gradient), "connector": "TorchConnector (float32)"}
        print(f"qiskit: sampler {qiskit_info['sampler']} (shots=None: exact), gradient {qiskit_info['gradient']}",
              flush=True)
        checks[f"{QISKIT} float64"], terms_scale = check_qnn_float64(qnn, w0, disc0, coords, ref)
        gen = qiskit_generator(qnn, w0)
        if not torch.equal(gen[1].detach().double(), w0):
            fail("TorchConnector's float32 weights are not the shared weights")
        out = probs_and_gradient(gen[2], gen[1], disc0, coords)
        checks[f"{QISKIT} TorchConnector"] = check(f"{QISKIT} in TorchConnector (float32)", *out, ref,
                                                   FLOAT32_RTOL, float32_gradient_tol(n), relative_probs=True,
                                                   grad_scale=terms_scale)
        generators[QISKIT] = gen
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    generators[FLOOR] = floor_generator(n)

    results = {}
    for name, (_, weight, generate) in generators.items():
        if name != FLOOR:
            with torch.no_grad():  # every generator starts its timed run from the shared weights
                weight.copy_(w0.to(weight.dtype))
        print(f"timing {name} ...", flush=True)
        results[name] = time_generator(generate, weight, disc0, coords, target, ARGS.repeats, ARGS.slow_repeats)

    with torch.no_grad():
        reward = F.logsigmoid(disc0(coords).squeeze(-1)).double()
    steps = {}
    for name, (_, weight, generate) in generators.items():
        if name != FLOOR:
            print(f"timing {name}'s generator step ...", flush=True)
            steps[name] = time_generator_step(generate, weight, reward, ARGS.repeats, ARGS.slow_repeats)

    base = results[QFLEET]["median_ms"]
    floor = results[FLOOR]["median_ms"]
    gen_base = base - floor
    rows = []
    for name, r in results.items():
        row = {"tool": name, **r, "ratio_to_qfleet": r["median_ms"] / base}
        if name != FLOOR:  # epoch minus the floor: the generator's forward, backward and Adam step
            row["generator_ms"] = r["median_ms"] - floor
            row["generator_ratio_to_qfleet"] = row["generator_ms"] / gen_base if gen_base > 0 else None
        rows.append(row)
    rows += [{"tool": name, "skipped": reason} for name, reason in skipped.items()]

    print(f"\nqGAN epoch ({D_STEPS} D steps + 1 G step), {n} qubits, reps {reps} ({nw} weights), "
          f"{ARGS.threads} threads (median over repeats; min-max in brackets; generator = epoch - classical floor):")
    print(f"{'tool':24s} {'epoch ms':>11s} {'(min-max)':>19s} {'repeats':>7s} {'/ qfleet':>9s} "
          f"{'generator ms':>12s} {'/ qfleet':>9s}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['tool']:24s} skipped: {r['skipped']}")
            continue
        spread = f"({r['min_ms']:.2f}-{r['max_ms']:.2f})"
        gen = f"{r['generator_ms']:12.2f}" if "generator_ms" in r else f"{'':12s}"
        gen_ratio = r.get("generator_ratio_to_qfleet")
        gen += f" {gen_ratio:8.1f}x" if gen_ratio is not None else f" {'':9s}"
        note = f"  (warm-up {r['warmup_ms'] / 1e3:.1f} s > {SLOW_EPOCH_S:g} s: --slow-repeats)" if r["slow"] else ""
        print(f"{r['tool']:24s} {r['median_ms']:11.2f} {spread:>19s} {r['repeats']:7d} "
              f"{r['ratio_to_qfleet']:8.1f}x {gen}{note}".rstrip())
    print(f"\ngenerator step alone (forward + loss_G against a fixed log D + backward), timed directly:")
    print(f"{'tool':24s} {'step ms':>11s} {'(min-max)':>19s} {'repeats':>7s} {'/ qfleet':>9s}")
    step_base = steps[QFLEET]["median_ms"]
    for name, r in steps.items():
        r["ratio_to_qfleet"] = r["median_ms"] / step_base
        spread = f"({r['min_ms']:.3f}-{r['max_ms']:.3f})"
        print(f"{name:24s} {r['median_ms']:11.3f} {spread:>19s} {r['repeats']:7d} {r['ratio_to_qfleet']:8.1f}x")
    if qiskit_info:
        print(f"qiskit-ml: {qiskit_info['sampler']} (exact, shots=None) + {qiskit_info['gradient']}, "
              "through TorchConnector (float32 outputs and weights)")

    write_outputs(rows, steps, qiskit_info, checks, v, n, reps, nw)


def write_outputs(rows, steps, qiskit_info, checks, v, n, reps, nw):
    """The JSON document (as before) and the harness's table: epochs and generator steps, ratio
    tool / qfleet."""
    def t(r):
        return harness.Timing(r["median_ms"] / 1e3, r["min_ms"] / 1e3, r["max_ms"] / 1e3, r["repeats"], 1,
                              float("nan"))

    def error(tool):  # the gradient check of the generator as timed (Qiskit's: inside TorchConnector)
        return (checks.get(tool) or checks.get(f"{tool} TorchConnector") or {}).get("gradient")

    base = next(r for r in rows if r["tool"] == QFLEET)
    table = [harness.row(f"qGAN epoch n{n} reps {reps}", r["tool"], t(r) if "median_ms" in r else None, t(base),
                         error=error(r["tool"]), note=r.get("skipped", "")) for r in rows]
    table += [harness.row(f"generator step n{n} reps {reps}", name, t(r), t(steps[QFLEET]), error=error(name))
              for name, r in steps.items()]
    doc = {"benchmark": "bench/compare/qgan.py", "machine": harness.run_machine(ARGS.threads), "versions": v,
           "qubits": n, "reps": reps, "weights": nw, "d_steps": D_STEPS, "lr": LR, "betas": list(BETAS),
           "target": {"kind": "2-D Gaussian on the grid", "mean": list(GAUSS_MEAN), "sigma": GAUSS_SIGMA},
           "quick": ARGS.quick, "device": ARGS.device,
           "gpu": torch.cuda.get_device_name(0) if DEV.type == "cuda" else None,
           "repeats": ARGS.repeats, "slow_repeats": ARGS.slow_repeats,
           "slow_epoch_s": SLOW_EPOCH_S, "qiskit": qiskit_info,
           "tolerances": {"probs_abs": PROBS_TOL, "gradient_rel": GRAD_RTOL,
                          "connector_probs_rel": FLOAT32_RTOL,
                          "connector_gradient_of_sum_abs_terms": float32_gradient_tol(n)},
           "agreement": checks, "rows": rows, "generator_step": steps}
    harness.finish(ARGS, "qgan.py", table, doc, title="ratio tool / qfleet (> 1: qfleet faster)")


if __name__ == "__main__":
    main()
