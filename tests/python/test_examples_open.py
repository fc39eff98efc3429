"""The open-system worked examples (docs/open_systems.md) do what they claim, at small sizes:
docs/examples/system_identification.py recovers T1, T2 and the detuning of every qubit to within
the noise (errors in units of the Cramer-Rao bound), its comparison's output checks against
dynamiqs and QuTiP pass, and docs/examples/shortest_gate.py finds gates faster than its initial
pulse, reaching the fidelity target, and no faster than the bang-bang bound allows."""
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"qfleet_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up by name)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sysid(qfleet):
    return load("system_identification")


@pytest.fixture(autouse=True)
def own_threads(monkeypatch):
    """The examples set torch's threads (and the comparison XLA's flags): the tests after them
    get theirs back."""
    import torch

    threads = torch.get_num_threads()
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    yield
    torch.set_num_threads(threads)


def test_system_identification_recovers_every_qubit_within_the_noise(sysid):
    cfg = sysid.Config(qubits=32, threads=1)
    r = sysid.run(cfg, log=lambda *_: None)
    assert r["closed_form_max_error"] < 1e-12
    for k, v in r["accuracy"].items():
        # An efficient fit: errors of the size the noise allows (rms ~ 1 in units of the
        # Cramer-Rao standard deviation; 32 qubits leave room for the rms's own spread) ...
        assert 0.5 < v["z_rms"] < 1.6, (k, v)
        assert v["z_max"] < 4.5, (k, v)
        # ... and better than the initial guess it started from.
        assert v["median"] < r["initial_guess"][k]["median"], (k, v, r["initial_guess"][k])
    assert r["accuracy"]["T1"]["p95"] < 0.03 and r["accuracy"]["T2"]["p95"] < 0.05
    assert r["accuracy"]["delta"]["p95"] < 2e-3
    # At the optimum the likelihood is that of the noise: E[chi^2 / 2] = (n - 3) / 2 per qubit.
    assert abs(r["timing"]["loss_last"] / r["loss_at_optimum_expected"] - 1) < 0.1


def test_system_identification_command_line_writes_its_report(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, str(EXAMPLES / "system_identification.py"), "--qubits", "8", "--steps",
                          "30", "--seed", "5", "--threads", "1", "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fitted against the truth" in run.stdout
    doc = json.loads(out.read_text())
    assert doc["config"]["qubits"] == 8 and doc["config"]["seed"] == 5 and doc["config"]["steps"] == 30
    assert set(doc["accuracy"]) == {"T1", "T2", "delta"}


def test_system_identification_comparison_checks_agree(sysid):
    pytest.importorskip("dynamiqs")
    pytest.importorskip("qutip")
    sys.path.insert(0, str(ROOT / "bench" / "compare"))
    spec = importlib.util.spec_from_file_location("qfleet_bench_system_identification",
                                                  ROOT / "bench" / "compare" / "system_identification.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    doc = bench.compare(sysid.Config(qubits=3, threads=1), threads=1, qutip_qubits=1, repeats=1,
                        log=lambda *_: None)
    checks = doc["checks"]  # (compare exits with status 1 before timing where one fails)
    assert checks["dynamiqs_expvals"] < 1e-12 and checks["qutip_diag_expvals"] < 1e-12
    assert checks["qutip_adams_expvals"] < 1e-6 and checks["gradient"] < 1e-8
    assert len(doc["rows"]) == 6 and all(r["ratio"] > 0 for r in doc["rows"])
    assert doc["whole_fits"]["max_apart_in_cramer_rao_sd"] < 0.1  # the two fits find the same optimum


def test_shortest_gate_trades_time_for_fidelity(qfleet):
    gate = load("shortest_gate")
    cfg = gate.Config(steps=800, lambdas=(0.01, 0.05, 0.2))
    r = gate.run(cfg, log=lambda *_: None)
    bound, opt = r["bound"], r["optimised"]
    times, fids = opt["total_time"], opt["fidelity"]
    assert all(t < 0.75 * cfg.initial_time for t in times), times
    # A weight on time shortens the gate and costs fidelity, monotonically.
    assert times[0] > times[1] > times[2] and fids[0] > fids[1] > fids[2], (times, fids)
    assert fids[0] >= cfg.target and r["shortest_time"] is not None
    # Nothing beats the bang-bang bound: a gate reaching F >= target takes at least as long as the
    # full-amplitude X pulse that reaches it (to the optimiser's tolerance), itself just under pi / A_max.
    assert r["bang_bang"]["shortest_time"] < bound
    assert r["shortest_time"] > r["bang_bang"]["shortest_time"] - 1e-3 * bound
    assert r["shortest_time"] < 1.05 * bound
    # Shorter than pi / A_max, no pulse of the same length beats the full-amplitude X pulse.
    for t, f, fx in zip(times, fids, opt["x_pulse_fidelity"]):
        assert t >= bound or f <= fx + 1e-4, (t, f, fx)
    norms = [math.hypot(*u) for pulse in opt["amplitudes"] for u in pulse]
    assert max(norms) <= cfg.a_max
