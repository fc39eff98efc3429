"""Noisy circuits (density matrices) against PennyLane default.mixed (every channel,
readout error, gradients) and Qiskit Aer's density-matrix simulator with the noise
models of qiskit-ibm-runtime's fake backends (converted by qfleet.noise); the
converter's and the engine's errors."""
import json

import numpy as np
import pytest
import torch

qml = pytest.importorskip("pennylane")

F64 = torch.float64
CHANNELS = [  # qfleet name, PennyLane class, parameters
    ("Depolarizing", "DepolarizingChannel", [0.2]),
    ("BitFlip", "BitFlip", [0.15]),
    ("PhaseFlip", "PhaseFlip", [0.25]),
    ("AmplitudeDamping", "AmplitudeDamping", [0.3]),
    ("GeneralizedAmplitudeDamping", "GeneralizedAmplitudeDamping", [0.2, 0.3]),
    ("PhaseDamping", "PhaseDamping", [0.35]),
    ("ThermalRelaxation", "ThermalRelaxationError", [0.1, 50.0, 40.0, 5.0]),
    ("PauliChannel", None, [0.1, 0.05, 0.2]),  # PennyLane: PauliError is per word; built from Kraus below
]


def pl_channel(name, cls, p, wire):
    if cls is not None:
        if any(isinstance(v, torch.Tensor) for v in p):  # PennyLane's ThermalRelaxationError mixes poorly
            p = [v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=F64) for v in p]
        getattr(qml, cls)(*p, wires=wire)
        return
    px, py, pz = p
    X, Y, Z, I = (np.array(m, dtype=complex) for m in ([[0, 1], [1, 0]], [[0, -1j], [1j, 0]], [[1, 0], [0, -1]],
                                                       [[1, 0], [0, 1]]))
    qml.QubitChannel([np.sqrt(1 - px - py - pz) * I, np.sqrt(px) * X, np.sqrt(py) * Y, np.sqrt(pz) * Z], wires=wire)


@pytest.mark.parametrize("name,cls,params", CHANNELS)
def test_every_channel_matches_default_mixed_with_gradients(qfleet, name, cls, params):
    # The channel's first parameter is a weight (gradient w.r.t. the noise strength),
    # the others constants; the gates read inputs and weights.
    c = qfleet.Circuit(2)
    c.add("RY", [0], [qfleet.input(0)]).add("CNOT", [0, 1]).add("RX", [1], [qfleet.weight(1)])
    c.channel(name, [1], [qfleet.weight(0)] + params[1:])
    c.add("CRZ", [1, 0], [qfleet.input(1)]).channel(name, [0], params)
    c.expval("Z0 X1").expval("Y1").probs([1, 0]).purity()
    prog = c.compile()
    assert prog.simulator() == "density_matrix"
    x = torch.tensor([[0.7, -0.4], [1.3, 0.9], [0.1, 2.0]], dtype=F64, requires_grad=True)
    w = torch.tensor([params[0], 0.6], dtype=F64, requires_grad=True)
    out = qfleet.circuit_forward(prog, x, w)

    dev = qml.device("default.mixed", wires=2)

    @qml.qnode(dev)
    def f(xb, wv):
        qml.RY(xb[0], wires=0)
        qml.CNOT([0, 1])
        qml.RX(wv[1], wires=1)
        pl_channel(name, cls, [wv[0]] + params[1:], 1)
        qml.CRZ(xb[1], wires=[1, 0])
        pl_channel(name, cls, params, 0)
        return (qml.expval(qml.PauliZ(0) @ qml.PauliX(1)), qml.expval(qml.PauliY(1)), qml.probs(wires=[1, 0]),
                qml.purity(wires=[0, 1]))

    def ref(xb, wv):  # numpy in, numpy out
        e1, e2, p, pur = f(xb, wv)
        return np.concatenate([[e1, e2], p, [pur]])

    xs, wv = x.detach().numpy(), w.detach().numpy()
    want = np.stack([ref(xs[b], wv) for b in range(xs.shape[0])])
    assert np.abs(out.detach().numpy() - want).max() < 1e-10
    # Gradients: the adjoint against the 5-point central difference of default.mixed
    # (error ~h^4, 1e-13 here), w.r.t. inputs, gate weights and the noise strength.
    cot = np.random.default_rng(1).normal(size=want.shape)
    gx, gw = torch.autograd.grad((out * torch.tensor(cot)).sum(), (x, w))

    def fd(fun, v, i, h=1e-3):
        def at(s):
            u = v.copy()
            u[i] += s
            return fun(u)
        return (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h)

    for b in range(xs.shape[0]):
        for i in range(2):
            g = fd(lambda u: float(ref(u, wv) @ cot[b]), xs[b], i)
            assert abs(gx[b, i].item() - g) < 1e-7 * (1 + abs(g))
    for j in range(2):
        g = sum(fd(lambda u: float(ref(xs[b], u) @ cot[b]), wv, j) for b in range(xs.shape[0]))
        assert abs(gw[j].item() - g) < 1e-7 * (1 + abs(g)), (j, gw[j].item(), g)


