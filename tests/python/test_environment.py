"""The checkout's Python environment belongs to the checkout: scripts/setup_python.sh's .venv
imports this checkout's qfleet (python/), without PYTHONPATH and from any folder, and the
shared dependency environment it reads its packages from has no qfleet installed."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


def _run(python, code, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("QFLEET_")}
    return subprocess.run([str(python), "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def venv_python():
    if not VENV_PYTHON.exists():
        pytest.skip(".venv is not made (scripts/setup_python.sh makes it)")
    return VENV_PYTHON


def test_import_qfleet_resolves_to_this_checkout(venv_python, tmp_path):
    r = _run(venv_python, "import qfleet; print(qfleet.__file__)", tmp_path)
    assert r.returncode == 0, r.stderr
    assert pathlib.Path(r.stdout.strip()).resolve() == ROOT / "python" / "qfleet" / "__init__.py"


def test_the_shared_dependency_environment_holds_no_qfleet(venv_python, tmp_path):
    # The folders .venv reads through its .pth files, other than this checkout's python/.
    r = _run(venv_python, "import site, sys; print('\\n'.join(p for p in sys.path if p))", tmp_path)
    assert r.returncode == 0, r.stderr
    shared = [pathlib.Path(p) for p in r.stdout.split() if "site-packages" in p
              and not p.startswith(str(ROOT / ".venv"))]
    assert shared, "the dependency environment is not on .venv's path"
    for folder in shared:
        assert not list(folder.glob("qfleet")) and not list(folder.glob("qfleet-*.dist-info")), folder


def test_what_is_installed_into_venv_stays_in_the_checkout(venv_python, tmp_path):
    r = _run(venv_python, "import sysconfig; print(sysconfig.get_paths()['purelib'])", tmp_path)
    assert r.returncode == 0, r.stderr
    assert pathlib.Path(r.stdout.strip()).resolve().is_relative_to(ROOT / ".venv")


def test_the_environment_programs_run_on_its_interpreter(venv_python, tmp_path):
    # torchrun (the training guide's launcher) starts its workers with sys.executable: .venv's
    # own torchrun makes them import this checkout's qfleet too.
    script = tmp_path / "where.py"
    script.write_text("import qfleet, sys; print('QFLEET', qfleet.__file__, sys.executable)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("QFLEET_")}
    r = subprocess.run([str(venv_python.parent / "torchrun"), "--nproc-per-node", "1", str(script)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(s for s in r.stdout.splitlines() if s.startswith("QFLEET "))
    where, executable = line.split()[1:]
    assert pathlib.Path(where).resolve() == ROOT / "python" / "qfleet" / "__init__.py"
    assert executable == str(venv_python)


def test_the_command_line_tool_is_on_the_environment_path(venv_python, tmp_path):
    qfleet = venv_python.parent / "qfleet"
    if not (ROOT / "build" / "tools" / "qfleet").exists():
        r = subprocess.run([str(qfleet), "info"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 127 and "is not built" in r.stderr
        return
    r = subprocess.run([str(qfleet), "info"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and '"isas"' in r.stdout, r.stderr
