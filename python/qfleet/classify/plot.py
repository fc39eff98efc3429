"""Plots of an image-classifier run (qfleet-classify or python -m qfleet.classify):

    python -m qfleet.classify.plot OUTDIR [OUTDIR2 ...]

reads OUTDIR/report.json (and that of each further OUTDIR, e.g. the classical ablation of a
quantum run, to compare with) and writes into the first OUTDIR
  curves.png     train and test loss and accuracy vs epoch, the runs overlaid
  confusion.png  the first run's last-epoch confusion matrix (rows: true class), colours
                 normalised per row, counts in the cells
  per_class.png  test accuracy per class, the runs side by side
  timing.png     the training step's time by component, one stacked bar per run, the middle
                 (quantum or classical) layer's share of the step in the title
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

PROG = "qfleet.classify.plot"
RUN_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink"]
EPOCH_KEYS = ("epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy", "confusion")  # per row
TIMED = ("data", "backbone_forward", "quantum_forward", "head_forward", "backward", "quantum_backward", "optimizer")
# Every key the figures read: checked up front so that a damaged report gets one line naming the key,
# not a traceback from the middle of a figure.
REQUIRED = ("config.backbone", "data.dir", "data.train", "data.test", "data.classes", "model.description",
            "model.middle_layer", "epochs", "test_accuracy", "per_class_accuracy", "timing.step_ms",
            "timing.quantum_layer_share", "timing.timed_steps") + tuple("timing.ms." + k for k in TIMED)


class ReportError(Exception):
    """A report.json that cannot be plotted; the message names the file and the problem."""


def _lookup(doc, dotted):
    for key in dotted.split("."):
        if not isinstance(doc, dict) or key not in doc:
            raise KeyError(dotted)
        doc = doc[key]
    return doc


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_run(outdir):
    """The report of one run, checked for every key the figures use."""
    if not os.path.isdir(outdir):
        problem = "is not a directory" if os.path.exists(outdir) else "no such directory"
        raise ReportError(f"{outdir}: {problem} (give the run's --out folder)")
    path = os.path.join(outdir, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror} (a finished run writes it: "
                          f"python -m qfleet.classify --out {outdir})") from None
    except ValueError as e:
        raise ReportError(f"{path} is not valid JSON: {e}") from None
    try:
        for dotted in REQUIRED:
            value = _lookup(report, dotted)
            if (dotted.startswith("timing.") or dotted == "test_accuracy") and not _is_number(value):
                raise ReportError(f"{path}: {dotted} is {value!r}, not a number")
        if not report["epochs"]:
            raise ReportError(f"{path} has no epochs (the run finished none)")
        for row in report["epochs"]:
            for key in EPOCH_KEYS:
                value = _lookup(row, key)
                if key != "confusion" and not _is_number(value):
                    raise ReportError(f"{path}: epochs[].{key} is {value!r}, not a number")
        matrix = report["epochs"][-1]["confusion"]  # the last epoch's is drawn
        if not (isinstance(matrix, list) and all(isinstance(row, list) and len(row) == len(matrix)
                                                 and all(_is_number(v) for v in row) for row in matrix)):
            raise ReportError(f"{path}: the last epoch's confusion is not a square matrix of counts")
        for name in report["data"]["classes"]:
            if name not in report["per_class_accuracy"]:
                raise KeyError(f"per_class_accuracy[{name!r}]")
    except KeyError as e:
        raise ReportError(f"{path} lacks the key {e.args[0]!r} (not a qfleet-classify report, or an older one)") \
            from None
    except TypeError:
        raise ReportError(f"{path} does not have the layout of a qfleet-classify report") from None
    report["_outdir"] = outdir
    return report


def label_runs(runs):
    """'quantum + small' per run; the folder is added where two runs would read the same."""
    labels = [f"{r['model']['middle_layer']} + {r['config']['backbone']}" for r in runs]
    return [f"{lab} ({os.path.basename(os.path.normpath(r['_outdir']))})" if labels.count(lab) > 1 else lab
            for lab, r in zip(labels, runs)]


def _wrap(text, width, indent=""):
    """Lines of at most about width characters, broken between the stages of the model ("a -> b")."""
    lines = [""]
    for stage in text.split(" -> "):
        joined = f"{lines[-1]} -> {stage}" if lines[-1] else stage
        if len(joined) <= width or not lines[-1]:
            lines[-1] = joined
        else:
            lines.append(f"{indent}-> {stage}")
    # a single stage longer than a line is broken between words
    return "\n".join(textwrap.fill(line, width=width, subsequent_indent=indent, break_on_hyphens=False)
                     for line in lines)


def _subtitle(runs, labels, fig_width):
    """The data (once when the runs share it, else per run) and each run's model, wrapped to the figure."""
    chars = int(13 * fig_width)  # about the characters a 9-point line holds per inch of figure

    def data(r):
        return f"data {r['data']['dir']}: {r['data']['train']} train / {r['data']['test']} test images"

    shared = len({data(r) for r in runs}) == 1
    lines = [_wrap(data(runs[0]), chars)] if shared else []
    for r, lab in zip(runs, labels):
        lines.append(_wrap(f"{lab}: {r['model']['description']}", chars, indent="    "))
        if not shared:
            lines.append(_wrap(f"    {data(r)}", chars))
    return "\n".join(lines)