def test_kraus_and_density_matrices_match_default_mixed(qfleet):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(12, 4)) + 1j * rng.normal(size=(12, 4))
    q, _ = np.linalg.qr(a)  # an isometry: three 4 x 4 Kraus operators of a 2-qubit channel
    ks = [q[4 * j:4 * j + 4, :] for j in range(3)]
    c = qfleet.Circuit(2).add("Hadamard", [0]).add("CNOT", [0, 1]).kraus([1, 0], ks).add("RX", [0], [0.4])
    c.channel("TwoQubitDepolarizing", [0, 1], [0.3]).expval("Z0")
    rho = c.compile().density_matrices(torch.zeros(1, 0, dtype=F64), torch.zeros(0, dtype=F64))[0].numpy()
    dev = qml.device("default.mixed", wires=2)

    @qml.qnode(dev)
    def f():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.QubitChannel(ks, wires=[1, 0])
        qml.RX(0.4, wires=0)
        # two-qubit depolarizing: p/15 on each non-identity Pauli pair
        ops = []
        P = [np.eye(2), np.array([[0, 1], [1, 0]]), np.array([[0, -1j], [1j, 0]]), np.diag([1, -1])]
        for i in range(4):
            for j in range(4):
                ops.append(np.sqrt(0.7 if i == j == 0 else 0.3 / 15) * np.kron(P[i], P[j]))
        qml.QubitChannel(ops, wires=[0, 1])
        return qml.density_matrix([0, 1])

    assert np.abs(rho - f()).max() < 1e-12


def test_readout_error_matches_default_mixed_bit_flips(qfleet):
    p = 0.07
    c = qfleet.Circuit(3).add("RY", [0], [qfleet.input(0)]).add("CNOT", [0, 2]).add("RX", [1], [qfleet.input(1)])
    c.channel("AmplitudeDamping", [2], [0.2])
    for wire in range(3):
        c.readout_error(wire, p, p)
    c.expval("Z0 Z2").expval("X1").probs([2, 0])
    prog = c.compile()
    x = torch.tensor([[0.3, 1.1], [2.0, -0.5]], dtype=F64)
    out = qfleet.circuit_forward(prog, x, torch.zeros(0, dtype=F64))
    # default.mixed's readout_prob is what the test checks against, written out: PennyLane
    # 0.45 fails inside it (measure.py iterates over the float), so the bit flips it stands
    # for are applied explicitly after each observable's diagonalising gate.
    plain = qml.device("default.mixed", wires=3)

    def prep(xb):
        qml.RY(xb[0], wires=0)
        qml.CNOT([0, 2])
        qml.RX(xb[1], wires=1)
        qml.AmplitudeDamping(0.2, wires=2)

    @qml.qnode(plain)
    def f(xb):
        prep(xb)
        qml.Hadamard(1)  # X1 read in the Z basis
        for wire in range(3):
            qml.BitFlip(p, wires=wire)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(2)), qml.expval(qml.PauliZ(1))

    @qml.qnode(plain)
    def g(xb):
        prep(xb)
        qml.BitFlip(p, wires=2)
        qml.BitFlip(p, wires=0)
        return qml.probs(wires=[2, 0])

    for b in range(2):
        e1, e2 = f(x[b].numpy())
        ref = np.concatenate([[e1, e2], g(x[b].numpy())])
        assert np.abs(out[b].numpy() - ref).max() < 1e-10


def test_noisy_layer_gradcheck_and_per_sample_noise(qfleet):
    c = qfleet.Circuit(2).angle_embedding([0, 1]).channel("Depolarizing", [0], [qfleet.input(2, 0.1)])
    c.strongly_entangling_layers([0, 1], 1).channel("AmplitudeDamping", [1], [qfleet.weight(6, 0.1)])
    c.readout_error(0, 0.02, 0.05).expval("Z0").probs([1]).purity()
    prog = c.compile()
    x = torch.tensor([[0.2, 0.5, 0.3], [1.0, -0.7, 0.9]], dtype=F64, requires_grad=True)
    w = torch.rand(7, dtype=F64, generator=torch.Generator().manual_seed(0)).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: qfleet.circuit_forward(prog, a, b), (x, w), eps=1e-6, atol=1e-8)


