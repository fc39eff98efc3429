"""The PyTorch adapter from Python: one op call at B = 1, and the hybrid-classifier
quantum layer (AngleEmbedding + 3 StronglyEntanglingLayers, 4 qubits, <Z_i>,
B = 64, forward + backward of the sum) through qfleet.QuantumLayer, beside
PennyLane lightning.qubit (diff_method="adjoint") and a hand-batched PyTorch
state-vector layer, in one run. Then qfleet.OpenSystemLayer on the meta-control
app's default problem (qubit_x: one qubit, 60 segments, X/2 and Y/2 controls,
relaxation and dephasing rates per task, average gate fidelity to X, exact solver),
B = 64, forward + backward of the sum, beside the engine's fused vjp (one
open_backward call: forward and reverse sweep in one pass) and its forward alone.
Prints medians (with min/max) in microseconds.

    PYTHONPATH=python \
        python bench/micro/torch_layer.py            (or with the pip-installed package)
"""
import argparse
import os
import statistics
import sys
import time

import torch

import qfleet

# interleaved(): the rounds timing of bench/compare's shared harness (appended, not prepended, so
# that bench/compare's module names shadow nothing this script imports)
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare"))
from harness import interleaved  # noqa: E402

torch.set_default_dtype(torch.float64)
N, L = 4, 3


