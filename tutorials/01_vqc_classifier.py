"""Tutorial 1: a variational quantum classifier on real data, in PennyLane, on qfleet.qubit.

The task. You have a PennyLane hybrid model: features go into rotation angles (angle
embedding), a few layers of trainable rotations and CNOTs (strongly entangling layers) act on
them, and the <Z> of each wire feeds a small classical layer that gives class scores. You
train it with torch.optim on the Iris flowers (150 samples, 4 features, 3 species; bundled
with scikit-learn, so nothing is downloaded). Four features make four qubits.

What qfleet changes. Only the device name: `qml.device("qfleet.qubit", wires=4)` instead of
`default.qubit`. `qml.qnn.TorchLayer` sends a whole mini-batch to the device as one tape with
broadcast inputs, and qfleet runs that batch as one engine call, forward and adjoint
backward.

What to look at.
1. The check before training: one forward pass and one gradient of the same model on
   qfleet.qubit (adjoint method) and on PennyLane's default.qubit (an independent simulator,
   differentiated by backpropagation) agree to 1e-10.
2. The training log: the cross-entropy falls and the held-out accuracy rises. The script
   asserts the final loss is below half the initial one and the test accuracy at least 0.85
   (0.6 with --short, which trains for fewer epochs).

Run it:

    python tutorials/01_vqc_classifier.py            # the full run (about 10 s on 2 cores)
    python tutorials/01_vqc_classifier.py --short    # a few epochs (what the test runs)

(from a checkout: `PYTHONPATH=python`, see docs/torch.md). QFLEET_TUTORIAL_SHORT=1 is the same
as --short.
"""
import argparse
import os
import time

import numpy as np
import pennylane as qml
import torch
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

N_QUBITS, N_LAYERS, N_CLASSES = 4, 3, 3


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="small settings (what the test runs)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    args.short = args.short or os.environ.get("QFLEET_TUTORIAL_SHORT") == "1"
    return args


def make_qnode(device_name):
    """The model's quantum half: the same circuit on any device."""
    dev = qml.device(device_name, wires=N_QUBITS)

    # qfleet's engine differentiates by the adjoint method (it has no backprop); default.qubit
    # by backpropagation through torch: two independent ways to the same gradient.
    method = "adjoint" if device_name.startswith("qfleet") else "backprop"

    @qml.qnode(dev, interface="torch", diff_method=method)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N_QUBITS), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(N_QUBITS))
        return [qml.expval(qml.PauliZ(w)) for w in range(N_QUBITS)]

    return circuit


def make_model(device_name, seed):
    """TorchLayer (the circuit's weights as a torch Parameter) followed by a linear read-out."""
    torch.manual_seed(seed)  # the same initial weights whatever the device
    quantum = qml.qnn.TorchLayer(make_qnode(device_name), {"weights": (N_LAYERS, N_QUBITS, 3)})
    return torch.nn.Sequential(quantum, torch.nn.Linear(N_QUBITS, N_CLASSES)).double()


def load_data(seed):
    """Iris, standardised on the training split and squashed into rotation angles in (-pi/2, pi/2)."""
    x, y = load_iris(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, stratify=y, random_state=seed)
    scaler = StandardScaler().fit(x_tr)
    to_angles = lambda a: np.pi / 2 * np.tanh(scaler.transform(a))  # noqa: E731
    t = lambda a, dt=torch.float64: torch.tensor(a, dtype=dt)  # noqa: E731
    return t(to_angles(x_tr)), t(y_tr, torch.long), t(to_angles(x_te)), t(y_te, torch.long)


def check_against_default_qubit(x, y, seed):
    """Step 1: the same model on qfleet.qubit and default.qubit gives the same outputs and gradients."""
    results = {}
    for name in ("qfleet.qubit", "default.qubit"):
        model = make_model(name, seed)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        results[name] = (model(x).detach(), grads)
    out_err = (results["qfleet.qubit"][0] - results["default.qubit"][0]).abs().max().item()
    grad_err = (results["qfleet.qubit"][1] - results["default.qubit"][1]).abs().max().item()
    print(f"check vs default.qubit on {len(x)} samples: max |output diff| = {out_err:.1e}, "
          f"max |gradient diff| = {grad_err:.1e}")
    assert out_err < 1e-10 and grad_err < 1e-10, "qfleet.qubit disagrees with default.qubit"


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).double().mean().item()


def main():
    args = parse_args()
    epochs, batch = (6, 16) if args.short else (40, 16)
    x_tr, y_tr, x_te, y_te = load_data(args.seed)
    print(f"Iris: {len(x_tr)} training and {len(x_te)} test samples, {N_QUBITS} qubits, "
          f"{N_LAYERS} entangling layers")

    check_against_default_qubit(x_tr[:16], y_tr[:16], args.seed)

    # Step 2: train on qfleet.qubit with an ordinary torch loop.
    model = make_model("qfleet.qubit", args.seed)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(args.seed)

    def full_loss():
        with torch.no_grad():
            return torch.nn.functional.cross_entropy(model(x_tr), y_tr).item()

    loss0, acc0 = full_loss(), accuracy(model, x_te, y_te)
    print(f"epoch  0: loss {loss0:.4f}, test accuracy {acc0:.3f}")
    t0 = time.perf_counter()
    for epoch in range(1, epochs + 1):
        for idx in torch.randperm(len(x_tr), generator=gen).split(batch):
            opt.zero_grad()
            # One TorchLayer call = one broadcast tape = one qfleet engine call for the batch.
            loss = torch.nn.functional.cross_entropy(model(x_tr[idx]), y_tr[idx])
            loss.backward()
            opt.step()
        if epoch % max(1, epochs // 8) == 0 or epoch == epochs:
            print(f"epoch {epoch:2d}: loss {full_loss():.4f}, test accuracy {accuracy(model, x_te, y_te):.3f}")
    seconds = time.perf_counter() - t0
    loss1, acc1 = full_loss(), accuracy(model, x_te, y_te)
    print(f"trained {epochs} epochs in {seconds:.1f} s: loss {loss0:.4f} -> {loss1:.4f}, "
          f"test accuracy {acc0:.3f} -> {acc1:.3f}")

    # Step 3: did it learn? (a 3-class problem: chance is 1/3)
    want_acc = 0.6 if args.short else 0.85
    assert loss1 < 0.5 * loss0, f"the loss did not halve: {loss0:.4f} -> {loss1:.4f}"
    assert acc1 >= want_acc, f"test accuracy {acc1:.3f} < {want_acc}"
    print("OK")


if __name__ == "__main__":
    main()