def aer_density(qc, noise_model):
    from qiskit_aer import AerSimulator
    qc = qc.copy()
    qc.save_density_matrix()
    sim = AerSimulator(method="density_matrix", noise_model=noise_model)
    return np.asarray(sim.run(qc, shots=1).result().data()["density_matrix"])


def reverse_bits(rho, n):
    """Qiskit's qubit 0 is the least significant bit; qfleet's wire 0 the most."""
    perm = [int(format(i, f"0{n}b")[::-1], 2) for i in range(2 ** n)]
    return rho[np.ix_(perm, perm)]


@pytest.mark.parametrize("backend", ["manila", "lima", "quito", "nairobi"])
def test_fake_backend_noise_models_match_aer_density_matrix(qfleet, backend):
    qiskit = pytest.importorskip("qiskit")
    pytest.importorskip("qiskit_aer")
    runtime = pytest.importorskip("qiskit_ibm_runtime.fake_provider")
    from qiskit_aer.noise import NoiseModel
    import qfleet.noise as qn

    fake = getattr(runtime, f"Fake{backend.capitalize()}V2")()
    aer_model = NoiseModel.from_backend(fake)
    model = qn.from_fake_backend(backend, readout="symmetric")
    assert model["qubits"] == fake.num_qubits
    n = 3  # wires 0-1-2: coupled on every backend above
    rng = np.random.default_rng(7)
    c = qfleet.Circuit(n)
    qc = qiskit.QuantumCircuit(n)
    for layer in range(3):
        for q in range(n):
            t = float(rng.uniform(-3, 3))
            c.add("RZ", [q], [t]).add("SX", [q])
            qc.rz(t, q)
            qc.sx(q)
        c.add("CNOT", [0, 1]).add("CNOT", [1, 2]).add("PauliX", [layer % n])
        qc.cx(0, 1)
        qc.cx(1, 2)
        qc.x(layer % n)
    c.probs([0, 1, 2]).noise_model(model)
    prog = c.compile()
    empty = torch.zeros(1, 0, dtype=F64), torch.zeros(0, dtype=F64)
    rho = prog.density_matrices(*empty)[0].numpy()
    # Aer's noise model applied exactly (qiskit.quantum_info, every term of each error) ...
    import qiskit.quantum_info as qi
    exact = qi.DensityMatrix.from_label("0" * n)
    for inst in qc.data:
        qs = tuple(qc.find_bit(q).index for q in inst.qubits)
        exact = exact.evolve(inst.operation, qargs=list(qs))
        err = aer_model._local_quantum_errors.get(inst.operation.name, {}).get(qs)
        if err is not None:
            exact = exact.evolve(err, qargs=list(qs))
    assert np.abs(rho - reverse_bits(exact.data, n)).max() < 1e-12
    # ... and Aer's density-matrix simulator, which differs from that exact evolution by
    # ~4e-10 on two-qubit gates (docs/noisy.md): so 1e-9 here.
    assert np.abs(rho - reverse_bits(aer_density(qc, aer_model), n)).max() < 1e-9
    # Probabilities with readout error: the exact diagonal through Aer's assignment matrices.
    probs = np.real(np.diag(exact.data))  # Qiskit order
    full = np.array([[1.0]])
    for q in reversed(range(n)):  # Qiskit: qubit n-1 most significant
        r = aer_model._local_readout_errors[(q,)].probabilities  # rows: prepared, columns: read
        full = np.kron(full, np.asarray(r).T)
    measured = (full @ probs)[[int(format(i, f"0{n}b")[::-1], 2) for i in range(2 ** n)]]
    got = qfleet.circuit_forward(prog, *empty)[0].numpy()
    assert np.abs(got - measured).max() < 1e-12


