"""Plots of a meta-control run (qfleet-meta or python -m qfleet.meta_control):

    python -m qfleet.meta_control.plot OUTDIR

reads OUTDIR/report.json and OUTDIR/pulses.json and writes into OUTDIR
  training_curve.png     validation fidelity before/after adaptation and the meta-batch's
                         fidelity vs iteration, with the robust and GRAPE baselines
  pulses.png             robust, meta (before/after adaptation) and GRAPE pulses of up to
                         three validation tasks, each control vs time
  fidelity_vs_noise.png  per-task fidelity after adaptation, robust and GRAPE vs the
                         dephasing and the relaxation rate
  adaptation_gap.png     per task: GRAPE - before, GRAPE - after, GRAPE - robust
  gap_vs_k.png           mean fidelity vs adaptation step K in and out of distribution, with the robust and
                         GRAPE means and the report's conclusion as caption (reports with "adaptation" only)
Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import math
import os
import sys
import textwrap

from .._files import save_figure
from .._plotting import pyplot

PROG = "qfleet.meta_control.plot"
COLORS = {"robust": "tab:gray", "meta_before": "tab:orange", "meta_adapted": "tab:blue", "grape": "tab:green"}
LABELS = {"robust": "robust pulse (one for all)", "meta_before": "meta policy, no adaptation",
          "meta_adapted": "meta policy, adapted", "grape": "per-task GRAPE"}


OPTIMIZERS = {"sgd": "SGD", "adam": "Adam"}


def _adaptation(report) -> str:
    """'5 SGD steps' / '30 Adam steps': the adaptation the run's validation used."""
    opt = report["config"].get("adapt_optimizer", "sgd")
    return f"{report['validation']['adapt_steps']} {OPTIMIZERS.get(opt, opt)} steps"


def _subtitle(report) -> str:
    """One line: the method, the system, the figure of merit, the solver."""
    cfg, s = report["config"], report["solver"]
    fid = "average gate F" if cfg["fidelity"] == "average_gate" else "state-transfer F"
    solver = s["name"] + (f" dt {s['dt']:g}" if s["dt"] else "") + f" {s['precision']}"
    return f"{report['algorithm']}, {report['system']['name']}, {fid}, {solver}"


def _title(fig, title, report):
    fig.suptitle(f"{title}\n{_subtitle(report)}", fontsize=10)


def training_curve(plt, report, path):
    fig = training_curve_figure(plt, report)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def training_curve_figure(plt, report):
    curve, v = report["curve"], report["validation"]
    it = [p["iteration"] for p in curve]
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.plot(it, [p["val_before"] for p in curve], "o-", color=COLORS["meta_before"], ms=3,
            label="validation, before adaptation")
    ax.plot(it, [p["val_after"] for p in curve], "o-", color=COLORS["meta_adapted"], ms=3,
            label=f"validation, after {_adaptation(report)}")
    train = [(p["iteration"], p["train_fidelity"]) for p in curve
             if p["train_fidelity"] is not None and math.isfinite(p["train_fidelity"])]
    if train:
        ax.plot(*zip(*train), "s--", color="tab:purple", ms=3, label="meta-batch, after the inner steps (train)")
    # The axis spans the curve, so a short run's progress shows; a baseline outside it is
    # named with its value instead of stretching the axis to it.
    ys = [p[k] for p in curve for k in ("val_before", "val_after")] + [f for _, f in train]
    lo, hi = min(ys), max(ys)
    pad = max(0.1 * (hi - lo), 0.002)
    lo, hi = lo - pad, hi + pad
    ax.set_ylim(lo, hi)
    for key, color, name in (("mean_robust", COLORS["robust"], "robust pulse"),
                             ("mean_grape", COLORS["grape"], "per-task GRAPE")):
        f = v[key]
        where = "above the axis" if f > hi else "below the axis" if f < lo else None
        label = f"{name}, validation mean {f:.4f}" + (f" ({where})" if where else "")
        if where:
            ax.plot([], [], color=color, ls=":", label=label)
        else:
            ax.axhline(f, color=color, ls=":", label=label)
    ax.set_xlabel("meta-training iteration")
    ax.set_ylabel("mean fidelity F")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _title(fig, "Meta-training curve", report)
    return fig


