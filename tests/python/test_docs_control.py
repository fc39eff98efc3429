"""docs/control.md runs as written: every Python block, each in a fresh interpreter (the
blocks assert what the text claims: targets reached, the analytic minimum time, ...)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "control.md")


def blocks():
    with open(DOC) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_the_guide_has_its_examples():
    assert len(blocks()) >= 7


@pytest.mark.parametrize("index", range(7))
def test_python_block_runs(index, tmp_path):
    code = blocks()[index]
    import qfleet  # the blocks run on the qfleet under test (the source tree's or the installed one)
    here = os.path.dirname(os.path.dirname(os.path.abspath(qfleet.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"block {index} failed:\n{code}\n--- stderr ---\n{r.stderr[-3000:]}"
