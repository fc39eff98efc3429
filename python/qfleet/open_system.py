"""The open-system builder, with the C++ builder's names (include/qfleet/open_system.hpp).

H(t) = H0 + sum_m c_m H0_m + sum_k u_k(t) H_k; jump operators L_j enter the
Lindblad equation as sqrt(gamma_j) L_j with per-task or shared rates gamma_j.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import torch

from . import _json, _lib
from ._types import Matrix, Program, Vector

_SOLVERS = ("exact", "rk4", "euler", "dopri5", "tsit5")


class Operator:
    """A structured operator (docs/open_systems.md#structured-operators): made by pauli() and
    local(), combined with ``+`` and scalar ``*``, and accepted wherever OpenSystem takes a d x d
    matrix. The C++ reader builds its matrix; the Lindblad form applies it by its nonzeros."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc

    def __add__(self, other):
        if not isinstance(other, Operator):
            return NotImplemented
        return Operator({"sum": [self.doc, other.doc]})

    def __mul__(self, c):
        if isinstance(c, (Operator, torch.Tensor)):
            return NotImplemented
        c = complex(c)
        return Operator({"sum": [self.doc], "coeff": [c.real, c.imag]})

    __rmul__ = __mul__

    def __repr__(self):
        return f"qfleet.Operator({json.dumps(self.doc)})"


def pauli(terms: str | Sequence[tuple[complex, str]]) -> Operator:
    """A Pauli sum on a system of qubits (qubit 0 the most significant tensor factor):
    pauli("X0 Z2"), or pauli([(0.5, "X0 X1"), (-1j, "Y2")])."""
    if isinstance(terms, str):
        return Operator({"pauli": terms})
    out = []
    for t in terms:
        if not (isinstance(t, (tuple, list)) and len(t) == 2 and isinstance(t[1], str)):
            raise ValueError(f"qfleet: pauli terms are (coefficient, \"X0 Z1\") pairs, got {t!r}")
        c = complex(t[0])
        out.append([c.real if c.imag == 0 else [c.real, c.imag], t[1]])
    return Operator({"pauli": out})


def local(matrix: Matrix, on: int | Sequence[int]) -> Operator:
    """`matrix` acting on subsystems `on` (an int or a list, in the order of the matrix's own
    tensor factors), identity on the others."""
    on = [int(on)] if isinstance(on, int) else [int(k) for k in on]
    return Operator({"local": _json.cmatrix(matrix, "local operator"), "on": on})


class OpenSystem:
    """An open (Lindblad) or closed system, built call by call (each call returns the system):
    drift H0, drift terms with per-task coefficients, control Hamiltonians with piecewise-
    constant amplitudes, jump operators with per-task rates, the time grid, the initial state
    or gate propagation, the target and the outputs (observables, leakage). `compile()` makes
    the program the operators run (docs/open_systems.md)."""

    def __init__(self, dim: int, subsystems: Sequence[int] | None = None) -> None:
        """dim: the Hilbert-space dimension; subsystems: its tensor factors' dimensions (their
        product dim; default: qubits when dim is a power of two), for local() operators."""
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"qfleet: dim must be a positive int, got {dim!r}")
        self.dim = dim
        self._doc: dict[str, Any] = {"kind": "lindblad", "dim": dim}
        if subsystems is not None:
            self._doc["subsystems"] = [int(k) for k in subsystems]

    def _operator(self, m, name):
        return m.doc if isinstance(m, Operator) else _json.cmatrix(m, name, self.dim)

    def _append(self, key, m, name):
        self._doc.setdefault(key, []).append(self._operator(m, name))
        return self

    def drift(self, h0: Matrix | Operator) -> OpenSystem:
        """The drift Hamiltonian H0 (a d x d Hermitian matrix or an Operator)."""
        self._doc["H0"] = self._operator(h0, "H0")
        return self

    def drift_term(self, h: Matrix | Operator) -> OpenSystem:
        """A drift term H0_m whose coefficient c_m is an input per task (drift_coeffs), e.g. a detuning."""
        return self._append("drift_terms", h, "drift term")

    def control(self, h: Matrix | Operator) -> OpenSystem:
        """A control Hamiltonian H_k, driven by the amplitudes u_k(t) (one per segment)."""
        return self._append("controls", h, "control Hamiltonian")

    def jump(self, l: Matrix | Operator) -> OpenSystem:  # noqa: E741 - the physics name
        """A jump operator L_j, entering as sqrt(gamma_j) L_j with its rate gamma_j an input (rates)."""
        return self._append("jumps", l, "jump operator")

    def segments(self, n_seg: int, total_time: float) -> OpenSystem:
        """n_seg segments of equal length over total_time."""
        n_seg = int(n_seg)
        if n_seg < 1:
            raise ValueError(f"qfleet: n_seg must be >= 1, got {n_seg}")
        total_time = _json.real(total_time, "total_time")
        self._doc.pop("durations", None)
        self._doc["n_segments"] = n_seg
        self._doc["segment_duration"] = total_time / n_seg
        return self

    def durations(self, dt: Sequence[float]) -> OpenSystem:
        """Segments of the given lengths (one per segment); a call can override them (durations=)."""
        self._doc.pop("n_segments", None)
        self._doc.pop("segment_duration", None)
        self._doc["durations"] = [_json.real(x, "duration") for x in dt]
        return self

    def initial_density(self, rho0: Matrix) -> OpenSystem:
        """The initial density matrix (d x d) of a state problem."""
        self._doc.pop("psi0", None)
        self._doc["rho0"] = _json.cmatrix(rho0, "rho0", self.dim)
        return self

    def initial_state(self, psi0: Vector) -> OpenSystem:
        """The initial pure state (length d) of a state problem (default ``|0>``)."""
        self._doc.pop("rho0", None)
        self._doc["psi0"] = _json.cvector(psi0, "psi0", self.dim)
        return self

    def propagate_gate(self) -> OpenSystem:
        """Propagate the whole channel (gate problems: average gate fidelity to target_unitary)."""
        self._doc["gate"] = True
        return self

    def target_state(self, psi: Vector) -> OpenSystem:
        """Fidelity to this pure state (length d) at the end: <psi|rho|psi>."""
        self._doc["target"] = {"state": _json.cvector(psi, "target state", self.dim)}
        return self

    def target_density(self, rho: Matrix) -> OpenSystem:
        """Fidelity to this density matrix (d x d) at the end (Uhlmann's, docs/open_systems.md)."""
        self._doc["target"] = {"density": _json.cmatrix(rho, "target density", self.dim)}
        return self

    def target_unitary(self, u: Matrix) -> OpenSystem:
        """Average gate fidelity of the propagated gate or channel to this unitary (with propagate_gate)."""
        self._doc["target"] = {"unitary": _json.cmatrix(u, "target unitary", self.dim)}
        return self

    def observable(self, o: Matrix | Operator) -> OpenSystem:
        """<O> at every segment boundary (Hermitian: a d x d matrix or an Operator); the
        outputs' expvals [B, n_seg + 1, n_observables], in the order they were added."""
        return self._append("observables", o, "observable")

    def computational_subspace(self, levels: Sequence[int]) -> OpenSystem:
        """Leakage out of these levels: 1 - their population (gate problems: 1 - tr(P E(P)) / d_c)."""
        self._doc["subspace"] = [int(k) for k in levels]
        return self

    @property
    def n_controls(self) -> int:
        """How many control Hamiltonians the system has."""
        return len(self._doc.get("controls", []))

    @property
    def n_jumps(self) -> int:
        """How many jump operators the system has."""
        return len(self._doc.get("jumps", []))

    @property
    def n_drift_terms(self) -> int:
        """How many drift terms the system has."""
        return len(self._doc.get("drift_terms", []))

    def to_json(self, solver: str = "exact", dt: float = 0.0, rtol: float | None = None, atol: float | None = None,
                precision: str = "complex128", num_threads: int = 0, device: str = "cpu", form: str = "automatic",
                exact: str = "automatic") -> dict:
        """The system as a `qfleet eval` problem (without data). dt: rk4/euler step;
        rtol/atol: dopri5/tsit5 tolerances (defaults 1e-8, 1e-10); device: "cpu", "cuda" or
        "automatic" (see docs/architecture.md, "Choosing the device"); form: how the step
        solvers apply an open system's generator, "automatic", "superoperator" or
        "lindblad" (docs/open_systems.md, "Generator form"); exact: how the exact solver
        propagates, "automatic", "propagator" or "action" (docs/open_systems.md, "Solvers")."""
        if solver not in _SOLVERS:
            raise ValueError(f"qfleet: unknown solver {solver!r} (use one of {', '.join(_SOLVERS)})")
        doc = copy.deepcopy(self._doc)
        doc.update({"solver": solver, "precision": precision, "threads": int(num_threads)})
        if device != "cpu":
            doc["device"] = device
        if form != "automatic":
            doc["form"] = form
        if exact != "automatic":
            doc["exact"] = exact
        # Options a solver does not use are left out unless given (the contract rejects them).
        if rtol is not None:
            doc["rtol"] = _json.real(rtol, "rtol")
        if atol is not None:
            doc["atol"] = _json.real(atol, "atol")
        if dt:
            doc["dt"] = _json.real(dt, "dt")
        return doc

    def compile(self, solver: str = "exact", dt: float = 0.0, rtol: float | None = None, atol: float | None = None,
                precision: str = "complex128", num_threads: int = 0, device: str = "cpu", form: str = "automatic",
                exact: str = "automatic") -> Program:
        """Compiles the system once: a torch.classes.qfleet.OpenSystemProgram (fidelities need a target).
        device: "cpu", "cuda" (CPU tensors are staged through the GPU) or "automatic";
        form, exact: see to_json."""
        _lib.load()
        return torch.classes.qfleet.OpenSystemProgram(
            _json.dumps(self.to_json(solver, dt, rtol, atol, precision, num_threads, device, form, exact)))