def test_noise_model_cli_and_errors(qfleet, tmp_path):
    import subprocess
    import sys
    import qfleet.noise as qn

    names = qn.fake_backends()
    assert "manila" in names and len(names) > 20
    out = tmp_path / "manila.json"
    r = subprocess.run([sys.executable, "-m", "qfleet.noise", "convert", "FakeManilaV2", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    model = json.loads(out.read_text())
    assert model["basis_gates"] == ["CNOT", "Identity", "RZ", "SX", "PauliX"]
    assert model["qubit_properties"][0]["t1"] > 1e4  # ns
    r = subprocess.run([sys.executable, "-m", "qfleet.noise", "convert", "nowhere"], capture_output=True, text=True)
    assert r.returncode == 2 and "no fake backend 'nowhere'" in r.stderr
    with pytest.raises(qn.CalibrationError, match="lacks"):
        qn.from_calibration({"n_qubits": 1}, {"gates": []})
    # The engine's checks on a model.
    c = qfleet.Circuit(2).add("RY", [0], [0.3]).probs([0]).noise_model(model)
    with pytest.raises(RuntimeError, match="not a basis gate of device 'fake_manila'"):
        c.compile()
    c = qfleet.Circuit(3).add("CNOT", [0, 2]).probs([0]).noise_model(model)
    with pytest.raises(RuntimeError, match="not coupled"):
        c.compile()
    bad = dict(model, qubit_properties=model["qubit_properties"][:2])
    with pytest.raises(RuntimeError, match="qubit_properties.*5 qubits"):
        qfleet.Circuit(1).probs([0]).noise_model(bad).compile()
    with pytest.raises(RuntimeError, match=r"outside \[0, 1\]"):
        qfleet.Circuit(1).channel("Depolarizing", [0], [1.5]).probs([0]).compile()
    prog = qfleet.Circuit(1).channel("BitFlip", [0], [qfleet.input(0)]).probs([0]).compile()
    with pytest.raises(RuntimeError, match="sample 1: BitFlip on wires \\[0\\]"):
        qfleet.circuit_forward(prog, torch.tensor([[0.1], [float("1.2")]], dtype=F64), torch.zeros(0, dtype=F64))


def test_lower_to_device_runs_a_logical_circuit_on_the_device(qfleet):
    """Circuit.noise_model(model, lower_to_device=True): a circuit in any gates on any wires
    runs on the device (layout, SWAP routing, the device's basis: docs/noisy.md). With the
    model's three noise parts off the result is PennyLane's for the logical circuit."""
    pytest.importorskip("qiskit_ibm_runtime.fake_provider")
    import qfleet.noise as qn

    model = qn.from_fake_backend("nairobi")
    def logical():
        c = qfleet.Circuit(4).add("Hadamard", [0]).add("CNOT", [0, 3]).add("RY", [2], [0.7])
        return c.add("CZ", [3, 1]).add("RX", [1], [qfleet.weight(0)]).add("SWAP", [2, 0]).probs([0, 1, 2, 3])
    with pytest.raises(RuntimeError, match="not a basis gate"):
        logical().noise_model(model).compile()
    w = torch.tensor([0.4], dtype=F64)
    empty = torch.zeros(1, 0, dtype=F64)
    quiet = dict(model, gate_error=False, thermal_relaxation=False, readout_error=False)
    got = qfleet.circuit_forward(logical().noise_model(quiet, lower_to_device=True).compile(), empty, w)[0].numpy()

    dev = qml.device("default.qubit", wires=4)

    @qml.qnode(dev)
    def ref():
        qml.Hadamard(0)
        qml.CNOT([0, 3])
        qml.RY(0.7, wires=2)
        qml.CZ([3, 1])
        qml.RX(0.4, wires=1)
        qml.SWAP([2, 0])
        return qml.probs(wires=[0, 1, 2, 3])
    assert np.abs(got - np.asarray(ref())).max() < 1e-12
    noisy = qfleet.circuit_forward(logical().noise_model(model, lower_to_device=True).compile(), empty, w)[0].numpy()
    assert abs(noisy.sum() - 1) < 1e-12 and 1e-4 < np.abs(noisy - got).max() < 0.2  # the device's noise, not more
    with pytest.raises(TypeError, match="lower_to_device must be True or False"):
        logical().noise_model(model, lower_to_device="yes")


def test_docs_python_snippet_runs(qfleet):
    # docs/noisy.md's Python example, run as written (so the page cannot drift).
    import pathlib
    import re
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "noisy.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    env = {}
    exec(code, env)  # noqa: S102 - our own documentation
    layer = env["layer"]
    out = layer(torch.zeros(3, 0, dtype=F64))
    assert out.shape == (3, 4) and abs(out.sum().item() - 3.0) < 1e-12  # probabilities of 3 samples
