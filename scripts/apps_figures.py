#!/usr/bin/env python3
"""The research apps' GPU figures in one JSON file, from the apps' own reports.

    scripts/apps_figures.py OUT.json --gpu NAME [--meta-paper-gpu DIR] [--meta-paper-cpu DIR]
        [--meta4096-gpu DIR] [--meta4096-cpu DIR] [--qgan-gpu DIR] [--qgan-classifier-compare FILE]
        [--pennylane-cuda FILE] [--qgan-pennylane-cuda FILE] [--classify-gpu DIR] [--rl-env-gpu FILE]
        [--ppo-gpu DIR] [--ppo-cpu DIR]

Each DIR is an app's --out directory (its report.json); the FILEs are the --json outputs of
bench/compare/qgan_classifier.py, of bench/compare/pennylane_device.py --device cuda, of
bench/compare/qgan.py --device cuda and of qfleet-rl bench-env --env device=cuda; the
--ppo DIRs are qfleet-rl compare's (report.json and compare.json).
Every key of the file is
present: a figure where the reports give it, else null with the reason beside it in
"reasons" (not run, ran on another device than asked, or not measurable yet). A
figure is taken only from a report that ran where the key says: a "gpu" figure from a
run whose device was cuda, a "cpu" one from a run on the cpu, so a fallback never
passes for a measurement. "sources" names the report and run behind each figure.
scripts/gpu_check.sh figures writes it as apps.json on a GPU machine; without one the
GPU keys are null.
"""
import argparse
import datetime
import json
import os
import sys

KEYS = ["meta_batch4096_speedup_vs_cpu", "meta_paper_iteration_ms_gpu", "meta_paper_iteration_ms_cpu",
        "rl_env_steps_per_s_gpu", "ppo_wall_s_gpu", "ppo_wall_s_cpu", "qgan12_epoch_speedup_vs_pennylane_gpu",
        "qgan12_generator_step_speedup_vs_pennylane_gpu", "classify_quantum_share_gpu",
        "pennylane_cuda_speedup_vs_default_qubit", "qgan_classifier_epoch_speedup_vs_plain_pytorch_gpu"]

# What no app run measures yet, and why.
NOT_YET = {}


def load(directory):
    """The report of an app run (None when the run left none)."""
    return result_file(os.path.join(directory, "report.json"))[0] if directory else None


def meta_run(report, device):
    """(per-iteration ms, source) of a meta-control report that ran on `device`, or (None, why)."""
    if report is None:
        return None, "not run (no report)"
    used = report.get("device", {}).get("used")
    if used != device:
        return None, f"asked for {device}, ran on {used}: {report.get('device', {}).get('why', '')}"
    cfg = report.get("config", {})
    ms = report.get("timings_s", {}).get("per_iteration_ms")
    if not isinstance(ms, (int, float)) or ms <= 0:
        return None, "the report has no per-iteration time"
    return float(ms), (f"qfleet-meta preset {cfg.get('preset')}, meta_batch {cfg.get('meta_batch')}, "
                       f"{cfg.get('iterations')} iterations on {used}")


def result_file(path, missing="not run (no result)"):
    """(the --json result of a bench/compare script, None) or (None, why it is not there)."""
    if not path:
        return None, "not run"
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError):
        return None, missing


PENNYLANE_MISSING = "not run (no result: PennyLane not in the GPU bundle, or the run failed)"


def classifier_compare(path):
    """(plain PyTorch ms / qfleet ms per epoch, source) of a bench/compare/qgan_classifier.py run on cuda,
    or (None, why)."""
    r, why = result_file(path)
    if r is None:
        return None, why
    if not str(r.get("device", "")).startswith("cuda"):
        return None, f"ran on {r.get('device')}, not cuda"
    speedup = r.get("speedup")
    if not isinstance(speedup, (int, float)) or speedup <= 0:
        return None, "the result has no speedup"
    return round(float(speedup), 3), (f"bench/compare/qgan_classifier.py: {r.get('shots')} shots, {r.get('epochs')} "
                                      f"epochs on {r.get('device')}: plain PyTorch {r.get('plain_pytorch_ms_per_epoch_median')}"
                                      f" ms / qfleet {r.get('qfleet_ms_per_epoch')} ms per epoch")