def _title(fig, title, runs, labels):
    fig.suptitle(f"{title}\n{_subtitle(runs, labels, fig.get_figwidth())}", fontsize=9)


def curves(plt, runs, labels, path):
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained")
    epochs_seen = {row["epoch"] for r in runs for row in r["epochs"]}
    for i, (r, lab) in enumerate(zip(runs, labels)):
        epochs = [row["epoch"] for row in r["epochs"]]
        color = RUN_COLORS[i % len(RUN_COLORS)]
        for ax, what in ((ax_loss, "loss"), (ax_acc, "accuracy")):
            # markers always: a one-epoch run is a single point, which a line alone does not draw
            ax.plot(epochs, [row[f"train_{what}"] for row in r["epochs"]], "s--", color=color, ms=5, alpha=0.8,
                    label=f"{lab}, train")
            ax.plot(epochs, [row[f"test_{what}"] for row in r["epochs"]], "o-", color=color, ms=5,
                    label=f"{lab}, test")
    ax_loss.set_ylabel("cross-entropy loss")
    ax_acc.set_ylabel("accuracy")
    for ax, name in ((ax_loss, "Loss"), (ax_acc, "Accuracy")):
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("epoch")
        if len(epochs_seen) <= 20:  # whole epochs as ticks; a locator puts fractions around a single epoch
            ax.set_xticks(sorted(epochs_seen))
            ax.set_xlim(min(epochs_seen) - 0.5, max(epochs_seen) + 0.5)
        else:
            ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    # one legend for both panels, below them: inside a panel it covers points once there are several runs
    fig.legend(*ax_loss.get_legend_handles_labels(), fontsize=8, loc="outside lower center", ncol=min(2 * len(runs), 4))
    final = ", ".join(f"{lab} {100 * r['test_accuracy']:.2f}%" for r, lab in zip(runs, labels))
    _title(fig, f"Training curves (final test accuracy: {final})", runs, labels)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def confusion(plt, run, label, path):
    last = run["epochs"][-1]
    counts, names = last["confusion"], run["data"]["classes"]
    n = len(counts)
    totals = [sum(row) for row in counts]
    shares = [[c / t if t else 0.0 for c in row] for row, t in zip(counts, totals)]
    side = max(6.5, 0.55 * n + 3)
    fig, ax = plt.subplots(figsize=(side + 1.2, side + 0.6), layout="constrained")
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    cell_font = max(5, min(9, 90 // max(n, 1)))
    for i in range(n):
        for j in range(n):
            # white on the dark cells, black on the light ones, so every count stays readable
            ax.text(j, i, str(counts[i][j]), ha="center", va="center", fontsize=cell_font,
                    color="white" if shares[i][j] > 0.55 else "black")
    ticks = [str(names[k]) if k < len(names) else str(k) for k in range(n)]
    ax.set_xticks(range(n))
    slanted = max(len(t) for t in ticks) > 3  # digits stand upright; names are slanted so they do not collide
    ax.set_xticklabels(ticks, rotation=45 if slanted else 0, ha="right" if slanted else "center",
                       rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(n))
    ax.set_yticklabels(ticks, fontsize=8)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    fig.colorbar(image, ax=ax, shrink=0.8, label="fraction of the true class's test images")
    _title(fig, f"Confusion matrix after epoch {last['epoch']}: test accuracy "
                f"{100 * last['test_accuracy']:.2f}% ({label})", [run], [label])
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def _accuracy(value):
    # the report writes null for a class with no test images (accuracy 0/0)
    return float("nan") if value is None else value


def per_class(plt, runs, labels, path):
    names = runs[0]["data"]["classes"]  # the runs compared share the data; a class one lacks is left empty
    n, width = len(names), 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.45 * n * len(runs) + 4), 5), layout="constrained")
    for i, (r, lab) in enumerate(zip(runs, labels)):
        color = RUN_COLORS[i % len(RUN_COLORS)]
        values = [_accuracy(r["per_class_accuracy"].get(name)) for name in names]
        xs = [k + (i - (len(runs) - 1) / 2) * width for k in range(n)]
        ax.bar(xs, values, width, color=color, label=f"{lab} (overall {100 * r['test_accuracy']:.2f}%)")
        ax.axhline(r["test_accuracy"], color=color, ls=":", lw=1)
        if len(runs) * n <= 40:  # the values on the bars, while they still fit
            for x, v in zip(xs, values):
                ax.text(x, (0 if math.isnan(v) else v) + 0.01, "n/a" if math.isnan(v) else f"{100 * v:.0f}",
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(n))
    ax.set_xticklabels([str(s) for s in names], rotation=30 if n > 6 else 0, ha="right" if n > 6 else "center",
                       rotation_mode="anchor", fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("test accuracy (bar labels in %)")
    ax.set_xlabel("true class (dotted: the overall test accuracy)")
    ax.grid(axis="y", alpha=0.3)
    fig.legend(fontsize=8, loc="outside lower center", ncol=min(len(runs), 3))
    _title(fig, "Test accuracy per class", runs, labels)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def timing(plt, runs, labels, path):
    all_quantum = all(r["model"]["middle_layer"] == "quantum" for r in runs)
    middle = "quantum layer" if all_quantum else "middle layer"  # the ablation's middle layer is classical
    # backward is split into its middle-layer part (quantum_backward, measured inside backward) and the rest,
    # so that the segments add up to the step
    parts = [("data", "data", "tab:gray"), ("backbone forward", "backbone_forward", "tab:blue"),
             (f"{middle} forward", "quantum_forward", "tab:red"), ("head forward", "head_forward", "tab:olive"),
             (f"backward ({middle})", "quantum_backward", "salmon"), ("backward (rest)", "backward", "tab:cyan"),
             ("optimizer", "optimizer", "tab:purple")]
    fig, ax = plt.subplots(figsize=(11, 2.6 + 0.9 * len(runs)), layout="constrained")
    longest = max(r["timing"]["step_ms"] for r in runs) or 1.0
    for y, r in enumerate(runs):
        ms, left = r["timing"]["ms"], 0.0
        middle_at = 0.0
        for name, key, color in parts:
            if key == "quantum_forward":
                middle_at = left
            value = ms["backward"] - ms["quantum_backward"] if key == "backward" else ms[key]
            value = max(value, 0.0)
            ax.barh(y, value, left=left, height=0.55, color=color, edgecolor="white", lw=0.5,
                    label=name if y == 0 else None)
            if value > 0.07 * longest:  # the ms inside a segment only where the number fits
                ax.text(left + value / 2, y, f"{value:.3g}", ha="center", va="center", fontsize=7)
            left += value
        ax.text(left + 0.01 * longest, y, f"{r['timing']['step_ms']:.3g} ms", va="center", fontsize=8)
        # the middle layer is a thin sliver next to the backbone: its numbers go above the bar
        ax.annotate(f"{r['model']['middle_layer']} layer: forward {ms['quantum_forward']:.3g} ms + backward "
                    f"{ms['quantum_backward']:.3g} ms = {100 * r['timing']['quantum_layer_share']:.2f}% of the step",
                    xy=(middle_at, y - 0.3), xytext=(middle_at, y - 0.45), ha="left", va="bottom", fontsize=7,
                    arrowprops={"arrowstyle": "-", "lw": 0.6})
    ax.set_yticks(range(len(runs)))
    ax.set_yticklabels([f"{lab}\n({r['timing']['timed_steps']} timed steps)" for r, lab in zip(runs, labels)],
                       fontsize=8)
    ax.set_ylim(len(runs) - 0.5, -0.9)  # reversed: the first OUTDIR on top, with room for its annotation
    ax.set_xlim(0, longest * 1.12)
    ax.set_xlabel("mean time per training step [ms]")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, ncol=4, loc="outside lower center")
    share = ", ".join(f"{lab}: {100 * r['timing']['quantum_layer_share']:.2f}%" for r, lab in zip(runs, labels))
    _title(fig, f"Training step by component; {middle} (forward + backward) share of the step: {share}",
           runs, labels)
    save_figure(fig, path, dpi=130)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description="plots of an image-classifier run")
    ap.add_argument("outdirs", nargs="+", metavar="OUTDIR",
                    help="a run's output directory (report.json); the figures go into the first, "
                         "further runs (e.g. the classical ablation) are overlaid")
    a = ap.parse_args(argv)
    plt = pyplot(PROG)
    if plt is None:
        return 2
    try:
        runs = [load_run(d) for d in a.outdirs]
    except ReportError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    labels = label_runs(runs)
    figures = (("curves.png", lambda path: curves(plt, runs, labels, path)),
               ("confusion.png", lambda path: confusion(plt, runs[0], labels[0], path)),
               ("per_class.png", lambda path: per_class(plt, runs, labels, path)),
               ("timing.png", lambda path: timing(plt, runs, labels, path)))
    for name, draw in figures:
        path = os.path.join(a.outdirs[0], name)
        try:
            draw(path)
        except OSError as e:
            print(f"{PROG}: error: cannot write {e.filename or path}: {e.strerror}", file=sys.stderr)
            return 2
        except (TypeError, ValueError, IndexError) as e:  # a value of the wrong kind (e.g. a string for a count)
            print(f"{PROG}: error: a report in {', '.join(a.outdirs)} has a value of the wrong kind for {name}: {e}",
                  file=sys.stderr)
            return 2
        print(path)  # as each is written: a failure later leaves a true list of what is there
    return 0


if __name__ == "__main__":
    sys.exit(main())
