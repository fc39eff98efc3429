"""Figures of the paper reproduction (qfleet-meta reproduce; docs/reproduction.md):

    python -m qfleet.meta_control.plot_reproduction OUTDIR

reads OUTDIR/<experiment>/result.json for each experiment present and writes OUTDIR/<experiment>/figure.png,
ours beside the paper's numbers (hatched bars, grey dotted lines or grey markers):
  gap-vs-k             G_K = F_K - F_0 vs K per policy and optimizer, the fit c (1 - e^{-beta K}), the paper's fit
  gap-vs-variance      G_K vs the tasks' variance and vs sigma^2 = diversity^2, with the linear fits and R^2
  out-of-distribution  mean fidelity of each method on the out-of-distribution tasks; F vs K from the meta and
                       a random initialisation
  cz                   the two-qubit CZ system: F vs K, G_K with the fit, the meta-training curve
  vs-grape             the six methods' mean fidelity (%), the paper's and ours (std over tasks)
  lemmas               the PL inequality, the Lindbladian's Lipschitz bound, the control separation
Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import math
import os
import sys

from .._files import save_figure
from .._plotting import pyplot

PROG = "qfleet.meta_control.plot_reproduction"
PAPER = {"color": "0.45", "ls": ":", "lw": 1.6}
HATCHED = {"facecolor": "white", "edgecolor": "0.4", "hatch": "///"}


class LayoutError(Exception):
    """A result.json that parses but lacks what a figure reads."""


def _nan_for_null(doc):
    """nlohmann::json writes NaN and infinities as null: read them back as NaN (plotted as gaps)."""
    if isinstance(doc, dict):
        return {k: _nan_for_null(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_nan_for_null(v) for v in doc]
    return float("nan") if doc is None else doc


def _a(np, values):
    return np.asarray(values, dtype=float)


def _paper_beta(beta):
    """The paper's beta is a number or its quoted range [lo, hi]: the middle."""
    return sum(beta) / len(beta) if isinstance(beta, list) else float(beta)


def _adapt_text(a) -> str:
    clip = f", clip {a['grad_clip']:g}" if a.get("grad_clip") else ""
    return f"{'Adam' if a['optimizer'] == 'adam' else 'SGD'} lr {a['lr']:g}{clip}"


def _finish(plt, fig, r, title, path):
    note = "   (tiny budget: checks the outputs, not the paper's numbers)" if r.get("tiny") else ""
    fig.suptitle(f"{title}\n{r['command']}{note}", fontsize=10)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def _sat(np, c, beta, K):
    return c * (1 - np.exp(-beta * K))


