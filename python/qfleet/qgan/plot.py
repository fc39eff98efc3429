"""Plots of qfleet-qgan's results: a trained quantum GAN and a device tournament.

    python -m qfleet.qgan.plot DIR [DIR ...] [--out FOLDER]

Each DIR holds report.json (`qfleet-qgan train`), tournament.json (`qfleet-qgan
tournament`) and/or classifier.json (`qfleet-qgan classify`), directly or in DIR/qgan,
DIR/tournament and DIR/classifier (a suite's folder); a DIR may also be one of those files. The figures go next to each JSON file, or into FOLDER (into
FOLDER/<name of DIR> when several DIRs are given):
  qgan_distribution.png        target and generated distribution: bars side by side (1-D), or two
                               heat maps on one colour scale (2-D: a 2-D Gaussian, an image)
  qgan_metrics.png             KL (both directions) and KS per epoch on a log axis; the losses
  tournament_js.png            mean Jensen-Shannon distance between every two devices
  tournament_shots.png         shots a likelihood-ratio test needs to tell two devices apart
  tournament_ranking.png       points per device, and its mean JS distance to the reference (when ranked)
  tournament_distributions.png each circuit's outcome distribution on every device
  tournament_validation.png    finite-shot estimates (with bootstrap intervals) against the exact
                               JS and total-variation distances, every pair (when sampled with shots)
  classifier_accuracy.png      the device classifier's accuracy against shots per record, beside the
                               Bayes limit and chance
  classifier_confusion.png     its confusion matrix over the devices, per shot count
Numbers may be the string "inf" (an infinite divergence). Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import math
import os
import sys
import textwrap

import numpy as np

from .._files import save_figure
from .._plotting import pyplot

PROG = "qfleet.qgan.plot"
DPI = 120
NONFINITE = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "-inf": -math.inf, "-infinity": -math.inf,
             "nan": math.nan}
_LOOKUP = object()  # number()'s default: read the value at the key


class ReportError(Exception):
    """A result that cannot be plotted; the message names the file (or dict) and the key."""


class _Doc:
    """Reads one JSON document by dotted keys ("pairs[3].finite_shots.shots"); every problem is a
    ReportError naming the file and the key, so a damaged file is one line, not a traceback."""

    def __init__(self, doc, where):
        self.doc, self.where = doc, where

    def fail(self, problem):
        raise ReportError(f"{self.where}: {problem}")

    def get(self, dotted, kind=None):
        value = self.doc
        for key in dotted.replace("[", ".[").split("."):
            index = int(key[1:-1]) if key.startswith("[") else key
            if not (isinstance(value, list) and isinstance(index, int) and index < len(value)
                    or isinstance(value, dict) and index in value):
                raise ReportError(f"{self.where} lacks the key {dotted!r}")
            value = value[index]
        if kind is not None and not isinstance(value, kind):
            self.fail(f"{dotted} is not a {kind.__name__}")
        return value

    def number(self, dotted, value=_LOOKUP):
        value = self.get(dotted) if value is _LOOKUP else value
        if isinstance(value, str) and value.strip().lower() in NONFINITE:
            return NONFINITE[value.strip().lower()]
        if value is None:  # a statistic the app could not compute
            return math.nan
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"{dotted} is {value!r}, not a number")
        return float(value)

    def count(self, dotted, least=0):
        value = self.get(dotted)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            self.fail(f"{dotted} is {value!r}, not a whole number >= {least}")
        return value

    def numbers(self, dotted, length=None, values=_LOOKUP):
        values = self.get(dotted, list) if values is _LOOKUP else values
        if not isinstance(values, list) or length is not None and len(values) != length:
            self.fail(f"{dotted} is not a list of {length or 'some'} numbers")
        return np.array([self.number(f"{dotted}[{i}]", v) for i, v in enumerate(values)], dtype=float)


def _fmt(value, digits=3):
    return "inf" if value == math.inf else "n/a" if math.isnan(value) else f"{value:.{digits}g}"


def _wrap(text, fig):
    return textwrap.fill(text, width=int(14 * fig.get_figwidth()))  # about the 9-point characters an inch holds


def _save(plt, fig, out_dir, name):
    path = os.path.join(out_dir, name)
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return path


def _plt(out_dir):
    plt = pyplot(PROG)
    if plt is None:
        raise ReportError("matplotlib is not installed")
    os.makedirs(out_dir, exist_ok=True)
    return plt


# ---------------------------------------------------------------- qGAN training run (report.json)

def _qgan_data(report, where):
    d = _Doc(report, where)
    rows, cols = d.count("target.rows", 1), d.count("target.cols", 1)
    r = {"rows": rows, "cols": cols, "name": str(d.get("target.name")), "description": str(d.get("target.description")),
         "target": d.numbers("target.probabilities", rows * cols),
         "generated": d.numbers("final.probabilities", rows * cols),
         "x": d.numbers("target.x", cols), "x_label": str(d.get("target.x_label")),
         "y": d.numbers("target.y", rows) if rows > 1 else None,
         "y_label": str(d.get("target.y_label")) if rows > 1 else "",
         "qubits": d.count("generator.n_qubits"), "reps": d.get("generator.reps"),
         "noise": d.get("generator.noise_model"), "simulator": d.get("generator.simulator"),
         "epochs": d.count("final.epochs"), "seconds": d.number("timing.seconds"),
         "epoch_ms": d.number("timing.epoch_ms")}
    for key in ("kl", "kl_reverse", "ks"):
        r[key] = d.number(f"final.{key}")
    history = d.get("history", list)
    for key in ("epoch", "kl", "kl_reverse", "ks", "loss_g", "loss_d"):
        r["h_" + key] = np.array([d.number(f"history[{i}].{key}") for i in range(len(history))], dtype=float)
    return r


def _generator_text(r):
    noise = f"noise model {r['noise']}" if r["noise"] else "noiseless"
    return f"{r['qubits']}-qubit generator, {r['reps']} reps, {r['simulator']}, {noise}"


def _edges(centres):
    """The span of cells centred on equally spaced centres (one cell: width 1)."""
    step = (centres[-1] - centres[0]) / (len(centres) - 1) if len(centres) > 1 else 1.0
    return centres[0] - step / 2, centres[-1] + step / 2


def _distribution(plt, r, out_dir):
    if r["rows"] == 1:
        n, x = r["cols"], r["x"]
        fig, ax = plt.subplots(figsize=(min(20.0, max(8.0, 0.12 * n + 5)), 4.8), layout="constrained")
        if n <= 128:
            width = 0.4 * ((np.min(np.abs(np.diff(x))) or 1.0) if n > 1 else 1.0)
            ax.bar(x - width / 2, r["target"], width, color="tab:gray", label="target")
            ax.bar(x + width / 2, r["generated"], width, color="tab:blue", label="generated")
        else:  # too many bins for bars to be seen: steps
            ax.step(x, r["target"], where="mid", color="tab:gray", label="target")
            ax.step(x, r["generated"], where="mid", color="tab:blue", label="generated")
        ax.set(xlabel=r["x_label"], ylabel="probability")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    else:
        # Each row is drawn at its centre y; an image keeps its first row on top (a PGM's first row is
        # its top row), a distribution gets a y axis that grows upwards.
        image = "image" in f"{r['name']} {r['description']}".lower() or r["name"].lower().endswith(".pgm")
        side = 4.4 if r["cols"] <= 16 else 5.2
        fig, axes = plt.subplots(1, 2, figsize=(2 * side + 1.4, side + 1.3), layout="constrained")
        vmax = max(np.nanmax(r["target"]), np.nanmax(r["generated"])) or 1.0
        (x0, x1), (y0, y1) = _edges(r["x"]), _edges(r["y"])
        for ax, key in zip(axes, ("target", "generated")):
            grid = r[key].reshape(r["rows"], r["cols"])
            im = ax.imshow(grid, cmap="gray" if image else "viridis", vmin=0, vmax=vmax, origin="upper",
                           extent=(x0, x1, y1, y0), interpolation="nearest", aspect="auto")
            if grid.size <= 100:  # the probabilities in the cells while they fit
                for (i, j), p in np.ndenumerate(grid):
                    ax.text(r["x"][j], r["y"][i], f"{p:.3f}", ha="center", va="center", fontsize=6,
                            color="white" if p < 0.6 * vmax else "black")
            if not image:
                ax.set_ylim(min(y0, y1), max(y0, y1))
            ax.set_box_aspect(r["rows"] / r["cols"])  # square cells whatever the units of x and y
            ax.set(title=key, xlabel=r["x_label"], ylabel=r["y_label"])
        fig.colorbar(im, ax=list(axes), shrink=0.85, label="probability")
    fig.suptitle(_wrap(f"qGAN on {r['name']} ({r['rows']}x{r['cols']} bins) after {r['epochs']} epochs: KL(gen || "
                       f"target) {_fmt(r['kl'])}, KL(target || gen) {_fmt(r['kl_reverse'])}, KS {_fmt(r['ks'])}; "
                       f"{_generator_text(r)}. {r['description']}", fig), fontsize=9)
    return _save(plt, fig, out_dir, "qgan_distribution.png")


def _metrics(plt, r, out_dir):
    fig, (ax_div, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    epochs = r["h_epoch"]
    style = "o-" if len(epochs) <= 30 else "-"  # markers: one epoch is a single point, which a line does not draw
    drawn = 0
    # the app's kl is KL(generated || target), kl_reverse KL(target || generated)
    for key, label, color in (("kl", "KL(gen || target)", "tab:blue"),
                              ("kl_reverse", "KL(target || gen)", "tab:orange"), ("ks", "KS", "tab:green")):
        values = r["h_" + key]
        keep = np.isfinite(values) & (values > 0)  # a log axis shows neither 0 nor inf
        drawn += int(keep.sum())
        skipped = len(values) - int(keep.sum())
        note = f"; {skipped} epochs not shown (inf or 0)" if skipped else ""
        ax_div.plot(epochs[keep], values[keep], style, ms=3, color=color, label=f"{label} (final {_fmt(r[key])}){note}")
    if drawn:
        ax_div.set_yscale("log")
    else:
        ax_div.text(0.5, 0.5, "no positive finite values", ha="center", va="center", transform=ax_div.transAxes)
    ax_div.set(ylabel="divergence from the target", title="KL (both directions) and KS distance")
    ax_loss.plot(epochs, r["h_loss_g"], style, ms=3, color="tab:blue", label="generator")
    ax_loss.plot(epochs, r["h_loss_d"], style, ms=3, color="tab:red", label="discriminator")
    ax_loss.set(ylabel="loss", title="Losses")
    for ax in (ax_div, ax_loss):
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if len(epochs):
            ax.legend(fontsize=8)
    fig.suptitle(_wrap(f"qGAN training on {r['name']}: {_generator_text(r)}; {r['epochs']} epochs in "
                       f"{_fmt(r['seconds'])} s ({_fmt(r['epoch_ms'])} ms per epoch)", fig), fontsize=9)
    return _save(plt, fig, out_dir, "qgan_metrics.png")


def plot_qgan(report: dict, out_dir, source=None) -> list:
    """Draws qgan_distribution.png and qgan_metrics.png of a `qfleet-qgan train` report into out_dir
    and returns their paths; ReportError (naming `source`, else "the qGAN report") for a missing key."""
    r = _qgan_data(report, source or "the qGAN report")
    plt = _plt(out_dir)
    return [_distribution(plt, r, out_dir), _metrics(plt, r, out_dir)]


# ---------------------------------------------------------------- device tournament (tournament.json)

def _tournament_data(t, where):
    d = _Doc(t, where)
    r = {"confidence": d.number("confidence"), "seed": d.get("seed"),
         "devices": [str(d.get(f"devices[{i}].name")) for i in range(len(d.get("devices", list)))],
         "circuits": [(str(d.get(f"circuits[{i}].name")), d.count(f"circuits[{i}].n_qubits"))
                      for i in range(len(d.get("circuits", list)))], "distributions": {}}
    table = d.get("distributions", dict)
    for c, _ in r["circuits"]:  # looked up by hand: a name may hold a dot
        for dev in r["devices"]:
            if not isinstance(table.get(c), dict) or dev not in table[c]:
                raise ReportError(f"{where} lacks the key 'distributions.{c}.{dev}'")
            r["distributions"].setdefault(c, {})[dev] = d.numbers(f"distributions.{c}.{dev}", values=table[c][dev])
    r["names"] = [str(v) for v in d.get("matrix.devices", list)]
    n = len(r["names"])  # the matrices' order
    for key in ("js_distance", "log10_shots"):
        if len(d.get(f"matrix.{key}", list)) != n:
            d.fail(f"matrix.{key} does not have a row for each of the {n} devices")
        r[key] = np.array([d.numbers(f"matrix.{key}[{i}]", n) for i in range(n)], dtype=float).reshape(n, n)
    ranking = d.get("ranking")  # null without a noiseless reference to rank against
    r["ranking"] = None if ranking is None else [
        {"device": str(d.get(f"ranking[{i}].device")), "rank": d.count(f"ranking[{i}].rank"),
         "points": d.number(f"ranking[{i}].points"), "mean_js": d.number(f"ranking[{i}].mean_js_to_reference"),
         "wld": tuple(d.count(f"ranking[{i}].{k}") for k in ("wins", "losses", "draws"))}
        for i in range(len(d.get("ranking", list)))]
    r["pairs"] = []
    for i in range(len(d.get("pairs", list))):
        p = f"pairs[{i}]"
        pair = {"circuit": str(d.get(f"{p}.circuit"))}
        sampled = d.get(p, dict).get("finite_shots") is not None  # absent when the tournament ran without shots
        if sampled:
            level = d.get(f"{p}.finite_shots", dict).get("level")
            pair.update(shots=d.count(f"{p}.finite_shots.shots"),
                        level=r["confidence"] if level is None else d.number(f"{p}.finite_shots.level"))
        for stat in ("js_distance", "total_variation"):
            pair[stat] = d.number(f"{p}.{stat}")
            if sampled:
                pair[stat + "_est"] = tuple(d.number(f"{p}.finite_shots.{stat}.{k}") for k in ("value", "low", "high"))
        r["pairs"].append(pair)
    return r


def _heatmap(plt, r, key, out_dir, name, cmap, text, colorbar, title):
    names, n = r["names"], len(r["names"])
    side = max(5.0, 0.75 * n + 3)
    fig, ax = plt.subplots(figsize=(side + 1.3, side), layout="constrained")
    values = r[key].copy()
    if key == "log10_shots":
        np.fill_diagonal(values, np.nan)  # a device against itself: nothing to tell apart
    colours = plt.get_cmap(cmap).with_extremes(bad="white" if key == "log10_shots" else "lightgrey")
    im = ax.imshow(np.ma.masked_invalid(values), cmap=colours, interpolation="nearest")
    font = max(5, min(9, 110 // max(n, 1)))
    ax.set_xticks(range(n), names, rotation=40, ha="right", rotation_mode="anchor", fontsize=font)
    ax.set_yticks(range(n), names, fontsize=font)
    for (i, j), v in np.ndenumerate(values):
        label = text(v, i, j)
        if label:  # white on dark cells, black on light ones
            red, green, blue, _ = im.cmap(im.norm(v)) if np.isfinite(v) else (1, 1, 1, 1)
            ax.text(j, i, label, ha="center", va="center", fontsize=font,
                    color="white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black")
    fig.colorbar(im, ax=ax, shrink=0.8, label=colorbar)
    fig.suptitle(_wrap(title, fig), fontsize=9)
    return _save(plt, fig, out_dir, name)


def _shots_text(log10, i, j):
    """10 ** log10 shots as "3.2k"; the diagonal blank; inf (same distribution on some circuit) as "∞"."""
    if i == j or not math.isfinite(log10):
        return "" if i == j else "∞" if log10 > 0 else "n/a"
    n = 10 ** log10
    for limit, unit in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= limit:
            return f"{n / limit:.2g}{unit}" if n / limit < 10 else f"{n / limit:.0f}{unit}"
    return f"{n:.0f}"


def _ranking(plt, r, out_dir):
    ranking = sorted(r["ranking"], key=lambda e: e["rank"])
    n, ys = len(ranking), np.arange(len(ranking))
    fig, axes = plt.subplots(1, 2, figsize=(11, max(3.0, 0.42 * n + 1.8)), sharey=True, layout="constrained")
    for ax, key, color, label in ((axes[0], "points", "tab:blue", "points (labels: wins-losses-draws)"),
                                  (axes[1], "mean_js", "tab:orange", "mean Jensen-Shannon distance to the reference")):
        values = [e[key] if math.isfinite(e[key]) else 0.0 for e in ranking]
        ax.barh(ys, values, color=color, height=0.6)
        for y, v, e in zip(ys, values, ranking):
            ax.text(v, y, "  %d-%d-%d" % e["wld"] if key == "points" else f"  {_fmt(e[key])}", va="center", fontsize=7)
        ax.set_xlim(0, (max(values, default=0) or 1.0) * 1.25)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, [f"{e['rank']}. {e['device']}" for e in ranking], fontsize=8)
    axes[0].invert_yaxis()  # rank 1 on top
    fig.suptitle(f"Tournament ranking: {n} devices, {len(r['circuits'])} circuits (seed {r['seed']})", fontsize=9)
    return _save(plt, fig, out_dir, "tournament_ranking.png")


def _distributions(plt, r, out_dir):
    circuits, devices = r["circuits"], r["devices"]
    ncols = min(len(circuits), 3 if len(circuits) <= 6 else 4) or 1
    nrows = max(1, math.ceil(len(circuits) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.9 * ncols + 0.5, 2.8 * nrows + 1.0), squeeze=False,
                             layout="constrained")
    colours = plt.get_cmap("tab10" if len(devices) <= 10 else "tab20")
    for k, ax in enumerate(axes.flat):
        if k >= len(circuits):
            ax.set_visible(False)
            continue
        name, qubits = circuits[k]
        for i, dev in enumerate(devices):
            p = r["distributions"][name][dev]
            ax.step(np.arange(len(p)), p, where="mid", lw=1.0, color=colours(i % colours.N), alpha=0.85, label=dev)
        ax.set_title(f"{name} ({qubits} qubits)", fontsize=9)
        ax.set_xlabel("outcome index", fontsize=8)
        ax.set_ylabel("probability", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), fontsize=8, loc="outside lower center",
               ncol=min(len(devices), 5) or 1)
    fig.suptitle("Outcome distributions of every circuit on every device", fontsize=10)
    return _save(plt, fig, out_dir, "tournament_distributions.png")


def _validation(plt, r, out_dir):
    sampled = [p for p in r["pairs"] if "shots" in p]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.4), layout="constrained")
    named = [c for c, _ in r["circuits"]]
    circuits = named + sorted({p["circuit"] for p in sampled} - set(named))
    colours = plt.get_cmap("tab10" if len(circuits) <= 10 else "tab20")
    for ax, stat, label in zip(axes, ("js_distance", "total_variation"),
                               ("Jensen-Shannon distance", "total variation")):
        covered = total = 0
        for k, circuit in enumerate(circuits):
            pairs = [p for p in sampled if p["circuit"] == circuit]
            if not pairs:
                continue
            x = np.array([p[stat] for p in pairs])
            v, lo, hi = (np.array(a) for a in zip(*(p[stat + "_est"] for p in pairs)))
            ax.errorbar(x, v, yerr=[np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)], fmt="o", ms=4, capsize=2,
                        lw=0.9, color=colours(k % colours.N), label=circuit)
            covered += int(np.sum((lo <= x) & (x <= hi)))
            total += len(pairs)
        finite = [v for p in sampled for v in (p[stat], p[stat + "_est"][2]) if math.isfinite(v)]
        top = max(finite, default=0.0) * 1.05 or 1.0
        ax.plot([0, top], [0, top], "k--", lw=0.8, label="y = x")
        ax.set(xlim=(0, top), ylim=(0, top), aspect="equal", xlabel=f"exact {label}",
               ylabel="estimate from finite shots")
        ax.set_title(f"{label}: {covered} of {total} intervals contain the exact value", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left")
    shots = ", ".join(map(str, sorted({p["shots"] for p in sampled})))
    levels = ", ".join(sorted({f"{100 * p['level']:.0f}%" for p in sampled}))
    fig.suptitle(_wrap(f"Finite-shot estimates ({shots} shots per device) against the exact values, every pair of "
                       f"devices on every circuit; points and error bars: bias-corrected estimates and {levels} basic-bootstrap intervals", fig),
                 fontsize=9)
    return _save(plt, fig, out_dir, "tournament_validation.png")


def plot_tournament(t: dict, out_dir, source=None) -> list:
    """Draws the tournament_*.png figures of a `qfleet-qgan tournament` result into out_dir and returns
    their paths (no ranking without a ranking, no validation without finite-shot estimates);
    ReportError (naming `source`, else "the tournament") for a missing key."""
    r = _tournament_data(t, source or "the tournament")
    plt = _plt(out_dir)
    n, confidence = len(r["circuits"]), 100 * r["confidence"]
    paths = [
        _heatmap(plt, r, "js_distance", out_dir, "tournament_js.png", "viridis", lambda v, i, j: _fmt(v, 2),
                 "Jensen-Shannon distance (natural log; mean over circuits)",
                 f"Jensen-Shannon distance between the devices' outcome distributions, mean over {n} circuits"),
        _heatmap(plt, r, "log10_shots", out_dir, "tournament_shots.png", "viridis_r", _shots_text,
                 "log10 shots (mean over circuits)",
                 f"Shots a likelihood-ratio test needs to tell two devices apart at {confidence:.0f}% confidence "
                 f"(geometric mean over {n} circuits; fewer: more different; ∞: the same distribution on a circuit)")]
    if r["ranking"] is not None:
        paths.append(_ranking(plt, r, out_dir))
    paths.append(_distributions(plt, r, out_dir))
    if any("shots" in p for p in r["pairs"]):
        paths.append(_validation(plt, r, out_dir))
    return paths


# ---------------------------------------------------------------- command line

FILES = {"report.json": "qgan", "tournament.json": "tournament", "classifier.json": "classifier"}
APPS = {"qgan": "qfleet-qgan train", "tournament": "qfleet-qgan tournament", "classifier": "qfleet-qgan classify"}


def plot_classifier(doc: dict, out_dir, source=None) -> list:
    """Draws the classifier_*.png figures of a `qfleet-qgan classify` result into out_dir; returns their paths."""
    from .plot_classifier import classifier_data, plot_classifier as draw

    classifier_data(doc, source or "the classifier")  # a damaged file fails before a figure is drawn
    plt = _plt(out_dir)
    return draw(plt, doc, source or "the classifier", lambda fig, name: _save(plt, fig, out_dir, name))


PLOTTERS = {"qgan": plot_qgan, "tournament": plot_tournament, "classifier": plot_classifier}


def find_results(folder):
    """[(kind, path)] of the report.json / tournament.json / classifier.json in folder or its qgan/,
    tournament/ and classifier/ subfolders."""
    if os.path.isfile(folder) and os.path.basename(folder) in FILES:
        return [(FILES[os.path.basename(folder)], folder)]
    if not os.path.isdir(folder):
        raise ReportError(f"{folder}: {'is not a directory' if os.path.exists(folder) else 'no such directory'}")
    candidates = [os.path.join(folder, "report.json"), os.path.join(folder, "qgan", "report.json"),
                  os.path.join(folder, "tournament.json"), os.path.join(folder, "tournament", "tournament.json"),
                  os.path.join(folder, "classifier.json"), os.path.join(folder, "classifier", "classifier.json")]
    found = [(FILES[os.path.basename(path)], path) for path in candidates if os.path.isfile(path)]
    if not found:
        raise ReportError(f"{folder}: found no report.json, tournament.json or classifier.json (looked in {folder}, "
                          f"{os.path.join(folder, 'qgan')}, {os.path.join(folder, 'tournament')} and "
                          f"{os.path.join(folder, 'classifier')})")
    return found


def load(path, kind):
    """The parsed JSON file, checked to come from the right qfleet-qgan command."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise ReportError(f"{path} is not valid JSON: {e}") from None
    want = APPS[kind]
    if not isinstance(doc, dict) or "app" not in doc:
        raise ReportError(f"{path} lacks the key 'app' (not a result of {want})")
    if doc["app"] != want:
        raise ReportError(f"{path}: app is {doc['app']!r}, not {want!r}")
    return doc