def pennylane_cuda(path):
    """(default.qubit ms / qfleet.qubit ms on the GPU, source) of bench/compare/pennylane_device.py
    --device cuda, or (None, why)."""
    r, why = result_file(path, PENNYLANE_MISSING)
    if r is None:
        return None, why
    if r.get("device") != "cuda":
        return None, f"ran on {r.get('device', 'cpu')}, not cuda"
    speedup = r.get("speedup_vs_default_qubit")
    if not isinstance(speedup, (int, float)) or speedup <= 0:
        return None, "the result has no speedup"
    ms = r.get("median_ms", {})
    return round(float(speedup), 3), (f"bench/compare/pennylane_device.py --device cuda: TorchLayer, batch "
                                      f"{r.get('batch')}, forward + backward: default.qubit backprop "
                                      f"{ms.get('default.qubit cuda (backprop)')} ms / qfleet.qubit device_vjp "
                                      f"{ms.get('qfleet.qubit cuda (adjoint, device_vjp)')} ms on {r.get('gpu')}")


def qgan_pennylane_cuda(path):
    """{key: (default.qubit backprop / qfleet on the GPU, source)} of bench/compare/qgan.py --device cuda
    at 12 qubits: the epoch's ratio and the generator step's; or {key: (None, why)}."""
    keys = ("qgan12_epoch_speedup_vs_pennylane_gpu", "qgan12_generator_step_speedup_vs_pennylane_gpu")
    r, why = result_file(path, PENNYLANE_MISSING)
    if r is None:
        return {k: (None, why) for k in keys}
    if r.get("device") != "cuda" or r.get("qubits") != 12:
        return {k: (None, f"ran on {r.get('device', 'cpu')} with {r.get('qubits')} qubits, not cuda with 12")
                for k in keys}
    tool = "default.qubit backprop"
    epoch = next((row for row in r.get("rows", []) if row.get("tool") == tool), {})
    step = r.get("generator_step", {}).get(tool, {})
    out = {}
    for key, row, what in ((keys[0], epoch, "epoch"), (keys[1], step, "generator step")):
        ratio = row.get("ratio_to_qfleet")
        if not isinstance(ratio, (int, float)) or ratio <= 0:
            out[key] = (None, f"no {tool} {what} in the result: {row.get('skipped', 'not timed')}")
        else:
            out[key] = (round(float(ratio), 3), f"bench/compare/qgan.py --device cuda, 12 qubits: {tool} "
                                                f"{row.get('median_ms'):.3f} ms a {what}, {ratio:.2f}x qfleet's, on "
                                                f"{r.get('gpu')}")
    return out


def rl_env(path):
    """(env-steps/s, source) of qfleet-rl bench-env --json on cuda (the environments stepped as
    tensors there), or (None, why)."""
    r, why = result_file(path)
    if r is None:
        return None, why
    if not str(r.get("device", "")).startswith("cuda") or r.get("stepping") != "tensors":
        return None, f"ran on {r.get('device', 'cpu')} ({r.get('stepping', 'loop')}), not as tensors on cuda"
    rate = r.get("env_steps_per_s")
    if not isinstance(rate, (int, float)) or rate <= 0:
        return None, "the result has no env_steps_per_s"
    return float(f"{rate:.4g}"), (f"qfleet-rl bench-env: {r.get('environment')}; median {r.get('median_step_s')} s a "
                                  f"step over {r.get('repeats')} repeats of {r.get('steps')} random-action steps")


def ppo_wall(directory, device):
    """(wall seconds until PPO's validation mean came within 0.002 of per-task GRAPE's, source) of a
    qfleet-rl compare run whose rollout ran on `device` ("cuda" or "cpu"), or (None, why)."""
    report = load(directory)
    if report is None:
        return None, "not run (no report)"
    used = str(report.get("devices", {}).get("rollout", ""))
    if not used.startswith(device):
        return None, f"asked for {device}, the rollout ran on {used or 'an unnamed device'}"
    c, why = result_file(os.path.join(directory, "compare.json"), "no compare.json (the comparison did not finish)")
    if c is None:
        return None, why
    reached = c.get("reached_within_0.002")
    gap = c.get("gap_grape_minus_ppo", {}).get("mean")
    if not isinstance(reached, dict) or not isinstance(reached.get("wall_s"), (int, float)):
        return None, f"PPO did not come within 0.002 of GRAPE in {c.get('ppo_env_steps')} env steps (final gap {gap})"
    return round(float(reached["wall_s"]), 3), (
        f"qfleet-rl compare, rollout on {used}, update on {report.get('devices', {}).get('update')}: within 0.002 of "
        f"per-task GRAPE after {reached.get('env_steps')} env steps (rollout {reached.get('rollout')}); final gap {gap}")


