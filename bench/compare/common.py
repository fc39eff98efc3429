"""Shared helpers: timing with warm-up and budgets, machine description, result rows.

Every timed figure in the harness goes through `measure`: one warm-up call (its
output is the one checked against the reference), then repeated samples; a
sample runs the callable `number` times when one call is shorter than
`MIN_SAMPLE_S`, so microsecond calls are not dominated by timer noise. The
figures reported are per call: median, min and max over the samples.
"""

from __future__ import annotations

import math
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable

MIN_SAMPLE_S = 2e-3


@dataclass
class Budget:
    """Per-cell time budgets (seconds of wall clock)."""

    cell_s: float = 3.0  # total time spent sampling one cell, after the warm-up
    single_call_cap_s: float = 20.0  # a cell whose single call is predicted above this is skipped
    min_reps: int = 3
    max_reps: int = 15


@dataclass
class Timing:
    median: float
    min: float
    max: float
    reps: int
    number: int
    warmup_s: float
    single_cold_call: bool = False

    def as_dict(self) -> dict:
        d = {
            "median_s": self.median,
            "min_s": self.min,
            "max_s": self.max,
            "reps": self.reps,
            "calls_per_rep": self.number,
            "warmup_s": self.warmup_s,
        }
        if self.single_cold_call:
            d["note"] = "first call exceeded the per-call cap: that single cold call is the figure"
        return d


