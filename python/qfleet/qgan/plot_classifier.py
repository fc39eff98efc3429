"""Figures of `qfleet-qgan classify` (classifier.json), drawn by `python -m qfleet.qgan.plot`:
  classifier_accuracy.png   the network's test accuracy against the shots per record, beside the
                            Bayes limit (exact, or Monte Carlo with its error bar) and chance
  classifier_confusion.png  the confusion matrix over the devices, one panel per shot count
"""
import numpy as np


def classifier_data(doc, where):
    """The figures' numbers from a classifier.json document; ReportError (via _Doc) naming the key."""
    from .plot import _Doc  # the reader with errors that name the file and the key

    d = _Doc(doc, where)
    devices = [str(d.get(f"devices[{i}].name")) for i in range(len(d.get("devices", list)))]
    k = len(devices)
    results = []
    for i in range(len(d.get("results", list))):
        p = f"results[{i}]"
        if len(d.get(f"{p}.confusion", list)) != k:
            d.fail(f"{p}.confusion does not have a row for each of the {k} devices")
        confusion = np.array([d.numbers(f"{p}.confusion[{j}]", k) for j in range(k)], dtype=float)
        results.append({"shots": d.count(f"{p}.shots", 1), "accuracy": d.number(f"{p}.accuracy"),
                        "accuracy_error": d.number(f"{p}.accuracy_error"),
                        "bayes": d.number(f"{p}.bayes.accuracy"), "bayes_error": d.number(f"{p}.bayes.error"),
                        "method": str(d.get(f"{p}.bayes.method")), "map_test": d.number(f"{p}.map_rule_on_test"),
                        "confusion": confusion})
    if not results:
        d.fail("results is empty")
    return {"devices": devices, "chance": d.number("chance"), "circuit": str(d.get("circuit.name")),
            "outcomes": d.count("outcomes", 1), "results": sorted(results, key=lambda r: r["shots"])}


def _accuracy(plt, r, save):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    shots = np.array([x["shots"] for x in r["results"]], dtype=float)
    ax.errorbar(shots, [x["bayes"] for x in r["results"]], yerr=[2 * x["bayes_error"] for x in r["results"]],
                fmt="s--", color="black", capsize=3, label="Bayes limit (exact or Monte Carlo, ±2 s.e.)")
    ax.errorbar(shots, [x["accuracy"] for x in r["results"]], yerr=[2 * x["accuracy_error"] for x in r["results"]],
                fmt="o-", color="tab:blue", capsize=3, label="network, test records (±2 s.e.)")
    ax.plot(shots, [x["map_test"] for x in r["results"]], "x", color="tab:orange",
            label="Bayes (MAP) rule on the same test records")
    ax.axhline(r["chance"], color="grey", lw=0.8, ls=":", label=f"chance (1/{len(r['devices'])})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("shots per record")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Which of {len(r['devices'])} devices ran {r['circuit']} ({r['outcomes']} outcomes)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return save(fig, "classifier_accuracy.png")


def _confusion(plt, r, save):
    n = len(r["results"])
    k = len(r["devices"])
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n + 0.6, 3.6), squeeze=False)
    for ax, x in zip(axes[0], r["results"]):
        rows = x["confusion"].sum(axis=1, keepdims=True)
        share = np.divide(x["confusion"], rows, out=np.zeros_like(x["confusion"]), where=rows > 0)
        ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        for i in range(k):
            for j in range(k):
                ax.text(j, i, f"{share[i, j]:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if share[i, j] > 0.5 else "black")
        ax.set_xticks(range(k), [d.replace("fake_", "") for d in r["devices"]], rotation=90, fontsize=7)
        ax.set_yticks(range(k), [d.replace("fake_", "") for d in r["devices"]], fontsize=7)
        ax.set_title(f"{x['shots']} shots: accuracy {x['accuracy']:.3f}", fontsize=9)
        ax.set_xlabel("predicted", fontsize=8)
    axes[0][0].set_ylabel("true device (share of its records)", fontsize=8)
    fig.tight_layout()
    return save(fig, "classifier_confusion.png")


def plot_classifier(plt, doc, where, save) -> list:
    """Draws the two figures with `save(fig, name)` (which returns the path); returns their paths."""
    r = classifier_data(doc, where)
    return [_accuracy(plt, r, save), _confusion(plt, r, save)]
