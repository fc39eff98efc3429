"""Alternatives for the hybrid-classifier layer (workload 1).

Each builder returns a callable doing one forward + backward pass (gradient of
the sum of all outputs with respect to the inputs and the weights) and an
`extract` turning its result into numpy arrays (out [B, n], grad_x [B, n],
grad_w [L, n, 3]).
"""

from __future__ import annotations

import os

import numpy as np

from circuit_ref import default_ranges


def torch_threads() -> str:
    import torch

    return f"torch intra-op {torch.get_num_threads()}"


def omp_threads() -> str:
    v = os.environ.get("OMP_NUM_THREADS")
    return f"OpenMP {v}" if v else f"OpenMP default ({os.cpu_count()} cores)"


# --------------------------------------------------------------------------- PennyLane


def _pl_qnode(n, layers, device_name, diff_method):
    import pennylane as qml

    dev = qml.device(device_name, wires=n)

    @qml.qnode(dev, interface="torch", diff_method=diff_method)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n), rotation="X")
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    return circuit


def pennylane_case(x, w, device_name, diff_method):
    import pennylane as qml
    import torch

    n = x.shape[1]
    layers = w.shape[0]
    qnode = _pl_qnode(n, layers, device_name, diff_method)
    if diff_method == "parameter-shift":
        # The parameter-shift transform refuses broadcasted trainable inputs
        # (PennyLane #4462): split the batch into one tape per sample first.
        qnode = qml.transforms.broadcast_expand(qnode)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)

    def run():
        res = qnode(xt, wt)
        out = torch.stack(list(res), dim=-1) if isinstance(res, (tuple, list)) else res
        gx, gw = torch.autograd.grad(out.sum(), (xt, wt))
        return out, gx, gw

    def extract(r):
        out, gx, gw = r
        out = out.detach().numpy()
        if out.ndim == 1:  # B = 1 may come back unbatched
            out = out[None, :]
        return out, gx.numpy(), gw.numpy()

    threads = omp_threads() if device_name.startswith("lightning") else torch_threads()
    return run, extract, threads


# --------------------------------------------------------------------------- plain PyTorch


def torch_handwritten(n: int, layers: int):
    """The layer written plainly in PyTorch: state [B, 2, ..., 2] complex128,
    batch first, gates applied with einsum on one axis, CNOT by slicing."""
    import torch

    ranges = default_ranges(n, layers)
    letters = "abcdefghijklmnopqrstuvw"

    def apply_1q(state, U, wire):
        # U: [B, 2, 2] (per sample) or [2, 2] (shared)
        idx = letters[:n]
        out_idx = idx.replace(idx[wire], "z")
        if U.dim() == 3:
            spec = f"Bz{idx[wire]},B{idx}->B{out_idx}"
        else:
            spec = f"z{idx[wire]},B{idx}->B{out_idx}"
        return torch.einsum(spec, U, state)

    def apply_cnot(state, c, t):
        s = state.movedim((c + 1, t + 1), (1, 2))
        s = torch.stack((s[:, 0], s[:, 1].flip(1)), dim=1)
        return s.movedim((1, 2), (c + 1, t + 1))

    def rx(a):
        c = torch.cos(a / 2).to(torch.complex128)
        s = torch.sin(a / 2).to(torch.complex128)
        return torch.stack((torch.stack((c, -1j * s), -1), torch.stack((-1j * s, c), -1)), -2)

    def rot(phi, theta, omega):
        # RZ(omega) RY(theta) RZ(phi)
        c = torch.cos(theta / 2)
        s = torch.sin(theta / 2)
        e = lambda a: torch.polar(torch.ones_like(a), a)
        m00 = e(-(phi + omega) / 2) * c
        m01 = -e((phi - omega) / 2) * s
        m10 = e(-(phi - omega) / 2) * s
        m11 = e((phi + omega) / 2) * c
        return torch.stack((torch.stack((m00, m01), -1), torch.stack((m10, m11), -1)), -2)

    def layer(x, w):
        B = x.shape[0]
        state = torch.zeros((B,) + (2,) * n, dtype=torch.complex128)
        state[(slice(None),) + (0,) * n] = 1.0
        for i in range(n):
            state = apply_1q(state, rx(x[:, i]), i)
        for l in range(layers):
            for i in range(n):
                state = apply_1q(state, rot(w[l, i, 0], w[l, i, 1], w[l, i, 2]), i)
            if n > 1:
                for i in range(n):
                    state = apply_cnot(state, i, (i + ranges[l]) % n)
        probs = state.real**2 + state.imag**2
        outs = []
        for i in range(n):
            p = probs.movedim(i + 1, 1).reshape(B, 2, -1).sum(-1)
            outs.append(p[:, 0] - p[:, 1])
        return torch.stack(outs, dim=-1)

    return layer


def torch_case(x, w):
    import torch

    n = x.shape[1]
    layers = w.shape[0]
    layer = torch_handwritten(n, layers)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)

    def run():
        out = layer(xt, wt)
        gx, gw = torch.autograd.grad(out.sum(), (xt, wt))
        return out, gx, gw

    def extract(r):
        out, gx, gw = r
        return out.detach().numpy(), gx.numpy(), gw.numpy()

    return run, extract, torch_threads()


ALTERNATIVES = {
    # name: (builder(x, w) -> (run, extract, threads), kind, fast?)
    "PennyLane default.qubit backprop (torch)": (
        lambda x, w: pennylane_case(x, w, "default.qubit", "backprop"), "exact", True),
    "PennyLane default.qubit parameter-shift (torch)": (
        lambda x, w: pennylane_case(x, w, "default.qubit", "parameter-shift"), "exact", False),
    "PennyLane lightning.qubit adjoint (torch)": (
        lambda x, w: pennylane_case(x, w, "lightning.qubit", "adjoint"), "exact", True),
    "PyTorch hand-batched state vector": (torch_case, "exact", True),
}


def make_inputs(B: int, n: int, layers: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-np.pi, np.pi, size=(B, n))
    w = rng.uniform(0, 2 * np.pi, size=(layers, n, 3))
    return x, w
