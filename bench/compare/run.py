#!/usr/bin/env python3
"""Same-run comparison of qfleet against alternative tools.

    bench/compare/run.sh [--quick]          # setup.sh (venv) + this script
    bench/compare/.venv/bin/python bench/compare/run.py [--quick] [--threads N]

Workloads (README.md in this folder has the details):
  1. hybrid-classifier quantum layer (4 qubits, 3 StronglyEntanglingLayers, B = 64),
     sweeps over n and B;
  2. meta-learning open-system workload (qubit, 32 tasks, 60 segments, target X),
     sweeps over d (ladders) and B;
  3. the two-qubit CZ variant (d = 4, 30 segments, 6 controls, 4 jumps).

Writes bench/results/<machine>-<date>[-quick].{json,md} and one PNG per sweep.
Exit status: 0 when every self-check and every exact/adaptive alternative is
within its tolerance (fixed-step integrators report their error, they do not
fail), 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

TOL_EXACT = 1e-10  # exact methods (state vectors, propagator products, Expm)
TOL_ADAPTIVE = 1e-6  # adaptive ODE solvers with tight tolerances (QuTiP, dynamiqs Tsit5)
# fixed-step integrators (RK4, Euler): error reported, not asserted
def _mem_available() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 16 * 2**30

# Cells whose estimated autograd memory exceeds these are skipped (sweeps / main rows).
MEM_LIMIT_BYTES = min(4 * 2**30, 0.5 * _mem_available())
MEM_LIMIT_MAIN_BYTES = min(10 * 2**30, 0.6 * _mem_available())

MODES = {
    "quick": dict(
        cell_s=0.3, cap_s=3.0, max_reps=7,
        circ_B=64, pshift_B=8, circ_n_sweep=[4, 8], circ_n_sweep_B=16, circ_B_sweep=[1, 64, 1024],
        open_B=32, d_sweep=[2, 4], open_B_sweep=[1, 32, 256], main_cap_s=8.0,
        transfer_qubits=[1, 2], transfer_cap_s=8.0,
    ),
    "full": dict(
        cell_s=1.5, cap_s=15.0, max_reps=15,
        circ_B=64, pshift_B=64, circ_n_sweep=[4, 6, 8, 10, 12, 14, 16], circ_n_sweep_B=16,
        circ_B_sweep=[1, 4, 16, 64, 256, 1024, 4096],
        open_B=32, d_sweep=[2, 3, 4, 6, 8, 12, 16], open_B_sweep=[1, 10, 100, 1000, 10**4, 10**5],
        main_cap_s=45.0, transfer_qubits=[1, 2, 3, 4, 5, 6], transfer_cap_s=300.0,
    ),
}

def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small subset for smoke testing (< 2 min)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for every library (OMP_NUM_THREADS, torch, XLA); default: all cores")
    p.add_argument("--only", default="circuit,meta,cz,e2e",
                   help="comma list of workloads: circuit, meta, cz, e2e, transfer (default: the first four; "
                        "transfer is the d = 2..64 state-transfer sweep, ~30 min on 2 cores)")
    p.add_argument("--transfer-tol", type=float, default=1e-8,
                   help="rtol of every adaptive solver in the transfer sweep (atol = rtol / 100)")
    p.add_argument("--qfleet-from-build", metavar="DIR", default=None,
                   help="use the qfleet of a CMake build tree (DIR/adapters/torch/libqfleet_torch.so, the "
                        "package from python/) instead of the venv's installed one; run.sh then skips the "
                        "pip build. The library must have been built against the venv's torch version")
    p.add_argument("--no-sweeps", action="store_true", help="main workloads only")
    p.add_argument("--out-dir", default=os.path.join(REPO, "bench", "results"))
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--no-docs", action="store_true",
                   help="leave docs/benchmarks.md alone (a run puts each workload's table into its block there; "
                        "--quick never does)")
    return p.parse_args()

ARGS = parse_args()
if ARGS.threads:
    # Must happen before torch / jax / lightning / qfleet are imported.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)
    if ARGS.threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, HERE)
QFLEET_SOURCE = "the venv's installed package"
if ARGS.qfleet_from_build:
    # Before qfleet is imported: its loader reads these (python/qfleet/_lib.py).
    _build = os.path.abspath(ARGS.qfleet_from_build)
    os.environ["QFLEET_TORCH_LIBRARY"] = os.path.join(_build, "adapters", "torch", "libqfleet_torch.so")
    for _app, _rel in (("meta", "meta_control/libqfleet_meta.so"), ("classify", "classify/libqfleet_classify.so"),
                       ("qgan", "qgan/libqfleet_qgan.so"), ("rl", "rl/libqfleet_rl.so")):
        if os.path.exists(os.path.join(_build, "apps", _rel)):
            os.environ[f"QFLEET_{_app.upper()}_LIBRARY"] = os.path.join(_build, "apps", _rel)
    sys.path.insert(0, os.path.join(REPO, "python"))
    QFLEET_SOURCE = f"build tree {_build} (python/ + {os.environ['QFLEET_TORCH_LIBRARY']})"

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_default_dtype(torch.float64)  # PennyLane's torch interface returns float32 device results otherwise
if ARGS.threads:
    torch.set_num_threads(ARGS.threads)

import checks  # noqa: E402
import circuit_alts  # noqa: E402
import docs_blocks  # noqa: E402
import open_alts  # noqa: E402
import qfleet_side  # noqa: E402
import report  # noqa: E402
import transfer_sweep  # noqa: E402
from circuit_ref import max_abs_err, reference as circuit_reference  # noqa: E402
from common import Budget, Row, SweepGuard, fmt_err, fmt_time, git_commit, grade, machine_info, machine_tag, measure  # noqa: E402
from open_models import Reference, ladder_model, qubit_x_model, sample_params, two_qubit_cz_model  # noqa: E402

CFG = MODES["quick" if ARGS.quick else "full"]
BUDGET = Budget(cell_s=CFG["cell_s"], single_call_cap_s=CFG["cap_s"], max_reps=CFG["max_reps"])
# main-workload rows are never skipped; a call slower than main_cap_s is timed as that single cold call
MAIN_BUDGET = Budget(cell_s=CFG["cell_s"], single_call_cap_s=CFG["main_cap_s"], max_reps=CFG["max_reps"])
T_START = time.perf_counter()

def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T_START:7.1f}s] {msg}", flush=True)

def log_row(prefix: str, row: Row) -> None:
    if row.status == "ok":
        t = row.timing
        log(f"{prefix} {row.alternative}: {fmt_time(t.median)} (min {fmt_time(t.min)}, max {fmt_time(t.max)}, "
            f"{t.reps}x{t.number}), max err {fmt_err(row.max_error)} [{row.check}]")
    else:
        log(f"{prefix} {row.alternative}: {row.status}{' — ' + row.reason if row.reason else ''}")

def timed_case(row: Row, build, check, budget: Budget = BUDGET) -> Row:
    """Build (untimed), measure, check. Never raises."""
    try:
        built = build()
    except Exception as e:  # noqa: BLE001
        row.status, row.reason = "error", f"build failed: {type(e).__name__}: {e}"[:400]
        traceback.print_exc(limit=3)
        return row
    run, extract, threads = built[0], built[1], built[2]
    if len(built) > 3 and built[3]:
        row.extra.update(built[3])
    row.threads = threads
    try:
        timing, out = measure(run, budget)
    except Exception as e:  # noqa: BLE001
        row.status, row.reason = "error", f"call failed: {type(e).__name__}: {e}"[:400]
        traceback.print_exc(limit=3)
        return row
    row.timing = timing
    try:
        row.result = extract(out)
        row.errors = check(row.result)
    except Exception as e:  # noqa: BLE001
        row.status, row.reason = "error", f"check failed: {type(e).__name__}: {e}"[:400]
        traceback.print_exc(limit=3)
        return row
    grade(row)
    return row

def skipped(row: Row, reason: str) -> Row:
    row.status, row.reason = "skipped", reason
    return row

QF_OK, QF_ERR = qfleet_side.available()
qfleet_side.NUM_THREADS = ARGS.threads

def qfleet_missing(row: Row) -> Row:
    row.status, row.reason = "not installed", QF_ERR
    return row

# =========================================================================== workload 1

def circuit_check_fn(ref, n_ref: int, B: int):
    ref_out, ref_gx, ref_gw = ref

    def check(res):
        out, gx, gw = res
        errs = {"outputs": max_abs_err(out[:n_ref], ref_out), "grad_inputs": max_abs_err(gx[:n_ref], ref_gx)}
        if n_ref == B:
            errs["grad_weights"] = max_abs_err(gw, ref_gw)
        return errs

    return check

def circuit_ref_samples(n: int, B: int) -> int:
    if n <= 12:
        return B
    if n <= 14:
        return min(B, 4)
    return min(B, 2)

def circuit_entries(fast, xs, ws):
    """(key, row, call) for qfleet and each fast alternative on one sweep cell."""
    entries = [("qfleet", Row("qfleet QuantumLayer (adjoint)", "qfleet", "fwd+grad", tolerance=TOL_EXACT),
                (lambda: qfleet_side.circuit_case(xs, ws)))]
    for name, (builder, kind, _) in fast.items():
        entries.append((name, Row(name, kind, "fwd+grad", tolerance=TOL_EXACT),
                        (lambda b=builder: b(xs, ws))))
    return entries

def workload_circuit(results: dict) -> None:
    n, L, B = 4, 3, CFG["circ_B"]
    x, w = circuit_alts.make_inputs(B, n, L, ARGS.seed)
    t0 = time.perf_counter()
    ref = circuit_reference(x, w)
    ref_s = time.perf_counter() - t0
    log(f"[circuit] reference (extended precision, adjoint) B={B}: {ref_s:.2f} s")
    rows = []
    qrow = Row("qfleet QuantumLayer (adjoint)", "qfleet", "fwd+grad", tolerance=TOL_EXACT)
    if QF_OK:
        timed_case(qrow, lambda: qfleet_side.circuit_case(x, w), circuit_check_fn(ref, B, B), MAIN_BUDGET)
    else:
        qfleet_missing(qrow)
    log_row("[circuit]", qrow)
    rows.append(qrow)
    for name, (builder, kind, fast) in circuit_alts.ALTERNATIVES.items():
        row = Row(name, kind, "fwd+grad", tolerance=TOL_EXACT, counterpart=qrow.alternative)
        if "parameter-shift" in name and CFG["pshift_B"] < B:
            # slow: run on the first pshift_B samples, checked against the same reference rows
            Bp = CFG["pshift_B"]
            refp = circuit_reference(x[:Bp], w)
            row.extra["batch"] = Bp
            row.extra["note"] = f"quick mode: B = {Bp} (first samples), not comparable to the B = {B} rows"
            timed_case(row, lambda: builder(x[:Bp], w), circuit_check_fn(refp, Bp, Bp), MAIN_BUDGET)
        else:
            timed_case(row, lambda: builder(x, w), circuit_check_fn(ref, B, B), MAIN_BUDGET)
        log_row("[circuit]", row)
        rows.append(row)
    results["workloads"]["classifier"] = {
        "title": "Hybrid-classifier quantum layer",
        "config": {"n_qubits": n, "layers": L, "batch": B, "outputs": "<Z_i>, i = 0..3",
                   "call": "forward + gradient of sum(outputs) w.r.t. inputs [B, 4] and weights [3, 4, 3]",
                   "dtype": "complex128 / float64", "seed": ARGS.seed},
        "reference": {"method": "numpy extended precision (clongdouble) state vector, adjoint gradient",
                      "seconds": ref_s},
        "rows": [r.as_dict() for r in rows],
    }
    if ARGS.no_sweeps:
        return

    # ---- sweep over n at fixed B (fast alternatives)
    Bn = CFG["circ_n_sweep_B"]
    fast = {k: v for k, v in circuit_alts.ALTERNATIVES.items() if v[2]}
    guards = {k: SweepGuard(BUDGET.single_call_cap_s, lambda a, b: 2.0 ** (b - a) * b / a)
              for k in list(fast) + ["qfleet"]}
    cells = []
    for nn in CFG["circ_n_sweep"]:
        xs, ws = circuit_alts.make_inputs(Bn, nn, L, ARGS.seed + nn)
        nr = circuit_ref_samples(nn, Bn)
        t0 = time.perf_counter()
        refn = circuit_reference(xs[:nr], ws)
        log(f"[circuit n-sweep] n={nn}: reference on {nr}/{Bn} samples {time.perf_counter() - t0:.2f} s")
        chk = circuit_check_fn(refn, nr, Bn)
        entries = circuit_entries(fast, xs, ws)
        for key, row, build in entries:
            row.value = nn
            if key == "qfleet" and not QF_OK:
                qfleet_missing(row)
            elif "backprop" in key or "hand-batched" in key:
                # one saved state per gate (measured at n = 14, B = 16: PennyLane 0.77 GB, plain torch 0.28 GB)
                mem = Bn * 2**nn * 16 * (4 * nn * L + nn)
                if mem > MEM_LIMIT_BYTES:
                    skipped(row, f"estimated autograd memory {mem / 2**30:.1f} GiB > {MEM_LIMIT_BYTES / 2**30:.1f} GiB")
            if row.status == "ok":
                reason = guards[key].check(nn)
                if reason:
                    skipped(row, reason)
                else:
                    timed_case(row, build, chk)
                    if row.status == "ok":
                        guards[key].record(nn, row.timing.median)
            if nr < Bn and row.status == "ok":
                row.extra["checked_samples"] = f"{nr} of {Bn} (grad_weights not checked: batch-summed)"
            log_row(f"[circuit n-sweep] n={nn}", row)
            cells.append(row)
    results["sweeps"]["classifier_n"] = {
        "title": f"Classifier layer: time vs qubits n (B = {Bn}, {L} layers, forward + gradient)",
        "param": "n", "fixed": {"batch": Bn, "layers": L},
        "note": "parameter-shift left out of sweeps (minutes per cell)",
        "cells": [r.as_dict() for r in cells]}

    # ---- sweep over B at n = 4
    # per-sample loops (lightning splits the batch into tapes) scale linearly; batched code sublinearly at first
    guards = {k: SweepGuard(BUDGET.single_call_cap_s,
                            (lambda a, b: b / a) if "lightning" in k else (lambda a, b: (b / a) ** 0.5),
                            linear=True)
              for k in list(fast) + ["qfleet"]}
    cells = []
    for BB in CFG["circ_B_sweep"]:
        xs, ws = circuit_alts.make_inputs(BB, n, L, ARGS.seed + BB)
        refb = circuit_reference(xs, ws)
        chk = circuit_check_fn(refb, BB, BB)
        entries = circuit_entries(fast, xs, ws)
        for key, row, build in entries:
            row.value = BB
            if key == "qfleet" and not QF_OK:
                qfleet_missing(row)
            else:
                reason = guards[key].check(BB)
                if reason:
                    skipped(row, reason)
                else:
                    timed_case(row, build, chk)
                    if row.status == "ok":
                        guards[key].record(BB, row.timing.median)
            log_row(f"[circuit B-sweep] B={BB}", row)
            cells.append(row)
    results["sweeps"]["classifier_B"] = {
        "title": f"Classifier layer: time vs batch B (n = {n}, {L} layers, forward + gradient)",
        "param": "B", "fixed": {"n_qubits": n, "layers": L}, "cells": [r.as_dict() for r in cells]}

# =========================================================================== workloads 2, 3

def open_check_fn(ref_vals, n_ref: int):
    F_ref, gu_ref, gr_ref = ref_vals

    def check(res):
        F, gu, gr = res
        errs = {"F_avg": float(np.max(np.abs(np.asarray(F)[:n_ref] - F_ref)))}
        if gu is not None and gu_ref is not None:
            errs["grad_amplitudes"] = float(np.max(np.abs(np.asarray(gu)[:n_ref] - gu_ref)))
            errs["grad_rates"] = float(np.max(np.abs(np.asarray(gr)[:n_ref] - gr_ref)))
        return errs

    return check

def tol_for(kind: str):
    return {"exact": TOL_EXACT, "qfleet": TOL_EXACT, "reference": TOL_EXACT, "adaptive": TOL_ADAPTIVE}.get(kind)

def torch_fixed_mem(model, B: int, method: str, dt: float) -> float:
    n_sub, _ = open_alts.steps_per_segment(model, dt)
    per_rhs = 4 + 5 * model.n_jump
    tensors = (4 * per_rhs + 6 if method == "rk4" else per_rhs + 2) * n_sub * model.n_seg
    return 2 * B * model.d**4 * 16 * tensors  # x2: measured peak RSS / this count (CZ, rk4 and euler)

def qfleet_open_rows(model, u, rates, chk, keys, value=None, guards=None):
    rows = {}
    for key in keys:
        solver, dt, grad, kind, display = qfleet_side.OPEN_ROWS[key]
        row = Row(display, "qfleet" if kind == "exact" else "fixed-step", "fwd+grad" if grad else "fwd",
                  tolerance=TOL_EXACT if kind == "exact" else None, value=value)
        if not QF_OK:
            qfleet_missing(row)
        else:
            reason = guards[key].check(value) if guards else None
            if reason:
                skipped(row, reason)
            else:
                timed_case(row, lambda s=solver, d=dt, g=grad: qfleet_side.open_case(model, u, rates, s, d, g), chk,
                           BUDGET if guards else MAIN_BUDGET)
                if guards and row.status == "ok":
                    guards[key].record(value, row.timing.median)
        rows[key] = row
    return rows

def open_main(results: dict, key: str, model, title: str) -> None:
    B = CFG["open_B"]
    u, rates = sample_params(model, B, ARGS.seed)
    ref = Reference(model)
    t0 = time.perf_counter()
    ref_vals = ref.forward_grad(u, rates)
    ref_s = time.perf_counter() - t0
    log(f"[{key}] reference (scipy expm product + expm_frechet gradient) B={B}: {ref_s:.2f} s")
    chk = open_check_fn(ref_vals, B)
    alts = open_alts.alternatives(ARGS.quick)
    q_keys = ["exact", "exact fwd", "rk4 dt=0.01", "euler dt=0.01"]
    if not ARGS.quick:
        q_keys += ["rk4 dt=0.001", "euler dt=0.001"]
    qrows = qfleet_open_rows(model, u, rates, chk, q_keys)
    for r in qrows.values():
        log_row(f"[{key}]", r)
    rows = list(qrows.values())
    torch_same_dt = {}
    coarse = {}  # "RK4" / "Euler" -> seconds per call at dt = 0.01
    for name, (builder, kind, mode, counterpart) in alts.items():
        row = Row(name, kind, mode, tolerance=tol_for(kind))
        cp = qrows.get(counterpart)
        row.counterpart = cp.alternative if cp is not None else qrows["exact"].alternative
        meth = "RK4" if "RK4" in name else ("Euler" if "Euler" in name else None)
        if meth:
            dt = 0.001 if "dt=0.001" in name else 0.01
            mem = torch_fixed_mem(model, B, meth.lower(), dt)
            if mem > MEM_LIMIT_MAIN_BYTES:
                skipped(row, f"estimated autograd memory {mem / 2**30:.1f} GiB > {MEM_LIMIT_MAIN_BYTES / 2**30:.1f} GiB")
                log_row(f"[{key}]", row)
                rows.append(row)
                continue
        if meth and "dt=0.001" in name and meth in coarse:
            n01, _ = open_alts.steps_per_segment(model, 0.01)
            n001, _ = open_alts.steps_per_segment(model, 0.001)
            pred = coarse[meth] * n001 / n01
            if pred > CFG["main_cap_s"]:
                skipped(row, f"predicted {fmt_time(pred)} per call ({n001 // n01}x the dt=0.01 run) "
                             f"> cap {fmt_time(CFG['main_cap_s'])}")
                log_row(f"[{key}]", row)
                rows.append(row)
                continue
        timed_case(row, lambda b=builder: b(model, u, rates), chk, MAIN_BUDGET)
        if meth and "dt=0.01" in name and row.status == "ok":
            coarse[meth] = row.timing.median
        if row.kind == "reference":
            row.extra["note"] = "same computation as the reference (error 0 by construction)"
        log_row(f"[{key}]", row)
        rows.append(row)
        if name.startswith("PyTorch") and row.status == "ok":
            torch_same_dt[counterpart] = row
    # qfleet's fixed-step rows must equal the same discretisation in PyTorch
    for qk, trow in torch_same_dt.items():
        qr = qrows.get(qk)
        if qr is None or qr.status != "ok":
            continue
        tname = trow.alternative
        try:
            e = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(qr.result, trow.result))
            qr.extra["max_error_vs_" + tname.replace(" ", "_")] = e
            qr.extra["same_discretisation_tolerance"] = TOL_EXACT
            if e > TOL_EXACT:
                qr.check = "fail"
        except Exception as ex:  # noqa: BLE001
            qr.extra["same_discretisation_check_error"] = str(ex)[:300]
    results["workloads"][key] = {
        "title": title,
        "config": {"d": model.d, "tasks": B, "segments": model.n_seg, "T": model.T,
                   "controls": model.n_ctrl, "jumps": model.n_jump, "model": model.notes,
                   "amplitudes": "U[-4, 4]", "rates": "relax U[0.01, 0.08], deph U[0.02, 0.15]",
                   "loss": "sum_b (1 - F_avg_b)", "call": "forward + gradient w.r.t. amplitudes and rates "
                                                           "(forward-only rows marked fwd)", "seed": ARGS.seed},
        "reference": {"method": "scipy.linalg.expm per segment (float64) product; gradient by expm_frechet",
                      "seconds": ref_s},
        "rows": [r.as_dict() for r in rows],
    }

SWEEP_ALTS = ["PyTorch RK4 dt=0.01", "PyTorch Euler dt=0.01", "dynamiqs Expm (jax.grad)",
              "QuTiP mesolve per task", "scipy expm product per task"]
SWEEP_QF = ["exact", "rk4 dt=0.01"]

def open_sweep(results: dict, key: str, param: str, values, model_of, B_of, exponent_of, linear=False):
    alts = open_alts.alternatives(quick=False)
    guards = {}
    for name in SWEEP_ALTS:
        guards[name] = SweepGuard(BUDGET.single_call_cap_s, lambda a, b, p=exponent_of(name): (b / a) ** p, linear)
    for k in SWEEP_QF:
        guards[k] = SweepGuard(BUDGET.single_call_cap_s, lambda a, b, p=exponent_of("qfleet " + k): (b / a) ** p,
                               linear)
    cells = []
    for v in values:
        model = model_of(v)
        B = B_of(v)
        u, rates = sample_params(model, B, ARGS.seed + v)
        ref = Reference(model)
        n_ref = min(B, 8 if model.d <= 4 else (2 if model.d <= 8 else 1))  # reference: ~2.5 s per task at d = 12
        t0 = time.perf_counter()
        if model.d <= 12:
            ref_vals = ref.forward_grad(u[:n_ref], rates[:n_ref])
        else:
            ref_vals = (ref.forward(u[:n_ref], rates[:n_ref]), None, None)
        log(f"[{key}] {param}={v}: reference on {n_ref}/{B} tasks{'' if ref_vals[1] is not None else ' (forward only)'} "
            f"{time.perf_counter() - t0:.2f} s")
        chk = open_check_fn(ref_vals, n_ref)
        for r in qfleet_open_rows(model, u, rates, chk, SWEEP_QF, value=v, guards=guards).values():
            log_row(f"[{key}] {param}={v}", r)
            cells.append(r)
        for name in SWEEP_ALTS:
            builder, kind, mode, _ = alts[name]
            row = Row(name, kind, mode, tolerance=tol_for(kind), value=v)
            if name.startswith("PyTorch"):
                method = "rk4" if "RK4" in name else "euler"
                mem = torch_fixed_mem(model, B, method, 0.01)
                if mem > MEM_LIMIT_BYTES:
                    skipped(row, f"estimated autograd memory {mem / 2**30:.1f} GiB > {MEM_LIMIT_BYTES / 2**30:.1f} GiB")
            if row.status == "ok":
                reason = guards[name].check(v)
                if reason:
                    skipped(row, reason)
                else:
                    timed_case(row, lambda b=builder, m=model, u=u, r=rates: b(m, u, r), chk)
                    if row.status == "ok":
                        guards[name].record(v, row.timing.median)
            if row.status == "ok":
                row.extra["checked_tasks"] = f"{n_ref} of {B}"
            log_row(f"[{key}] {param}={v}", row)
            cells.append(row)
    return cells

def workload_meta(results: dict) -> None:
    open_main(results, "meta", qubit_x_model(), "Meta-learning simulation (qubit, target X)")
    if ARGS.no_sweeps:
        return

    def exp_d(name):
        # cost ~ d^a once d is large; smaller exponents while per-call overheads dominate
        # (a cell that still overshoots is timed as one cold call and stops that series)
        if "PyTorch" in name or "QuTiP" in name or "rk4" in name:
            return 3.0
        return 4.0

    B = CFG["open_B"]
    cells = open_sweep(results, "meta d-sweep", "d", CFG["d_sweep"], lambda d: ladder_model(d),
                       lambda d: B, exp_d)
    results["sweeps"]["meta_d"] = {
        "title": f"Open system: time vs dimension d (ladder, {B} tasks, 60 segments, gate propagation)",
        "param": "d", "fixed": {"tasks": B, "segments": 60, "T": 1.0},
        "model": ladder_model(3).notes + " (d = 2 is workload 2)",
        "note": "dt=0.001 integrators and dynamiqs Tsit5 only in the main workload",
        "cells": [r.as_dict() for r in cells]}

    # per-task loops (QuTiP, scipy) scale linearly; batched code sublinearly until the batch fills the cores
    cells = open_sweep(results, "meta B-sweep", "B", CFG["open_B_sweep"], lambda b: qubit_x_model(),
                       lambda b: b, lambda name: 1.0 if ("QuTiP" in name or "scipy" in name) else 0.5,
                       linear=True)
    results["sweeps"]["meta_B"] = {
        "title": "Open system: time vs tasks B (qubit workload, 60 segments)",
        "param": "B", "fixed": {"d": 2, "segments": 60}, "cells": [r.as_dict() for r in cells]}

def workload_cz(results: dict) -> None:
    open_main(results, "cz", two_qubit_cz_model(), "Two-qubit CZ variant")

# =========================================================================== workload 4

def workload_e2e(results: dict) -> None:
    """The meta-gradient of one meta-training iteration of the meta-control app (32 tasks, 5 inner
    SGD steps on per-task fast weights, the outer gradient; FOMAML, paper setting): qfleet's app
    (the C++ library through qfleet.meta_control.meta_gradient, which also builds its programs on
    every call), and the same steps written in PyTorch around the PyTorch RK4 simulator."""
    key = "e2e"
    rows = []
    if not QF_OK:
        rows.append(qfleet_missing(Row("qfleet meta_control meta-gradient (exact)", "qfleet", "iteration")))
        results["workloads"][key] = {"title": "Meta-training iteration (app)", "config": {}, "rows": [r.as_dict() for r in rows]}
        return
    from qfleet import meta_control as mc

    model = qubit_x_model()
    base = {"preset": "paper", "threads": ARGS.threads or 0}
    cfg0 = mc.make_config(mc.resolve_config(base))
    gen = torch.Generator().manual_seed(ARGS.seed)
    theta = (torch.rand(mc.policy_size(cfg0), generator=gen, dtype=torch.float64) * 2 - 1) * 0.1
    u = torch.rand((cfg0.meta_batch, 2), generator=gen, dtype=torch.float64)
    lo = torch.tensor([cfg0.gamma_deph[0], cfg0.gamma_relax[0]], dtype=torch.float64)
    hi = torch.tensor([cfg0.gamma_deph[1], cfg0.gamma_relax[1]], dtype=torch.float64)
    noise = lo + (hi - lo) * u

    def build(solver_keys, problem=None):
        cfg = mc.make_config(mc.resolve_config({**base, **solver_keys}))
        if problem is None:
            def run():
                return mc.meta_gradient(cfg, theta, noise)
        else:
            def run():
                return open_alts.torch_fomaml_meta_gradient(cfg.json, problem, theta, noise)
        return run, lambda g: (g.detach().numpy(),), f"torch intra-op {torch.get_num_threads()}"

    ref = {}

    def check(result):
        if "exact" not in ref:
            ref["exact"] = result[0]
            return {}
        return {"meta_gradient": float(np.max(np.abs(result[0] - ref["exact"])))}

    qx = timed_case(Row("qfleet meta_control meta-gradient (exact)", "qfleet", "iteration"), lambda: build({}),
                    check, MAIN_BUDGET)
    qr = timed_case(Row("qfleet meta_control meta-gradient (rk4 dt=0.01)", "qfleet", "iteration"),
                    lambda: build({"solver": "rk4", "dt": 0.01}), check, MAIN_BUDGET)
    tr_row = Row("same steps in PyTorch, PyTorch RK4 dt=0.01 simulator", "fixed-step", "iteration")
    tr_row.counterpart = qr.alternative
    timed_case(tr_row, lambda: build({}, open_alts.TorchRK4Problem(model, 0.01)), check, MAIN_BUDGET)
    rows = [qx, qr, tr_row]
    if qr.status == "ok" and tr_row.status == "ok":  # the same discretisation must give the same gradient
        e = float(np.max(np.abs(qr.result[0] - tr_row.result[0])))
        qr.extra["max_error_vs_PyTorch_RK4"] = e
        if e > TOL_EXACT:
            qr.check = "fail"
    for r in rows:
        log_row(f"[{key}]", r)
    results["workloads"][key] = {
        "title": "Meta-training iteration (app)",
        "config": {"app": "qfleet.meta_control.meta_gradient (the C++ app's library)",
                   "preset": "paper", "algorithm": "fomaml", "tasks": 32, "inner_steps": 5, "segments": 60,
                   "policy": "MLP 2-128-128-120, tanh", "seed": ARGS.seed},
        "reference": {"method": "meta-gradient of the qfleet exact iteration (whose engine is checked against "
                                "scipy expm in workload 2)"},
        "rows": [r.as_dict() for r in rows],
    }

# =========================================================================== workload 5

def workload_transfer(results: dict) -> None:
    import types

    ctx = types.SimpleNamespace(CFG=CFG, ARGS=ARGS, QF_OK=QF_OK, TOL_ADAPTIVE=TOL_ADAPTIVE, TOL_EXACT=TOL_EXACT,
                                log=log,
                                log_row=log_row, timed_case=timed_case, skipped=skipped,
                                qfleet_missing=qfleet_missing)
    transfer_sweep.run(results, ctx)

# =========================================================================== main

def versions() -> dict:
    import importlib.metadata as md

    out = {}
    for pkg in ["numpy", "scipy", "torch", "pennylane", "pennylane-lightning", "qutip", "dynamiqs", "jax",
                "jaxlib", "matplotlib", "mpmath"]:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    out["qfleet"] = qfleet_side.version() if QF_OK else None
    return out

def main() -> int:
    mode = "quick" if ARGS.quick else "full"
    date = _dt.date.today().isoformat()
    tag = machine_tag()
    stem = f"{tag}-{date}" + ("-quick" if ARGS.quick else "")
    only = set(ARGS.only.split(","))
    if only != {"circuit", "meta", "cz", "e2e"}:  # a partial run must not overwrite the day's full run
        stem += "-" + "-".join(sorted(only))
    os.makedirs(ARGS.out_dir, exist_ok=True)
    info = machine_info()
    if info.get("load_avg_at_start") and info["load_avg_at_start"][0] > 0.5:
        log(f"warning: load average {info['load_avg_at_start'][0]:.2f} at start: other processes share the cores; "
            "timings will be noisy")
    results = {
        "meta": {
            "harness": "bench/compare/run.py", "mode": mode, "date": date, "machine_tag": tag,
            "machine": info, "git_commit": git_commit(REPO), "versions": versions(),
            "threads_requested": ARGS.threads or "default (all cores)",
            "env_threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")},
            "torch_threads": torch.get_num_threads(),
            "qfleet": "installed" if QF_OK else f"not installed ({QF_ERR})",
            "qfleet_source": QFLEET_SOURCE,
            "command": " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
            "timing": (f"wall clock per call: warm-up call(s) first (their output is the one checked), then "
                       f"repeated samples; a sample loops the call when it is < 2 ms; median/min/max over samples. "
                       f"Per-cell budget {BUDGET.cell_s} s, {BUDGET.min_reps}-{BUDGET.max_reps} samples; sweep cells "
                       f"predicted above {BUDGET.single_call_cap_s} s per call are skipped."),
            "tolerances": {
                "exact": f"{TOL_EXACT:g} max abs error vs reference (state vectors, propagator products, "
                         f"dynamiqs Expm, qfleet exact)",
                "adaptive": f"{TOL_ADAPTIVE:g} (QuTiP mesolve atol=rtol=1e-10, dynamiqs Tsit5 rtol=1e-10)",
                "fixed-step": "error vs reference reported, not asserted (RK4/Euler at dt = 0.01, 0.001); "
                              f"qfleet's fixed-step rows must match PyTorch's same discretisation to {TOL_EXACT:g}",
            },
            "seed": ARGS.seed,
        },
        "checks": [], "workloads": {}, "sweeps": {},
    }
    if not QF_OK:
        log(f"qfleet not importable ({QF_ERR}): qfleet rows recorded as 'not installed'")
    log(f"mode {mode}, machine {tag}, torch threads {torch.get_num_threads()}")

    t0 = time.perf_counter()
    results["checks"] = checks.run_all(full=True)
    n_bad = sum(not c["pass"] for c in results["checks"])
    log(f"[checks] {len(results['checks'])} physics/reference self-checks, {n_bad} failed "
        f"({time.perf_counter() - t0:.1f} s)")
    for c in results["checks"]:
        if not c["pass"]:
            log(f"[checks] FAIL {c['check']}: {c['value']} vs {c['expected']}")

    sections = [("circuit", workload_circuit), ("meta", workload_meta), ("cz", workload_cz), ("e2e", workload_e2e),
                ("transfer", workload_transfer)]
    for name, fn in sections:
        if name not in only:
            continue
        t0 = time.perf_counter()
        try:
            fn(results)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            results.setdefault("errors", []).append(f"{name}: {type(e).__name__}: {e}")
        results["meta"].setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 1)

    results["meta"]["total_seconds"] = round(time.perf_counter() - T_START, 1)
    try:
        results["meta"]["machine"]["load_avg_at_end"] = os.getloadavg()
    except OSError:
        pass
    json_path = os.path.join(ARGS.out_dir, stem + ".json")
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1, default=report.json_default)
    md_path, pngs = report.write_markdown_and_plots(results, ARGS.out_dir, stem)
    log(f"wrote {os.path.relpath(json_path, REPO)}, {os.path.relpath(md_path, REPO)}"
        + "".join(f", {os.path.relpath(p, REPO)}" for p in pngs))
    if results["workloads"]:
        print()
        print(report.main_table(results))
    if not ARGS.quick and not ARGS.no_docs:
        written = docs_blocks.update_page(results, os.path.abspath(md_path))
        if written:
            log(f"updated docs/benchmarks.md: {', '.join(written)}")

    failures = report.failures(results)
    if failures:
        print("\nFAILED checks:")
        for f_ in failures:
            print("  " + f_)
        return 1
    log(f"all checks within tolerance; total {results['meta']['total_seconds']} s")
    return 0

if __name__ == "__main__":
    sys.exit(main())
