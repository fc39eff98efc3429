"""The PennyLane devices' Python catalogues (python/qfleet/pennylane/_translate.py and
the two capability files) against the engine's C++ tables, so that a gate or channel
added on one side and not the other fails here: the gate catalogue as `qfleet gates`
prints it (src/core/gates.cpp), the channel table as the engine lists it when asked
for a channel it does not know (include/qfleet/channels.hpp)."""
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from qfleet.pennylane import _translate

CLI = os.environ.get("QFLEET_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="QFLEET_CLI not set: run through ctest or scripts/test.sh")
PACKAGE = Path(_translate.__file__).parent


def capability_gates(name):
    with open(PACKAGE / name, "rb") as f:
        return tomllib.load(f)["operators"]["gates"]


# The catalogue's adjoint gates, which PennyLane's capability schema declares as the
# "invertible" property of S, T and SX rather than as gates of their own.
ADJOINTS = {g for g in _translate.GATES if g.startswith("Adjoint(")}


def engine_gates():
    out = subprocess.run([CLI, "gates"], capture_output=True, text=True, check=True).stdout
    return {g["name"] for g in json.loads(out)}


def engine_channels():
    problem = {"kind": "circuit", "qubits": 1, "observables": [[[1.0, "Z0"]]],
               "ops": [{"channel": "NoSuchChannel", "wires": [0], "params": [0.1]}]}
    r = subprocess.run([CLI, "eval", "-"], input=json.dumps(problem), capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    m = re.search(r"known channels: ([^\n(]*)", r.stderr)
    assert m, r.stderr
    return {c.strip() for c in m.group(1).split(",") if c.strip()}


def test_the_devices_gates_are_the_engines_catalogue():
    # Identity is in the engine's catalogue; the devices run it as a no-op, without the
    # engine. QubitUnitary (fixed 1- and 2-wire matrices) takes its own path to the engine.
    assert _translate.GATES | {"Identity", "QubitUnitary"} == engine_gates()
    assert "Identity" in _translate.NO_OPS


def test_the_capability_files_declare_the_engines_gates():
    # Beside the catalogue: the no-ops the devices handle themselves, and fixed matrices.
    extra = {"Identity", "GlobalPhase", "QubitUnitary"}
    gates = (_translate.GATES - ADJOINTS) | extra
    for device in ("qfleet_qubit.toml", "qfleet_mixed.toml"):
        declared = capability_gates(device)
        invertible = {f"Adjoint({g})" for g, spec in declared.items() if "invertible" in spec.get("properties", [])}
        assert invertible == ADJOINTS, device
        if device == "qfleet_qubit.toml":
            assert set(declared) == gates
        else:
            # Beside the gates: the engine's channels, and PennyLane's fixed-Kraus ones.
            assert set(declared) == gates | set(_translate.CHANNELS) | {"QubitChannel", "ResetError", "PauliError"}


def test_the_devices_channels_are_in_the_engines_table():
    table = engine_channels()
    assert set(_translate.CHANNELS.values()) <= table, table
    # Engine channels no device hands over by name: the Pauli channel and the two-qubit
    # depolarising channel (PennyLane's PauliError takes Pauli strings, not rates) and the
    # Kraus map (QubitChannel arrives as fixed matrices).
    assert table - set(_translate.CHANNELS.values()) == {"PauliChannel", "TwoQubitDepolarizing", "Kraus"}
