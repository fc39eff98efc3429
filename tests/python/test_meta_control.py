"""The meta-control app's Python twin (python/qfleet/meta_control): the same numbers as
the C++ qfleet-meta binary, checkpoints that cross languages, the same configuration
errors, the plots, and docs that list every configuration key."""
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


@pytest.fixture(scope="module")
def mc(qfleet):
    from qfleet import meta_control
    return meta_control


def meta_binary():
    path = os.environ.get("QFLEET_META")
    if not path:
        pytest.skip("QFLEET_META (the qfleet-meta binary) is not set: ctest and scripts/test.sh set it")
    return path


def run_py(mc, out, **keys):
    """Runs the Python twin; returns its report.json as written (NaN -> null, like C++)."""
    cfg = mc.make_config(mc.resolve_config({**SMALL, **keys, "output_dir": str(out)}))
    assert mc.run(cfg).complete
    return read_report(out)


def read_report(out):
    return json.loads((pathlib.Path(out) / "report.json").read_text())


def numbers(report):
    """Every number of a report except timings."""
    return {k: v for k, v in report.items() if k in ("curve", "validation", "policy_parameters")}


@pytest.mark.parametrize("keys", [{}, {"algorithm": "maml", "iterations": 3},
                                  {"algorithm": "reptile", "system": "two_qubit_cz", "iterations": 3},
                                  {"fidelity": "state_transfer", "precision": "complex64"},
                                  {"solver": "rk4", "dt": 0.01, "iterations": 3}])
def test_python_and_cpp_give_the_same_numbers(mc, tmp_path, keys):
    binary = meta_binary()
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps({**SMALL, **keys, "output_dir": str(tmp_path / "cpp")}))
    subprocess.run([binary, "--config", str(cfg_file), "--quiet"], check=True)
    cpp = json.loads((tmp_path / "cpp" / "report.json").read_text())
    py = run_py(mc, tmp_path / "py", **keys)
    assert numbers(py) == numbers(cpp)  # the same torch kernels, the same engine: bit for bit
    assert json.loads((tmp_path / "py" / "pulses.json").read_text()) == \
        json.loads((tmp_path / "cpp" / "pulses.json").read_text())


def test_checkpoints_cross_languages(mc, tmp_path):
    binary = meta_binary()
    whole = run_py(mc, tmp_path / "whole")
    cfg_file = tmp_path / "run.json"
    cfg_file.write_text(json.dumps({**SMALL, "output_dir": str(tmp_path / "parts")}))
    subprocess.run([binary, "--config", str(cfg_file), "--quiet", "--stop-after", "5"], check=True)
    cfg = mc.make_config(mc.resolve_config({**SMALL, "output_dir": str(tmp_path / "parts")}))
    assert mc.run(cfg, resume=True).complete  # Python continues what C++ started
    assert numbers(read_report(tmp_path / "parts")) == numbers(whole)


def test_seeded_training_raises_validation_fidelity_and_resumes_identically(mc, tmp_path):
    whole = run_py(mc, tmp_path / "a", iterations=30, validate_every=10)
    start, end = whole["curve"][0]["val_after"], whole["curve"][-1]["val_after"]
    assert start < 0.5 and end > start + 0.4
    cfg = mc.make_config(mc.resolve_config({**SMALL, "iterations": 30, "validate_every": 10,
                                            "output_dir": str(tmp_path / "b")}))
    assert not mc.run(cfg, stop_after=13).complete
    assert mc.run(cfg, resume=True).complete
    assert numbers(read_report(tmp_path / "b")) == numbers(whole)


def test_configuration_errors_match_the_cpp_wording(mc, tmp_path):
    cases = [({"iteratons": 5}, [], "unknown key 'iteratons' in the configuration file (did you mean 'iterations'?)"),
             ({}, ["bogus=1"], "unknown key 'bogus' in --set"),
             ({"iterations": -1}, [], "key 'iterations': expected an integer in [0, 1e+07], got -1"),
             ({}, ["inner_lr=1e999"], "key 'inner_lr': expected a number in [0, 1000], got \"1e999\""),
             ({"solver": "rk4"}, [], "solver 'rk4' needs a step: set dt"),
             ({"preset": "slow"}, [], "unknown preset 'slow' (presets: accurate, fast, paper)")]
    if mc.cuda_device_count() == 0:
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


def test_command_line_and_plots(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ)
    args = [sys.executable, "-m", "qfleet.meta_control", "--out", str(out), "--quiet"]
    for k, v in SMALL.items():
        args += ["--set", f"{k}={json.dumps(v)}"]
    subprocess.run(args, check=True, env=env, cwd=tmp_path)
    report = json.loads((out / "report.json").read_text())
    assert report["app"].startswith("qfleet.meta_control")
    assert math.isfinite(report["validation"]["mean_gap"])
    subprocess.run([sys.executable, "-m", "qfleet.meta_control.plot", str(out)], check=True, env=env, cwd=tmp_path)
    for name in ("training_curve", "pulses", "fidelity_vs_noise", "adaptation_gap"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    bad = subprocess.run([sys.executable, "-m", "qfleet.meta_control", "--set", "iteratons=3"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "did you mean 'iterations'" in bad.stderr


def test_docs_list_every_configuration_key(mc):
    doc = (ROOT / "docs" / "meta_control.md").read_text()
    for key in mc.schema()["keys"]:
        assert f"`{key}`" in doc, key
