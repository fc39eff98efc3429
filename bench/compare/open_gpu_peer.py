"""dynamiqs on JAX's GPU backend beside qfleet's cuda open-system backend, on one GPU in
one run: the open-system rows of bench/micro/bench_cuda.cpp, with dynamiqs' results checked
against qfleet's before anything is timed.

    python bench/compare/open_gpu_peer.py reference --qfleet build/tools/qfleet --out REF.npz [--seed 1000]
        where qfleet is built (no GPU needed): qfleet's exact solver, complex128, on the
        check batch, through `qfleet eval` with .npy arrays; REF.npz holds the check
        batch's amplitudes and qfleet's fidelities and gradients
    python bench/compare/open_gpu_peer.py run --reference REF.npz [--bench-json bench.json] [--quick] \
        [--seed 0] [--json out.json] [--md out.md]
        on the GPU machine (JAX with its CUDA plugin, dynamiqs): checks dynamiqs against
        REF.npz in complex128 and complex64, then times it on the rows' batches; with
        bench_cuda's JSON of the same run, prints qfleet's cuda and cpu medians and the
        ratios beside it

The workload is bench_cuda's `ladder(d)`: H0 = sum_k 0.1 k |k><k|, controls a + a^dag and
i(a^dag - a) (wire-format: the matrices below), one decay channel a at the shared rate
0.05, 60 piecewise-constant segments over T = 3, rho(0) = |0><0|, fidelity <1|rho(T)|1>.
One call is the forward pass and the gradient of sum_b F_b with respect to every task's
amplitudes [B, 60, 2] and the shared rate. dynamiqs runs `mesolve` with its `Expm`
method (the Liouvillian's exponential on each segment: the same exact propagation as
qfleet's "exact" solver), its tasks batched by dynamiqs itself (pwc amplitudes of shape
[B, 60]), the gradient by `jax.value_and_grad`, the whole call `jax.jit`-compiled.
Times are medians over repeats, each call ended by `jax.block_until_ready`; the first
call (compilation) is reported apart. The check (harness.check_close) stops the run with exit
status 1 before anything is timed; `run` takes the shared flags of harness.py (--threads sets
OMP_NUM_THREADS for the host side only).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import harness

N_SEG, T, RATE = 60, 3.0, 0.05
CHECK_BATCH = 256
# (d, B): bench_cuda's Open/d2/B100000 (the GPU target) and Open/d4/B10000 (OpenShape/d4)
ROWS = [(2, 100000), (4, 10000)]
# complex128 agrees to rounding; complex64 to single precision over 60 segments
TOLERANCE = {"complex128": 1e-9, "complex64": 2e-3}


def ladder(d: int):
    """bench_cuda's ladder(d): (H0, [X, Y], a, psi0, target), complex128 numpy arrays."""
    h0 = np.diag([0.1 * k for k in range(d)]).astype(complex)
    a = np.zeros((d, d), complex)
    x = np.zeros((d, d), complex)
    y = np.zeros((d, d), complex)
    for k in range(d - 1):
        s = np.sqrt(k + 1.0)
        a[k, k + 1] = s
        x[k, k + 1] = x[k + 1, k] = s
        y[k, k + 1] = -1j * s
        y[k + 1, k] = 1j * s
    psi0 = np.zeros(d, complex)
    psi0[0] = 1
    target = np.zeros(d, complex)
    target[1] = 1
    return h0, [x, y], a, psi0, target


def check_amplitudes(d: int, seed: int = 1000) -> np.ndarray:
    return np.random.default_rng(seed + d).uniform(-1, 1, (CHECK_BATCH, N_SEG, 2))


# ---- the reference: qfleet's CLI, exact solver, complex128 ------------------------------


def _wire(m: np.ndarray):
    return [[[float(v.real), float(v.imag)] for v in row] for row in m]


def qfleet_reference(qfleet: str, d: int, u: np.ndarray) -> dict:
    h0, (x, y), a, psi0, target = ladder(d)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "u.npy"), u)
        problem = {
            "kind": "lindblad", "dim": d, "H0": _wire(h0), "controls": [_wire(x), _wire(y)],
            "amplitudes": {"npy": os.path.join(tmp, "u.npy")}, "segment_duration": T / N_SEG,
            "jumps": [_wire(a)], "rates": [RATE],
            "psi0": [[float(v.real), float(v.imag)] for v in psi0],
            "target": {"state": [[float(v.real), float(v.imag)] for v in target]},
            "solver": "exact", "precision": "complex128", "gradients": True,
            "output_npy": "r",  # beside the problem file (a problem may not write elsewhere)
        }
        path = os.path.join(tmp, "p.json")
        with open(path, "w") as f:
            json.dump(problem, f)
        subprocess.run([qfleet, "eval", path], check=True, stdout=subprocess.DEVNULL)
        load = lambda k: np.load(os.path.join(tmp, f"r.{k}.npy"))  # noqa: E731
        return {"fidelity": load("fidelity"), "grad_amplitudes": load("grad_amplitudes"),
                "grad_rates": np.atleast_1d(load("grad_rates"))}


