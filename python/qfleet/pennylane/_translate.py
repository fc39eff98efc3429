"""A PennyLane tape as a qfleet circuit program: one compiled program per tape *structure*.

Every gate (and channel) parameter of the tape becomes a per-sample weight column, so
tapes that differ only in their parameter values — a TorchLayer over a batch, a
broadcast tape, the shifted tapes of a gradient — share one compiled program and run
as one engine call with one row of weights per sample (docs/pennylane.md).
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pennylane as qml

from .. import _engine

# The engine's gate catalogue (docs/gates.md) under PennyLane's names.
GATES = frozenset({
    "Hadamard", "PauliX", "PauliY", "PauliZ", "S", "Adjoint(S)", "T", "Adjoint(T)", "SX", "Adjoint(SX)",
    "RX", "RY", "RZ", "PhaseShift", "Rot", "U3", "CNOT", "CY", "CZ", "SWAP", "ISWAP", "CRX", "CRY", "CRZ",
    "CRot", "ControlledPhaseShift", "IsingXX", "IsingYY", "IsingZZ", "Toffoli", "CSWAP",
})
# Gates the device runs without the engine: identities, and the global phase (it only
# changes returned state vectors, which are multiplied by it after the engine call).
NO_OPS = frozenset({"Identity", "GlobalPhase", "Snapshot", "Barrier"})
# The engine's parametrised channels (docs/noisy.md), keyed by PennyLane name.
CHANNELS = {
    "DepolarizingChannel": "Depolarizing", "BitFlip": "BitFlip", "PhaseFlip": "PhaseFlip",
    "AmplitudeDamping": "AmplitudeDamping", "GeneralizedAmplitudeDamping": "GeneralizedAmplitudeDamping",
    "PhaseDamping": "PhaseDamping", "ThermalRelaxationError": "ThermalRelaxation",
}
# Observables with more wires than this go through the final state rather than a Pauli
# decomposition (4^k terms).
MAX_DECOMPOSED_WIRES = 4
# Beyond MAX_DECOMPOSED_WIRES, an observable whose matrix is diagonal (a projector on a basis
# state, a cost function's diagonal) is read from the probabilities of its wires, <O> = sum_i
# O_ii p_i, which the adjoint method differentiates; its matrix is read up to this many wires.
MAX_DIAGONAL_WIRES = 8


def _numpy(x):
    """A parameter as numpy (the device is given numpy parameters; qml.math.unwrap, slow
    per call, only for the rest)."""
    if isinstance(x, (np.ndarray, np.generic, float, int)):
        return np.asarray(x)
    return np.asarray(qml.math.unwrap(x))


def unitary_supported(op) -> bool:
    """A fixed 1- or 2-wire matrix: QubitUnitary without broadcasting."""
    return op.name == "QubitUnitary" and len(op.wires) <= 2 and op.batch_size is None


def _cmatrix(m) -> list:
    m = np.asarray(qml.math.unwrap(m), dtype=complex)
    return [[[float(z.real), float(z.imag)] for z in row] for row in m]


# Decompositions of matrix observables, by name, wires and matrix: a training loop measures
# the same Hermitian on every call, and PennyLane's pauli_decompose of it was about a quarter
# of a one-qubit circuit's call (twice a call: preprocessing and planning).
_DECOMPOSED: OrderedDict = OrderedDict()
_DECOMPOSED_MAX = 256


def _matrix_key(obs, m):
    """A matrix observable's exact identity: name, wires and the matrix's bytes."""
    return obs.name, tuple(obs.wires), obs.num_params, m.shape, m.tobytes()


def pauli_sentence(obs):
    """obs as a PauliSentence (PennyLane's own, or decomposed from its matrix on at most
    MAX_DECOMPOSED_WIRES wires), or None. Callers must not change it (it may be shared)."""
    if obs.pauli_rep is not None:
        return obs.pauli_rep
    if len(obs.wires) > MAX_DECOMPOSED_WIRES or not obs.has_matrix:
        return None
    m = np.asarray(_numpy(qml.matrix(obs)), dtype=complex)
    key = _matrix_key(obs, m)
    ps = _DECOMPOSED.get(key)
    if ps is not None:
        _DECOMPOSED.move_to_end(key)
        return ps
    ps = qml.pauli_decompose(m, wire_order=obs.wires, pauli=True, check_hermitian=False)
    _DECOMPOSED[key] = ps
    if len(_DECOMPOSED) > _DECOMPOSED_MAX:
        _DECOMPOSED.popitem(last=False)
    return ps


def diagonal(obs):
    """The real diagonal of an observable on more than MAX_DECOMPOSED_WIRES (and at most
    MAX_DIAGONAL_WIRES) wires whose matrix is diagonal and Hermitian, else None."""
    k = len(obs.wires)
    if not MAX_DECOMPOSED_WIRES < k <= MAX_DIAGONAL_WIRES or obs.pauli_rep is not None or not obs.has_matrix:
        return None
    m = np.asarray(_numpy(qml.matrix(obs)), dtype=complex)
    d = np.diagonal(m)
    if np.count_nonzero(m) != np.count_nonzero(d) or np.any(d.imag != 0.0):
        return None
    return np.ascontiguousarray(d.real)


def observable_key(obs):
    """Exactly what the adjoint checks read of a measured observable (its Pauli words and
    coefficients, or its matrix), for the device's cache of their answers; None for none.
    (Operator.hash formats the data as rounded text: slow for a matrix, asked on every QNode
    call, and two matrices equal to 10 digits would share it.)"""
    if obs is None:
        return None
    head = (obs.name, tuple(obs.wires), obs.num_params)
    if obs.pauli_rep is not None:
        return head + tuple((tuple(word.items()), complex(qml.math.unwrap(c))) for word, c in obs.pauli_rep.items())
    if len(obs.wires) <= MAX_DIAGONAL_WIRES and obs.has_matrix:
        return _matrix_key(obs, np.asarray(_numpy(qml.matrix(obs)), dtype=complex))
    return head + (obs.hash,)


def pauli_terms(ps, index) -> list | None:
    """A PauliSentence as [[coeff, "X0 Z2"], ...] on engine wires; None where a coefficient is
    complex (not Hermitian: PennyLane's own checks report it on the state path)."""
    terms = []
    for word, coeff in ps.items():
        c = complex(qml.math.unwrap(coeff))
        if abs(c.imag) > 1e-10 * max(1.0, abs(c.real)):
            return None
        text = " ".join(f"{p}{index[w]}" for w, p in word.items() if p != "I")
        terms.append([c.real, text or "I"])
    return terms or [[0.0, "I"]]


def squared(ps):
    sq = ps @ ps
    sq.simplify()
    return sq


def _exact(m) -> tuple:
    m = np.asarray(_numpy(m), dtype=complex)
    return m.shape, m.tobytes()


def _op_key(op):
    """What plan_tape reads of an operation; None where it would not plan it."""
    name = op.name
    if name in NO_OPS:
        return (name,)
    if name in GATES or name in CHANNELS:
        return name, op.wires
    if name == "QubitUnitary":
        return (name, op.wires) + _exact(op.data[0])
    if isinstance(op, qml.operation.Channel):
        return (name, op.wires) + tuple(_exact(k) for k in op.kraus_matrices())
    return None


def _measurement_key(mp):
    probs = type(mp) is qml.measurements.ProbabilityMP and mp.obs is None and mp.mv is None
    return (type(mp), mp.wires, observable_key(mp.obs), mp.mv is None,
            probs and mp.eigvals() is None)


def structure_key(tape, wire_order, analytic):
    """Everything plan_tape reads of a tape but its parameter values, so that two tapes with
    one key get the same plan: operations (names, wires; the exact matrices of QubitUnitary and
    Kraus channels), measurements (types, wires, observables' exact values), wire order and
    whether the tape is analytic. Cheaper than plan_tape, which a device runs only for a key it
    has not seen. (The device's own settings, mixed and readout_prob, are fixed per cache.)
    None for a tape with an operation plan_tape refuses."""
    ops = tuple(_op_key(op) for op in tape.operations)
    if None in ops:
        return None
    return (tuple(wire_order), analytic, ops, tuple(_measurement_key(mp) for mp in tape.measurements))


@dataclass
class Measure:
    """How one measurement's result is read from the engine's outputs."""
    # "expval", "var", "probs" (engine columns), "diag_expval", "diag_var" (a diagonal
    # observable's values times the probabilities of its wires) or "state" (PennyLane's on
    # the final state)
    kind: str
    cols: tuple = ()
    mp: object = None
    diag: object = None


@dataclass
class Plan:
    """A compiled tape structure: the program, which tape parameters fill which weight
    columns, and how each measurement is read."""
    key: tuple
    doc: dict
    n_qubits: int
    weight_params: list  # weight column j <- tape parameter weight_params[j]
    phase_params: list   # tape parameters that are GlobalPhase angles
    measures: list = field(default_factory=list)
    program: object = None

    @property
    def needs_state(self) -> bool:
        return any(m.kind == "state" for m in self.measures)

    def compile(self):
        if self.program is None:
            self.program = _engine.Program(json.dumps(self.doc))
        return self.program

    def batch_size(self, params: list):
        """The tape's broadcast size (None: not broadcast) from its gate, channel and phase
        parameters, which are scalars unless broadcast: what tape.batch_size says of a tape of
        this plan (its QubitUnitary and Kraus matrices are never broadcast: the device
        decomposes broadcast ones) without PennyLane's check of every operation."""
        for p in self.weight_params + self.phase_params:
            shape = getattr(params[p], "shape", ())
            if len(shape) > 0:
                return shape[0]
        return None

    def weights(self, params: list, batch: int) -> np.ndarray:
        """The per-sample weights [batch, n_weights] of a tape with these parameters."""
        w = np.empty((batch, len(self.weight_params)), dtype=np.float64)
        for j, p in enumerate(self.weight_params):
            w[:, j] = np.real(_numpy(params[p]))
        return w

    def phases(self, params: list, batch: int) -> np.ndarray:
        phi = np.zeros(batch)
        for p in self.phase_params:
            phi = phi + np.real(_numpy(params[p]))
        return phi


def plan_tape(tape, wire_order, *, mixed: bool, analytic: bool, readout_prob=None) -> Plan:
    """The plan of `tape` on `wire_order` (its key decides which tapes share a program)."""
    index = {w: i for i, w in enumerate(wire_order)}
    n = max(1, len(wire_order))
    ops, key_ops, weight_params, phase_params = [], [], [], []
    p = 0  # index into tape.get_parameters(trainable_only=False)
    for op in tape.operations:
        name = op.name
        wires = [index[w] for w in op.wires]
        k = op.num_params
        if name in NO_OPS:
            if name == "GlobalPhase":
                phase_params.append(p)
            key_ops.append((name,))
        elif name in GATES:
            cols = list(range(len(weight_params), len(weight_params) + k))
            weight_params.extend(range(p, p + k))
            entry = {"gate": name, "wires": wires}
            if k:
                entry["params"] = [{"weight": c} for c in cols]
            ops.append(entry)
            key_ops.append((name, tuple(wires)))
        elif name == "QubitUnitary":
            m = _cmatrix(op.matrix())
            ops.append({"gate": "QubitUnitary", "wires": wires, "matrix": m})
            key_ops.append((name, tuple(wires), json.dumps(m)))
        elif mixed and name in CHANNELS:
            cols = list(range(len(weight_params), len(weight_params) + k))
            weight_params.extend(range(p, p + k))
            ops.append({"channel": CHANNELS[name], "wires": wires, "params": [{"weight": c} for c in cols]})
            key_ops.append((name, tuple(wires)))
        elif mixed and isinstance(op, qml.operation.Channel) and len(op.wires) <= 2:
            kraus = [_cmatrix(km) for km in op.kraus_matrices()]
            ops.append({"channel": "Kraus", "wires": wires, "kraus": kraus})
            key_ops.append((name, tuple(wires), json.dumps(kraus)))
        else:  # preprocessing decomposes everything else; reaching here is a bug
            raise qml.exceptions.DeviceError(f"qfleet: operation {name} on {len(op.wires)} wire(s) is not supported")
        p += k

    observables, probs, measures = [], [], []
    n_cols = 0

    def add_obs(terms):
        nonlocal n_cols
        observables.append(terms)
        n_cols += 1
        return n_cols - 1

    if analytic:
        for mp in tape.measurements:
            obs = mp.obs
            ps = pauli_sentence(obs) if obs is not None and mp.mv is None else None
            if ps is not None and isinstance(mp, qml.measurements.ExpectationMP):
                terms = pauli_terms(ps, index)
                if terms is not None:
                    measures.append(Measure("expval", (add_obs(terms),)))
                    continue
            if ps is not None and isinstance(mp, qml.measurements.VarianceMP):
                terms, sq = pauli_terms(ps, index), pauli_terms(squared(ps), index)
                if terms is not None and sq is not None:
                    measures.append(Measure("var", (add_obs(terms), add_obs(sq))))
                    continue
            if (type(mp) is qml.measurements.ProbabilityMP and obs is None and mp.mv is None
                    and mp.eigvals() is None):
                wires = [index[w] for w in (mp.wires or wire_order)] or [0]
                probs.append(wires)
                measures.append(Measure("probs", (len(probs) - 1,)))
                continue
            d = diagonal(obs) if ps is None and obs is not None and mp.mv is None else None
            if d is not None and isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP)):
                probs.append([index[w] for w in obs.wires])
                kind = "diag_expval" if isinstance(mp, qml.measurements.ExpectationMP) else "diag_var"
                measures.append(Measure(kind, (len(probs) - 1,), diag=d))
                continue
            measures.append(Measure("state", mp=mp))
    # probs columns come after every expectation value (docs/circuits.md#outputs)
    start = n_cols
    for m in measures:
        if m.kind in ("probs", "diag_expval", "diag_var"):
            size = 2 ** len(probs[m.cols[0]])
            m.cols = (start, start + size)
            start += size

    doc = {"kind": "circuit", "qubits": n, "ops": ops, "observables": observables, "precision": "complex128",
           "threads": 0, "simulator": "density_matrix" if mixed else "statevector"}
    if probs:
        doc["probs"] = probs
    if not observables and not probs:
        doc["states"] = True  # a program for states()/sample() only
    if readout_prob is not None:  # a bit flip of every measured wire (default.mixed's readout_prob)
        p_flip = float(readout_prob)
        doc["readout_errors"] = [{"wire": q, "p1_given_0": p_flip, "p0_given_1": p_flip} for q in range(n)]
    key = (n, mixed, analytic, readout_prob, tuple(key_ops), json.dumps(observables), json.dumps(probs),
           tuple(m.kind for m in measures))
    # state-path measurements are read from the tape itself at execution, not from the plan
    return Plan(key, doc, n, weight_params, phase_params, measures)
