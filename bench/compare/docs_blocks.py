"""The comparison harness's figures in docs/benchmarks.md: one block per workload, between
markers, rewritten from a results JSON of run.py.

run.py calls update_page after a run; a saved results file renders again without a run:

    python bench/compare/docs_blocks.py bench/results/AMD-EPYC-2c-2026-11-21.json \
        bench/results/AMD-EPYC-2c-2026-11-27-circuit.json      # later files replace earlier blocks

A block's head names the run's date, machine, command, commit and its full results page, so
the figures on the page always say where they came from."""

from __future__ import annotations

import json
import os
import sys

from report import _check_str, _median, _ratio, transfer_table
from common import fmt_err, fmt_time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "benchmarks.md")
TRANSFER = "transfer sweep"


def markers(key: str) -> tuple[str, str]:
    how = "bench/compare/run.py --only transfer" if key == TRANSFER else "bench/compare/run.py"
    return f"<!-- bench/compare {key}: begin (written by {how}) -->", f"<!-- bench/compare {key}: end -->"


def workload_table(wl: dict) -> str:
    """One workload's rows: each alternative beside qfleet's counterpart, the ratio, its error."""
    lines = ["| tool | call | median (min-max) | qfleet | alternative / qfleet | max error vs reference | check | threads |",
             "|---|---|---|---|---|---|---|---|"]
    by_name = {r["alternative"]: r for r in wl["rows"]}
    for r in wl["rows"]:
        am = _median(r)
        med = "—" if am is None else f"{fmt_time(am)} ({fmt_time(r['timing']['min_s'])}–{fmt_time(r['timing']['max_s'])})"
        counterpart = by_name.get(r.get("qfleet_counterpart") or "")
        if r["kind"] == "qfleet" or r["alternative"].startswith("qfleet"):
            qm_s, ratio, name = "(this row)", "—", f"**{r['alternative']}**"
        elif counterpart is None:
            qm_s, ratio, name = "—", "—", r["alternative"]
        else:
            qm = _median(counterpart)
            qm_s = fmt_time(qm) if qm is not None else counterpart["status"]
            ratio, name = _ratio(am, qm), r["alternative"]
        batch = r.get("extra", {}).get("batch")
        if batch and batch != wl["config"].get("batch"):
            name, ratio = f"{name} [B = {batch}]", f"— (B = {batch})"
        lines.append(f"| {name} | {r['mode']} | {med} | {qm_s} | {ratio} | {fmt_err(r.get('max_error'))} "
                     f"| {_check_str(r)} | {r.get('threads') or '—'} |")
    return "\n".join(lines)


def _head(meta: dict, results_md: str, command: str) -> str:
    m = meta["machine"]
    load = m.get("load_avg_at_start")
    load_s = f", load average {load[0]:.2f} at start" if load else ""
    rel = os.path.relpath(results_md, os.path.dirname(PAGE))
    return (f"{meta['date']}, {m.get('cpu_model', meta['machine_tag'])}, {m.get('cores', '?')} cores, threads: "
            f"{meta['threads_requested']}{load_s}; `{command}` ({meta['total_seconds']:.0f} s, commit "
            f"{meta.get('git_commit')}); every row and the run's settings: [{os.path.basename(rel)}]({rel}).")


def blocks(results: dict, results_md: str) -> dict[str, str]:
    """{marker key: block text} for every workload and the transfer sweep in `results`."""
    meta = results["meta"]
    command = meta.get("command", "run.py")
    command = (command if command.startswith("bench/compare/") else "bench/compare/" + command).replace("run.py", "run.sh")
    out = {}
    for key, wl in results.get("workloads", {}).items():
        out[key] = _head(meta, results_md, command) + "\n\n" + workload_table(wl) + "\n"
    sw = results.get("sweeps", {}).get("transfer_d")
    if sw:
        png = os.path.relpath(results_md[:-3] + "-transfer_d.png", os.path.dirname(PAGE))
        out[TRANSFER] = (_head(meta, results_md, command) + " " + sw["note"] + "\n\n" + transfer_table(sw)
                         + f"\n\n![state-transfer sweep]({png})\n")
    return out


def update_page(results: dict, results_md: str, page: str = PAGE) -> list[str]:
    """Rewrites the blocks of `page` whose markers it has; returns the keys written."""
    with open(page) as f:
        text = f.read()
    written = []
    for key, body in blocks(results, results_md).items():
        begin, end = markers(key)
        if begin not in text or end not in text:
            continue
        before, rest = text.split(begin, 1)
        text = before + begin + "\n" + body + end + rest.split(end, 1)[1]
        written.append(key)
    with open(page, "w") as f:
        f.write(text)
    return written


def main(argv: list[str]) -> int:
    if not argv or any(a.startswith("-") for a in argv):
        print(__doc__)
        return 2
    for path in argv:
        with open(path) as f:
            results = json.load(f)
        md = path[:-5] + ".md"
        if not os.path.exists(md):
            print(f"docs_blocks: {path} has no results page beside it ({md})", file=sys.stderr)
            return 2
        print(f"{path}: {', '.join(update_page(results, os.path.abspath(md))) or 'no block on the page'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