def measure(fn: Callable[[], Any], budget: Budget) -> tuple[Timing, Any]:
    """Warm up once (output returned for checking), then time repeated calls."""
    t0 = time.perf_counter()
    out = fn()
    t_warm = time.perf_counter() - t0
    if t_warm > budget.single_call_cap_s:
        return Timing(t_warm, t_warm, t_warm, 1, 1, t_warm, single_cold_call=True), out
    # A second warm-up call when the first was cheap: first calls often pay
    # one-off costs (allocator growth, lazy imports, caches).
    if t_warm < budget.cell_s / 10:
        t0 = time.perf_counter()
        fn()
        t_warm = min(t_warm, time.perf_counter() - t0)
    number = 1
    if t_warm < MIN_SAMPLE_S:
        number = max(1, int(math.ceil(MIN_SAMPLE_S / max(t_warm, 1e-7))))
    per_sample = t_warm * number
    reps = int(budget.cell_s / max(per_sample, 1e-9))
    reps = max(budget.min_reps, min(budget.max_reps, reps))
    if per_sample * budget.min_reps > 2 * budget.cell_s:
        reps = max(1, int(budget.cell_s // max(per_sample, 1e-9)))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    samples.sort()
    med = samples[len(samples) // 2] if len(samples) % 2 else 0.5 * (
        samples[len(samples) // 2 - 1] + samples[len(samples) // 2])
    return Timing(med, samples[0], samples[-1], reps, number, t_warm), out


def fmt_time(s: float | None) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "—"
    # Thresholds at what rounds to 1000 in 3 significant digits (0.9996 s is "1 s", not "1e+03 ms").
    if s >= 0.9995:
        return f"{s:.3g} s"
    if s >= 0.9995e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def fmt_err(e: float | None) -> str:
    if e is None:
        return "—"
    return f"{e:.1e}"


# --------------------------------------------------------------------------- machine


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def core_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def machine_tag() -> str:
    """CPU model + core count, sanitised for a file name."""
    model = cpu_model()
    model = re.sub(r"\(R\)|\(TM\)|\bCPU\b|\bProcessor\b|@.*$", "", model)
    model = re.sub(r"\b\d+-Core\b", "", model, flags=re.I)
    tag = re.sub(r"[^A-Za-z0-9]+", "-", model).strip("-")
    return f"{tag}-{core_count()}c"


def machine_info() -> dict:
    info = {
        "cpu_model": cpu_model(),
        "cores": core_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["mem_total_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        flags = open("/proc/cpuinfo").read()
        info["avx512f"] = " avx512f" in flags
        info["avx2"] = " avx2" in flags
    except OSError:
        pass
    try:
        info["load_avg_at_start"] = os.getloadavg()
    except OSError:
        pass
    return info


def git_commit(repo_root: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", repo_root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or None
    except Exception:
        return None


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    """One alternative on one workload (or one sweep cell)."""

    alternative: str
    kind: str  # "exact", "fixed-step", "adaptive", "reference", "qfleet"
    mode: str  # "fwd+grad" or "fwd"
    status: str = "ok"  # ok | skipped | not installed | error | failed-check
    reason: str | None = None
    timing: Timing | None = None
    threads: str | None = None
    errors: dict = field(default_factory=dict)  # name -> max abs error vs reference
    tolerance: float | None = None
    check: str | None = None  # "pass" | "fail" | "reported" (fixed-step: error reported, not asserted)
    counterpart: str | None = None  # qfleet row this one is compared with
    extra: dict = field(default_factory=dict)
    value: Any = None  # sweep coordinate
    result: Any = None  # extracted numpy results (not serialised)

    @property
    def max_error(self) -> float | None:
        vals = [v for v in self.errors.values() if v is not None]
        return max(vals) if vals else None

    def as_dict(self) -> dict:
        d = {
            "alternative": self.alternative,
            "kind": self.kind,
            "mode": self.mode,
            "status": self.status,
            "reason": self.reason,
            "timing": self.timing.as_dict() if self.timing else None,
            "threads": self.threads,
            "max_error": self.max_error,
            "errors": self.errors,
            "tolerance": self.tolerance,
            "check": self.check,
            "qfleet_counterpart": self.counterpart,
        }
        if self.value is not None:
            d["value"] = self.value
        if self.extra:
            d["extra"] = self.extra
        return d


def grade(row: Row) -> None:
    """Set row.check from its errors and tolerance."""
    if row.status != "ok":
        return
    e = row.max_error
    if e is None:
        row.check = None
    elif row.tolerance is None:
        row.check = "reported"
    elif e <= row.tolerance and math.isfinite(e):
        row.check = "pass"
    else:
        row.check = "fail"


class SweepGuard:
    """Skips sweep cells predicted to exceed the single-call cap.

    With one measured cell, the next is predicted as t0 * scale(v0, v); with two
    or more and `linear=True` (batch sweeps), from the straight line a + b v
    through the last two cells (overhead plus per-item cost). A cell that still
    overshoots is timed as one cold call (see `measure`) and stops the series."""

    def __init__(self, cap_s: float, scale: Callable[[Any, Any], float], linear: bool = False):
        self.cap_s = cap_s
        self.scale = scale
        self.linear = linear
        self.history: list[tuple[Any, float]] = []
        self.stopped: str | None = None

    def predict(self, value) -> float | None:
        if not self.history:
            return None
        v1, t1 = self.history[-1]
        if self.linear and len(self.history) >= 2:
            v0, t0 = self.history[-2]
            b = max(0.0, (t1 - t0) / (v1 - v0)) if v1 != v0 else 0.0
            return max(t1, t1 + b * (value - v1))
        return t1 * self.scale(v1, value)

    def check(self, value) -> str | None:
        if self.stopped:
            return self.stopped
        pred = self.predict(value)
        if pred is not None and pred > self.cap_s:
            v1, t1 = self.history[-1]
            self.stopped = (f"predicted {fmt_time(pred)} per call (from {fmt_time(t1)} at {v1}) "
                            f"> cap {fmt_time(self.cap_s)}")
            return self.stopped
        return None

    def record(self, value, seconds_per_call: float) -> None:
        self.history.append((value, seconds_per_call))
        if seconds_per_call > self.cap_s:
            self.stopped = f"previous cell took {fmt_time(seconds_per_call)} per call > cap {fmt_time(self.cap_s)}"
