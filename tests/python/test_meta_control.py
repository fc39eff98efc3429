"""The meta-control app from Python (python/qfleet/meta_control): the module and
`python -m qfleet.meta_control` call the C++ library (apps/meta_control) through the torch
extension, so they must give the qfleet-meta binary's report and messages; checkpoints
written by one entry point resume in the other; the plots; docs that list every key."""
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMALL = {"iterations": 8, "meta_batch": 5, "hidden_width": 16, "validation_tasks": 3, "validate_every": 4,
         "robust_iterations": 10, "grape_iterations": 15, "checkpoint_every": 3, "threads": 2, "meta_lr": 0.01}


def run_py(mc, out, **keys):
    """Runs the app through the Python module; returns its report.json as written."""
    cfg = mc.make_config(mc.resolve_config({**SMALL, **keys, "output_dir": str(out)}))
    result = mc.run(cfg)
    assert result.complete
    report = read_report(out)
    assert numbers(result.report) == numbers(report)
    return report


def read_report(out):
    return json.loads((pathlib.Path(out) / "report.json").read_text())


def numbers(report):
    """Every number of a report except timings."""
    return {k: v for k, v in report.items() if k in ("curve", "validation", "policy_parameters")}


@pytest.mark.parametrize("keys", [{}, {"algorithm": "reptile", "system": "two_qubit_cz_xx_zz", "iterations": 3,
                                       "fidelity": "state_transfer", "precision": "complex64"}])
def test_python_and_the_binary_give_the_same_report(mc, meta_binary, tmp_path, keys):
    binary = meta_binary
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps({**SMALL, **keys, "output_dir": str(tmp_path / "cpp")}))
    subprocess.run([binary, "--config", str(cfg_file), "--quiet"], check=True)
    cpp = read_report(tmp_path / "cpp")
    py = run_py(mc, tmp_path / "py", **keys)
    assert cpp["app"] == "qfleet-meta" and py["app"] == "qfleet.meta_control"
    assert numbers(py) == numbers(cpp)  # one library, the same engine: bit for bit
    assert json.loads((tmp_path / "py" / "pulses.json").read_text()) == \
        json.loads((tmp_path / "cpp" / "pulses.json").read_text())


def test_checkpoints_cross_entry_points(mc, meta_binary, tmp_path):
    binary = meta_binary
    whole = run_py(mc, tmp_path / "whole")
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps({**SMALL, "output_dir": str(tmp_path / "parts")}))
    subprocess.run([binary, "--config", str(cfg_file), "--quiet", "--stop-after", "5"], check=True)
    cfg = mc.make_config(mc.resolve_config({**SMALL, "output_dir": str(tmp_path / "parts")}))
    assert mc.run(cfg, resume=True).complete  # Python continues what the binary started
    assert numbers(read_report(tmp_path / "parts")) == numbers(whole)
    stopped = mc.run(mc.make_config(mc.resolve_config({**SMALL, "output_dir": str(tmp_path / "s")})), stop_after=2)
    assert not stopped.complete and stopped.report["stopped_at_iteration"] == 2


