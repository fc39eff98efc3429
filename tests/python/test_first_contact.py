"""What a new user does first, from a checkout built with the README's commands and no
installation: `PYTHONPATH=python` is all they set (the package finds the build's libraries),
Gymnasium's ids work without importing qfleet.rl first (the module-prefixed id), the plot
modules import without their compiled app, and a missing library says what to set."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _build_dir():
    """The build under test (ctest and scripts/test.sh name its qfleet-meta binary)."""
    binary = os.environ.get("QFLEET_META")
    if not binary:
        pytest.skip("QFLEET_META (the qfleet-meta binary of the build under test) is not set")
    return pathlib.Path(binary).resolve().parents[2]


def _run_source_tree(code, build, **extra):
    # A fresh interpreter that sees the source package only: no library variables.
    env = {k: v for k, v in os.environ.items() if not (k.startswith("QFLEET_") or k == "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "python")
    if build != ROOT / "build":  # a build elsewhere is named; ROOT/build is found on its own
        env["QFLEET_BUILD_DIR"] = str(build)
    env.update(extra)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                          cwd=str(ROOT))


def test_the_source_package_finds_the_builds_libraries():
    build = _build_dir()
    if not (build / "apps" / "rl" / "libqfleet_rl.so").exists():
        pytest.skip(f"{build} has no qfleet-rl library")
    code = """
import torch, qfleet, gymnasium
c = qfleet.Circuit(2)
c.angle_embedding([0, 1]).expval("Z0")
y = qfleet.QuantumLayer(c)(torch.zeros(3, 2, dtype=torch.float64))
assert torch.allclose(y, torch.ones(3, 1, dtype=torch.float64)), y
envs = gymnasium.make_vec("qfleet.rl:qfleet/QubitX-v0", num_envs=4)
obs, _ = envs.reset(seed=0)
assert tuple(obs.shape)[0] == 4
import qfleet.meta_control as mc
assert "iterations" in mc.schema()["keys"]
print("ok", qfleet._lib.library_path())
"""
    r = _run_source_tree(code, build)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok ") and str(build) in r.stdout, r.stdout


def test_a_missing_library_says_what_to_set():
    build = _build_dir()
    r = _run_source_tree("import qfleet", build, QFLEET_BUILD_DIR=str(ROOT / "no-such-build"))
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: qfleet: the compiled operator library"), last
    for way in ("pip install", "QFLEET_BUILD_DIR", "QFLEET_TORCH_LIBRARY", "no-such-build"):
        assert way in last, (way, last)


def test_app_packages_import_without_their_app():
    build = _build_dir()
    code = """
import qfleet.meta_control.plot, qfleet.classify.plot, qfleet.qgan.plot, qfleet.rl.plot
import qfleet.meta_control as mc
try:
    mc.schema()
except OSError as e:
    print("OSError")
"""
    r = _run_source_tree(code, build, QFLEET_META_LIBRARY=str(ROOT / "no-such.so"),
                         QFLEET_CLASSIFY_LIBRARY=str(ROOT / "no-such.so"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OSError", r.stdout
