"""qfleet._engine, the torch-free binding (libqfleet_c.so through ctypes): every call gives
the PyTorch operators' results on the same JSON, bit for bit (state vectors, and density
matrices with channels and a readout error), errors are ValueError with the engine's message,
and importing it does not import torch."""
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "qfleet"

_GATES = [
    {"gate": "RY", "wires": [0], "params": [{"input": 0}]},
    {"gate": "RX", "wires": [1], "params": [{"weight": 0}]},
    {"gate": "CNOT", "wires": [0, 1]},
    {"gate": "RY", "wires": [1], "params": [{"weight": 1, "scale": 0.5}]},
    {"gate": "CRZ", "wires": [1, 2], "params": [{"weight": 2}]},
    {"gate": "RX", "wires": [2], "params": [{"input": 1}]},
    {"gate": "Hadamard", "wires": [0]},
]
_MEASURE = {"observables": [[[0.5, "Z0 Z1"], [-0.8, "X1"]], [[1.0, "Y2"]]], "probs": [2, 0]}

STATEVECTOR = {"kind": "circuit", "qubits": 3, "ops": _GATES, **_MEASURE}
DENSITY = {
    "kind": "circuit", "qubits": 3, **_MEASURE,
    "ops": _GATES[:3] + [{"channel": "Depolarizing", "wires": [1], "params": [0.05]},
                         {"channel": "AmplitudeDamping", "wires": [2], "params": [{"weight": 3}]}] + _GATES[3:],
    "readout_errors": [{"wire": 0, "p1_given_0": 0.02, "p0_given_1": 0.05}],
}
# As the PennyLane devices write them (python/qfleet/pennylane/_translate.py): no inputs,
# per-sample weights, the simulator named.
DEVICE_STYLE = {"kind": "circuit", "qubits": 2, "precision": "complex128", "threads": 0, "simulator": "density_matrix",
                "ops": [{"gate": "RX", "wires": [0], "params": [{"weight": 0}]},
                        {"gate": "CNOT", "wires": [0, 1]},
                        {"channel": "BitFlip", "wires": [1], "params": [{"weight": 1}]}],
                "observables": [[[1.0, "Z0 Z1"]]], "probs": [1]}
CIRCUITS = {"statevector": STATEVECTOR, "density": DENSITY, "device_style": DEVICE_STYLE}
SHAPES = {"statevector": (2, 3), "density": (2, 4), "device_style": (0, 2)}  # (input columns, weights)


@pytest.fixture(scope="module")
def engine():
    from qfleet import _engine, _lib
    _lib.load()  # the operators compared with: torch.ops.qfleet, torch.classes.qfleet
    try:
        _engine.library_path()
    except ImportError as e:
        pytest.skip(str(e))
    return _engine


def _same_bits(got, want):
    """Equal as bytes (so -0.0 and 0.0 differ), shapes and dtypes included."""
    want = want.numpy() if isinstance(want, torch.Tensor) else want
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got - want))


