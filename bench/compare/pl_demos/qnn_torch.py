"""Turning quantum nodes into Torch Layers — the torch interface and qml.qnn.TorchLayer.

Source: https://pennylane.ai/qml/demos/tutorial_qnn_module_torch
(PennyLaneAI/qml, demonstrations_v2/tutorial_qnn_module_torch/demo.py).

As published: `torch.manual_seed(42)`, `np.random.seed(42)`, scikit-learn's `make_moons(n_samples=200,
noise=0.1)` (one-hot labels); `default.qubit` with 2 wires and the QNode's defaults (diff_method
"best"); AngleEmbedding + BasicEntanglerLayers (6 layers), <Z> on each wire, as a TorchLayer between
two Linear(2, 2) layers and a softmax; SGD (lr 0.2) on the L1 loss, batches of 5 from a shuffled
DataLoader, inputs float32 with requires_grad=True (so the inputs' gradient is computed too); then the
predictions on all 200 points. Its classical-only opening model (built before the seeds, so it changes
nothing after them) and its second part (a two-QNode HybridModel of the same layer) are left out.
"""
from __future__ import annotations

from .common import QUBIT_DEVICES, device

NAME = "qnn_torch"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_qnn_module_torch "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_qnn_module_torch/demo.py)")
INTERFACE = "torch"
REFERENCE = "default.qubit"
DEVICES = QUBIT_DEVICES
# float32 as published (Linear layers, inputs; TorchLayer casts the QNode's output to the input's
# dtype): default.qubit's backprop then runs in complex64 while the adjoint devices compute in
# float64, so outputs agree to float32 rounding, kept through the SGD steps.
ATOL = 1e-5
# (SGD steps, points predicted after them): the demo trains 6 epochs of 40 batches, then predicts all 200
SIZE = {False: (40, 200), True: (2, 10)}


def workload(quick: bool) -> str:
    steps, points = SIZE[quick]
    epoch = "one epoch: " if steps == 40 else ""
    return f"{epoch}{steps} SGD steps on batches of 5 + predictions on {points} points (float32)"


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    import numpy as np
    import pennylane as qml
    import torch
    from sklearn.datasets import make_moons

    torch.manual_seed(seed)
    np.random.seed(seed)
    X, y = make_moons(n_samples=200, noise=0.1)
    y_ = torch.unsqueeze(torch.tensor(y), 1)
    y_hot = torch.scatter(torch.zeros((200, 2)), 1, y_, 1)

    n_qubits = 2
    dev = device(device_name, n_qubits)

    @qml.qnode(dev)
    def qnode(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n_qubits))
        qml.BasicEntanglerLayers(weights, wires=range(n_qubits))
        return [qml.expval(qml.PauliZ(wires=i)) for i in range(n_qubits)]

    n_layers = 6
    qlayer = qml.qnn.TorchLayer(qnode, {"weights": (n_layers, n_qubits)})
    clayer_1 = torch.nn.Linear(2, 2)
    clayer_2 = torch.nn.Linear(2, 2)
    model = torch.nn.Sequential(clayer_1, qlayer, clayer_2, torch.nn.Softmax(dim=1))

    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    loss = torch.nn.L1Loss()
    X = torch.tensor(X, requires_grad=True).float()
    y_hot = y_hot.float()
    data_loader = torch.utils.data.DataLoader(list(zip(X, y_hot)), batch_size=5, shuffle=True, drop_last=True)

    steps, points = SIZE[quick]
    losses = []
    for step, (xs, ys) in enumerate(data_loader):
        if step == steps:
            break
        opt.zero_grad()
        loss_evaluated = loss(model(xs), ys)
        loss_evaluated.backward()
        opt.step()
        losses.append(loss_evaluated.detach())

    y_pred = model(X[:points])
    # (the class probabilities, not their argmax: a point on the boundary may round either way in float32)
    return {"losses": torch.stack(losses), "y_pred": y_pred.detach(),
            **{name: p.detach() for name, p in model.named_parameters()}}