def test_gradient_entry_points_match_finite_differences(mc):
    """meta_gradient through the extension is the derivative of meta_objective (maml: exact)."""
    cfg = mc.make_config(mc.resolve_config({**SMALL, "algorithm": "maml", "inner_steps": 2, "hidden_width": 4,
                                            "n_segments": 6}))
    p = mc.policy_size(cfg)
    gen = torch.Generator().manual_seed(3)
    theta = (torch.rand(p, generator=gen, dtype=torch.float64) - 0.5) * 0.6
    noise = torch.tensor([[0.05, 0.03], [0.1, 0.01]], dtype=torch.float64)
    g = mc.meta_gradient(cfg, theta, noise)
    assert g.shape == (p,)
    for i in (0, p // 2, p - 1):
        e = torch.zeros(p, dtype=torch.float64)
        e[i] = 1e-5
        fd = (mc.meta_objective(cfg, theta + e, noise) - mc.meta_objective(cfg, theta - e, noise)) / 2e-5
        assert abs(g[i].item() - fd) < 1e-6 * max(1.0, abs(fd)), (i, g[i].item(), fd)


def test_a_meta_step_compiled_once_gives_the_one_off_gradients(mc):
    """MetaStep keeps its programs between calls: alternating task batches through one step must give
    what a fresh meta_gradient gives each (no state kept between calls), and its inputs are checked."""
    cfg = mc.make_config(mc.resolve_config({**SMALL, "inner_steps": 2, "hidden_width": 4, "n_segments": 6}))
    p = mc.policy_size(cfg)
    gen = torch.Generator().manual_seed(5)
    step = mc.MetaStep(cfg)
    batches = [torch.rand(3, 2, generator=gen, dtype=torch.float64) * 0.1 + 0.01 for _ in range(2)]
    for k in range(4):
        theta = (torch.rand(p, generator=gen, dtype=torch.float64) - 0.5) * 0.6
        noise = batches[k % 2]
        assert torch.equal(step.gradient(theta, noise), mc.meta_gradient(cfg, theta, noise))
        assert step.objective(theta, noise) == mc.meta_objective(cfg, theta, noise)
    with pytest.raises(mc.ConfigError, match=rf"theta must have shape \[{p}\]"):
        step.gradient(torch.zeros(p + 1, dtype=torch.float64), batches[0])
    with pytest.raises(mc.ConfigError, match=r"noise must have shape \[T, 2\]"):
        step.gradient(torch.zeros(p, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
    with pytest.raises(mc.ConfigError, match="must be float64"):
        step.gradient(torch.zeros(p, dtype=torch.float32), batches[0].float())
    with pytest.raises(mc.ConfigError, match="one device, got cpu and meta"):
        step.gradient(torch.zeros(p, dtype=torch.float64), torch.zeros(3, 2, dtype=torch.float64, device="meta"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for torch")
def test_training_resident_on_cuda_follows_the_cpu(mc, tmp_path):
    """device = cuda keeps theta, its optimizer and each meta-batch on the GPU, the iteration
    captured as a CUDA graph: the same tasks and steps as the CPU run, so the curves agree to the
    float64 engine's rounding (the sums' order differs on the GPU), and a checkpoint written on
    the GPU resumes there to the same numbers."""
    import qfleet
    if qfleet.cuda_device_count() == 0:
        pytest.skip("qfleet sees no CUDA device")
    cpu = run_py(mc, tmp_path / "cpu", device="cpu")
    gpu = run_py(mc, tmp_path / "gpu", device="cuda")
    assert gpu["device"]["used"] == "cuda" and cpu["device"]["used"] == "cpu"
    # On the GPU the iteration runs as one captured CUDA graph (meta_step = auto: graph), on the
    # CPU through torch::optim; the status names a failed capture's reason.
    assert (gpu["device"]["meta_step"], cpu["device"]["meta_step"]) == ("graph", "eager")
    assert gpu["device"]["graph"].startswith("captured"), gpu["device"]["graph"]
    for key in ("curve", "validation"):
        assert_close(cpu[key], gpu[key], key)
    cfg = mc.make_config(mc.resolve_config({**SMALL, "device": "cuda", "output_dir": str(tmp_path / "parts")}))
    assert not mc.run(cfg, stop_after=5).complete
    assert mc.run(cfg, resume=True).complete
    parts = read_report(tmp_path / "parts")
    assert_close(parts["curve"], gpu["curve"], "resumed curve")


def assert_close(a, b, where, rel=1e-7):
    """Two JSON values equal in structure, their numbers to rel (of max(1, |a|))."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_close(a[k], b[k], f"{where}.{k}", rel)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{where}[{i}]", rel)
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        assert abs(a - b) <= rel * max(1.0, abs(a)), (where, a, b)
    else:
        assert a == b, (where, a, b)


def test_configuration_errors_are_the_binarys(mc, tmp_path):
    cases = [({"iteratons": 5}, [], "unknown key 'iteratons' in the configuration file (did you mean 'iterations'?)"),
             ({}, ["bogus=1"], "unknown key 'bogus' in --set"),
             ({"iterations": -1}, [], "key 'iterations': expected an integer in [0, 10000000], got -1"),
             ({}, ["inner_lr=1e999"], "key 'inner_lr': expected a number in [0, 1000], got '1e999'"),
             ({"solver": "rk4"}, [], "solver 'rk4' needs a step: set dt"),
             ({"preset": "slow"}, [], "unknown preset 'slow' (presets: accurate, cz_paper, fast, main, original, original_rk4, paper)")]
    import qfleet
    if qfleet.cuda_device_count() == 0:
        cases.append(({"device": "cuda"}, [], "no CUDA device is visible"))
    binary = os.environ.get("QFLEET_META")
    for file, sets, needle in cases:
        with pytest.raises(mc.ConfigError) as e:
            mc.make_config(mc.resolve_config(file, "", sets))
        assert needle in str(e.value)
        if binary:  # the C++ binary says the same
            cfg = tmp_path / "bad.json"
            cfg.write_text(json.dumps({**file, "output_dir": str(tmp_path / "out")}))
            r = subprocess.run([binary, "--config", str(cfg), "--quiet", "--stop-after", "0"]
                               + [a for s in sets for a in ("--set", s)], capture_output=True, text=True)
            assert r.returncode == 2 and needle in r.stderr, r.stderr
    with pytest.raises(mc.ConfigError, match="resume: no checkpoint at"):
        mc.run(mc.make_config(mc.resolve_config({"output_dir": str(tmp_path / "none")})), resume=True)
    with pytest.raises(mc.ConfigError, match="cannot open"):
        mc.load_config_file(tmp_path / "missing.json")
    with pytest.raises(AttributeError, match="no key 'iteratons'"):
        mc.make_config(mc.resolve_config()).iteratons


def test_command_line_and_plots(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ)
    args = [sys.executable, "-m", "qfleet.meta_control", "--out", str(out)]
    for k, v in SMALL.items():
        args += ["--set", f"{k}={json.dumps(v)}"]
    r = subprocess.run(args, check=True, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert "optimality gap (mean / max)" in r.stdout and "8/8 100%" in r.stderr, (r.stdout, r.stderr)
    report = json.loads((out / "report.json").read_text())
    assert report["app"] == "python -m qfleet.meta_control"
    assert math.isfinite(report["validation"]["mean_gap"])
    subprocess.run([sys.executable, "-m", "qfleet.meta_control.plot", str(out)], check=True, env=env, cwd=tmp_path)
    for name in ("training_curve", "pulses", "fidelity_vs_noise", "adaptation_gap"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    for bad, needle in ((["--set", "iteratons=3"], "did you mean 'iterations'"),
                        (["--stop-after", "-1"], "--stop-after")):
        r = subprocess.run([sys.executable, "-m", "qfleet.meta_control"] + bad,
                           capture_output=True, text=True, env=env, cwd=tmp_path)
        assert r.returncode == 2 and needle in r.stderr and "python -m qfleet.meta_control" in r.stderr, r.stderr


def test_docs_list_every_configuration_key(mc):
    doc = (ROOT / "docs" / "meta_control.md").read_text()
    for key in mc.schema()["keys"]:
        assert f"`{key}`" in doc, key


def test_reproduce_prints_its_settings_and_names_the_experiments(meta_binary):
    # `reproduce` answers --print-config like every subcommand; an unknown experiment is one
    # line naming them (before anything runs), with or without --print-config.
    r = subprocess.run([meta_binary, "reproduce", "cz", "--tiny", "--print-config"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    settings = json.loads(r.stdout)
    assert settings["experiment"] == "cz" and settings["tiny"] is True and settings["out"] == "reproduction-out"
    for extra in ([], ["--print-config"]):
        r = subprocess.run([meta_binary, "reproduce", "nosuch", "--tiny", *extra], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2, r.stderr
        assert "unknown experiment 'nosuch' (experiments: gap-vs-k" in r.stderr and ", all)" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
