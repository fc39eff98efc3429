#!/usr/bin/env python3
"""Same-run A/B of two builds of a Google Benchmark program (before vs after a change).

    python3 bench/micro/ab.py BEFORE_BINARY AFTER_BINARY [--filter REGEX] [--rounds 5] [--min-time 0.1]

Runs the two binaries alternately (A, B, A, B, ...: drift of the machine hits both
alike), one repetition per round, and prints per benchmark the median real time of
each over the rounds and the ratio after / before. A ratio above 1 + --threshold
(default 3%) is marked SLOWER; the exit status is 1 when any is. The medians and
ratios are also written as JSON with --json.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run_once(binary, flt, min_time):
    cmd = [binary, "--benchmark_format=json", "--benchmark_repetitions=1", f"--benchmark_min_time={min_time}"]
    if flt:
        cmd.append(f"--benchmark_filter={flt}")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ab.py: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr.strip()}")
    out = r.stdout
    return {b["name"]: b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            for b in json.loads(out)["benchmarks"] if b.get("run_type", "iteration") == "iteration"}


def fmt(s):
    for unit, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s:.3g} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--filter", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--threshold", type=float, default=0.03)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    times = {"before": {}, "after": {}}
    for r in range(a.rounds):
        for side, binary in (("before", a.before), ("after", a.after)):
            for name, t in run_once(binary, a.filter, a.min_time).items():
                times[side].setdefault(name, []).append(t)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    rows, slower = [], 0
    for name in times["before"]:
        if name not in times["after"]:
            continue
        mb, ma = statistics.median(times["before"][name]), statistics.median(times["after"][name])
        ratio = ma / mb
        flag = "SLOWER" if ratio > 1 + a.threshold else ""
        slower += bool(flag)
        rows.append({"name": name, "before_s": mb, "after_s": ma, "ratio": ratio, "flag": flag})
    width = max(len(r["name"]) for r in rows) if rows else 10
    print(f"{'benchmark':<{width}}  {'before':>10}  {'after':>10}  after/before")
    for r in rows:
        print(f"{r['name']:<{width}}  {fmt(r['before_s']):>10}  {fmt(r['after_s']):>10}  {r['ratio']:.3f} {r['flag']}")
    ratios = [r["ratio"] for r in rows]
    if ratios:
        print(f"{len(rows)} benchmarks, median ratio {statistics.median(ratios):.3f}, "
              f"range {min(ratios):.3f}-{max(ratios):.3f}, {slower} slower by more than {a.threshold:.0%}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "min_time_s": a.min_time, "rows": rows}, f, indent=1)
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
