"""`qfleet eval` on a big batch with JSON arrays and with .npy arrays (docs/cli.md#arrays-in-npy-files),
beside the engine's own time for the same forward pass, in one run: the classifier circuit
(4 qubits, angle embedding, 3 strongly entangling layers, <Z_i>), forward only.

    QFLEET_CLI=build/tools/qfleet PYTHONPATH=python \\
        python bench/compare/cli_npy.py [--batch 32768] [--repeats 15] [--threads N] [--json out.json] \\
        [--md out.md] [--quick]

Rows (medians, ms; the cases interleaved, one call of each per round): the CLI with a
1-sample problem (process start, reading, compiling: the fixed cost); the CLI with JSON
arrays; the CLI with .npy files (which binds its threads when they fill the CPUs:
docs/cli.md#threads), and again with OMP_PROC_BIND=false (unbound); the engine in-process
(qfleet.circuit_forward on the same arrays: warm, and the first call after compiling).
The .npy results are checked equal to the JSON results (exactly) before timing. The shared
flags (harness.py): --quick is batch 1024 and 3 rounds; --threads N sets OMP_NUM_THREADS for the
CLI's processes and the in-process engine (default: the environment's); --seed seeds the inputs.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import harness


def parse_args(argv=None):
    ap = harness.parser(__doc__, threads=None, seed=0, quick_help="batch 1024, 3 rounds: a smoke run")
    ap.add_argument("--batch", type=int, default=None, help="samples (default 32768; --quick: 1024)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="rounds of the interleaved cases (default 15; --quick: 3)")
    args = harness.validate(ap, ap.parse_args(argv))
    args.batch = args.batch or (1024 if args.quick else 32768)
    args.repeats = args.repeats or (3 if args.quick else 15)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.threads is not None:  # the CLI's children read it, and torch's OpenMP when it loads below
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch

    import qfleet

    cli = os.environ.get("QFLEET_CLI") or shutil.which("qfleet")
    if not cli:
        raise SystemExit("set QFLEET_CLI to the qfleet binary (or install the package)")
    rng = np.random.default_rng(args.seed)
    x = rng.random((args.batch, 4)) * np.pi
    w = rng.random(36) * 2 * np.pi
    c = qfleet.Circuit(4)
    c.angle_embedding([0, 1, 2, 3]).strongly_entangling_layers([0, 1, 2, 3], layers=3)
    for q in range(4):
        c.expval(f"Z{q}")
    doc = c.to_json()
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), x)
        np.save(os.path.join(d, "w.npy"), w)
        files = {
            "tiny": dict(doc, inputs=x[:1].tolist(), weights=w.tolist()),
            "json": dict(doc, inputs=x.tolist(), weights=w.tolist()),
            "npy": dict(doc, inputs={"npy": "x.npy"}, weights={"npy": "w.npy"}, output_npy="r"),
        }
        for name, problem in files.items():
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(problem, f)

        unbound = dict(os.environ, OMP_PROC_BIND="false")

        def cli_run(name, env=None):
            r = subprocess.run([cli, "eval", os.path.join(d, name + ".json")], capture_output=True, text=True,
                               env=env)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            return r.stdout

        via_json = np.array(json.loads(cli_run("json"))["expvals"])
        via_npy = np.load(json.loads(cli_run("npy"))["expvals"]["npy"])
        harness.check_close("qfleet eval: .npy results against the JSON results", via_npy, via_json, atol=0.0)
        X, W = torch.from_numpy(x), torch.from_numpy(w)
        t0 = time.perf_counter()
        program = c.compile()
        qfleet.circuit_forward(program, X, W)
        first = (time.perf_counter() - t0) * 1e3
        spread = harness.interleaved({
            "qfleet eval, 1 sample (fixed cost)": lambda: cli_run("tiny"),
            "qfleet eval, JSON arrays": lambda: cli_run("json"),
            "qfleet eval, .npy arrays": lambda: cli_run("npy"),
            "qfleet eval, .npy arrays, OMP_PROC_BIND=false": lambda: cli_run("npy", unbound),
            "engine in-process, warm": lambda: qfleet.circuit_forward(program, X, W),
        }, args.repeats)
    rows = {k: median * 1e3 for k, (median, _, _) in spread.items()}
    rows["engine in-process, compile + first call"] = first
    engine = rows["engine in-process, warm"]
    print(f"batch {args.batch}, forward of the 4-qubit classifier circuit, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', '(all)')}; .npy results equal the JSON results; ms (median of "
          f"{args.repeats}) and ratio to the warm engine:")
    for name, ms in rows.items():
        print(f"  {name:48s} {ms:9.2f}  {ms / engine:6.2f}x")
    warm = harness.as_timing(spread["engine in-process, warm"], args.repeats)
    table = [harness.row(f"classifier n4 B{args.batch} fwd", k, harness.as_timing(v, args.repeats), warm)
             for k, v in spread.items()]
    table.append(harness.row(f"classifier n4 B{args.batch} fwd", "engine in-process, compile + first call",
                             harness.Timing(first / 1e3, first / 1e3, first / 1e3, 1, 1, first / 1e3), warm))
    harness.finish(args, "cli_npy.py", table, {"batch": args.batch, "median_ms": rows},
                   title="qfleet eval (JSON, .npy) beside the in-process engine; ratio to the warm engine")


if __name__ == "__main__":
    main()
