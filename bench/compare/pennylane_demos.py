"""PennyLane's own published demos run on qfleet's devices with only the device name changed, beside
the PennyLane devices they were written for, in one run.

    PYTHONPATH=python \\
        python bench/compare/pennylane_demos.py [--only qubit_rotation,qnn_torch] [--repeats 3] \\
        [--threads N] [--seed 42] [--json out.json] [--md out.md] [--quick]

Each demo (bench/compare/pl_demos/, one file per demo citing its page and its file in PennyLane's demos
repository) is a function of the device name that builds its devices and QNodes, generates its data as
the demo does, runs its optimisation steps and returns its outputs (cost values, predictions,
gradients, trained parameters):

  qubit_rotation     jax; lightning.qubit as published       tutorial_qubit_rotation
  qnn_torch          torch, qml.qnn.TorchLayer; default.qubit tutorial_qnn_module_torch
  data_reuploading   autograd, Hermitian; lightning.qubit     tutorial_data_reuploading_classifier
  noisy_circuits     jax under jax.jit, channels; default.mixed  tutorial_noisy_circuits
  barren_plateaus    autograd, random circuits; default.qubit tutorial_barren_plateaus
  state_preparation  torch, Hermitian argument; default.qubit tutorial_state_preparation

State-vector demos run on qfleet.qubit, lightning.qubit and default.qubit, the noisy one on qfleet.mixed
and default.mixed, all with the demos' diff_method ("best": adjoint on qfleet and lightning, backprop on
default.qubit and default.mixed; the table names what it picked).

First every device runs the demo once and its outputs are checked against those of the device the demo
was written for (harness.check_close; 1e-10, or float32 rounding where the demo computes in float32,
each demo's ATOL says why). Then the same workload is timed on every device in interleaved rounds (a
run includes building the devices and QNodes, as the demo does): median (min, max) seconds and the
ratio device / qfleet's device (> 1: qfleet faster). A demo whose outputs differ, or that raises on a
device (the error is printed verbatim), is not timed; the others still run; the exit status is then 1.

--quick: every demo's smallest workload, one round: the checked run itself, timed cold (a smoke run);
--threads N: torch's threads and
OMP_NUM_THREADS (default: the libraries' own; on a busy machine use 1, README.md); OMP_WAIT_POLICY is
passive unless set.
"""
from __future__ import annotations

import sys
import time
import traceback

import harness

SCRIPT = "pennylane_demos.py"


def parse_args(argv=None):
    ap = harness.parser(__doc__, threads=None, seed=42,
                        quick_help="each demo's smallest workload, one round: a smoke run")
    ap.add_argument("--only", default=None, help="comma-separated demo names (default: all)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed rounds after the checked run (default 3; --quick without it: the checked run "
                         "itself, timed cold)")
    args = harness.validate(ap, ap.parse_args(argv))
    if args.repeats is not None and args.repeats < 1:
        ap.error("--repeats must be positive")
    return args


def rounds(args) -> int | None:
    """Timed rounds after the checked run; None: --quick alone, which times the checked run itself (cold)."""
    return None if args.quick and args.repeats is None else (args.repeats or 3)


def select(demos: dict, only: str | None) -> list:
    if not only:
        return list(demos.values())
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in demos]
    if unknown:
        harness.fail(SCRIPT, f"--only: unknown demo(s) {', '.join(unknown)}; known: {', '.join(demos)}")
    return [demos[n] for n in names]


def tolerance(demo, dev: str) -> float:
    return demo.ATOL.get(dev, demo.ATOL["default"]) if isinstance(demo.ATOL, dict) else demo.ATOL


def first_runs(demo, args, record: dict) -> tuple[dict, str | None]:
    """Every device's outputs from one run; the first error, verbatim, stops the demo."""
    import pl_demos

    outputs = {}
    for dev in demo.DEVICES:
        try:
            record["diff_method"][dev] = pl_demos.best_method(dev, demo.INTERFACE)
            t0 = time.perf_counter()
            outputs[dev] = demo.run(dev, quick=args.quick, seed=args.seed)
        except Exception as e:  # noqa: BLE001 (reported, with its traceback, as the demo's result)
            traceback.print_exc()
            return outputs, f"{dev} raised {type(e).__name__}: {e}"
        record["first_run_s"][dev] = time.perf_counter() - t0
    return outputs, None