def gap_vs_k(plt, np, r, path):
    ours, paper = r["ours"], r["paper"]
    opts = list(dict.fromkeys(o for m in ours["models"] for o in m["runs"]))
    if not opts:
        raise LayoutError("ours.models has no runs")
    fig, axes = plt.subplots(1, len(opts), figsize=(6.2 * len(opts), 4.8), squeeze=False, layout="constrained")
    for ax, opt in zip(axes[0], opts):
        k_hi = 0
        for j, m in enumerate(ours["models"]):
            run = m["runs"].get(opt)
            if run is None:
                continue
            cv, f, col = run["curve"], run["fit_K30"], f"C{j}"
            K, g, s = _a(np, cv["K"]), _a(np, cv["mean_gap"]), _a(np, cv["std_gap"])
            k_hi = max(k_hi, K[-1])
            ax.plot(K, g, "o-", ms=2.5, color=col, label=f"{m['model']['key']}: mean over {m['tasks']} tasks (+-std)")
            ax.fill_between(K, g - s, g + s, color=col, alpha=0.15, lw=0)
            kk = np.linspace(0, f["K_max"], 200)
            ax.plot(kk, _sat(np, f["c"], f["beta"], kk), "--", color=col, lw=1.4,
                    label=(f"fit K <= {f['K_max']}: c = {f['c']:.3g}, beta = {f['beta']:.3g}, R^2 = {f['r2']:.4g}"
                           f" (K <= {run['fit_K50']['K_max']}: {run['fit_K50']['r2']:.4g})"))
        if opt == "adam" and "c" in paper:  # the paper's Fig. 3(a) used Adam 1e-4, clip 1
            kk = np.linspace(0, min(30, k_hi) if k_hi > 0 else 30, 200)
            pb = _paper_beta(paper["beta"])
            ax.plot(kk, _sat(np, paper["c"], pb, kk), **PAPER,
                    label=f"paper (Fig. 3a): c = {paper['c']:g}, beta = {pb:g}, R^2 = {paper['r2']:g}")
        a = next(m["runs"][opt]["adapt"] for m in ours["models"] if opt in m["runs"])
        ax.set_title(f"{_adapt_text(a)}", fontsize=10)
        ax.set_xlabel("adaptation steps K")
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.set_ylabel("G_K = F_K - F_0 (mean over tasks)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    keys = ", ".join(m["model"]["key"] for m in ours["models"])
    _finish(plt, fig, r, f"Adaptation gap G_K vs K, in-distribution tasks (policies {keys})", path)


def gap_vs_variance(plt, np, r, path):
    u, p = r["ours"], r["paper"]
    G, Gs = _a(np, u["G"]), _a(np, u["G_std"])
    K = u["adapt"]["steps"]
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.6), sharey=True, layout="constrained")
    panels = ((axes[0], "variance", "fit_variance", "r2_variance", "var(gamma_deph) + var(gamma_relax) of the tasks"),
              (axes[1], "sigma2", "fit_sigma2", "r2_sigma2", "sigma^2 = diversity^2"))
    for ax, xkey, fkey, pkey, xlabel in panels:
        x, f = _a(np, u[xkey]), u[fkey]
        ax.errorbar(x, G, yerr=Gs, fmt="o", ms=4, color="C0", ecolor="C0", alpha=0.8, capsize=2,
                    label=f"ours: mean over {u['tasks_per_scale']} tasks (+-std)")
        xx = np.linspace(np.nanmin(x), np.nanmax(x), 100) if len(x) else np.zeros(0)
        ax.plot(xx, f["slope"] * xx + f["intercept"], "--", color="C3",
                label=f"linear fit: slope {f['slope']:.3g}, intercept {f['intercept']:.2g}, R^2 = {f['r2']:.4g}")
        ax.set_title(f"G_{K} vs {xlabel.split(' of ')[0]}  (paper R^2 = {p[pkey]:g})", fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"G_{K} = F_{K} - F_0 ({_adapt_text(u['adapt'])})")
    _finish(plt, fig, r, f"Adaptation gap vs task diversity (policy {u['model']['key']}; paper Fig. 3b: R^2 "
            f"{p['r2_variance']:g} vs variance, {p['r2_sigma2']:g} vs sigma^2)", path)


