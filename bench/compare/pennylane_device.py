"""The hybrid-classifier circuit as a PennyLane TorchLayer on qfleet.qubit beside
lightning.qubit (adjoint) and default.qubit (backprop), in one run: AngleEmbedding of 4
inputs, 3 StronglyEntanglingLayers on 4 qubits, <Z_i> on every wire, a batch of 64,
forward + backward of the outputs' sum. The only change between the rows is the device
name (and its diff_method); the device_vjp rows pass device_vjp=True to the QNode (the
backward pass is then the device's vector-Jacobian product, not a Jacobian contracted by
PennyLane). qfleet.QuantumLayer, the same circuit without PennyLane,
is the last row.

    PYTHONPATH=python \\
        python bench/compare/pennylane_device.py [--batch 64] [--repeats 7] [--number 5] [--threads N] \\
        [--seed 7] [--json out.json] [--md out.md] [--quick] [--device cuda]

(or with the pip-installed package; the device is found through the qfleet package's
pennylane.plugins entry point, or constructed directly when running from the source tree).
Before timing, every row's outputs and gradients (w.r.t. the weights) are checked equal to
default.qubit's to 1e-10 (harness.check_close). Prints medians (min, max) in milliseconds and the
ratios. --quick: batch 8, one sample of one call; --threads N: torch's threads and OMP_NUM_THREADS
(default: the libraries' own).

--device cuda: the same layer on one GPU, batch 1024 by default: qfleet.qubit with device="cuda"
(adjoint, device_vjp: PennyLane hands it NumPy parameters, copied to the GPU each call) beside
default.qubit's backprop on CUDA tensors and qfleet.QuantumLayer on CUDA tensors; every row checked
first against default.qubit on the CPU (lightning.qubit has no CUDA form here: it is left out).
"""

import harness

N_QUBITS, N_LAYERS = 4, 3
qml = torch = qfleet = QubitDevice = None  # imported in main(), after OMP_NUM_THREADS is set


def _imports():
    global qml, torch, qfleet, QubitDevice
    import pennylane as qml
    import torch

    import qfleet
    from qfleet.pennylane import QubitDevice


def qfleet_device(wires, device="cpu"):
    try:
        return qml.device("qfleet.qubit", wires=wires, device=device)
    except qml.exceptions.DeviceError:  # the source tree, without the package's entry point
        return QubitDevice(wires=wires, device=device)


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


def qfleet_layer(weights0, device="cpu"):
    c = qfleet.Circuit(N_QUBITS)
    c.angle_embedding(list(range(N_QUBITS))).strongly_entangling_layers(list(range(N_QUBITS)), layers=N_LAYERS)
    for q in range(N_QUBITS):
        c.expval(f"Z{q}")
    layer = qfleet.QuantumLayer(c, device=device)
    with torch.no_grad():
        layer.weight.copy_(weights0.reshape(-1))
    return layer


def step(layer, x):
    """Forward + backward; the outputs and weight gradient on the host (on a GPU, reading them
    waits for the device's work, so a timed step includes it)."""
    layer.zero_grad()
    out = layer(x)
    out.sum().backward()
    grad = next(iter(layer.parameters())).grad
    return out.detach().cpu(), grad.detach().reshape(N_LAYERS, N_QUBITS, 3).cpu()


def time_rows(rows, x, args, width):
    """Each row's forward + backward timed on x; prints the medians (min, max) in ms."""
    timings = {}
    for name, layer in rows:
        t = timings[name] = harness.timed(lambda layer=layer: step(layer, x), repeats=args.repeats,
                                          number=args.number)
        print(f"  {name:{width}s} {t.median * 1e3:9.3f}  ({t.min * 1e3:.3f}, {t.max * 1e3:.3f})")
    return timings


def parse_args(argv=None):
    ap = harness.parser(__doc__, threads=None, seed=7, quick_help="batch 8, one sample of one call: a smoke run")
    ap.add_argument("--batch", type=int, default=None, help="samples (default 64; --quick: 8)")
    ap.add_argument("--repeats", type=int, default=None, help="timed samples (default 7; --quick: 1)")
    ap.add_argument("--number", type=int, default=None, help="calls per sample (default 5; --quick: 1)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: the qfleet rows and default.qubit on one GPU (default batch 1024)")
    args = harness.validate(ap, ap.parse_args(argv))
    args.batch = args.batch or (8 if args.quick else 1024 if args.device == "cuda" else 64)
    args.repeats = args.repeats or (1 if args.quick else 7)
    args.number = args.number or (1 if args.quick else 5)
    return args


