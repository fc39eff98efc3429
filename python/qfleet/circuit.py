"""The circuit builder, with the C++ builder's names (include/qfleet/circuit.hpp).

It records the circuit in the JSON problem format of `qfleet eval`
(docs/cli.md); the C++ library validates it when the circuit is compiled, so
errors have the same messages as the command-line tool.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import _json, _lib
from ._types import Matrix, Program, RealMatrix


@dataclass(frozen=True)
class Param:
    """A gate parameter read from an input column or a weight, times `scale`."""
    kind: str  # "input" or "weight"
    index: int
    scale: float = 1.0

    def to_json(self) -> dict[str, int | float]:
        """The parameter as the JSON problem writes it: {"input" or "weight": index[, "scale": s]}."""
        d: dict[str, int | float] = {self.kind: int(self.index)}
        if self.scale != 1.0:
            d["scale"] = float(self.scale)
        return d


def input(i: int, scale: float = 1.0) -> Param:  # noqa: A001 - the C++ name (Param::input)
    """Parameter = scale * inputs[b, i]."""
    return Param("input", int(i), _json.real(float(scale), "input scale"))


def weight(j: int, scale: float = 1.0) -> Param:
    """Parameter = scale * weights[j] (or weights[b, j] for per-sample weights)."""
    return Param("weight", int(j), _json.real(float(scale), "weight scale"))


def _param(p, where):
    if isinstance(p, Param):
        return p.to_json()
    return _json.real(p, where)


class Circuit:
    """A parameterized circuit on `n_qubits` qubits (wire 0 = most significant bit)."""

    def __init__(self, n_qubits: int) -> None:
        if not isinstance(n_qubits, int) or isinstance(n_qubits, bool):
            raise TypeError(f"qfleet: n_qubits must be an int, got {type(n_qubits).__name__}")
        self._doc: dict[str, Any] = {"kind": "circuit", "qubits": n_qubits, "ops": [], "observables": []}
        self._probs: list[list[int]] = []

    # -- gates and templates -------------------------------------------------------
    def add(self, gate: str, wires: Sequence[int], params: Sequence[float | Param] = ()) -> Circuit:
        """A catalogue gate (`qfleet gates`), e.g. add("CRX", [0, 2], [qfleet.input(1, 0.5)])."""
        op = {"gate": str(gate), "wires": [int(w) for w in wires]}
        if params:
            op["params"] = [_param(p, f"{gate} parameter") for p in params]
        self._doc["ops"].append(op)
        return self

    def qubit_unitary(self, wires: Sequence[int], matrix: Matrix) -> Circuit:
        """A fixed unitary (2^k x 2^k, k = len(wires)) on `wires`, wires[0] its most significant qubit."""
        self._doc["ops"].append({"gate": "QubitUnitary", "wires": [int(w) for w in wires],
                                 "matrix": _json.cmatrix(matrix, "QubitUnitary matrix")})
        return self

    def angle_embedding(self, wires: Sequence[int], rotation: str = "X", first_input: int = 0) -> Circuit:
        """PennyLane's AngleEmbedding: input first_input + i as the angle of an R`rotation` on wires[i]."""
        self._doc["ops"].append({"template": "AngleEmbedding", "wires": [int(w) for w in wires],
                                 "rotation": str(rotation), "first_input": int(first_input)})
        return self

    def amplitude_embedding(self, wires: Sequence[int], n_features: int | None = None, first_input: int = 0,
                            normalize: bool = False, pad_with: float | None = None) -> Circuit:
        """PennyLane's AmplitudeEmbedding: n_features inputs (from first_input) as the state's
        amplitudes on `wires`, optionally normalised or padded with `pad_with`."""
        op = {"template": "AmplitudeEmbedding", "wires": [int(w) for w in wires],
              "first_input": int(first_input), "normalize": bool(normalize)}
        if n_features is not None:
            op["n_features"] = int(n_features)
        if pad_with is not None:
            op["pad_with"] = _json.real(pad_with, "pad_with")
        self._doc["ops"].append(op)
        return self

    def basic_entangler_layers(self, wires: Sequence[int], layers: int, rotation: str = "X",
                               first_weight: int = 0) -> Circuit:
        """PennyLane's BasicEntanglerLayers: per layer an R`rotation` per wire (weights from
        first_weight) and a ring of CNOTs."""
        self._doc["ops"].append({"template": "BasicEntanglerLayers", "wires": [int(w) for w in wires],
                                 "layers": int(layers), "rotation": str(rotation),
                                 "first_weight": int(first_weight)})
        return self

    def strongly_entangling_layers(self, wires: Sequence[int], layers: int, first_weight: int = 0,
                                   ranges: Sequence[int] | None = None, imprimitive: str = "CNOT") -> Circuit:
        """PennyLane's StronglyEntanglingLayers: per layer a Rot per wire (3 weights each, from
        first_weight) and `imprimitive` gates at the given ranges."""
        op = {"template": "StronglyEntanglingLayers", "wires": [int(w) for w in wires],
              "layers": int(layers), "first_weight": int(first_weight), "imprimitive": str(imprimitive)}
        if ranges is not None:
            op["ranges"] = [int(r) for r in ranges]
        self._doc["ops"].append(op)
        return self

    # -- noise (docs/noisy.md): a noisy circuit is simulated as density matrices ------
    def channel(self, name: str, wires: Sequence[int], params: Sequence[float | Param] = ()) -> Circuit:
        """A noise channel of the catalogue (docs/noisy.md), e.g. channel("Depolarizing", [0], [0.01]);
        parameters may be numbers, qfleet.input(i) or qfleet.weight(j) like gate parameters."""
        op = {"channel": str(name), "wires": [int(w) for w in wires]}
        if params:
            op["params"] = [_param(p, f"{name} parameter") for p in params]
        self._doc["ops"].append(op)
        return self

    def kraus(self, wires: Sequence[int], operators: Sequence[Matrix]) -> Circuit:
        """A general channel rho -> sum_k K_k rho K_k^dag on 1 or 2 wires (checked trace preserving)."""
        ops = [_json.cmatrix(k, f"Kraus operator {i}") for i, k in enumerate(operators)]
        self._doc["ops"].append({"channel": "Kraus", "wires": [int(w) for w in wires], "kraus": ops})
        return self

    def readout_error(self, wire: int, p1_given_0: float, p0_given_1: float) -> Circuit:
        """Readout (assignment) error of `wire`: 0 read as 1 with p1_given_0, 1 read as 0 with p0_given_1.
        It applies to expectation values, probabilities and samples, not to density matrices."""
        self._doc.setdefault("readout_errors", []).append(
            {"wire": int(wire), "p1_given_0": _json.real(p1_given_0, "p1_given_0"),
             "p0_given_1": _json.real(p0_given_1, "p0_given_1")})
        return self

    def readout_matrix(self, wire: int, matrix: RealMatrix) -> Circuit:
        """Readout error as a column-stochastic 2 x 2 matrix A[i][j] = P(read i | true j)."""
        m = [[_json.real(float(v), "readout matrix entry") for v in row] for row in matrix]
        self._doc.setdefault("readout_errors", []).append({"wire": int(wire), "matrix": m})
        return self

    def noise_model(self, model: dict, lower_to_device: bool = False) -> Circuit:
        """Inserts a device noise model's channels and readout errors when compiled (a dict in
        the format of docs/noisy.md, e.g. from qfleet.noise.from_fake_backend("manila")).

        lower_to_device=True first runs the circuit on the device as a transpiler would:
        connected physical qubits, SWAPs along the coupling map, every gate rewritten into the
        device's basis (include/qfleet/device_lowering.hpp); the outputs stay in the
        circuit's own wire order."""
        if not isinstance(model, dict):
            raise TypeError(f"qfleet: noise_model must be a dict (docs/noisy.md), got {type(model).__name__}")
        if not isinstance(lower_to_device, bool):
            raise TypeError(f"qfleet: lower_to_device must be True or False, got {lower_to_device!r}")
        self._doc["noise_model"] = copy.deepcopy(model)
        if lower_to_device:
            self._doc["lower_to_device"] = True
        else:
            self._doc.pop("lower_to_device", None)
        return self

    def purity(self) -> Circuit:
        """Tr(rho^2) of the register as an output (after expectation values and probabilities)."""
        self._doc["purity"] = True
        return self

    # -- measurements ----------------------------------------------------------------
    def expval(self, observable: str | Sequence[tuple[float, str]]) -> Circuit:
        """<O>: a Pauli word ("X0 Z2"), or a list of (coeff, word) terms."""
        if isinstance(observable, str):
            terms = [[1.0, observable]]
        else:
            terms = [[_json.real(c, "observable coefficient"), str(w)] for c, w in observable]
        self._doc["observables"].append(terms)
        return self

    def probs(self, wires: Sequence[int]) -> Circuit:
        """Probabilities of the basis outcomes of `wires` (first wire most significant)."""
        self._probs.append([int(w) for w in wires])
        return self

    # -- the description ------------------------------------------------------------
    def to_json(self, precision: str = "complex128", num_threads: int = 0, device: str = "cpu",
                simulator: str = "automatic") -> dict:
        """The circuit as a `qfleet eval` problem (without data). Outputs are the
        expectation values in order, then the probabilities in order, then the purity."""
        doc = copy.deepcopy(self._doc)
        if simulator != "automatic":
            doc["simulator"] = simulator
        if self._probs:
            doc["probs"] = [list(p) for p in self._probs]
        doc["precision"] = precision
        doc["threads"] = int(num_threads)
        if device != "cpu":
            doc["device"] = device
        return doc

    def compile(self, precision: str = "complex128", num_threads: int = 0, device: str = "cpu",
                simulator: str = "automatic") -> Program:
        """Compiles the circuit once: a torch.classes.qfleet.CircuitProgram.

        simulator: "automatic" (density matrices when the circuit has a channel, a readout
        error, a noise model or a purity output; else state vectors), "statevector" or
        "density_matrix". Both run on the cpu and, with device "cuda", on the GPU
        (docs/noisy.md).

        device: "cpu"; "cuda" (the plan is uploaded to the GPU and every call runs
        there, staging CPU tensors; an error where no CUDA device is visible); or
        "automatic" (the GPU when one is visible and the cost model expects it to be
        faster for the call's batch, else the CPU)."""
        _lib.load()
        return torch.classes.qfleet.CircuitProgram(_json.dumps(self.to_json(precision, num_threads, device, simulator)))
