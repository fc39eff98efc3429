"""Training a quantum circuit with PyTorch — torch interface, a Hermitian given as a QNode argument.

Source: https://pennylane.ai/qml/demos/tutorial_state_preparation
(PennyLaneAI/qml, demonstrations_v2/tutorial_state_preparation/demo.py).

As published: `np.random.seed(42)`; a random Bloch vector of purity 0.66; 3 qubits, 2 layers of
RX RY RZ on each wire and CNOTs (0,1) (0,2) (1,2), params float64 from N(0, pi); `default.qubit` with
3 wires, `interface="torch"` (diff_method "best"), <Hermitian(A)> on wire 0 with A each Pauli matrix
(complex128 torch tensors); cost = sum_k |<sigma_k> - a_k|; torch.optim.Adam(lr=0.1); the best
parameters kept (the demo keeps a reference to the trained tensor itself, so they are the last ones)
and the output Bloch vector from them. The demo runs 200 steps; the timed workload fewer (below).

The demo also calls `qml.capture.enable()`, which PennyLane 0.45 refuses with this environment's jax
(ImportError: it wants jax 0.7.1) on every device, so the demo runs in PennyLane's default mode.
"""
from __future__ import annotations

from .common import EXACT, QUBIT_DEVICES, device

NAME = "state_preparation"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_state_preparation "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_state_preparation/demo.py)")
INTERFACE = "torch"
REFERENCE = "default.qubit"
DEVICES = QUBIT_DEVICES
# PennyLane 0.45's torch interface hands lightning.qubit's results back in torch's default dtype, float32
# (the parameters are float64); its row agrees to that rounding, kept through the Adam steps.
ATOL = {"default": EXACT, "lightning.qubit": 1e-5}
STEPS = {False: 50, True: 2}


def workload(quick: bool) -> str:
    return f"{STEPS[quick]} Adam steps (3 QNode calls each) + the output Bloch vector"


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    import numpy as np
    import pennylane as qml
    import torch
    from torch.autograd import Variable

    np.random.seed(seed)
    v = np.random.normal(0, 1, 3)
    purity = 0.66
    bloch_v = Variable(torch.tensor(np.sqrt(2 * purity - 1) * v / np.sqrt(np.sum(v ** 2))), requires_grad=False)
    Paulis = Variable(torch.zeros([3, 2, 2], dtype=torch.complex128), requires_grad=False)
    Paulis[0] = torch.tensor([[0, 1], [1, 0]])
    Paulis[1] = torch.tensor([[0, -1j], [1j, 0]])
    Paulis[2] = torch.tensor([[1, 0], [0, -1]])

    nr_qubits = 3
    nr_layers = 2
    params = np.random.normal(0, np.pi, (nr_qubits, nr_layers, 3))
    params = Variable(torch.tensor(params), requires_grad=True)

    def layer(params, j):
        for i in range(nr_qubits):
            qml.RX(params[i, j, 0], wires=i)
            qml.RY(params[i, j, 1], wires=i)
            qml.RZ(params[i, j, 2], wires=i)
        qml.CNOT(wires=[0, 1])
        qml.CNOT(wires=[0, 2])
        qml.CNOT(wires=[1, 2])

    dev = device(device_name, 3)

    @qml.qnode(dev, interface="torch")
    def circuit(params, A):
        for j in range(nr_layers):
            layer(params, j)
        return qml.expval(qml.Hermitian(A, wires=0))

    def cost_fn(params):
        cost = 0
        for k in range(3):
            cost += torch.abs(circuit(params, Paulis[k]) - bloch_v[k])
        return cost

    opt = torch.optim.Adam([params], lr=0.1)
    best_cost = cost_fn(params)
    best_params = np.zeros((nr_qubits, nr_layers, 3))
    losses = []
    for _ in range(STEPS[quick]):
        opt.zero_grad()
        loss = cost_fn(params)
        loss.backward()
        opt.step()
        if loss < best_cost:
            best_cost = loss
            best_params = params
        losses.append(loss.detach())

    output_bloch_v = np.zeros(3)
    for k in range(3):
        output_bloch_v[k] = circuit(best_params, Paulis[k])
    return {"losses": torch.stack(losses), "best_cost": best_cost.detach(), "params": params.detach(),
            "output_bloch_v": output_bloch_v}