def _pick_tasks(tasks, n=3):
    """Up to n validation tasks spread over the dephasing rate (lowest, median, highest)."""
    order = sorted(range(len(tasks)), key=lambda i: tasks[i]["gamma_deph"])
    picks = [order[0], order[len(order) // 2], order[-1]][:n] if len(order) >= 3 else order
    return list(dict.fromkeys(picks))


def pulses(plt, report, pj, path):
    dt, controls = pj["segment_duration"], pj["controls"]
    picks = _pick_tasks(pj["tasks"])
    fig, axes = plt.subplots(len(picks), len(controls), figsize=(3.6 * len(controls), 2.8 * len(picks)),
                             squeeze=False, sharex=True, layout="constrained")
    for r, b in enumerate(picks):
        task, rt = pj["tasks"][b], report["validation"]["tasks"][b]
        sets = {"robust": pj["robust"], "meta_before": task["meta_before"], "meta_adapted": task["meta_adapted"],
                "grape": task["grape"]}
        fids = {"robust": rt["fidelity_robust"], "meta_before": rt["fidelity_before"],
                "meta_adapted": rt["fidelity_after"], "grape": rt["fidelity_grape"]}
        for k, name in enumerate(controls):
            ax = axes[r][k]
            for kind, u in sets.items():
                y = [row[k] for row in u]
                t = [i * dt for i in range(len(y) + 1)]
                ax.step(t, y + y[-1:], where="post", color=COLORS[kind], lw=1.2,
                        label=f"{LABELS[kind]} (F = {fids[kind]:.4f})")
            if r == 0:
                ax.set_title(f"control {name}", fontsize=10)
            ax.set_ylabel((f"task {b}: gamma_deph = {task['gamma_deph']:.3f},\ngamma_relax = "
                           f"{task['gamma_relax']:.3f}\n" if k == 0 else "") + f"u_{name}(t)  [rad / time]",
                          fontsize=8)
            ax.grid(alpha=0.3)
            if r == len(picks) - 1:
                ax.set_xlabel("time t")
        axes[r][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), title=f"task {b}",
                           title_fontsize=7)
    _title(fig, "Control pulses (piecewise constant)", report)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def fidelity_vs_noise(plt, report, path):
    tasks = report["validation"]["tasks"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True, layout="constrained")
    series = [("fidelity_after", "meta_adapted", "o"), ("fidelity_robust", "robust", "^"),
              ("fidelity_grape", "grape", "s")]
    for ax, key, label in ((axes[0], "gamma_deph", "dephasing rate gamma_deph"),
                           (axes[1], "gamma_relax", "relaxation rate gamma_relax")):
        for field, kind, marker in series:
            ax.scatter([t[key] for t in tasks], [t[field] for t in tasks], marker=marker, s=22, alpha=0.8,
                       color=COLORS[kind], label=LABELS[kind])
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fidelity F of the validation task")
    axes[0].legend(fontsize=8)
    _title(fig, "Fidelity vs noise (validation tasks)", report)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def adaptation_gap(plt, report, path):
    tasks = report["validation"]["tasks"]
    n = len(tasks)
    bars = [("GRAPE - before adaptation", "fidelity_before", "meta_before"),
            ("GRAPE - after adaptation", "fidelity_after", "meta_adapted"),
            ("GRAPE - robust pulse", "fidelity_robust", "robust")]
    w = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.45 * n + 2), 4.5), layout="constrained")
    for j, (label, field, kind) in enumerate(bars):
        ax.bar([i + (j - 1) * w for i in range(n)], [t["fidelity_grape"] - t[field] for t in tasks], w,
               color=COLORS[kind], label=label)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(n))
    ax.set_xticklabels([str(i) for i in range(n)], fontsize=7)
    ax.set_xlabel("validation task")
    ax.set_ylabel("fidelity gap to per-task GRAPE")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    _title(fig, "Optimality gap per task (smaller is better)", report)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def gap_vs_k(plt, report, path):
    ad = report["adaptation"]
    regimes = [(k, t) for k, t in (("in_distribution", "In distribution"),
                                    ("out_of_distribution", "Out of distribution")) if k in ad]
    a = ad["adapt"]
    adapt = f"{a['optimizer']}, lr {a['lr']:g}" + (f", gradient clip {a['grad_clip']:g}" if a.get("grad_clip") else "")
    width = 5.8 * len(regimes)
    fig, axes = plt.subplots(1, len(regimes), figsize=(width, 5.2), squeeze=False, layout="constrained")
    for ax, (key, name) in zip(axes[0], regimes):
        g = ad[key]
        K, F = g["K"], g["mean_fidelity"]
        ax.plot(K, F, "o-", color=COLORS["meta_adapted"], ms=3,
                label=f"meta policy after K steps (G_{K[-1]} = F_{K[-1]} - F_0 = {g['gap'][-1]:.4g})")
        for kind, field in (("robust", "mean_robust"), ("grape", "mean_grape")):
            ax.axhline(g[field], color=COLORS[kind], ls=":", label=f"{LABELS[kind]}: {g[field]:.4f}")
        where = f" around ({g['centre'][0]:g}, {g['centre'][1]:g}) +-{100 * g['spread']:g}%" if "centre" in g else ""
        dr, rr = g["gamma_deph_range"], g["gamma_relax_range"]
        ax.set_title(f"{name}: {g['tasks']} tasks{where}\ngamma_deph in [{dr[0]:.3g}, {dr[1]:.3g}], gamma_relax in "
                     f"[{rr[0]:.3g}, {rr[1]:.3g}]\nadapted - robust = {g['adapted_minus_robust']:.3g} "
                     f"+- {g['adapted_minus_robust_se']:.2g} (standard error over tasks)", fontsize=8)
        ax.set_xlabel(f"adaptation steps K ({adapt})")
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("mean fidelity F over the tasks")
    if report.get("conclusion"):  # supxlabel: the caption constrained layout makes room for
        fig.supxlabel(textwrap.fill(report["conclusion"], width=int(15 * width)), x=0.01, ha="left", fontsize=7.5)
    _title(fig, "Adaptation: mean fidelity vs adaptation step", report)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description="plots of a meta-control run")
    ap.add_argument("outdir", help="the run's output directory (report.json, pulses.json)")
    a = ap.parse_args(argv)
    plt = pyplot(PROG)
    if plt is None:
        return 2
    docs = {}
    for name in ("report.json", "pulses.json"):
        path = os.path.join(a.outdir, name)
        try:
            with open(path, encoding="utf-8") as f:
                docs[name] = json.load(f)
        except OSError as e:
            print(f"{PROG}: error: cannot read {path}: {e.strerror} (a finished run writes it: "
                  f"python -m qfleet.meta_control --out {a.outdir})", file=sys.stderr)
            return 2
        except ValueError as e:
            print(f"{PROG}: error: {path} is not valid JSON: {e}", file=sys.stderr)
            return 2
    report, pj = docs["report.json"], docs["pulses.json"]
    out = {n: os.path.join(a.outdir, n) for n in ("training_curve.png", "pulses.png", "fidelity_vs_noise.png",
                                                   "adaptation_gap.png")}
    training_curve(plt, report, out["training_curve.png"])
    pulses(plt, report, pj, out["pulses.png"])
    fidelity_vs_noise(plt, report, out["fidelity_vs_noise.png"])
    adaptation_gap(plt, report, out["adaptation_gap.png"])
    if "adaptation" in report:  # reports before the adaptation-gap analysis have none
        out["gap_vs_k.png"] = os.path.join(a.outdir, "gap_vs_k.png")
        gap_vs_k(plt, report, out["gap_vs_k.png"])
    for p in out.values():
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
