"""`python -m qfleet.check`, the documented quick check of an installation: every front end
passes on the qfleet under test, and a failing front end is reported and makes it exit 1."""
import os
import subprocess
import sys

import pytest


def _check(env):
    return subprocess.run([sys.executable, "-m", "qfleet.check"], capture_output=True, text=True, timeout=300, env=env)


def test_every_front_end_passes():
    r = _check(dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[1] for line in lines if line.startswith("PASS")] == ["C++", "PyTorch", "PennyLane",
                                                                            "Gymnasium", "CLI"], r.stdout
    assert lines[-1].endswith("all front ends work")


def test_a_failing_front_end_is_reported(tmp_path):
    env = dict(os.environ, QFLEET_CLI=str(tmp_path / "no-such-qfleet"))
    r = _check(env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert any(line.startswith("FAIL  CLI") and "no-such-qfleet" in line for line in r.stdout.splitlines()), r.stdout
    assert r.stdout.splitlines()[-1].endswith("1 failed")
