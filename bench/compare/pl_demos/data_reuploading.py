"""Data-reuploading classifier — the autograd interface, a Hermitian observable, data re-uploading.

Source: https://pennylane.ai/qml/demos/tutorial_data_reuploading_classifier
(PennyLaneAI/qml, demonstrations_v2/tutorial_data_reuploading_classifier/demo.py).

As published: `np.random.seed(42)` (PennyLane's numpy), points uniform in [-1, 1]^2 labelled by the
circle of radius sqrt(2/pi) (500 for the demo's plot, then 200 for training and 2000 for testing,
padded with a zero third feature; all three drawn here so that the generator is where the demo
has it); `lightning.qubit` with 1 wire and the QNode's defaults (diff_method "best"); 3 layers of
Rot(*x) Rot(*params[l]), <Hermitian(|label><label|)>; cost = mean over the batch of (1 - fidelity)^2;
AdamOptimizer(0.6, beta1=0.9, beta2=0.999) on batches of 32; after an epoch the fidelities to both
labels, the predictions and the cost on the training set. The demo's evaluations on the 2000 test
points (before training and after each epoch) are left out of the timed workload.
"""
from __future__ import annotations

from .common import QUBIT_DEVICES, device

NAME = "data_reuploading"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_data_reuploading_classifier "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_data_reuploading_classifier/demo.py)")
INTERFACE = "autograd"
REFERENCE = "lightning.qubit"
DEVICES = QUBIT_DEVICES
# The last Rot's final RZ angle commutes with the diagonal label observable: its gradient is zero, and each
# device returns it as 0 or as rounding (1e-17). Adam divides every entry by its running RMS plus 1e-8, so
# that rounding moves the angle by lr * 1e-17 / (1e-17 + 1e-8) ~ 1e-9 on one device and not on another
# (measured: 4e-10 after six steps, in that angle only; fidelities, cost and the other angles to 1e-15).
ATOL = 1e-8
# (Adam steps, batch size, training points evaluated after them): the demo's epoch is 200 // 32 = 6 steps
# on batches of 32, then all 200 points; --quick takes one step on a batch of 4
SIZE = {False: (6, 32, 200), True: (1, 4, 4)}


def workload(quick: bool) -> str:
    steps, batch, points = SIZE[quick]
    epoch = "one epoch: " if (steps, batch) == (6, 32) else ""
    return f"{epoch}{steps} Adam step(s) on batches of {batch} + fidelities and cost on {points} training points"


def _circle(np, samples, center=(0.0, 0.0), radius=None):
    """The demo's data: points uniform in [-1, 1]^2, label 1 inside the circle."""
    radius = np.sqrt(2 / np.pi) if radius is None else radius
    Xvals, yvals = [], []
    for _ in range(samples):
        x = 2 * (np.random.rand(2)) - 1
        y = 0
        if np.linalg.norm(x - center) < radius:
            y = 1
        Xvals.append(x)
        yvals.append(y)
    return np.array(Xvals, requires_grad=False), np.array(yvals, requires_grad=False)


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    import pennylane as qml
    from pennylane import numpy as np
    from pennylane.optimize import AdamOptimizer

    np.random.seed(seed)
    _circle(np, 500)  # the demo's plotted sample
    label_0 = [[1], [0]]
    label_1 = [[0], [1]]
    state_labels = np.array([label_0, label_1], requires_grad=False)

    def density_matrix(state):
        return state * np.conj(state).T

    dev = device(device_name, 1)

    @qml.qnode(dev)
    def qcircuit(params, x, y):
        for p in params:
            qml.Rot(*x, wires=0)
            qml.Rot(*p, wires=0)
        return qml.expval(qml.Hermitian(y, wires=[0]))

    def cost(params, x, y, state_labels=None):
        loss = 0.0
        dm_labels = [density_matrix(s) for s in state_labels]
        for i in range(len(x)):
            f = qcircuit(params, x[i], dm_labels[y[i]])
            loss = loss + (1 - f) ** 2
        return loss / len(x)

    def test(params, x, y, state_labels=None):
        fidelity_values = []
        dm_labels = [density_matrix(s) for s in state_labels]
        predicted = []
        for i in range(len(x)):
            fidelities = [qcircuit(params, x[i], dm) for dm in dm_labels]
            predicted.append(np.argmax(fidelities))
            fidelity_values.append(fidelities)
        return np.array(predicted), np.array(fidelity_values)

    def iterate_minibatches(inputs, targets, batch_size):
        for start_idx in range(0, inputs.shape[0] - batch_size + 1, batch_size):
            idxs = slice(start_idx, start_idx + batch_size)
            yield inputs[idxs], targets[idxs]

    Xdata, y_train = _circle(np, 200)
    X_train = np.hstack((Xdata, np.zeros((Xdata.shape[0], 1), requires_grad=False)))
    _circle(np, 2000)  # the test set: drawn, not evaluated (see the docstring)

    opt = AdamOptimizer(0.6, beta1=0.9, beta2=0.999)
    params = np.random.uniform(size=(3, 3), requires_grad=True)

    steps, batch_size, points = SIZE[quick]
    batches = iterate_minibatches(X_train, y_train, batch_size=batch_size)
    step_params = []
    for _, (Xbatch, ybatch) in zip(range(steps), batches):
        params, _, _, _ = opt.step(cost, params, Xbatch, ybatch, state_labels)
        step_params.append(params)

    predicted_train, fidel_train = test(params, X_train[:points], y_train[:points], state_labels)
    loss = cost(params, X_train[:points], y_train[:points], state_labels)
    return {"params_per_step": np.stack(step_params), "fidelities": fidel_train,
            "predicted": predicted_train.astype(float), "cost": loss}
