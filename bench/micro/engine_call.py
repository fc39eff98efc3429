"""Per-call cost of one tiny circuit (1 qubit, RX RY RZ, <Z>, one sample) through the two
ways Python reaches the engine, same run: qfleet._engine (the C library through ctypes, on
numpy arrays: what the PennyLane devices use) and the PyTorch operator
torch.ops.qfleet.circuit_forward (tensors ready, and with the numpy conversions a numpy
caller pays). The engine's own work is well under a microsecond here, so this is the front
end's cost. Results checked equal, bit for bit, first. Prints the median of 7 rounds of
20,000 calls, in microseconds.

    PYTHONPATH=python python bench/micro/engine_call.py
"""
import json
import statistics
import time

import numpy as np
import torch

import qfleet  # noqa: F401  (torch is imported first: the operators load with it)
from qfleet import _engine

DOC = {"kind": "circuit", "qubits": 1, "precision": "complex128", "threads": 0,
       "ops": [{"gate": g, "wires": [0], "params": [{"weight": k}]} for k, g in enumerate(("RX", "RY", "RZ"))],
       "observables": [[[1.0, "Z0"]]]}


def median_us(f, n=20000, rounds=7):
    for _ in range(2000):
        f()
    per_call = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            f()
        per_call.append((time.perf_counter() - t) / n)
    return statistics.median(per_call) * 1e6


def main():
    text = json.dumps(DOC)
    engine, program = _engine.Program(text), torch.classes.qfleet.CircuitProgram(text)
    w, x = np.array([[0.1, 0.2, 0.3]]), np.empty((1, 0))
    tw, tx = torch.from_numpy(w), torch.from_numpy(x)
    op = torch.ops.qfleet.circuit_forward
    assert engine.forward(None, w).tobytes() == op(program, tx, tw).numpy().tobytes()
    runs = {
        "qfleet._engine forward (numpy)": lambda: engine.forward(None, w),
        "torch.ops.qfleet.circuit_forward (tensors)": lambda: op(program, tx, tw),
        "torch.ops.qfleet.circuit_forward (from numpy, to numpy)":
            lambda: op(program, torch.from_numpy(x), torch.from_numpy(w)).numpy(),
    }
    for name, f in runs.items():
        print(f"{name:58s} {median_us(f):7.2f} us")


if __name__ == "__main__":
    main()