def out_of_distribution(plt, np, r, path):
    u, p = r["ours"], r["paper"]
    K = u["adapt"]["steps"]
    cats = [("mean_task_policy", "mean-task\npolicy"), ("meta_init", "meta init\n(K = 0)"),
            ("adapted", f"meta, adapted\n(K = {K})"), ("random_init", "random init\n(K = 0)"),
            ("random_adapted", f"random, adapted\n(K = {K})"), ("per_task_grape", "per-task\nGRAPE")]
    models = u["models"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5), width_ratios=[3, 2], layout="constrained")
    ax = axes[0]
    w = 0.8 / (len(models) + 1)
    x = np.arange(len(cats))
    for j, m in enumerate(models):
        bars = ax.bar(x + (j - len(models) / 2) * w, [m[c] for c, _ in cats], w, color=f"C{j}",
                      label=f"ours, {m['model']['key']}")
        ax.bar_label(bars, fmt="%.3f", fontsize=6, rotation=90, padding=2)
    have = [(i, p[c]) for i, (c, _) in enumerate(cats) if isinstance(p.get(c), (int, float))]
    if have:
        bars = ax.bar([x[i] + (len(models) - len(models) / 2) * w for i, _ in have], [v for _, v in have], w,
                      label="paper (Fig. 4b)", **HATCHED)
        ax.bar_label(bars, fmt="%.3f", fontsize=6, rotation=90, padding=2)
    ax.set_xticks(x)
    ax.set_xticklabels([t for _, t in cats], fontsize=8)
    ax.set_ylabel(f"mean fidelity F over the {u['tasks']} tasks")
    ax.set_ylim(0, 1.15)
    ax.set_title(f"tasks around (gamma_deph, gamma_relax) = ({u['centre'][0]:g}, {u['centre'][1]:g}) "
                 f"+-{100 * u['spread']:g}%; adaptation {_adapt_text(u['adapt'])}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax = axes[1]
    for j, m in enumerate(models):
        for ckey, ls, what in (("meta_curve", "-", "meta init"), ("random_curve", "--", "random init")):
            cv = m[ckey]
            k, f, s = _a(np, cv["K"]), _a(np, cv["mean_fidelity"]), _a(np, cv["std_fidelity"])
            ax.plot(k, f, ls, marker="o", ms=2.5, color=f"C{j}", label=f"{m['model']['key']}, from {what}")
            ax.fill_between(k, f - s, f + s, color=f"C{j}", alpha=0.12, lw=0)
    pk = [(0, p.get("meta_init")), (K, p.get("adapted"))]
    pk = [(k, v) for k, v in pk if isinstance(v, (int, float))]
    if pk:
        ax.plot(*zip(*pk), "D", color=PAPER["color"], ms=6, label="paper: meta init, adapted")
    ax.set_xlabel("adaptation steps K")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("mean fidelity F (+-std over tasks)")
    ax.set_title("fidelity vs adaptation step", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    keys = ", ".join(m["model"]["key"] for m in models)
    _finish(plt, fig, r, f"Out of distribution (policies {keys})", path)


def cz(plt, np, r, path):
    u, p = r["ours"], r["paper"]
    cv, f = u["curve"], u["fit"]
    K, F, Fs = _a(np, cv["K"]), _a(np, cv["mean_fidelity"]), _a(np, cv["std_fidelity"])
    g, gs = _a(np, cv["mean_gap"]), _a(np, cv["std_gap"])
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), layout="constrained")
    ax = axes[0]
    ax.plot(K, F, "o-", ms=2.5, color="C0", label=f"ours: mean over {u['tasks']} tasks (+-std)")
    ax.fill_between(K, F - Fs, F + Fs, color="C0", alpha=0.15, lw=0)
    pts = [(k, p[n]) for k, n in ((0, "F_0"), (5, "F_5"), (30, "F_30")) if n in p]
    if pts:
        ax.plot(*zip(*pts), "D", color=PAPER["color"], ms=6, label="paper (Fig. 5): F_0, F_5, F_30")
    ax.set_xlabel("adaptation steps K")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("mean fidelity F")
    ax.set_title(f"fidelity vs K ({_adapt_text(u['adapt'])})", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.plot(K, g, "o-", ms=2.5, color="C0", label="ours: G_K (+-std)")
    ax.fill_between(K, g - gs, g + gs, color="C0", alpha=0.15, lw=0)
    kk = np.linspace(0, f["K_max"], 200)
    ax.plot(kk, _sat(np, f["c"], f["beta"], kk), "--", color="C3",
            label=f"fit: c = {f['c']:.3g}, beta = {f['beta']:.3g}, R^2 = {f['r2']:.4g}")
    if "c" in p:
        kk = np.linspace(0, max(K[-1], 1) if len(K) else 30, 200)
        ax.plot(kk, _sat(np, p["c"], _paper_beta(p["beta"]), kk), **PAPER,
                label=f"paper: c = {p['c']:g}, beta = {_paper_beta(p['beta']):g}, R^2 = {p['r2']:g}")
    ax.set_xlabel("adaptation steps K")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("G_K = F_K - F_0")
    ax.set_title("adaptation gap and c (1 - exp(-beta K))", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[2]
    tc = u["training_curve"]
    it = [q["iteration"] for q in tc]
    ax.plot(it, _a(np, [q["val_before"] for q in tc]), "o-", ms=2.5, color="tab:orange",
            label="validation, before adaptation")
    ax.plot(it, _a(np, [q["val_after"] for q in tc]), "o-", ms=2.5, color="tab:blue",
            label="validation, after adaptation")
    train = [(q["iteration"], q["train_fidelity"]) for q in tc if math.isfinite(q.get("train_fidelity", math.nan))]
    if train:
        ax.plot(*zip(*train), "s--", ms=2.5, color="tab:purple", label="meta-batch, after the inner steps (train)")
    ax.set_xlabel("meta-training iteration")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("mean fidelity F")
    ax.set_title("meta-training curve", fontsize=10)
    ax.legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    _finish(plt, fig, r, f"Two-qubit CZ (policy {u['model']['key']})", path)


def vs_grape(plt, np, r, path):
    u, p = r["ours"], r["paper"]
    names = {"robust_grape": "robust GRAPE\n(mean task)", "meta_init": "meta init\n(K = 0)", "K5": "meta,\nK = 5 SGD",
             "K10": "meta,\nK = 10 SGD", "K20": "meta,\nK = 20 SGD", "per_task_grape": "per-task\nGRAPE"}
    methods = u["methods"]
    mean, std = _a(np, u["mean_percent"]), _a(np, u["std_percent"])
    if not len(methods) == len(mean) == len(std):
        raise LayoutError("ours.methods, mean_percent and std_percent differ in length")
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(10, 4.8), layout="constrained")
    have = [(i, p[m]) for i, m in enumerate(methods) if isinstance(p.get(m), (int, float))]
    if have:
        ax.bar([x[i] - 0.2 for i, _ in have], [v for _, v in have], 0.4, label="paper (appendix)", **HATCHED)
    ax.bar(x + 0.2, mean, 0.4, yerr=std, capsize=3, color="C0", label=f"ours (+-std over {u['tasks']} tasks)")
    vals = [v for _, v in have] + list(mean - std) + list(mean + std)
    vals = [v for v in vals if np.isfinite(v)]
    lo = 0.0
    if vals:
        pad = max(0.15 * (max(vals) - min(vals)), 0.05)
        lo = max(0.0, min(vals) - pad)
        ax.set_ylim(lo, max(vals) + pad)
    ax.set_xticks(x)
    ax.set_xticklabels([names.get(m, m) for m in methods], fontsize=8)
    ax.set_ylabel("mean fidelity F (%)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    cut = "; the bars start at the axis' lower end" if lo > 0 else ""
    _finish(plt, fig, r, f"Meta-learning vs GRAPE (policy {u['model']['key']}{cut})", path)


def lemmas(plt, np, r, path):
    u = r["ours"]
    pl, lip, cs = u["pl"], u["lipschitz"], u["control_separation"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), layout="constrained")
    ax = axes[0]
    sub, hg, task = _a(np, pl["suboptimality"]), _a(np, pl["half_grad_sq"]), np.array(pl["task"], dtype=int)
    if len(sub) != len(hg) or len(sub) != len(task):
        raise LayoutError("pl.suboptimality, half_grad_sq and task differ in length")
    for t in sorted(set(task.tolist())):
        sel = task == t
        g = pl["tasks"][t] if t < len(pl["tasks"]) else None
        label = f"task {t}" + (f": gamma = ({g[0]:g}, {g[1]:g})" if g else "")
        ax.scatter(sub[sel], hg[sel], s=10, alpha=0.6, color=f"C{t}", label=label)
    pos = sub[(sub > 0) & np.isfinite(sub)]
    if len(pos):
        xx = np.geomspace(pos.min(), pos.max(), 100)
        ax.plot(xx, pl["mu_min"] * xx, "k--", lw=1.2, label=f"y = mu_min x, mu_min = {pl['mu_min']:.3g}")
        ax.plot(xx, pl["mu_median"] * xx, ":", color="0.5", lw=1.2,
                label=f"y = mu_median x ({pl['mu_median']:.3g})")
        if (hg > 0).any():
            ax.set_xscale("log")
            ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no iterate with L - L* > 1e-8", ha="center", transform=ax.transAxes)
    ax.set_xlabel("suboptimality L - L*")
    ax.set_ylabel("|grad L|^2 / 2")
    ax.set_title(f"PL inequality: {pl['points']} gradient-descent iterates", fontsize=10)
    ax = axes[1]
    td, ld = _a(np, lip["task_distance"]), _a(np, lip["lindbladian_distance"])
    ax.scatter(td, ld, s=14, color="C0", label="sampled tasks")
    xx = np.linspace(0, np.nanmax(td) if len(td) else 1, 100)
    ax.plot(xx, lip["C_L"] * xx, "k--", lw=1.2, label=f"y = C_L x, C_L = {lip['C_L']:.4g} (sampled max)")
    ax.plot(xx, lip["C_L_sup"] * xx, ":", color="C3", lw=1.4, label=f"y = C_L_sup x, C_L_sup = {lip['C_L_sup']:.4g}")
    ax.set_xlabel("|g - g_ref|_1")
    ax.set_ylabel("|L(g) - L(g_ref)|_F")
    ax.set_title("Lipschitz continuity of the Lindbladian in the task", fontsize=10)
    ax = axes[2]
    dg, du = _a(np, cs["delta_gamma"]), _a(np, cs["delta_u"])
    ax.plot(dg, du, "o", ms=4, color="C0", label="GRAPE optima")
    xx = np.linspace(0, np.nanmax(dg) if len(dg) else 1, 100)
    ax.plot(xx, cs["slope"] * xx, "--", color="C3",
            label=f"fit through 0: slope {cs['slope']:.3g}, R^2 = {cs['r2']:.4g}")
    ax.set_xlabel("delta gamma_deph = |g - g_ref|")
    ax.set_ylabel("|u*(g) - u*(g_ref)|_F")
    ax.set_title("control separation", fontsize=10)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _finish(plt, fig, r, f"The paper's lemmas, numerically (policy {u['model']['key']})", path)


FIGURES = {"gap-vs-k": gap_vs_k, "gap-vs-variance": gap_vs_variance, "out-of-distribution": out_of_distribution,
           "cz": cz, "vs-grape": vs_grape, "lemmas": lemmas}


def _error(text: str) -> int:
    print(f"{PROG}: error: {' '.join(text.split())}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description="figures of the paper reproduction")
    ap.add_argument("outdir", help="the reproduction's output directory (qfleet-meta reproduce NAME --out OUTDIR)")
    a = ap.parse_args(argv)
    plt = pyplot(PROG)
    if plt is None:
        return 2
    import numpy as np
    paths = {n: os.path.join(a.outdir, n, "result.json") for n in FIGURES}
    paths = {n: p for n, p in paths.items() if os.path.exists(p)}
    if not paths:
        return _error(f"no experiment results in {a.outdir} (looked for <experiment>/result.json, experiments: "
                      f"{', '.join(FIGURES)}; qfleet-meta reproduce all --out {a.outdir} writes them)")
    results = {}
    for name, path in paths.items():
        try:
            with open(path, encoding="utf-8") as f:
                results[name] = _nan_for_null(json.load(f))
        except OSError as e:
            return _error(f"cannot read {path}: {e.strerror}")
        except ValueError as e:
            return _error(f"{path} is not valid JSON: {e}")
        doc = results[name]
        if not isinstance(doc, dict) or not isinstance(doc.get("ours"), dict) or doc.get("experiment") != name:
            return _error(f"{path} is not the result of the {name} experiment (qfleet-meta reproduce {name} writes it)")
    for name, r in results.items():
        out = os.path.join(a.outdir, name, "figure.png")
        try:
            FIGURES[name](plt, np, r, out)
        except KeyError as e:
            return _error(f"{paths[name]} lacks the key {e} (written by another version of qfleet-meta reproduce?)")
        except (LayoutError, TypeError, ValueError, IndexError) as e:
            return _error(f"{paths[name]} does not have the layout this script reads: {e}")
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
