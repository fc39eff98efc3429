"""Barren plateaus in quantum neural networks — autograd, random circuits, a Hermitian on every wire.

Source: https://pennylane.ai/qml/demos/tutorial_barren_plateaus
(PennyLaneAI/qml, demonstrations_v2/tutorial_barren_plateaus/demo.py).

As published: `np.random.seed(42)` (PennyLane's numpy); RY(pi/4) on every wire, a random choice of
RX/RY/RZ(params[i]) per wire, a CZ chain, <Hermitian(|0..0><0..0|)> on all wires; a new
`qml.QNode(rand_circuit, dev, interface="autograd")` per random circuit (default diff_method, "best")
and `qml.grad` of it, keeping the last entry: first on `default.qubit` with 4 wires, then for 2..6
qubits with a new device per sample; the variance of each set. The demo draws 200 circuits per
set; the timed workload draws fewer (below), in the demo's order.

`qml.grad(..., argnum=0)` as published raises TypeError on PennyLane 0.45 on every device (the
keyword is now `argnums`), so `argnums=0` is used.
"""
from __future__ import annotations

from .common import EXACT, QUBIT_DEVICES, device

NAME = "barren_plateaus"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_barren_plateaus "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_barren_plateaus/demo.py)")
INTERFACE = "autograd"
REFERENCE = "default.qubit"
DEVICES = QUBIT_DEVICES
ATOL = EXACT
SAMPLES = {False: 20, True: 1}  # random circuits per set; the demo: 200
QUBITS = [2, 3, 4, 5, 6]


def workload(quick: bool) -> str:
    n = SAMPLES[quick]
    return f"{n} random 4-qubit circuits + {n} for each of 2..6 qubits: qml.grad of each"


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    import pennylane as qml
    from pennylane import numpy as np

    np.random.seed(seed)
    num_samples = SAMPLES[quick]

    def rand_circuit(params, random_gate_sequence=None, num_qubits=None):
        for i in range(num_qubits):
            qml.RY(np.pi / 4, wires=i)
        for i in range(num_qubits):
            random_gate_sequence[i](params[i], wires=i)
        for i in range(num_qubits - 1):
            qml.CZ(wires=[i, i + 1])
        H = np.zeros((2 ** num_qubits, 2 ** num_qubits))
        H[0, 0] = 1
        wirelist = [i for i in range(num_qubits)]
        return qml.expval(qml.Hermitian(H, wirelist))

    num_qubits = 4
    dev = device(device_name, num_qubits)
    gate_set = [qml.RX, qml.RY, qml.RZ]
    grad_vals = []
    for _ in range(num_samples):
        gate_sequence = {i: np.random.choice(gate_set) for i in range(num_qubits)}
        qcircuit = qml.QNode(rand_circuit, dev, interface="autograd")
        grad = qml.grad(qcircuit, argnums=0)
        params = np.random.uniform(0, 2 * np.pi, size=num_qubits)
        gradient = grad(params, random_gate_sequence=gate_sequence, num_qubits=num_qubits)
        grad_vals.append(gradient[-1])
    out = {"grad_vals_4": np.array(grad_vals)}

    variances = []
    for num_qubits in QUBITS:
        grad_vals = []
        for _ in range(num_samples):
            dev = device(device_name, num_qubits)
            qcircuit = qml.QNode(rand_circuit, dev, interface="autograd")
            grad = qml.grad(qcircuit, argnums=0)
            gate_set = [qml.RX, qml.RY, qml.RZ]
            random_gate_sequence = {i: np.random.choice(gate_set) for i in range(num_qubits)}
            params = np.random.uniform(0, np.pi, size=num_qubits)
            gradient = grad(params, random_gate_sequence=random_gate_sequence, num_qubits=num_qubits)
            grad_vals.append(gradient[-1])
        out[f"grad_vals_{num_qubits}q"] = np.array(grad_vals)
        variances.append(np.var(grad_vals))
    out["variances"] = np.array(variances)
    return out
