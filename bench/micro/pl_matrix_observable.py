"""Same-run A/B of how qfleet.qubit handles a matrix observable
(python/qfleet/pennylane/_translate.py): its Pauli decomposition kept per matrix and wires, and
the adjoint-support check's cache keyed by the observable's exact values instead of PennyLane's
Operator.hash. PennyLane's data re-uploading classifier on one qubit (three re-uploading layers
of Rot gates, expval of a Hermitian, the pattern of PennyLane's "Data-reuploading classifier"
demo), forward and qml.grad; "without": the decompositions cleared before every call and the
check keyed by Operator.hash (what each call paid before); "with": as shipped; rounds
interleaved. Then lightning.qubit and default.qubit on the same QNode, after the checks that
all agree.

    OMP_NUM_THREADS=1 PYTHONPATH=python python bench/micro/pl_matrix_observable.py
"""
import statistics
import time

import numpy as np
import pennylane as qml
from pennylane import numpy as pnp

from qfleet.pennylane import _translate
from qfleet.pennylane import device as qfleet_device

EXACT_KEY = qfleet_device.observable_key


def hash_key(obs):
    return None if obs is None else obs.hash

LABEL = np.array([[1, 0], [0, 0]], dtype=complex)  # the label state's density matrix


def circuit(params, x, y):
    for p in params:
        qml.Rot(*x, wires=0)
        qml.Rot(*p, wires=0)
    return qml.expval(qml.Hermitian(y, wires=0))


def timed(fn, clear, n):
    """Median ms per call over n calls; `clear`: as before (decompositions cleared before each
    call, the support check keyed by Operator.hash)."""
    qfleet_device.observable_key = hash_key if clear else EXACT_KEY
    ts = []
    for _ in range(n):
        if clear:
            _translate._DECOMPOSED.clear()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    params = pnp.array(np.random.default_rng(0).uniform(size=(3, 3)), requires_grad=True)
    x = np.array([0.3, 0.1, 0.0])
    qnodes = {name: qml.QNode(circuit, qml.device(name, wires=1))
              for name in ("qfleet.qubit", "lightning.qubit", "default.qubit")}
    want = qnodes["default.qubit"](params, x, LABEL)
    want_grad = qml.grad(lambda p: qnodes["default.qubit"](p, x, LABEL))(params)
    for name, q in qnodes.items():
        assert abs(q(params, x, LABEL) - want) < 1e-12, name
        assert np.allclose(qml.grad(lambda p, q=q: q(p, x, LABEL))(params), want_grad, atol=1e-10), name
    print("outputs and gradients agree with default.qubit (1e-12, 1e-10)")
    q = qnodes["qfleet.qubit"]
    grad = qml.grad(lambda p: q(p, x, LABEL))
    res = {k: [] for k in ("forward, without", "forward, with", "grad, without", "grad, with")}
    for _ in range(7):
        res["forward, without"].append(timed(lambda: q(params, x, LABEL), True, 200))
        res["forward, with"].append(timed(lambda: q(params, x, LABEL), False, 200))
        res["grad, without"].append(timed(lambda: grad(params), True, 50))
        res["grad, with"].append(timed(lambda: grad(params), False, 50))
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in med.items():
        print(f"qfleet.qubit {k} the caches: {v:.3f} ms")
    print(f"with / without: forward {med['forward, with'] / med['forward, without']:.2f}, "
          f"grad {med['grad, with'] / med['grad, without']:.2f}")
    for name in ("lightning.qubit", "default.qubit"):
        qn = qnodes[name]
        g = qml.grad(lambda p, qn=qn: qn(p, x, LABEL))
        f = statistics.median(timed(lambda: qn(params, x, LABEL), False, 200) for _ in range(5))
        gr = statistics.median(timed(lambda: g(params), False, 50) for _ in range(5))
        print(f"{name}: forward {f:.3f} ms, grad {gr:.3f} ms")


if __name__ == "__main__":
    main()
