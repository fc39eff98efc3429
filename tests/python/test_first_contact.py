"""What a new user does first, from a checkout built with the README's commands and no
installation: `PYTHONPATH=python` is all they set (the package finds the build's libraries),
Gymnasium's ids work without importing qfleet.rl first (the module-prefixed id), the plot
modules import without their compiled app, and a missing library says what to set."""
import math
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
    # `import qfleet` loads nothing; the first name that needs a library says where to get it.
    build = _build_dir()
    for code, what, variable in (("import qfleet\nqfleet.Circuit(1)", "the compiled operator library",
                                  "QFLEET_TORCH_LIBRARY"),
                                 ("import qfleet._engine as e\ne.version()", "the C library", "QFLEET_C_LIBRARY")):
        r = _run_source_tree(code, build, QFLEET_BUILD_DIR=str(ROOT / "no-such-build"))
        assert r.returncode != 0
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith(f"ImportError: qfleet: {what}"), last
        for way in ("pip install", "QFLEET_BUILD_DIR", variable, "no-such-build"):
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


def test_figures_say_what_the_run_did():
    # The meta-control curve names the adaptation's optimizer from the run's configuration,
    # and rl's learning curve has one panel where the return is the final fidelity.
    plt = pytest.importorskip("matplotlib.pyplot")
    from qfleet.meta_control import plot as meta_plot
    from qfleet.rl import plot as rl_plot
    report = {"config": {"adapt_optimizer": "adam", "fidelity": "average_gate"},
              "solver": {"name": "expm", "dt": 0, "precision": "complex128"}, "algorithm": "fomaml",
              "system": {"name": "qubit_x"},
              "validation": {"adapt_steps": 30, "mean_robust": 0.9, "mean_grape": 0.95},
              "curve": [{"iteration": i, "val_before": 0.5, "val_after": 0.6, "train_fidelity": None}
                        for i in (0, 10)]}
    fig = meta_plot.training_curve_figure(plt, report)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "validation, after 30 Adam steps" in labels and not any("SGD" in t for t in labels), labels
    assert len(fig._suptitle.get_text().splitlines()) == 2
    plt.close(fig)
    # A short run: the axis spans the curve (0.70 to 0.72), not the baselines far above it,
    # which are named with their values.
    report["curve"] = [{"iteration": i, "val_before": 0.70 + 0.005 * k, "val_after": 0.71 + 0.005 * k,
                        "train_fidelity": None} for k, i in enumerate((0, 10, 20))]
    fig = meta_plot.training_curve_figure(plt, report)
    low, high = fig.axes[0].get_ylim()
    assert 0.69 < low < 0.70 and 0.72 < high < 0.73, (low, high)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "per-task GRAPE, validation mean 0.9500 (above the axis)" in labels, labels
    plt.close(fig)
    curve = {"env_steps": [1, 2], "mean_final_fidelity": [0.4, 0.5], "mean_return": [0.4, 0.5], "validation": []}
    rl_report = {"curve": curve, "validation_mean": math.nan, "environment": ""}
    fig = rl_plot.learning_curve_figure(plt, rl_report, None)
    assert len(fig.axes) == 1
    plt.close(fig)
    curve["mean_return"] = [0.1, 0.2]  # reward = step: the return is another figure
    fig = rl_plot.learning_curve_figure(plt, rl_report, None)
    assert len(fig.axes) == 2
    plt.close(fig)


def test_pennylane_finds_the_devices_from_the_source_tree():
    # With PYTHONPATH=python and nothing installed, qml.device("qfleet.qubit") works: the source
    # tree declares the entry points (python/qfleet_source_tree-*.dist-info, whose version, 0,
    # is its own and not qfleet's). The check names the source tree's entry, so an installed
    # package cannot make it pass.
    pytest.importorskip("pennylane")
    build = _build_dir()
    code = """
import importlib.metadata as m, pathlib, sys
root = pathlib.Path(sys.argv[1])
eps = [e for e in m.entry_points(group="pennylane.plugins") if e.name.startswith("qfleet.")]
mine = {e.name: e for e in eps if pathlib.Path(str(e.dist.locate_file(""))).resolve() == root / "python"}
assert set(mine) == {"qfleet.qubit", "qfleet.mixed"}, [(e.name, e.dist.locate_file("")) for e in eps]
print(mine["qfleet.qubit"].dist.version)
import pennylane as qml
dev = qml.device("qfleet.qubit", wires=1)
@qml.qnode(dev)
def f():
    qml.PauliX(0)
    return qml.expval(qml.PauliZ(0))
assert abs(float(f()) + 1) < 1e-12
"""
    env = {k: v for k, v in os.environ.items() if not (k.startswith("QFLEET_") or k == "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "python")
    if build != ROOT / "build":
        env["QFLEET_BUILD_DIR"] = str(build)
    r = subprocess.run([sys.executable, "-c", code, str(ROOT.resolve())], capture_output=True, text=True,
                       timeout=300, env=env, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", r.stdout
