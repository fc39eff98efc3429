"""Plots of a qfleet-rl run (JSON in, PNG out).

    python -m qfleet.rl.plot OUTDIR [--out FOLDER]

OUTDIR holds report.json (`qfleet-rl train`) and, when `qfleet-rl compare` wrote it there,
compare.json. The figures go into OUTDIR (or FOLDER):
  learning_curve.png  the training episodes' mean final fidelity (and mean return, where the
                      reward is not the final fidelity) against env steps, the validation
                      fidelity where it was evaluated, and per-task GRAPE's mean on the same
                      validation tasks as a line (when compare.json exists)
  phases.png          seconds spent simulating, in the policy, in updates and in evaluation
A missing or damaged report is one line on stderr (SystemExit, status 1). Needs matplotlib.
"""
import argparse
import json
import math
import os
import sys

from .._files import save_figure
from .._plotting import pyplot

PROG = "qfleet.rl.plot"
DPI = 120
PHASES = ("simulate", "policy", "update", "evaluate")


def _fail(problem):
    raise SystemExit(f"{PROG}: error: {problem}")


def _read(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        _fail(f"{path} does not exist (qfleet-rl train writes it into its --out folder)")
    except OSError as e:
        _fail(f"cannot read {path}: {e.strerror}")
    except ValueError as e:
        _fail(f"{path} is not valid JSON ({e})")
    if not isinstance(doc, dict):
        _fail(f"{path} is not a JSON object")
    return doc


def _number(value, where, optional=False):
    if value is None and optional:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(f"{where} is {value!r}, not a number")
    return float(value)


def load_report(path):
    """The curve (lists by key) and the phase seconds of report.json; SystemExit naming the key."""
    doc = _read(path)
    curve = doc.get("curve")
    if not isinstance(curve, list) or not curve:
        _fail(f"{path} lacks a non-empty 'curve' list (is it qfleet-rl's report.json?)")
    rows = {"env_steps": [], "wall_s": [], "mean_final_fidelity": [], "mean_return": [], "validation": []}
    for i, row in enumerate(curve):
        if not isinstance(row, dict):
            _fail(f"{path}: curve[{i}] is not an object")
        for key in ("env_steps", "mean_final_fidelity", "mean_return"):
            if key not in row:
                _fail(f"{path} lacks the key 'curve[{i}].{key}'")
            rows[key].append(_number(row[key], f"{path}: curve[{i}].{key}"))
        rows["wall_s"].append(_number(row.get("wall_s"), f"{path}: curve[{i}].wall_s", optional=True))
        if "validation_fidelity" in row:
            v = _number(row["validation_fidelity"], f"{path}: curve[{i}].validation_fidelity", optional=True)
            if not math.isnan(v):
                rows["validation"].append((rows["env_steps"][-1], v))
    timings = doc.get("timings_s")
    phases = timings.get("phases") if isinstance(timings, dict) else None
    if not isinstance(phases, dict):
        _fail(f"{path} lacks the key 'timings_s.phases'")
    seconds = {}
    for p in PHASES:
        if p not in phases:
            _fail(f"{path} lacks the key 'timings_s.phases.{p}'")
        seconds[p] = _number(phases[p], f"{path}: timings_s.phases.{p}")
    wall = _number(timings.get("wall"), f"{path}: timings_s.wall", optional=True)
    final = doc.get("validation", {}).get("mean_fidelity") if isinstance(doc.get("validation"), dict) else None
    return {"curve": rows, "phases": seconds, "wall": wall,
            "validation_mean": _number(final, f"{path}: validation.mean_fidelity", optional=True),
            "environment": doc.get("environment", "") if isinstance(doc.get("environment", ""), str) else ""}


def load_compare(path):
    """compare.json's mean fidelities (ppo, grape, meta_adapted, robust); None when the file is absent."""
    if not os.path.exists(path):
        return None
    doc = _read(path)
    mean = doc.get("mean")
    if not isinstance(mean, dict) or "grape" not in mean:
        _fail(f"{path} lacks the key 'mean.grape' (is it qfleet-rl compare's compare.json?)")
    return {k: _number(v, f"{path}: mean.{k}", optional=True) for k, v in mean.items()}


def plot_learning_curve(plt, report, compare, out_path):
    fig = learning_curve_figure(plt, report, compare)
    save_figure(fig, out_path, dpi=DPI)
    plt.close(fig)
    return out_path


def learning_curve_figure(plt, report, compare):
    """The final fidelity against env steps, and the return beside it unless the return is
    the final fidelity (reward = final), where a second panel would repeat the first."""
    c = report["curve"]
    same = all(abs(r - f) <= 1e-6 for r, f in zip(c["mean_return"], c["mean_final_fidelity"]))
    if same:
        fig, ax_f = plt.subplots(1, 1, figsize=(6.5, 4.2))
    else:
        fig, (ax_r, ax_f) = plt.subplots(1, 2, figsize=(11, 4.2))
        ax_r.plot(c["env_steps"], c["mean_return"], color="tab:blue", marker=".", lw=1.2)
        ax_r.set_xlabel("env steps")
        ax_r.set_ylabel("mean episode return")
        ax_r.set_title("training return")
        ax_r.grid(alpha=0.3)
    ax_f.plot(c["env_steps"], c["mean_final_fidelity"], color="tab:blue", marker=".", lw=1.2,
              label="training episodes (stochastic policy)")
    if c["validation"]:
        xs, ys = zip(*c["validation"])
        ax_f.plot(xs, ys, "o", color="tab:orange", ms=5, label="validation tasks (deterministic policy)")
    if compare is not None and not math.isnan(compare.get("grape", math.nan)):
        ax_f.axhline(compare["grape"], color="tab:green", ls="--", lw=1.2,
                     label=f"per-task GRAPE mean {compare['grape']:.4f}")
        if not math.isnan(compare.get("meta_adapted", math.nan)):
            ax_f.axhline(compare["meta_adapted"], color="tab:purple", ls=":", lw=1.2,
                         label=f"meta-learned, adapted {compare['meta_adapted']:.4f}")
    ax_f.set_xlabel("env steps")
    ax_f.set_ylabel("mean final fidelity" + (" (= the episode return)" if same else ""))
    ax_f.set_title("final fidelity" + (f" (validation {report['validation_mean']:.4f})"
                                       if not math.isnan(report["validation_mean"]) else ""))
    ax_f.grid(alpha=0.3)
    ax_f.legend(fontsize=8, loc="lower right")
    if report["environment"]:
        fig.suptitle(report["environment"].split(";")[0], fontsize=9)
    fig.tight_layout()
    return fig


def plot_phases(plt, report, out_path):
    secs = [report["phases"][p] for p in PHASES]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    bars = ax.bar(PHASES, secs, color=["tab:blue", "tab:orange", "tab:green", "tab:red"])
    for b, s in zip(bars, secs):
        ax.annotate(f"{s:.3g} s", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("seconds")
    title = "where the training time went"
    if not math.isnan(report["wall"]):
        title += f" (wall {report['wall']:.3g} s)"
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out_path, dpi=DPI)
    plt.close(fig)
    return out_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description="plots of a qfleet-rl run")
    ap.add_argument("outdir", metavar="OUTDIR", help="the run's folder (report.json, optionally compare.json)")
    ap.add_argument("--out", metavar="FOLDER", help="write the figures here instead of into OUTDIR")
    a = ap.parse_args(argv)
    report = load_report(os.path.join(a.outdir, "report.json"))
    compare = load_compare(os.path.join(a.outdir, "compare.json"))
    plt = pyplot(PROG)
    if plt is None:
        raise SystemExit(2)
    out_dir = a.out or a.outdir
    try:
        os.makedirs(out_dir, exist_ok=True)
        for written in (plot_learning_curve(plt, report, compare, os.path.join(out_dir, "learning_curve.png")),
                        plot_phases(plt, report, os.path.join(out_dir, "phases.png"))):
            print(written)
    except OSError as e:
        _fail(f"cannot write into {out_dir}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