def qfleet_version():
    """CMakeLists.txt's project version, read here, not from the package under test."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    return re.search(r"project\(qfleet VERSION ([0-9.]+)", text).group(1)


def _data(name, batch, per_sample):
    rng = np.random.default_rng(len(name) + batch + per_sample)
    n_inputs, n_weights = SHAPES[name]
    x = rng.uniform(-np.pi, np.pi, (batch, n_inputs))
    w = rng.uniform(0.05, 0.4, (batch, n_weights) if per_sample else (n_weights,))
    return x, w


def _both(engine, doc):
    text = json.dumps(doc)
    return engine.Program(text), torch.classes.qfleet.CircuitProgram(text)


@pytest.mark.parametrize("name", list(CIRCUITS))
@pytest.mark.parametrize("batch,per_sample", [(1, False), (5, False), (5, True)])
def test_results_equal_the_torch_operators(engine, name, batch, per_sample):
    doc = CIRCUITS[name]
    p, tp = _both(engine, doc)
    assert (p.n_qubits(), p.n_inputs(), p.n_weights(), p.n_outputs()) == \
        (tp.n_qubits(), tp.n_inputs(), tp.n_weights(), tp.n_outputs())
    assert p.simulator() == tp.simulator() and p.precision() == tp.precision() == "complex128"
    x, w = _data(name, batch, per_sample)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)

    _same_bits(p.forward(x, w), torch.ops.qfleet.circuit_forward(tp, tx, tw))
    ji, jw = p.jacobian(x, w)
    tji, tjw = tp.jacobian(tx, tw)
    _same_bits(ji, tji)
    _same_bits(jw, tjw)
    g = np.random.default_rng(7).normal(size=(batch, p.n_outputs()))
    gi, gw = p.vjp(x, w, g)
    tgi, tgw = torch.ops.qfleet.circuit_backward(tp, tx, tw, torch.from_numpy(g))
    _same_bits(gi, tgi)
    _same_bits(gw, tgw)
    if p.simulator() == "density_matrix":
        _same_bits(p.density_matrices(x, w), tp.density_matrices(tx, tw))
    else:
        _same_bits(p.states(x, w), tp.states(tx, tw))
    for wires in ([], [1], [p.n_qubits() - 1, 0]):
        _same_bits(p.sample(x, w, wires, 300, 12345), tp.sample(tx, tw, wires, 300, 12345))


def test_inputs_may_be_left_out(engine):
    p, tp = _both(engine, DEVICE_STYLE)
    _, w = _data("device_style", 4, True)
    tx, tw = torch.empty((4, 0), dtype=torch.float64), torch.from_numpy(w)
    _same_bits(p.forward(None, w), torch.ops.qfleet.circuit_forward(tp, tx, tw))
    _same_bits(p.backward(None, w, np.ones((4, p.n_outputs())))[1],
               torch.ops.qfleet.circuit_backward(tp, tx, tw, torch.ones((4, p.n_outputs()), dtype=torch.float64))[1])


def test_other_layouts_are_converted(engine):
    p = engine.Program(json.dumps(STATEVECTOR))
    x, w = _data("statevector", 4, True)
    want = p.forward(x, w)
    _same_bits(p.forward(np.asfortranarray(x), w[:, ::-1].copy()[:, ::-1]), want)  # Fortran order, negative strides
    _same_bits(p.forward(x.tolist(), w.astype(np.float32).astype(np.float64)), p.forward(x, w.astype(np.float32)))
    ro = w.copy()
    ro.flags.writeable = False  # read in place all the same
    _same_bits(p.forward(x, ro), want)
    assert p.forward(np.empty((0, 2)), w[:0]).shape == (0, p.n_outputs())


def test_errors_are_value_errors_with_the_engines_message(engine):
    with pytest.raises(ValueError, match="invalid JSON: parse error at line 1"):
        engine.Program('{"kind": "circuit",,}')
    with pytest.raises(ValueError, match=r"ops\[0\].*unknown gate"):
        engine.Program('{"kind": "circuit", "qubits": 1, "ops": [{"gate": "RQ", "wires": [0]}], "states": true}')
    with pytest.raises(ValueError, match="complex128"):
        engine.Program(json.dumps({**STATEVECTOR, "precision": "complex64"}))
    p = engine.Program(json.dumps(STATEVECTOR))
    x, w = _data("statevector", 3, False)
    with pytest.raises(ValueError, match="inputs has 3 values, expected 6"):
        p.forward(x[:, :1], w)
    with pytest.raises(ValueError, match="weights has 2 values"):
        p.forward(x, w[:2])
    with pytest.raises(ValueError, match=r"per-sample weights have shape \(2, 3\)"):
        p.forward(x, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        p.forward(np.full_like(x, np.nan), w)
    with pytest.raises(ValueError, match="cotangents"):
        p.vjp(x, w, np.zeros((3, 1)))
    with pytest.raises(ValueError, match="simulates state vectors"):
        p.density_matrices(x, w)
    with pytest.raises(ValueError, match=r"wire 3 is not in \[0, 3\)"):
        p.sample(x, w, [3], 10, 0)
    with pytest.raises(ValueError, match="seed"):
        p.sample(x, w, [], 10, -1)


def test_a_program_pickles_by_its_json(engine):
    import pickle
    p = engine.Program(json.dumps(DENSITY))
    q = pickle.loads(pickle.dumps(p))
    x, w = _data("density", 2, False)
    _same_bits(q.forward(x, w), p.forward(x, w))
    assert q.json() == p.json() and engine.version() == qfleet_version()


def _fresh_python(code):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code, str(PACKAGE)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=str(ROOT))


def test_the_module_itself_does_not_import_torch(engine):
    # qfleet/__init__.py is stood in for by an empty package of the same folder, so this
    # checks _engine.py and what it imports, whatever the package's __init__ does.
    code = """
import sys, types
pkg = types.ModuleType("qfleet")
pkg.__path__ = [sys.argv[1]]
sys.modules["qfleet"] = pkg
import qfleet._engine as e
p = e.Program('{"kind": "circuit", "qubits": 1, "ops": [{"gate": "RX", "wires": [0], "params": [0.5]}], '
              '"observables": [[[1.0, "Z0"]]]}')
print(p.forward(None, None)[0, 0])
print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
"""
    r = _fresh_python(code)
    assert r.returncode == 0, r.stderr
    value, modules = r.stdout.split("\n")[:2]
    assert abs(float(value) - np.cos(0.5)) < 1e-15
    assert modules == "[]", modules


def test_importing_it_through_the_package_does_not_import_torch(engine):
    code = """
import sys
sys.path.insert(0, str(__import__("pathlib").Path(sys.argv[1]).parent))
import qfleet._engine
print("torch" in sys.modules)
"""
    r = _fresh_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_the_package_without_torch_and_with_it(engine):
    """`import qfleet` alone leaves torch out; its torch names load torch and the operators on
    first use; the engine's CUDA queries answer as the operators' do."""
    code = """
import sys
sys.path.insert(0, str(__import__("pathlib").Path(sys.argv[1]).parent))
import qfleet
print("torch" in sys.modules, qfleet.cuda_device_count(), qfleet.built_with_cuda())
c = qfleet.Circuit(1)
import torch
print("torch" in sys.modules, int(torch.ops.qfleet.cuda_device_count()), bool(torch.ops.qfleet.built_with_cuda()))
"""
    r = _fresh_python(code)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.split("\n")[:2]
    assert first.split()[0] == "False" and second.split()[0] == "True"
    assert first.split()[1:] == second.split()[1:]
