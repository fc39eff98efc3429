"""The shared harness of the one-off comparison scripts in bench/compare/ (classify.py, cli_npy.py,
control.py, noisy.py, open_gpu_peer.py, pennylane_demos.py, pennylane_device.py, qgan.py, qgan_classifier.py,
rl_env.py, torch_batched.py; run.py, the same-run harness behind docs/benchmarks.md's tables, has its own driver).

Every script goes the same way, through this module:
  1. one set of flags (`parser` / `add_common_flags`): --quick, --threads N, --seed S,
     --json PATH, --md PATH, beside the script's own;
  2. its outputs checked against the other tool's (or a reference) by `check_close`, which
     prints the largest error and exits with status 1 on a disagreement, before anything is
     timed;
  3. timing with warm-up (`timed`, or `interleaved` where the cases run side by side in
     rounds so that the machine's drift hits them alike): median with the (min, max) spread;
  4. rows -> the ratio alternative / qfleet (`row`), printed as a markdown table on stdout and
     written as JSON (`--json`, the script's own document plus the uniform table) and
     markdown (`--md`) by `finish`.

Nothing here imports numpy or torch at module level: several scripts set OMP_NUM_THREADS and
OMP_WAIT_POLICY after parsing their flags and before those libraries load (OpenMP and BLAS
runtimes read them once), so the imports below are stdlib only; `report` (which imports numpy)
is imported where the output is written.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from typing import Any, Callable

from common import Timing, cpu_model, fmt_err, fmt_time, machine_info  # noqa: F401 (cpu_model: for the scripts)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


# --------------------------------------------------------------------------- flags


def add_common_flags(ap: argparse.ArgumentParser, *, threads: int | None = 2, seed: int = 0,
                     quick_help: str = "small sizes, few repeats: a smoke run") -> argparse.ArgumentParser:
    """The flags every comparison script takes (README.md, 'Shared flags'). threads=None: the
    libraries' own default unless --threads is given."""
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--threads", type=int, default=threads,
                    help="threads of qfleet, torch and OpenMP" + ("" if threads is None else f" (default {threads})"))
    ap.add_argument("--seed", type=int, default=seed, help=f"seed of the inputs and weights (default {seed})")
    ap.add_argument("--json", metavar="PATH", default=None, help="write the figures (JSON) here")
    ap.add_argument("--md", metavar="PATH", default=None, help="write the table (markdown) here")
    return ap


def parser(doc: str, **kw) -> argparse.ArgumentParser:
    """An argparse parser with the shared flags; the script adds its own and parses."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return add_common_flags(ap, **kw)


def validate(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be positive")
    return args


def threads_env(threads: int | None, passive: bool = False) -> None:
    """OMP_NUM_THREADS (and OMP_WAIT_POLICY=passive) unless set: call before numpy/torch load.
    Passive waiting: OpenMP threads spin after each parallel region by default, and on a busy
    2-core machine two spinning pools (torch's and lightning's) starved the working threads
    (classify.py measured the CNN step at 370 ms instead of 18 ms)."""
    if threads is not None:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    if passive:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")


# --------------------------------------------------------------------------- the run's machine and versions


def versions(*dists: str) -> dict:
    """Python's, torch's, numpy's and qfleet's versions and those of the named distributions
    (None where one is not installed)."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for dist in ("torch", "numpy", "qfleet", *dists):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            mod = sys.modules.get(dist)  # (qfleet from a source tree has no distribution)
            out[dist] = getattr(mod, "__version__", None)
    return out


