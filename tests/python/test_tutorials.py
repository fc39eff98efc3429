"""The tutorials (tutorials/*.py) run as a user runs them, with --short: each as its own process,
from an empty working directory (they must not write into the repository), and each asserts its
own result (the loss fell, the fit recovered the truth, the robust pulse beat the nominal one,
the agent beat a random policy) and checks itself against an independent reference (PennyLane's
default.qubit / default.mixed, SciPy, QuTiP)."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"

# What each tutorial imports beyond qfleet and torch: without it, the tutorial is skipped.
NEEDS = {
    "01_vqc_classifier": ["pennylane", "sklearn"],
    "02_noisy_circuit_fit": ["pennylane"],
    "03_robust_pulse": ["scipy"],
    "04_system_identification": ["qutip"],
    "05_rl_agent": ["gymnasium", "scipy"],
}


def test_every_tutorial_is_listed():
    found = sorted(p.stem for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
    assert found == sorted(NEEDS)
    listed = (ROOT / "docs" / "tutorials.md").read_text()
    for name in found:
        assert f"tutorials/{name}.py" in listed, f"{name} is not in docs/tutorials.md"


def missing(name):
    """Why the tutorial cannot run here (a package it imports is absent), or None."""
    for module in NEEDS[name]:
        if importlib.util.find_spec(module) is None:
            return f"{name} needs {module}"
    if name == "05_rl_agent":
        from qfleet._lib import app_library_path
        try:  # as tests/python/test_rl.py: the build's library or the installed package's
            app_library_path("rl")
        except ImportError as e:
            return f"qfleet-rl's library is not available ({e})"
    return None


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_tutorial_runs_and_checks_itself(name, tmp_path):
    reason = missing(name)
    if reason:
        pytest.skip(reason)
    before = {p: p.stat().st_mtime_ns for p in TUTORIALS.iterdir()}
    proc = subprocess.run([sys.executable, str(TUTORIALS / f"{name}.py"), "--short"], cwd=tmp_path,
                          env=dict(os.environ), capture_output=True, text=True, timeout=600)
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    assert proc.stdout.rstrip().endswith("OK"), output
    # Nothing written beside the tutorials (no __pycache__, no outputs) or into the working directory.
    assert {p: p.stat().st_mtime_ns for p in TUTORIALS.iterdir()} == before
    assert not any(tmp_path.iterdir()), sorted(p.name for p in tmp_path.iterdir())