def main(argv=None):
    args = parse_args(argv)
    harness.threads_env(args.threads)
    _imports()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.rand(args.batch, N_QUBITS, generator=gen) * torch.pi
    w0 = torch.rand(N_LAYERS, N_QUBITS, 3, generator=gen) * 2 * torch.pi

    if args.device == "cuda":
        return main_cuda(args, x, w0)
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
    errors = {name: harness.check_close(f"{name} against default.qubit (outputs, weight gradients)", step(layer, x),
                                        (ref_out, ref_grad), atol=1e-10) for name, layer in rows}
    print(f"outputs and gradients equal to default.qubit's (1e-10); batch {args.batch}, "
          f"{torch.get_num_threads()} torch thread(s); forward + backward, ms: median (min, max)")
    timings = time_rows(rows, x, args, 36)
    q = timings["qfleet.qubit (adjoint)"]
    print("ratios (time / qfleet.qubit's):")
    for name, t in timings.items():
        print(f"  {name:36s} {t.median / q.median:8.2f}x")
    table = [harness.row(f"classifier n4 B{args.batch} fwd+bwd", name, t, q, error=errors[name])
             for name, t in timings.items()]
    harness.finish(args, "pennylane_device.py", table,
                   {"batch": args.batch, "median_ms": {k: t.median * 1e3 for k, t in timings.items()},
                    "pennylane": qml.__version__, "torch": torch.__version__},
                   title="TorchLayer on qfleet.qubit beside lightning.qubit and default.qubit; ratio to "
                         "qfleet.qubit (adjoint)")


def main_cuda(args, x, w0):
    """--device cuda: the rows on one GPU, each checked against default.qubit on the CPU first."""
    if not torch.cuda.is_available() or qfleet.cuda_device_count() == 0:
        harness.fail("pennylane_device.py", "--device cuda: no CUDA device is visible to torch and qfleet")
    ref_out, ref_grad = step(torch_layer(qml.device("default.qubit", wires=N_QUBITS), "backprop", w0), x)
    xc = x.cuda()
    rows = [
        ("qfleet.qubit cuda (adjoint, device_vjp)",
         torch_layer(qfleet_device(N_QUBITS, "cuda"), "adjoint", w0, True).cuda()),
        ("default.qubit cuda (backprop)",
         torch_layer(qml.device("default.qubit", wires=N_QUBITS), "backprop", w0).cuda()),
        ("qfleet.QuantumLayer cuda (no PennyLane)", qfleet_layer(w0, "cuda").cuda()),
    ]
    errors = {name: harness.check_close(f"{name} against default.qubit on the CPU (outputs, weight gradients)",
                                        step(layer, xc), (ref_out, ref_grad), atol=1e-10) for name, layer in rows}
    print(f"outputs and gradients equal to default.qubit's on the CPU (1e-10); batch {args.batch} on "
          f"{torch.cuda.get_device_name(0)}; forward + backward, ms: median (min, max)")
    timings = time_rows(rows, xc, args, 40)
    q = timings[rows[0][0]]
    speedup = timings["default.qubit cuda (backprop)"].median / q.median
    print(f"default.qubit (backprop) / qfleet.qubit (device_vjp) on the GPU: {speedup:.2f}x")
    table = [harness.row(f"classifier n4 B{args.batch} fwd+bwd, cuda", name, t, q, error=errors[name])
             for name, t in timings.items()]
    harness.finish(args, "pennylane_device.py", table,
                   {"batch": args.batch, "device": "cuda", "gpu": torch.cuda.get_device_name(0),
                    "median_ms": {k: t.median * 1e3 for k, t in timings.items()},
                    "speedup_vs_default_qubit": speedup, "pennylane": qml.__version__, "torch": torch.__version__},
                   title="TorchLayer on qfleet.qubit (device cuda) beside default.qubit on the same GPU; ratio to "
                         "qfleet.qubit")


if __name__ == "__main__":
    main()