def run_machine(threads: int | None) -> dict:
    """machine_info() and this run's thread settings."""
    import torch

    info = machine_info()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        usable = os.cpu_count()
    info.update(cpu_count=os.cpu_count(), usable_cpus=usable, torch_threads=torch.get_num_threads(),
                qfleet_threads=threads, omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
                omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"))
    return info


# --------------------------------------------------------------------------- checks


def _array(x):
    """numpy float64/complex128 array of a number, list, numpy, torch or JAX array."""
    import numpy as np

    if hasattr(x, "detach"):  # torch: off the graph and the device, bfloat16/float32 widened
        import torch

        x = x.detach().cpu()
        x = x.to(torch.complex128 if x.is_complex() else torch.float64)
    a = np.asarray(x)
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _pairs(got, ref):
    if isinstance(ref, dict):
        return [(f"{k}", got[k], r) for k, r in ref.items()]
    if isinstance(ref, (list, tuple)):
        return [(f"[{i}]", g, r) for i, (g, r) in enumerate(zip(got, ref, strict=True))]
    return [("", got, ref)]


def max_error(got, ref, *, floor: float = 0.0, relative: bool = False) -> tuple[float, dict]:
    """The largest |got - ref| over every pair of arrays (dicts or sequences of them), absolute or
    relative to max(floor, max |ref|) of each pair; with the figure of each pair."""
    per = {}
    for key, g, r in _pairs(got, ref):
        g, r = _array(g), _array(r)
        diff = float(abs(g.reshape(r.shape) - r).max()) if r.size else 0.0
        if relative:
            diff /= max(floor, float(abs(r).max()) if r.size else 0.0, 1e-300)
        per[key] = diff
    worst = max(per.values(), key=lambda v: (math.isnan(v), v)) if per else 0.0
    return worst, per


class Disagreement(SystemExit):
    """Raised (exit status 1) when a check fails: nothing is timed after it."""


def fail(prog: str, message: str):
    """A failed check: the message on stderr, exit status 1."""
    print(f"\n{prog}: FAILED: {message}", file=sys.stderr, flush=True)
    raise Disagreement(1)


def check_close(name: str, got, ref, *, atol: float = 0.0, rtol: float = 0.0, floor: float = 0.0,
                prog: str | None = None, quiet: bool = False) -> float:
    """Checks got against ref (arrays, or dicts / sequences of them) before anything is timed:
    with rtol the measure is max|got - ref| / max(floor, max|ref|) per pair (a gradient judged on
    its own scale; floor = 1 keeps tiny tensors from failing on rounding) against rtol, else the
    absolute max|got - ref| against atol. Prints the figure (unless quiet: scripts that print their
    own agreement lines); exits 1 (after a message naming each pair's figure) where it is above
    the tolerance or NaN. Returns the figure."""
    relative = rtol > 0
    tol = rtol if relative else atol
    worst, per = max_error(got, ref, floor=floor, relative=relative)
    what = "relative" if relative else "absolute"
    if not quiet:
        print(f"check {name}: max {what} error {worst:.1e} (tolerance {tol:g})", flush=True)
    if not worst <= tol:  # "not <=" also catches NaN
        detail = ", ".join(f"{k} {v:.2e}" for k, v in per.items() if k) or f"{worst:.3g}"
        fail(prog or os.path.basename(sys.argv[0]), f"{name}: {what} error {worst:.3g} > {tol:g} ({detail}); "
             "nothing timed")
    return worst


# --------------------------------------------------------------------------- timing


def _spread(samples: list[float], number: int, warm: float) -> Timing:
    return Timing(statistics.median(samples), min(samples), max(samples), len(samples), number, warm)


def timed(fn: Callable[[], Any], *, repeats: int = 3, budget_s: float = 0.0, number: int = 1,
          max_repeats: int = 200, warmup: int = 1, min_sample_s: float = 0.0,
          sync: Callable[[], Any] | None = None) -> Timing:
    """Per-call seconds of fn after `warmup` calls: at least `repeats` samples, more while the
    samples have taken less than budget_s (up to max_repeats); a sample is `number` calls, or
    enough calls to last min_sample_s (microsecond calls are not timer noise). sync() is called
    around each sample (a device's queue)."""
    sync = sync or (lambda: None)
    t0 = time.perf_counter()
    for _ in range(warmup):
        fn()
    sync()
    warm = (time.perf_counter() - t0) / max(warmup, 1)
    if min_sample_s > 0:
        number = max(number, int(min_sample_s / max(warm, 1e-9)))
    samples, start = [], time.perf_counter()
    while len(samples) < repeats or (time.perf_counter() - start < budget_s and len(samples) < max_repeats):
        sync()
        s = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        samples.append((time.perf_counter() - s) / number)
    return _spread(samples, number, warm)


def interleaved(cases: dict, rounds: int, number: int = 1, warmup: bool = True) -> dict:
    """{name: (median, min, max)} seconds per call of each case over the rounds; one warm-up call
    of each case first (warmup=False: where the caller's check of the outputs already ran each case).
    Each round runs a block of `number` calls of every case in turn, so the shared machine's drift
    within a run hits every case alike, and the ratios between the cases (the figures the scripts
    report) are read within one run."""
    if warmup:
        for fn in cases.values():
            fn()
    per_call = {k: [] for k in cases}
    for _ in range(rounds):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            per_call[k].append((time.perf_counter() - t0) / number)
    return {k: (statistics.median(v), min(v), max(v)) for k, v in per_call.items()}


def as_timing(spread: tuple[float, float, float], reps: int, number: int = 1) -> Timing:
    """interleaved()'s (median, min, max) as a Timing, for `row`."""
    return Timing(spread[0], spread[1], spread[2], reps, number, float("nan"))


# --------------------------------------------------------------------------- rows and outputs


def row(workload: str, tool: str, timing: Timing | None, qfleet: Timing | None = None, *,
        error: float | None = None, note: str = "", unit: str = "s", **extra) -> dict:
    """One table row: the tool's median (min, max) per call and, beside qfleet's row of the same
    workload, the ratio alternative / qfleet (> 1: qfleet faster). unit "s": seconds per call;
    any other unit (e.g. "env-steps/s") is a rate, and the ratio is then qfleet / the row's so that
    > 1 still means qfleet faster."""
    r = {"workload": workload, "tool": tool, "unit": unit, "note": note, "max_error": error, **extra}
    if timing is None:
        r.update(median=None, min=None, max=None, repeats=0, qfleet_median=None, ratio=None)
        return r
    r.update(median=timing.median, min=timing.min, max=timing.max, repeats=timing.reps,
             calls_per_repeat=timing.number)
    q = qfleet.median if qfleet is not None else None
    r["qfleet_median"] = q
    if q and timing.median:
        r["ratio"] = timing.median / q if unit == "s" else q / timing.median
    else:
        r["ratio"] = None
    return r


def _fmt(v, unit):
    if v is None:
        return "—"
    return fmt_time(v) if unit == "s" else f"{v:.4g} {unit}"


def markdown_table(rows: list[dict]) -> str:
    """The rows as one markdown table: workload, tool, median (min–max), qfleet's median, the
    ratio alternative/qfleet, the max error of the check, notes."""
    lines = ["| workload | tool | median (min–max) | qfleet median | ratio alt/qfleet | max error | note |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        u = r.get("unit", "s")
        med = _fmt(r.get("median"), u)
        if r.get("median") is not None:  # the spread in the median's unit (a rate's without it)
            med += (f" ({fmt_time(r['min'])}–{fmt_time(r['max'])})" if u == "s"
                    else f" ({r['min']:.4g}–{r['max']:.4g})")
        ratio = f"{r['ratio']:.3g}x" if r.get("ratio") is not None else "—"
        lines.append(f"| {r['workload']} | {r['tool']} | {med} | {_fmt(r.get('qfleet_median'), u)} | {ratio} | "
                     f"{fmt_err(r.get('max_error'))} | {r.get('note') or ''} |")
    return "\n".join(lines)


def finish(args: argparse.Namespace, script: str, rows: list[dict], doc: dict | None = None, *,
           title: str = "", print_table: bool = True) -> dict:
    """Prints the table, writes --json (the script's own document, its keys unchanged, plus
    `benchmark`, `flags`, `machine` and the uniform `table`) and --md. Returns the document."""
    from report import json_default  # numpy: loaded by now in every script

    table = markdown_table(rows)
    if print_table:
        print(f"\n{title}\n\n{table}" if title else f"\n{table}", flush=True)
    out = dict(doc or {})
    out.setdefault("benchmark", f"bench/compare/{script}")
    out.setdefault("machine", machine_info())
    out["flags"] = {k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool, list, type(None)))}
    out["table"] = rows
    if getattr(args, "json", None):
        _makedirs(args.json)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2, default=json_default)
            f.write("\n")
        print(f"wrote {args.json}")
    if getattr(args, "md", None):
        _makedirs(args.md)
        given = {k: v for k, v in out["flags"].items() if v is not None and v is not False and k not in ("json", "md")}
        flags = " ".join(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in given.items())
        head = f"# {title or script}\n\n`{f'python bench/compare/{script} {flags}'.strip()}`"
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(f"{head}\n\n{table}\n")
        print(f"wrote {args.md}")
    return out


def _makedirs(path: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
