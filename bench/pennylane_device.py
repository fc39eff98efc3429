"""The hybrid-classifier circuit as a PennyLane TorchLayer on qfleet.qubit beside
lightning.qubit (adjoint) and default.qubit (backprop), in one run: AngleEmbedding of 4
inputs, 3 StronglyEntanglingLayers on 4 qubits, <Z_i> on every wire, a batch of 64,
forward + backward of the outputs' sum. The only change between the rows is the device
name (and its diff_method); the device_vjp rows pass device_vjp=True to the QNode (the
backward pass is then the device's vector-Jacobian product, not a Jacobian contracted by
PennyLane). qfleet.QuantumLayer, the same circuit without PennyLane,
is the last row.

    PYTHONPATH=python \\
        python bench/pennylane_device.py [--batch 64] [--repeats 7] [--number 5] [--json out.json]

(or with the pip-installed package; the device is found through the qfleet package's
pennylane.plugins entry point, or constructed directly when running from the source tree).
Before timing, every row's outputs and gradients (w.r.t. the weights) are checked equal to
default.qubit's to 1e-10. Prints medians (min, max) in milliseconds and the ratios.
"""
import argparse
import json
import statistics
import time

import numpy as np
import pennylane as qml
import torch

import qfleet
from qfleet.pennylane import QubitDevice

N_QUBITS, N_LAYERS = 4, 3


def qfleet_device(wires):
    try:
        return qml.device("qfleet.qubit", wires=wires)
    except qml.exceptions.DeviceError:  # the source tree, without the package's entry point
        return QubitDevice(wires=wires)


def torch_layer(dev, diff_method, weights0, device_vjp=False):
    @qml.qnode(dev, interface="torch", diff_method=diff_method, device_vjp=device_vjp)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
        qml.StronglyEntanglingLayers(weights, wires=range(N_QUBITS))
        return [qml.expval(qml.PauliZ(w)) for w in range(N_QUBITS)]

    layer = qml.qnn.TorchLayer(circuit, {"weights": (N_LAYERS, N_QUBITS, 3)})
    with torch.no_grad():
        layer.weights.copy_(weights0)
    return layer


def qfleet_layer(weights0):
    c = qfleet.Circuit(N_QUBITS)
    c.angle_embedding(list(range(N_QUBITS))).strongly_entangling_layers(list(range(N_QUBITS)), layers=N_LAYERS)
    for q in range(N_QUBITS):
        c.expval(f"Z{q}")
    layer = qfleet.QuantumLayer(c)
    with torch.no_grad():
        layer.weight.copy_(weights0.reshape(-1))
    return layer


def step(layer, x):
    layer.zero_grad()
    out = layer(x)
    out.sum().backward()
    grad = next(iter(layer.parameters())).grad
    return out.detach(), grad.detach().reshape(N_LAYERS, N_QUBITS, 3)


def timeit(fn, repeats, number):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number * 1e3)
    return statistics.median(ts), min(ts), max(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(args.batch, N_QUBITS, generator=gen) * np.pi
    w0 = torch.rand(N_LAYERS, N_QUBITS, 3, generator=gen) * 2 * np.pi

    rows = [
        ("qfleet.qubit (adjoint)", torch_layer(qfleet_device(N_QUBITS), "adjoint", w0)),
        ("lightning.qubit (adjoint)", torch_layer(qml.device("lightning.qubit", wires=N_QUBITS), "adjoint", w0)),
        ("default.qubit (backprop)", torch_layer(qml.device("default.qubit", wires=N_QUBITS), "backprop", w0)),
        ("qfleet.qubit (adjoint, device_vjp)", torch_layer(qfleet_device(N_QUBITS), "adjoint", w0, True)),
        ("lightning.qubit (adjoint, device_vjp)",
         torch_layer(qml.device("lightning.qubit", wires=N_QUBITS), "adjoint", w0, True)),
        ("qfleet.QuantumLayer (no PennyLane)", qfleet_layer(w0)),
    ]
    ref_out, ref_grad = step(rows[2][1], x)
    for name, layer in rows:
        out, grad = step(layer, x)
        err = max(float((out - ref_out).abs().max()), float((grad - ref_grad).abs().max()))
        if err > 1e-10:
            raise SystemExit(f"{name}: outputs or gradients differ from default.qubit's by {err:.3g}")
    print(f"outputs and gradients equal to default.qubit's (1e-10); batch {args.batch}, "
          f"{torch.get_num_threads()} torch thread(s); forward + backward, ms: median (min, max)")
    figures = {}
    for name, layer in rows:
        med, lo, hi = timeit(lambda layer=layer: step(layer, x), args.repeats, args.number)
        figures[name] = med
        print(f"  {name:36s} {med:9.3f}  ({lo:.3f}, {hi:.3f})")
    q = figures["qfleet.qubit (adjoint)"]
    print("ratios (time / qfleet.qubit's):")
    for name, med in figures.items():
        print(f"  {name:36s} {med / q:8.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"batch": args.batch, "median_ms": figures, "pennylane": qml.__version__,
                       "torch": torch.__version__}, f, indent=2)


if __name__ == "__main__":
    main()