def classify_share(report):
    """(the quantum layer's share of the classifier's training step, source) of a qfleet-classify
    report that ran on cuda, or (None, why)."""
    if report is None:
        return None, "not run (no report)"
    name = str(report.get("device", {}).get("name", ""))
    if not name.startswith("cuda"):
        return None, f"asked for cuda, ran on {name or 'an unnamed device'}"
    t = report.get("timing", {})
    share = t.get("quantum_layer_share")
    if not isinstance(share, (int, float)) or not 0 < share <= 1:
        return None, "the report has no quantum layer share"
    return round(float(share), 4), (f"qfleet-classify on {name}: quantum layer {t.get('quantum_layer_ms'):.3f} ms of "
                                    f"a {t.get('step_ms'):.3f} ms step over {t.get('timed_steps')} timed steps")


def collect(args):
    out = {k: None for k in KEYS}
    reasons, sources = {}, {}
    for dev in ("gpu", "cpu"):
        key = f"meta_paper_iteration_ms_{dev}"
        ms, why = meta_run(load(getattr(args, f"meta_paper_{dev}")), "cuda" if dev == "gpu" else "cpu")
        if ms is None:
            reasons[key] = why
        else:
            out[key], sources[key] = round(ms, 3), why
    g, why_g = meta_run(load(args.meta4096_gpu), "cuda")
    c, why_c = meta_run(load(args.meta4096_cpu), "cpu")
    if g is None or c is None:
        reasons["meta_batch4096_speedup_vs_cpu"] = "; ".join(w for w, v in ((why_g, g), (why_c, c)) if v is None)
    else:
        out["meta_batch4096_speedup_vs_cpu"] = round(c / g, 3)
        sources["meta_batch4096_speedup_vs_cpu"] = f"cpu {c:.3f} ms / gpu {g:.3f} ms per iteration ({why_g}; {why_c})"
    for key, why in NOT_YET.items():
        reasons[key] = why
    value, why = classifier_compare(args.qgan_classifier_compare)
    key = "qgan_classifier_epoch_speedup_vs_plain_pytorch_gpu"
    if value is None:
        reasons[key] = why
    else:
        out[key], sources[key] = value, why
    for key, (value, why) in qgan_pennylane_cuda(args.qgan_pennylane_cuda).items():
        if value is None:
            reasons[key] = why
        else:
            out[key], sources[key] = value, why
    value, why = classify_share(load(args.classify_gpu))
    if value is None:
        reasons["classify_quantum_share_gpu"] = why
    else:
        out["classify_quantum_share_gpu"], sources["classify_quantum_share_gpu"] = value, why
    for key, (value, why) in (("pennylane_cuda_speedup_vs_default_qubit", pennylane_cuda(args.pennylane_cuda)),
                              ("rl_env_steps_per_s_gpu", rl_env(args.rl_env_gpu)),
                              ("ppo_wall_s_gpu", ppo_wall(args.ppo_gpu, "cuda")),
                              ("ppo_wall_s_cpu", ppo_wall(args.ppo_cpu, "cpu"))):
        if value is None:
            reasons[key] = why
        else:
            out[key], sources[key] = value, why
    qgan = load(args.qgan_gpu)
    if qgan is not None:  # no key of its own yet: its time on the GPU beside the keys, for the record
        t = qgan.get("timing", {})
        sources["qgan_gpu_epoch_ms"] = (f"{t.get('epoch_ms')} ms per epoch on {t.get('device')} "
                                        f"({t.get('device_reason', '')})")
    return {"gpu": args.gpu, "date": datetime.date.today().isoformat(), **out, "reasons": reasons,
            "sources": sources}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--gpu", required=True, help="the GPU's name (nvidia-smi), or 'none'")
    for name in ("meta-paper-gpu", "meta-paper-cpu", "meta4096-gpu", "meta4096-cpu", "qgan-gpu", "classify-gpu",
                 "ppo-gpu", "ppo-cpu"):
        ap.add_argument(f"--{name}", metavar="DIR")
    ap.add_argument("--qgan-classifier-compare", metavar="FILE")
    ap.add_argument("--pennylane-cuda", metavar="FILE")
    ap.add_argument("--qgan-pennylane-cuda", metavar="FILE")
    ap.add_argument("--rl-env-gpu", metavar="FILE")
    args = ap.parse_args(argv)
    result = collect(args)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    measured = [k for k in KEYS if result[k] is not None]
    print(f"apps_figures: {len(measured)} of {len(KEYS)} keys measured ({', '.join(measured) or 'none'}); "
          f"the others null with their reasons in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