def timeit(fn, repeat, number):
    for _ in range(max(1, number // 10)):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(ts), min(ts), max(ts)


# ---- a hand-batched PyTorch state-vector layer (the way the research codes wrote it)
def _apply1(state, u, q):  # state [B, 2, ..., 2], u [B, 2, 2] or [2, 2]
    s = state.movedim(q + 1, -1)
    s = torch.einsum("b...j,bij->b...i", s, u) if u.dim() == 3 else s @ u.transpose(-1, -2)
    return s.movedim(-1, q + 1)


def _cnot(state, c, t):
    a0, a1 = state.select(c + 1, 0), state.select(c + 1, 1)
    a1 = a1.flip(t + 1 if t < c else t)  # axis of t in a1 (batch axis 0 kept, axis c + 1 gone)
    return torch.stack([a0, a1], dim=c + 1)


def _rx(theta):  # theta [B]
    c, s = torch.cos(theta / 2), torch.sin(theta / 2)
    z = torch.zeros_like(c)
    return torch.stack([torch.stack([torch.complex(c, z), torch.complex(z, -s)], -1),
                        torch.stack([torch.complex(z, -s), torch.complex(c, z)], -1)], -2)


def _rot(phi, theta, omega):
    c, s = torch.cos(theta / 2), torch.sin(theta / 2)
    e = lambda a: torch.exp(1j * a)  # noqa: E731
    return torch.stack([torch.stack([e(-(phi + omega) / 2) * c, -e((phi - omega) / 2) * s]),
                        torch.stack([e(-(phi - omega) / 2) * s, e((phi + omega) / 2) * c])])


def torch_layer(x, w):
    B = x.shape[0]
    state = torch.zeros((B,) + (2,) * N, dtype=torch.complex128)
    state[(slice(None),) + (0,) * N] = 1
    for q in range(N):
        state = _apply1(state, _rx(x[:, q]), q)
    W = w.view(L, N, 3)
    for l in range(L):
        for q in range(N):
            state = _apply1(state, _rot(W[l, q, 0], W[l, q, 1], W[l, q, 2]), q)
        r = (l % (N - 1)) + 1
        for q in range(N):
            state = _cnot(state, q, (q + r) % N)
    p = (state.abs() ** 2)
    out = []
    for q in range(N):
        pq = p.movedim(q + 1, -1).reshape(B, -1, 2).sum(1)
        out.append(pq[:, 0] - pq[:, 1])
    return torch.stack(out, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--open-only", action="store_true", help="only the OpenSystemLayer case")
    args = ap.parse_args()
    if args.open_only:
        return open_layer_case(args.repeat)
    c = qfleet.Circuit(N)
    c.angle_embedding(list(range(N))).strongly_entangling_layers(list(range(N)), L)
    for q in range(N):
        c.expval(f"Z{q}")
    layer = qfleet.QuantumLayer(c, seed=1)
    prog = layer.program
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, qfleet kernels {prog.isa()}")

    x1 = torch.rand(1, N)
    w = layer.weight.detach()
    with torch.no_grad():
        m = timeit(lambda: torch.ops.qfleet.circuit_forward(prog, x1, w), args.repeat, 2000)
    print(f"op call, B=1, forward (no grad):         median {m[0]:8.2f} us  (min {m[1]:.2f}, max {m[2]:.2f})")
    with torch.no_grad():
        m = timeit(lambda: prog.layer(x1, w), args.repeat, 2000)
    print(f"method call (program.layer), B=1, no grad: median {m[0]:8.2f} us  (min {m[1]:.2f}, max {m[2]:.2f})")
    x1g = x1.clone().requires_grad_()
    m = timeit(lambda: layer(x1g).sum().backward(), args.repeat, 1000)
    print(f"module, B=1, forward + backward:          median {m[0]:8.2f} us  (min {m[1]:.2f}, max {m[2]:.2f})")

    B = 64
    x = torch.rand(B, N, generator=torch.Generator().manual_seed(0)).requires_grad_()
    # agreement (outputs and gradients) before timing
    ref = torch_layer(x, layer.weight)
    assert torch.allclose(ref, layer(x), atol=1e-12), "hand-batched torch layer disagrees with qfleet"
    res = interleaved_layer_cases(layer, x, args.repeat)
    wt = layer.weight.detach().clone().requires_grad_()
    res["hand-batched PyTorch (autograd)"] = timeit(lambda: torch_layer(x, wt).sum().backward(), args.repeat, 20)
    try:
        import pennylane as qml
        dev = qml.device("lightning.qubit", wires=N)

        @qml.qnode(dev, interface="torch", diff_method="adjoint")
        def circuit(inp, weights):
            qml.AngleEmbedding(inp, wires=range(N), rotation="X")
            qml.StronglyEntanglingLayers(weights.view(L, N, 3), wires=range(N))
            return [qml.expval(qml.PauliZ(q)) for q in range(N)]

        xt = x.detach().T.contiguous().requires_grad_()  # PennyLane broadcasts over the last axis of features
        out = torch.stack(circuit(x.detach().clone(), wt), 1)
        assert torch.allclose(out, layer(x).detach(), atol=1e-10), "lightning.qubit disagrees with qfleet"
        del xt
        xl = x.detach().clone().requires_grad_()
        res[f"PennyLane lightning.qubit adjoint ({qml.__version__})"] = timeit(
            lambda: torch.stack(circuit(xl, wt), 1).sum().backward(), max(3, args.repeat // 2), 2)
    except ImportError:
        print("pennylane not installed: lightning.qubit skipped")
    base = res["qfleet.QuantumLayer"][0]
    print(f"\nclassifier layer, 4 qubits, 3 layers, B={B}, forward + backward (outputs agree to 1e-10):")
    for k, (med, lo, hi) in res.items():
        print(f"  {k:45s} median {med:10.1f} us  (min {lo:.1f}, max {hi:.1f})  x{med / base:7.1f}")
    open_layer_case(args.repeat)


def interleaved_us(cases, repeat, number):
    """Medians (min, max) in us per call, the cases interleaved (bench/compare/harness.py)."""
    return {k: tuple(t * 1e6 for t in v) for k, v in interleaved(cases, repeat, number).items()}


def interleaved_layer_cases(layer, x, repeat):
    """QuantumLayer forward + backward beside the engine's fused vjp (one circuit_backward
    call: forward and reverse sweep in one pass), its forward alone and torch's autograd
    floor (a tiny nn.Linear), in one run; prints the layer's excess over the fused vjp."""
    prog, w, xd = layer.program, layer.weight.detach(), x.detach()
    ones = torch.ones(x.shape[0], layer.n_outputs)
    layer.weight.grad = x.grad = None
    layer(x).sum().backward()
    gx, gw = torch.ops.qfleet.circuit_backward(prog, xd, w, ones)
    assert torch.equal(x.grad, gx) and torch.equal(layer.weight.grad, gw), "layer and fused vjp disagree"
    lin = torch.nn.Linear(N, N)
    v = torch.rand(N, requires_grad=True)

    def no_grad(fn):
        def run():
            with torch.no_grad():
                fn()
        return run

    res = interleaved_us({
        "engine forward alone (circuit_forward)": no_grad(lambda: torch.ops.qfleet.circuit_forward(prog, xd, w)),
        "engine fused vjp (circuit_backward)": no_grad(lambda: torch.ops.qfleet.circuit_backward(prog, xd, w, ones)),
        "qfleet.QuantumLayer": lambda: layer(x).sum().backward(),
        # torch's own floor for a layer from Python: autograd's forward + backward of a tiny nn.Linear
        "torch.nn.Linear(4, 4) (torch's autograd alone)": lambda: lin(x).sum().backward(),
        # the least any layer with two leaves (inputs, weight) pays: one elementwise op
        "(x * v).sum().backward() (one builtin op)": lambda: (x * v).sum().backward(),
    }, repeat, 200)
    excess = res["qfleet.QuantumLayer"][0] - res["engine fused vjp (circuit_backward)"][0]
    print(f"QuantumLayer forward + backward minus the engine's fused vjp, same run: {excess:+.1f} us")
    return res


def open_layer_case(repeat):
    """OpenSystemLayer forward + backward against the engine's fused vjp, same run."""
    import numpy as np
    x, y = np.array([[0, 1], [1, 0]]), np.array([[0, -1j], [1j, 0]])
    lower, z = np.array([[0, 1], [0, 0]]), np.array([[1, 0], [0, -1]])
    system = (qfleet.OpenSystem(2).control(x / 2).control(y / 2).jump(lower).jump(np.sqrt(0.5) * z)
              .segments(60, 1.0).propagate_gate().target_unitary(x))
    layer = qfleet.OpenSystemLayer(system)
    prog = layer.program
    B = 64
    gen = torch.Generator().manual_seed(1)
    a = (torch.rand(B, 60, 2, generator=gen) * 2 - 1).requires_grad_()
    rates = (torch.rand(B, 2, generator=gen) * 0.1).requires_grad_()
    ones = torch.ones(B)
    # agreement: the layer's gradients are the fused vjp's
    layer(a, rates).sum().backward()
    ga, _, gr = torch.ops.qfleet.open_backward(prog, a.detach(), None, rates.detach(), ones)
    assert torch.equal(a.grad, ga) and torch.equal(rates.grad, gr), "layer and fused vjp disagree"

    def layer_fb():
        a.grad = rates.grad = None
        layer(a, rates).sum().backward()

    ad, rd = a.detach(), rates.detach()
    lin, xl = torch.nn.Linear(4, 4), torch.rand(B, 4, generator=gen)

    def no_grad(fn):
        def run():
            with torch.no_grad():
                fn()
        return run

    cases = {
        "engine forward alone (open_forward)": no_grad(lambda: torch.ops.qfleet.open_forward(prog, ad, None, rd)),
        "engine fused vjp (open_backward)": no_grad(lambda: torch.ops.qfleet.open_backward(prog, ad, None, rd, ones)),
        "qfleet.OpenSystemLayer forward + backward": layer_fb,
        "torch.nn.Linear(4, 4) (torch's autograd alone)": lambda: lin(xl).sum().backward(),
    }
    res = interleaved_us(cases, repeat, 20)
    base = res["engine fused vjp (open_backward)"][0]
    print(f"\nOpenSystemLayer, meta-control default (qubit_x, 60 segments, exact), B={B}, forward + backward "
          f"(gradients equal to the fused vjp's):")
    for k, (med, lo, hi) in res.items():
        print(f"  {k:45s} median {med:10.1f} us  (min {lo:.1f}, max {hi:.1f})  {med - base:+8.1f} us vs fused vjp")


if __name__ == "__main__":
    main()
