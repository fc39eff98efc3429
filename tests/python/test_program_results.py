"""CircuitProgram.states, .sample and .jacobian from Python (the calls the PennyLane devices
make) against references that do not use qfleet: PennyLane default.qubit's state, central
finite differences of circuit_forward, and sampling statistics; and their errors."""
import json

import numpy as np
import pytest
import torch

import qfleet

qml = pytest.importorskip("pennylane")


def _program(observables=True):
    c = qfleet.Circuit(3)
    c.add("RX", [0], [qfleet.weight(0)]).add("CNOT", [0, 1]).add("RY", [2], [qfleet.input(0)])
    c.add("CRZ", [1, 2], [qfleet.weight(1)]).add("Hadamard", [1])
    if observables:
        c.expval("Z0 X1").expval([(0.5, "Y2"), (-1.0, "Z1")]).probs([2, 0])
        return c.compile()
    doc = c.to_json()
    doc["states"] = True  # a program for states() and sample() only
    return torch.classes.qfleet.CircuitProgram(json.dumps(doc))


def _pl_state(x, w):
    @qml.qnode(qml.device("default.qubit", wires=3))
    def f():
        qml.RX(w[0], 0)
        qml.CNOT([0, 1])
        qml.RY(x, 2)
        qml.CRZ(w[1], [1, 2])
        qml.Hadamard(1)
        return qml.state()
    return f()


def test_states_match_default_qubit():
    p = _program(observables=False)
    x = torch.tensor([[0.3], [-1.1]], dtype=torch.float64)
    w = torch.tensor([[0.7, 1.9], [2.2, -0.4]], dtype=torch.float64)
    st = p.states(x, w)
    assert st.shape == (2, 8) and st.dtype == torch.complex128
    for b in range(2):
        np.testing.assert_allclose(st[b].numpy(), _pl_state(float(x[b, 0]), w[b].numpy()), atol=1e-12)


def test_jacobian_matches_finite_differences():
    p = _program()
    x = torch.tensor([[0.3], [-1.1]], dtype=torch.float64)
    w = torch.tensor([[0.7, 1.9], [2.2, -0.4]], dtype=torch.float64)
    jx, jw = p.jacobian(x, w)
    assert jx.shape == (2, p.n_outputs(), 1) and jw.shape == (2, p.n_outputs(), 2)
    h = 1e-6
    for j in range(2):
        e = torch.zeros_like(w)
        e[:, j] = h
        fd = (qfleet.circuit_forward(p, x, w + e) - qfleet.circuit_forward(p, x, w - e)) / (2 * h)
        np.testing.assert_allclose(jw[:, :, j].numpy(), fd.numpy(), atol=1e-8)
    e = torch.full_like(x, h)
    fd = (qfleet.circuit_forward(p, x + e, w) - qfleet.circuit_forward(p, x - e, w)) / (2 * h)
    np.testing.assert_allclose(jx[:, :, 0].numpy(), fd.numpy(), atol=1e-8)


def test_sample_is_seeded_and_follows_the_probabilities():
    p = _program(observables=False)
    x = torch.tensor([[0.3]], dtype=torch.float64)
    w = torch.tensor([[0.7, 1.9]], dtype=torch.float64)
    a = p.sample(x, w, [], 20000, 5)
    assert a.shape == (1, 20000) and a.dtype == torch.int64
    assert torch.equal(a, p.sample(x, w, [], 20000, 5))
    assert not torch.equal(a, p.sample(x, w, [], 20000, 6))
    probs = np.abs(_pl_state(0.3, w[0].numpy())) ** 2
    freq = np.bincount(a[0].numpy(), minlength=8) / 20000
    se = np.sqrt(probs * (1 - probs) / 20000) + 1e-12
    assert np.all(np.abs(freq - probs) <= 5 * se + 1e-9)
    # wires [2, 0]: outcome index = 2 * bit(wire 2) + bit(wire 0), drawn from the marginal
    sub = p.sample(x, w, [2, 0], 20000, 5)[0].numpy()
    marginal = probs.reshape(2, 2, 2).sum(axis=1).T.reshape(4)  # [q0, q2] -> [q2, q0]
    freq = np.bincount(sub, minlength=4) / 20000
    assert sub.max() <= 3
    assert np.all(np.abs(freq - marginal) <= 5 * np.sqrt(marginal * (1 - marginal) / 20000) + 1e-9)


def test_errors_are_clear():
    p = _program(observables=False)
    x = torch.zeros(1, 1, dtype=torch.float64)
    w = torch.zeros(1, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="shots must be positive"):
        p.sample(x, w, [], 0, 1)
    with pytest.raises(ValueError, match="seed must be non-negative"):
        p.sample(x, w, [], 10, -1)
    with pytest.raises(ValueError, match=r"wire 3 is not in \[0, 3\)"):
        p.sample(x, w, [3], 10, 1)
    with pytest.raises(ValueError, match="expected"):
        p.states(x, torch.zeros(1, 3, dtype=torch.float64))
    noisy = qfleet.Circuit(1)
    noisy.add("RX", [0], [0.2]).channel("Depolarizing", [0], [0.1]).expval("Z0")
    with pytest.raises(ValueError, match="density-matrix program has no state vectors"):
        noisy.compile().states(torch.zeros(1, 0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))
    assert json.loads(p.json())["states"] is True
