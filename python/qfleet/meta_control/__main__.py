"""python -m qfleet.meta_control: meta-learned robust quantum control on qfleet, the twin of the
C++ app qfleet-meta with the same options, outputs and numbers (docs/meta_control.md).

    python -m qfleet.meta_control                     # the default ("fast" preset)
    python -m qfleet.meta_control --preset paper      # 1000 iterations, 32 tasks, 5 inner steps
    python -m qfleet.meta_control --config run.json --set algorithm=reptile --set iterations=500
    python -m qfleet.meta_control --resume            # continue from <output_dir>/checkpoint.json
"""
import argparse
import json
import math
import sys
import time

from . import ConfigError, Progress, dumps, load_config_file, make_config, resolve_config, run, tune_malloc

PROG = "qfleet.meta_control"


def clock_text(s: float) -> str:
    if not math.isfinite(s) or s < 0:
        return "--:--"
    t = math.floor(s + 0.5)
    return f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}" if t >= 3600 else f"{t // 60:02d}:{t % 60:02d}"


class Bar(Progress):
    """A progress bar with ETA and the running validation fidelity on stderr: redrawn in place
    on a terminal, one line per 10% otherwise (logs, CI)."""

    def __init__(self):
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.first, self.last_decile, self.last_draw = -1, -1, -1.0

    def update(self, done, total, val_after):
        if self.first < 0:
            self.first = done - 1
        el = time.monotonic() - self.t0
        eta = el / (done - self.first) * (total - done)
        pct = 100 * done // total if total > 0 else 100
        if not self.tty:
            if pct // 10 == self.last_decile and done != total:
                return
            self.last_decile = pct // 10
        elif el - self.last_draw < 0.1 and done != total:
            return
        self.last_draw = el
        filled = 30 * pct // 100
        start, end = ("\r", "") if self.tty else ("", "\n")
        sys.stderr.write(f"{start}[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {pct:3d}% {clock_text(el)}<"
                         f"{clock_text(eta)} val F after adaptation {val_after:.5f}{end}")
        sys.stderr.flush()

    def finish(self):
        if self.tty:
            sys.stderr.write("\n")


def _non_negative(text):
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description=(
        "meta-learned robust quantum control on qfleet (docs/meta_control.md); the twin of qfleet-meta"))
    ap.add_argument("--config", default="", help="JSON configuration file (keys: docs/meta_control.md)")
    ap.add_argument("--preset", default="", help='fast (default), paper or accurate; a file\'s "preset" key wins')
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one key (value as JSON, or a bare word); repeatable")
    ap.add_argument("--out", default="", help="output directory (same as --set output_dir=DIR)")
    ap.add_argument("--resume", action="store_true",
                    help="continue from <output_dir>/checkpoint.json (same results as an uninterrupted run)")
    ap.add_argument("--stop-after", type=_non_negative, default=-1,
                    help="stop after this many iterations, with a checkpoint")
    ap.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    ap.add_argument("--print-config", action="store_true", help="print the resolved configuration and exit")
    a = ap.parse_args(argv)
    try:
        file = load_config_file(a.config) if a.config else {}
        sets = a.set + ([f"output_dir={json.dumps(a.out)}"] if a.out else [])
        resolved = resolve_config(file, a.preset, sets)
        if a.print_config:
            print(dumps(resolved, 2))
            return 0
        cfg = make_config(resolved)
        tune_malloc()
        if not a.quiet:
            print(f"{PROG}: {cfg.algorithm} on {cfg.system} ({cfg.meta_batch} tasks x {cfg.inner_steps} inner steps, "
                  f"{cfg.iterations} iterations, {cfg.solver} solver, preset {cfg.preset})", file=sys.stderr)
        res = run(cfg, resume=a.resume, stop_after=a.stop_after, progress=None if a.quiet else Bar())
        if not res.complete:
            if not a.quiet:
                print(f"stopped after iteration {res.report['stopped_at_iteration']}; checkpoint "
                      f"{res.report['checkpoint']} (continue with --resume)")
            return 0
        if not a.quiet:
            v, t = res.report["validation"], res.report["timings_s"]
            kind = "average gate fidelity" if cfg.fidelity == "average_gate" else "state-transfer fidelity"
            print(f"validation ({len(v['tasks'])} held-out tasks, {kind}):")
            print(f"  meta policy, no adaptation      {v['mean_before']:.5f}")
            print(f"  meta policy, {cfg.adapt_steps:3d} SGD steps     {v['mean_after']:.5f}")
            print(f"  robust pulse (one for all)      {v['mean_robust']:.5f}")
            print(f"  per-task GRAPE optimum          {v['mean_grape']:.5f}")
            print(f"  optimality gap (mean / max)     {v['mean_gap']:.5f} / {v['max_gap']:.5f}")
            print(f"training {t['training']:.1f} s ({t['per_iteration_ms']:.2f} ms per iteration), baselines "
                  f"{t['robust_baseline'] + t['grape']:.1f} s; outputs in {cfg.output_dir}/")
            print(f"plots: python -m qfleet.meta_control.plot {cfg.output_dir}")
        return 0
    except ConfigError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI reports every failure in one line, like qfleet-meta
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