def make_reference(args) -> None:
    out = {}
    for d, _ in ROWS:
        u = check_amplitudes(d, args.seed)
        r = qfleet_reference(args.qfleet, d, u)
        out[f"d{d}_u"] = u
        for k, v in r.items():
            out[f"d{d}_{k}"] = v
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    np.savez_compressed(args.out, **out)
    print(f"open_gpu_peer: reference for d = {[d for d, _ in ROWS]}, {CHECK_BATCH} tasks each -> {args.out}")


# ---- dynamiqs ---------------------------------------------------------------------------


def dynamiqs_call(d: int, precision: str):
    """A jit-compiled call (u [B, 60, 2], rate []) -> ((sum F, F), (grad_u, grad_rate))."""
    import jax
    import jax.numpy as jnp
    import dynamiqs as dq

    dq.set_precision("double" if precision == "complex128" else "single")
    cdt = jnp.complex128 if precision == "complex128" else jnp.complex64
    h0, (x, y), a, psi0, target = ladder(d)
    H0, X, Y, A = (jnp.asarray(m, dtype=cdt) for m in (h0, x, y, a))
    rho0 = jnp.asarray(np.outer(psi0, psi0.conj()), dtype=cdt)
    tgt = jnp.asarray(target, dtype=cdt)
    times = jnp.linspace(0.0, T, N_SEG + 1, dtype=jnp.float64 if precision == "complex128" else jnp.float32)

    def loss(u, rate):
        H = H0 + dq.pwc(times, u[..., 0], X) + dq.pwc(times, u[..., 1], Y)
        res = dq.mesolve(H, [jnp.sqrt(rate) * A], rho0, jnp.stack([times[0], times[-1]]),
                         method=dq.method.Expm(), save_states=False)
        rho = res.final_state
        if rho.shape[-1] == 1:  # dynamiqs 0.3.7's Expm hands back vec(rho) without saved states
            rho = dq.unvectorize(rho)
        rho = rho.to_jax()
        F = jnp.real(jnp.einsum("i,bij,j->b", tgt.conj(), rho, tgt))
        return jnp.sum(F), F

    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))


def run_call(f, u, rate):
    import jax

    out = f(u, rate)
    jax.block_until_ready(out)
    return out


def check(d: int, precision: str, ref: np.lib.npyio.NpzFile) -> float:
    import jax.numpy as jnp

    real = jnp.float64 if precision == "complex128" else jnp.float32
    f = dynamiqs_call(d, precision)
    (_, F), (gu, gr) = run_call(f, jnp.asarray(ref[f"d{d}_u"], dtype=real), jnp.asarray(RATE, dtype=real))
    want = {k: ref[f"d{d}_{k}"] for k in ("fidelity", "grad_amplitudes", "grad_rates")}
    # the largest difference over outputs and gradients, each relative to max(1, |ref|max)
    return harness.check_close(f"d{d} {precision}: dynamiqs against qfleet", {"fidelity": F, "grad_amplitudes": gu,
                               "grad_rates": np.atleast_1d(gr)}, want, rtol=TOLERANCE[precision], floor=1.0,
                               prog="open_gpu_peer", quiet=True)


def time_rows(d: int, B: int, precision: str, budget: float, seed: int):
    """(first call incl. compilation s, Timing, tasks per call) of dynamiqs on B random
    tasks. Where one call on all B runs out of GPU memory (XLA keeps what the reverse pass
    needs: 92 GiB for d = 4, B = 10^4 on an H200), the B tasks go through in equal chunks,
    halved until they fit, one call after another: what a user of dynamiqs would do."""
    import jax
    import jax.numpy as jnp

    real = jnp.float64 if precision == "complex128" else jnp.float32
    f = dynamiqs_call(d, precision)
    u = jnp.asarray(np.random.default_rng(seed + d).uniform(-1, 1, (B, N_SEG, 2)), dtype=real)
    rate = jnp.asarray(RATE, dtype=real)
    chunk = B
    while True:
        def call():
            for i in range(0, B, chunk):
                run_call(f, u[i:i + chunk], rate)

        try:
            t0 = time.perf_counter()
            call()
            first = time.perf_counter() - t0
            break
        except jax.errors.JaxRuntimeError as e:
            if "RESOURCE_EXHAUSTED" not in str(e) or chunk % 2 != 0:
                raise
            chunk //= 2
    timing = harness.timed(call, repeats=1 if first > budget else 3, budget_s=budget, max_repeats=21, warmup=0)
    return first, timing, chunk


