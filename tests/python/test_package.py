"""The package's JSON entry points agree with the `qfleet eval` command."""
import json
import os
import pathlib
import subprocess

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_evaluate_matches_the_cli(qfleet, path):
    cli = os.environ.get("QFLEET_CLI")
    if not cli:
        pytest.skip("QFLEET_CLI not set: run through ctest")
    expected = json.loads(subprocess.run([cli, "eval", str(path)], check=True, capture_output=True, text=True).stdout)
    assert expected.pop("openmp")["threads"] >= 1  # the CLI adds how its run was threaded
    assert qfleet.evaluate(path) == expected


def test_load_problem_compiles_the_model(qfleet):
    circuit = ROOT / "docs" / "examples" / "circuit.json"
    loaded = qfleet.load_problem(circuit)
    doc = loaded["problem"]
    x = torch.tensor(doc["inputs"], dtype=torch.float64)
    w = torch.tensor(doc["weights"], dtype=torch.float64)
    y = qfleet.circuit_forward(loaded["program"], x, w)
    ref = qfleet.evaluate(circuit)
    assert torch.allclose(y[:, : len(ref["expvals"][0])], torch.tensor(ref["expvals"]), atol=1e-14)


def test_errors_name_the_key(qfleet):
    with pytest.raises(RuntimeError, match="wieght"):
        qfleet.evaluate({"kind": "circuit", "qubits": 1, "ops": [{"gate": "RX", "wires": [0],
                                                                   "params": [{"wieght": 0}]}],
                         "observables": [[[1, "Z0"]]]})
    with pytest.raises(TypeError):
        qfleet.evaluate(3)