def _out_dirs(dirs, out):
    """FOLDER itself for one DIR; FOLDER/<DIR's name> (numbered where two share one) for several."""
    names = [os.path.basename(os.path.normpath(os.path.abspath(folder))) for folder in dirs]
    return {folder: out if len(dirs) == 1 else os.path.join(out, name if names.count(name) == 1 else f"{name}-{i + 1}")
            for i, (folder, name) in enumerate(zip(dirs, names))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description="plots of qfleet-qgan's results")
    ap.add_argument("dirs", nargs="+", metavar="DIR",
                    help="a folder with report.json, tournament.json and/or classifier.json (or their qgan/, "
                         "tournament/ and classifier/ subfolders)")
    ap.add_argument("--out", metavar="FOLDER", help="write the figures here instead of next to each JSON file")
    a = ap.parse_args(argv)
    if pyplot(PROG) is None:
        return 2
    try:
        dirs = list(dict.fromkeys(a.dirs))  # a DIR given twice is drawn once
        jobs = [(folder, kind, path) for folder in dirs for kind, path in find_results(folder)]
        docs = [load(path, kind) for _, kind, path in jobs]
    except ReportError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    out_dirs = _out_dirs(dirs, a.out) if a.out else {}
    for (folder, kind, path), doc in zip(jobs, docs):
        out_dir = out_dirs.get(folder) or os.path.dirname(path) or "."
        try:
            for written in PLOTTERS[kind](doc, out_dir, source=path):
                print(written)
            continue
        except ReportError as e:
            problem = str(e)
        except OSError as e:
            problem = f"cannot write into {out_dir}: {e.strerror}"
        except (TypeError, ValueError, IndexError, KeyError) as e:  # a value of the wrong kind or shape
            problem = f"{path} has a value of the wrong kind: {e}"
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