def bench_medians(path: str | None) -> dict:
    """bench_cuda's JSON -> {row name: median ms} (manual time for cuda rows, real time for cpu)."""
    if not path or not os.path.exists(path):
        return {}
    rows = {}
    for b in json.load(open(path)).get("benchmarks", []):
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        for suffix in ("/manual_time", "/real_time"):
            name = name.removesuffix(suffix)
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        rows[name] = b["real_time"] * scale
    return rows


def run(args) -> None:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    import dynamiqs as dq

    dq.set_progress_meter(False)
    ref = np.load(args.reference)
    dev = jax.devices()[0]
    print(f"# dynamiqs {dq.__version__} on JAX {jax.__version__}, {dev.platform}: {dev.device_kind}")
    if args.require_gpu and dev.platform != "gpu":
        raise SystemExit("open_gpu_peer: JAX sees no GPU (--require-gpu)")
    errors = {}
    for d, _ in ROWS:
        for precision in ("complex128", "complex64"):
            err = check(d, precision, ref)
            errors[d] = err if precision == "complex64" else errors.get(d, err)  # the timed rows are complex64
            print(f"check d{d} {precision}: {CHECK_BATCH} tasks, dynamiqs vs qfleet (exact, complex128): {err:.1e}")
    qf = bench_medians(args.bench_json)
    print(f"\n| row (fwd+grad, complex64) | dynamiqs Expm, JAX {dev.platform} (first call; tasks per call) "
          "| qfleet cuda | qfleet cpu, all cores | dynamiqs / qfleet cuda | qfleet cpu / qfleet cuda |")
    print("|---|---|---|---|---|---|")
    table = []
    for d, B in ROWS:
        B = B // 100 if args.quick else B
        first, timing, chunk = time_rows(d, B, "complex64", args.budget, args.seed)
        med = timing.median * 1e3
        row = f"Open/d{d}/B{B}/fwd+grad/c64"
        cuda, cpu = qf.get(row), qf.get(row + "/cpu")
        ratio = lambda a, b: f"{a / b:.1f}x" if a and b else "-"  # noqa: E731
        fmt = lambda v: f"{v:.2f} ms" if v else "not in the JSON"  # noqa: E731
        print(f"| {row} | {med:.2f} ms ({first:.1f} s; {chunk}) | {fmt(cuda)} | {fmt(cpu)} | {ratio(med, cuda)} "
              f"| {ratio(cpu, cuda)} |", flush=True)
        # qfleet's figures are the medians of bench_cuda's JSON (no spread there)
        q = (lambda ms: harness.Timing(ms / 1e3, ms / 1e3, ms / 1e3, 1, 1, float("nan")) if ms else None)
        table += [harness.row(row, "qfleet cuda", q(cuda), q(cuda)),
                  harness.row(row, "qfleet cpu, all cores", q(cpu), q(cuda)),
                  harness.row(row, f"dynamiqs Expm, JAX {dev.platform}", timing, q(cuda), error=errors[d],
                              note=f"first call {first:.1f} s; {chunk} tasks per call")]
    harness.finish(args, "open_gpu_peer.py", table, {"checks": {f"d{d}": errors[d] for d in errors}},
                   title="ratio dynamiqs / qfleet cuda")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference", help="qfleet's results on the check batch (no GPU needed)")
    r.add_argument("--qfleet", required=True, help="the qfleet CLI")
    r.add_argument("--out", required=True)
    r.add_argument("--seed", type=int, default=1000, help="the check batch's amplitudes (default 1000)")
    t = sub.add_parser("run", help="check dynamiqs against the reference, then time it")
    t.add_argument("--reference", required=True)
    t.add_argument("--bench-json", help="bench_cuda's JSON of the same run (for the ratios)")
    t.add_argument("--budget", type=float, default=5.0, help="seconds of timed calls per row")
    harness.add_common_flags(t, threads=None, seed=0, quick_help="batches 100 times smaller (a smoke run)")
    t.add_argument("--require-gpu", action="store_true", help="fail where JAX sees no GPU")
    args = ap.parse_args()
    if args.cmd == "run":
        harness.threads_env(harness.validate(t, args).threads)
    make_reference(args) if args.cmd == "reference" else run(args)


if __name__ == "__main__":
    sys.exit(main())
