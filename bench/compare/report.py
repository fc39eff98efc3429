"""Markdown tables and PNG plots from the results dictionary written by run.py."""

from __future__ import annotations

import math
import os

import numpy as np

from common import fmt_err, fmt_time


def json_default(o):
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    return str(o)


def _median(row):
    t = row.get("timing")
    return t["median_s"] if (t and row["status"] == "ok") else None


def _check_str(row):
    if row["status"] != "ok":
        return row["status"] + (f": {row['reason']}" if row.get("reason") else "")
    tol = row.get("tolerance")
    c = row.get("check")
    if row.get("kind") == "qfleet" and not row.get("errors"):
        return "the workload's reference"
    if c == "reported" or tol is None:
        return "reported (fixed-step)"
    return f"{c} (tol {tol:g})"


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return "—"
    return f"{a / b:.3g}x"


def main_table(results: dict) -> str:
    lines = ["| workload | alternative | call | alternative median | qfleet median | ratio alt/qfleet | "
             "max error vs reference | tolerance / check | threads |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, wl in results.get("workloads", {}).items():
        rows = wl["rows"]
        by_name = {r["alternative"]: r for r in rows}
        title = wl.get("title", key)
        for r in rows:
            q = by_name.get(r.get("qfleet_counterpart")) if r.get("qfleet_counterpart") else None
            am = _median(r)
            if r["kind"] in ("qfleet",) or r["alternative"].startswith("qfleet"):
                qm_s, ratio = "(this row)", "—"
            elif q is None:
                qm_s, ratio = "—", "—"
            else:
                qm = _median(q)
                qm_s = fmt_time(qm) if qm is not None else q["status"]
                ratio = _ratio(am, qm)
                if r.get("extra", {}).get("batch") and r["extra"]["batch"] != wl["config"].get("batch"):
                    ratio = f"— (B = {r['extra']['batch']})"
            alt = r["alternative"]
            if r.get("extra", {}).get("batch") and r["extra"]["batch"] != wl["config"].get("batch"):
                alt += f" [B = {r['extra']['batch']}]"
            med = fmt_time(am) if am is not None else "—"
            if am is not None:
                t = r["timing"]
                med += f" ({fmt_time(t['min_s'])}–{fmt_time(t['max_s'])})"
            lines.append(f"| {title} | {alt} | {r['mode']} | {med} | {qm_s} | {ratio} | {fmt_err(r.get('max_error'))} "
                         f"| {_check_str(r)} | {r.get('threads') or '—'} |")
    return "\n".join(lines)


def sweep_table(sw: dict) -> str:
    cells = sw["cells"]
    values = sorted({c["value"] for c in cells})
    names = []
    for c in cells:
        if c["alternative"] not in names:
            names.append(c["alternative"])
    head = "| alternative | " + " | ".join(f"{sw['param']} = {v}" for v in values) + " | max error |"
    lines = [head, "|---" * (len(values) + 2) + "|"]
    for n in names:
        row = [n]
        errs = []
        for v in values:
            c = next((c for c in cells if c["alternative"] == n and c["value"] == v), None)
            if c is None:
                row.append("")
            elif c["status"] == "ok":
                row.append(fmt_time(c["timing"]["median_s"]))
                if c.get("max_error") is not None:
                    errs.append(c["max_error"])
            elif c["status"] == "skipped":
                row.append("skipped")
            else:
                row.append(c["status"])
        row.append(fmt_err(max(errs)) if errs else "—")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def transfer_table(sw: dict) -> str:
    """The state-transfer sweep: per d, each tool's median time, its ratio to the baseline qfleet
    row, and its largest relative error (over max |reference| of F, the amplitude and the rate
    gradient); skipped cells say so (reasons in the skipped list)."""
    cells = sw["cells"]
    values = sorted({c["value"] for c in cells})
    names = list(dict.fromkeys(c["alternative"] for c in cells))
    base = {c["value"]: _median(c) for c in cells if c["alternative"] == sw.get("baseline")}
    head = ("| tool | call | " + " | ".join(f"d = {v}" for v in values)
            + " | max rel. error | max abs. error |")
    lines = [head, "|---|---" + "|---" * (len(values) + 2) + "|"]
    for n in names:
        row, rels, abss, mode = [], [], [], ""
        for v in values:
            c = next((c for c in cells if c["alternative"] == n and c["value"] == v), None)
            if c is None:
                row.append("")
                continue
            mode = c["mode"]
            m = _median(c)
            if m is None:
                row.append("skipped" if c["status"] == "skipped" else c["status"])
                continue
            txt = fmt_time(m)
            if n != sw.get("baseline") and base.get(v):
                txt += f" ({m / base[v]:.3g}x)"
            if c.get("check") == "fail":
                txt += " FAIL"
            row.append(txt)
            rels += list(c.get("extra", {}).get("relative_errors", {}).values())
            if c.get("max_error") is not None:
                abss.append(c["max_error"])
        lines.append(f"| {n} | {mode} | " + " | ".join(row)
                     + f" | {fmt_err(max(rels)) if rels else '—'} | {fmt_err(max(abss)) if abss else '—'} |")
    return "\n".join(lines)


def transfer_first_calls(sw: dict) -> str:
    """dynamiqs' first call per d (jit compilation included), not part of the medians."""
    parts = {}
    for c in sw["cells"]:
        t = c.get("extra", {}).get("first_call_incl_jit_s")
        if t is not None:
            parts.setdefault(c["alternative"], []).append(f"d = {c['value']}: {fmt_time(t)}")
    return " ".join(f"First call of {n} (jit compilation included, not in the medians): {', '.join(p)}."
                    for n, p in parts.items())


def plot_transfer(sw: dict, path: str) -> bool:
    """Two panels: time per call vs d (log-log), and the ratio to the baseline qfleet row."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False
    series = {}
    for c in sw["cells"]:
        if c["status"] == "ok":
            series.setdefault(c["alternative"], {})[c["value"]] = c["timing"]["median_s"]
    base = series.get(sw.get("baseline"), {})
    if not series:
        return False
    values = sorted({c["value"] for c in sw["cells"]})
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), dpi=110)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, pts) in enumerate(series.items()):
        xs = sorted(pts)
        is_q = name.startswith("qfleet")
        style = dict(marker="o", lw=2.4 if is_q else 1.4, ms=5, linestyle="-" if is_q else "--",
                     color=colors[i % len(colors)])
        ax.plot(xs, [pts[x] for x in xs], label=name, **style)
        if name != sw.get("baseline"):
            rx = [x for x in xs if x in base]
            if rx:
                ax2.plot(rx, [pts[x] / base[x] for x in rx], label=name, **style)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xticks(values)
        a.set_xticklabels([str(v) for v in values])
        a.set_xlabel("d (2^n, n qubits)")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("median time per call [s]")
    ax.set_title(sw["title"], fontsize=8)
    ax.legend(fontsize=6, loc="upper left")
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_ylabel("time / qfleet's (ratio > 1: qfleet faster)")
    ax2.set_title(f"ratio to {sw.get('baseline')}", fontsize=8)
    ax2.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def skipped_list(results: dict) -> list[str]:
    out = []
    for key, wl in results.get("workloads", {}).items():
        for r in wl["rows"]:
            if r["status"] != "ok":
                out.append(f"{key} / {r['alternative']}: {r['status']} — {r.get('reason')}")
    for key, sw in results.get("sweeps", {}).items():
        for c in sw["cells"]:
            if c["status"] not in ("ok", "not installed"):
                out.append(f"{key} {sw['param']}={c['value']} / {c['alternative']}: {c['status']} — {c.get('reason')}")
    return out


def failures(results: dict) -> list[str]:
    out = [f"self-check: {c['check']} (err {c['abs_error']:.2e} > {c['tolerance']:g})"
           for c in results.get("checks", []) if not c["pass"]]
    for key, wl in results.get("workloads", {}).items():
        for r in wl["rows"]:
            if r["status"] == "error":
                out.append(f"{key} / {r['alternative']}: error — {r.get('reason')}")
            if r.get("check") == "fail":
                out.append(f"{key} / {r['alternative']}: max error {r.get('max_error')} > {r.get('tolerance')}"
                           f" {r.get('extra', {})}")
    for key, sw in results.get("sweeps", {}).items():
        for c in sw["cells"]:
            if c["status"] == "error":
                out.append(f"{key} {sw['param']}={c['value']} / {c['alternative']}: error — {c.get('reason')}")
            if c.get("check") == "fail":
                out.append(f"{key} {sw['param']}={c['value']} / {c['alternative']}: max error {c.get('max_error')}"
                           f" > {c.get('tolerance')}")
    out += results.get("errors", [])
    return out


def plot_sweep(sw: dict, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker  # noqa: F401
    except Exception:
        return False
    series = {}
    for c in sw["cells"]:
        if c["status"] == "ok":
            series.setdefault(c["alternative"], []).append((c["value"], c["timing"]["median_s"]))
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for name, pts in series.items():
        pts.sort()
        xs, ys = zip(*pts)
        is_q = name.startswith("qfleet")
        ax.plot(xs, ys, marker="o", lw=2.6 if is_q else 1.4, ms=5, label=name,
                color=None, zorder=3 if is_q else 2, linestyle="-" if is_q else "--")
    ax.set_yscale("log")
    values = sorted({c["value"] for c in sw["cells"]})
    if sw["param"] != "n":
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(values)
    ax.set_xticklabels([f"{v:g}" if v < 1e4 else f"1e{int(round(math.log10(v)))}" for v in values])
    ax.set_xlabel(sw["param"])
    ax.set_ylabel("median time per call [s]")
    ax.set_title(sw["title"], fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write_markdown_and_plots(results: dict, out_dir: str, stem: str):
    meta = results["meta"]
    pngs = []
    lines = [f"# Comparison benchmarks — {meta['machine_tag']} — {meta['date']} ({meta['mode']})", ""]
    m = meta["machine"]
    lines += [f"Machine: {m.get('cpu_model')}, {m.get('cores')} cores, {m.get('mem_total_gib')} GiB; "
              f"load average at start {tuple(round(x, 2) for x in m.get('load_avg_at_start', ()))}, "
              f"at end {tuple(round(x, 2) for x in m.get('load_avg_at_end', ()))}. "
              f"Threads requested: {meta['threads_requested']}. qfleet: {meta['qfleet']}. "
              f"Commit {meta.get('git_commit')}. Total {meta.get('total_seconds')} s.", ""]
    lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), ""]
    lines += [f"Timing: {meta['timing']}", ""]
    lines += ["Tolerances (max abs error vs the high-precision reference, over outputs and gradients):"]
    lines += [f"* {k}: {v}" for k, v in meta["tolerances"].items()]
    lines += ["", "References: workload 1 — numpy extended precision (clongdouble) state vector with adjoint "
              "gradient; workloads 2/3 — exact piecewise-constant propagator product (scipy.linalg.expm of the "
              "Liouvillian per segment, float64), gradient by scipy.linalg.expm_frechet.", ""]
    checks = results.get("checks", [])
    n_ok = sum(c["pass"] for c in checks)
    lines += [f"Self-checks: {n_ok}/{len(checks)} pass (F_avg of known channels, Nielsen's formula, "
              "finite differences, mpmath, dense-matrix circuit); details in the JSON.", ""]
    lines += ["## Main workloads", "", main_table(results), ""]
    for key, wl in results.get("workloads", {}).items():
        lines += [f"* **{wl['title']}**: " + "; ".join(f"{k} = {v}" for k, v in wl["config"].items())]
    lines += [""]
    for key, sw in results.get("sweeps", {}).items():
        png = os.path.join(out_dir, f"{stem}-{key}.png")
        transfer = key == "transfer_d"
        if (plot_transfer if transfer else plot_sweep)(sw, png):
            pngs.append(png)
        lines += [f"## Sweep: {sw['title']}", ""]
        if sw.get("note"):
            lines += [sw["note"], ""]
        if transfer:
            lines += [f"Model: {sw['model']}.", "", "Time per call (ratio to the first row), errors against the "
                      f"reference ({sw['reference']['method']}):", ""]
        lines += [transfer_table(sw) if transfer else sweep_table(sw), ""]
        if transfer:
            lines += [transfer_first_calls(sw), ""]
        if os.path.exists(png):
            lines += [f"![{key}]({os.path.basename(png)})", ""]
    sk = skipped_list(results)
    if sk:
        lines += ["## Skipped, not installed or failed", ""] + [f"* {s}" for s in sk] + [""]
    fl = failures(results)
    lines += ["## Failures", ""] + ([f"* {f}" for f in fl] if fl else ["none"]) + [""]
    md_path = os.path.join(out_dir, stem + ".md")
    with open(md_path, "w") as f:
        f.write("\n".join(lines))
    return md_path, pngs