def check(demo, outputs: dict, record: dict) -> str | None:
    """Each device's outputs against the reference device's; the first disagreement, if any."""
    ref = demo.REFERENCE
    for dev in demo.DEVICES:
        if dev == ref:
            continue
        try:
            record["max_error"][dev] = harness.check_close(f"{demo.NAME}: {dev} against {ref}", outputs[dev],
                                                           outputs[ref], atol=tolerance(demo, dev), prog=SCRIPT)
        except harness.Disagreement:
            return f"{dev}'s outputs differ from {ref}'s (above {tolerance(demo, dev):g})"
    return None


def run_demo(demo, args) -> tuple[list, dict]:
    """One demo: outputs checked, then timed. Returns its table rows and its JSON record."""
    workload = f"{demo.NAME}: {demo.workload(args.quick)}"
    record = {"source": demo.SOURCE, "interface": demo.INTERFACE, "reference": demo.REFERENCE,
              "devices": list(demo.DEVICES), "workload": workload,
              "atol": {d: tolerance(demo, d) for d in demo.DEVICES if d != demo.REFERENCE},
              "diff_method": {}, "first_run_s": {}, "max_error": {}, "status": "ok"}
    print(f"\n== {workload}\n   {demo.SOURCE}", flush=True)
    outputs, failure = first_runs(demo, args, record)
    failure = failure or check(demo, outputs, record)
    if failure:
        print(f"{demo.NAME}: FAILED: {failure}; not timed", file=sys.stderr, flush=True)
        record["status"] = failure
        note = failure.splitlines()[0][:300]
        return [harness.row(workload, dev, None, note=note) for dev in demo.DEVICES], record

    others = ", ".join(d for d in demo.DEVICES if d != demo.REFERENCE)
    n = rounds(args)
    if n is None:  # the checked run is the one timed: cold (imports, compilation), a smoke figure
        print(f"{demo.NAME}: outputs of {others} equal to {demo.REFERENCE}'s; --quick: the checked run timed",
              flush=True)
        timings = {dev: harness.as_timing((t, t, t), 1) for dev, t in record["first_run_s"].items()}
    else:
        print(f"{demo.NAME}: outputs of {others} equal to {demo.REFERENCE}'s; timing {n} round(s)", flush=True)
        cases = {dev: (lambda dev=dev: demo.run(dev, quick=args.quick, seed=args.seed)) for dev in demo.DEVICES}
        spread = harness.interleaved(cases, rounds=n, warmup=False)  # the checked run warmed up
        timings = {dev: harness.as_timing(s, n) for dev, s in spread.items()}
    q = timings[demo.DEVICES[0]]
    rows = []
    for dev, t in timings.items():
        tool = f"{dev} ({record['diff_method'][dev]})"
        print(f"  {tool:28s} {t.median:9.3f} s  ({t.min:.3f}, {t.max:.3f})  {t.median / q.median:7.2f}x", flush=True)
        rows.append(harness.row(workload, tool, t, q, error=record["max_error"].get(dev),
                                note=", ".join(filter(None, ("the demo's device" if dev == demo.REFERENCE else "",
                                                             "cold (--quick)" if n is None else "")))))
    record["median_s"] = {dev: t.median for dev, t in timings.items()}
    return rows, record


def main(argv=None):
    args = parse_args(argv)
    # passive OpenMP waiting: lightning's and qfleet's pools spinning beside torch's on a busy 2-core
    # machine made lightning's TorchLayer steps 20-50x slower (8.6 s instead of 0.16 s for qnn_torch --quick)
    harness.threads_env(args.threads, passive=True)
    start = time.perf_counter()
    import pennylane as qml
    import torch

    import pl_demos

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    demos = select(pl_demos.DEMOS, args.only)
    rows, records = [], {}
    for demo in demos:
        demo_rows, records[demo.NAME] = run_demo(demo, args)
        rows.extend(demo_rows)
    failed = [name for name, r in records.items() if r["status"] != "ok"]
    wall = time.perf_counter() - start
    if not failed:
        print(f"\nall {len(records)} demos: every device's outputs equal the demo's own device's (within each "
              "demo's tolerance) before timing", flush=True)
    harness.finish(args, SCRIPT, rows,
                   {"demos": records, "failed": failed, "wall_s": wall, "pennylane": qml.__version__,
                    "versions": harness.versions("pennylane", "pennylane_lightning", "jax", "scikit-learn"),
                    "machine": harness.run_machine(args.threads)},
                   title="PennyLane's demos with only the device name changed: seconds per workload; ratio "
                         "device / qfleet's device")
    print(f"whole run: {wall:.0f} s")
    if failed:
        print(f"{SCRIPT}: FAILED: {', '.join(failed)} (above)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
