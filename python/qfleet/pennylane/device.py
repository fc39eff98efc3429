"""PennyLane devices `qfleet.qubit` (state vectors) and `qfleet.mixed` (density matrices)
on PennyLane's device API (pennylane.devices.Device), registered through the
`pennylane.plugins` entry point of the qfleet package (docs/pennylane.md).

    dev = qml.device("qfleet.qubit", wires=4)

A batch of tapes runs as one engine call per tape structure (same gates on the same
wires, same measurements; parameters differ), and a broadcast tape is one call with a
row per broadcast element. Compiled programs are cached by structure. Derivatives are
the engine's adjoint method (docs/circuits.md#gradients), for density matrices too.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pennylane as qml
from pennylane.devices import Device, ExecutionConfig
from pennylane.math import Interface
from pennylane.devices.modifiers import simulator_tracking, single_tape_support
from pennylane.devices.preprocess import (decompose, no_sampling, validate_adjoint_trainable_params,
                                          validate_device_wires, validate_measurements)
from pennylane.exceptions import DeviceError
from pennylane.measurements import SampleMeasurement, StateMeasurement
from pennylane.tape import QuantumScript, QuantumScriptOrBatch
from pennylane.transforms import defer_measurements
from pennylane.transforms.core import transform
from pennylane.typing import ResultBatch
from pennylane.wires import WiresLike

from . import _execute
from ._translate import (CHANNELS, GATES, NO_OPS, diagonal, observable_key, pauli_sentence, pauli_terms, plan_tape, squared,
                         structure_key, unitary_supported)

_HERE = Path(__file__).parent


def _null(results):
    return results[0]


@transform
def _diagonalize_for_shots(tape):
    """With shots, measure qubit-wise commuting groups in their eigenbasis: split the
    tape (split_non_commuting) and append each group's diagonalizing gates."""
    if not tape.shots or all(mp.obs is None for mp in tape.measurements):
        return (tape,), _null
    tapes, combine = qml.transforms.split_non_commuting(tape, grouping_strategy="qwc")
    out, fns = [], []
    for t in tapes:
        ts, f = qml.transforms.diagonalize_measurements(t)
        if len(ts) == 1 and any(mp.obs is not None and mp.diagonalizing_gates() for mp in ts[0].measurements):
            # Hermitian, Projector, ...: diagonalize_measurements leaves them; measure each in its own eigenbasis
            ts, f = _one_tape_per_measurement(ts[0], f)
        out.extend(ts)
        fns.append((f, len(ts)))

    def post(results):
        parts, k = [], 0
        for f, n in fns:
            parts.append(f(results[k:k + n]))
            k += n
        return combine(parts)

    return out, post


def _one_tape_per_measurement(tape, then):
    tapes = [qml.tape.QuantumScript(tape.operations + mp.diagonalizing_gates(), [mp], shots=tape.shots)
             for mp in tape.measurements]
    if len(tapes) == 1:
        return tapes, then

    def post(results):
        if tape.shots.has_partitioned_shots:
            joined = tuple(tuple(r[b] for r in results) for b in range(len(results[0])))
        else:
            joined = tuple(results)
        return then((joined,))

    return tapes, post


@transform
def _matrix_fallback(tape, supported):
    """Operations with a matrix but no decomposition (BlockEncode, DoubleExcitationPlus, ...)
    become QubitUnitary, which the engine runs (1-2 wires) or PennyLane decomposes."""
    if all(supported(op) or op.has_decomposition or not op.has_matrix for op in tape.operations):
        return (tape,), _null
    ops = [op if supported(op) or op.has_decomposition or not op.has_matrix
           else qml.QubitUnitary(qml.matrix(op), wires=op.wires) for op in tape.operations]
    return (tape.copy(operations=ops),), _null


@transform
def _adjoint_measurements(tape):
    """The adjoint method differentiates expectation values, variances and probabilities
    whose observables the engine takes (Pauli sums, matrices on at most 4 wires, diagonal
    matrices on at most 8)."""
    index = {w: w for w in tape.wires}
    for mp in tape.measurements:
        ps = pauli_sentence(mp.obs) if mp.obs is not None and mp.mv is None else None
        moments = (qml.measurements.ExpectationMP, qml.measurements.VarianceMP)
        ok = mp.mv is None and (
            (isinstance(mp, qml.measurements.ExpectationMP) and ps is not None
             and pauli_terms(ps, index) is not None)
            or (isinstance(mp, qml.measurements.VarianceMP) and ps is not None
                and pauli_terms(squared(ps), index) is not None)
            or (isinstance(mp, moments) and ps is None and mp.obs is not None and diagonal(mp.obs) is not None)
            or (type(mp) is qml.measurements.ProbabilityMP and mp.obs is None and mp.eigvals() is None))
        if not ok:
            raise DeviceError(f"qfleet: adjoint differentiation does not support the measurement {mp}; "
                              "use diff_method='parameter-shift'")
    return (tape,), _null


@transform
def _expand_trainable_broadcast(tape):
    """PennyLane's derivative formats (Jacobians, VJPs) hold one scalar per trainable
    parameter and tape, so a tape whose trainable parameter is broadcast is split into
    its rows (broadcast_expand, as default.qubit's adjoint does); the rows share one
    structure and still run as one engine call. Broadcast constants (a TorchLayer's
    inputs) stay one tape: trainable_params lists every parameter once decompose has
    rewritten the tape, so the parameters' own requires_grad decides."""
    if not any(len(getattr(p, "shape", ())) > 0 and qml.math.requires_grad(p)
               for op in tape.operations if op.name in GATES or op.name in CHANNELS or op.name in NO_OPS
               for p in op.data):
        return (tape,), _null  # (scalar parameters of the engine's gates: a shape means broadcast;
    return qml.transforms.broadcast_expand(tape)  # shape, not tape.batch_size: this runs on every call)


def _engine_device(device):
    """The engine's device for a device option: "cpu", "cuda" (the engine's CUDA backend: an
    error where qfleet sees no CUDA device) or "automatic" (cuda where one is visible)."""
    if device == "auto":
        raise ValueError("qfleet: device 'auto' is spelled 'automatic'")
    if device not in ("cpu", "cuda", "automatic"):
        raise ValueError(f"qfleet: device must be 'cpu', 'cuda' or 'automatic', got {device!r}")
    if device == "cuda":
        from .. import cuda_device_count
        if cuda_device_count() == 0:
            raise ValueError("qfleet: device='cuda', but qfleet sees no CUDA device (a machine without a GPU, "
                             "or a build without the CUDA backend); use device='cpu' or 'automatic'")
    return device


# Plans (with their compiled programs, immutable) shared by every device of the same settings,
# least recently used out.
_SHARED_PLANS: OrderedDict = OrderedDict()
# supports_derivatives' answers, by device kind and wires and the circuit's key.
_SHARED_SUPPORT: dict = {}


def _remember(cache, key, value, size):
    cache[key] = value
    cache.move_to_end(key)
    if len(cache) > size:
        cache.popitem(last=False)


class _QfleetDevice(Device):
    """What qfleet.qubit and qfleet.mixed share; subclasses set `_mixed`."""

    _mixed = False
    _device_options = ()
    _cache_size = 256

    def __init__(self, wires: WiresLike | None = None, shots: int | Sequence[int] | None = None,
                 seed: int | Literal["global"] | None = "global", device: str = "cpu") -> None:
        super().__init__(wires=wires, shots=shots)
        self._engine_device = _engine_device(device)
        if isinstance(seed, str):
            if seed != "global":
                raise ValueError(f"qfleet: seed must be an int, None or 'global', got {seed!r}")
            seed = int(np.random.randint(0, 2**31 - 1))
        self._rng = np.random.default_rng(seed)
        self._plans: OrderedDict = OrderedDict()
        self._pipelines: dict = {}

    # -- what the engine runs natively ---------------------------------------------
    def _supports_op(self, op) -> bool:
        name = op.name
        if name in GATES or name in NO_OPS:
            return True
        if name == "QubitUnitary":
            return unitary_supported(op)
        if self._mixed and len(op.wires) <= 2 and op.batch_size is None:
            return name in CHANNELS or isinstance(op, qml.operation.Channel)
        return False

    def _supports_or_matrix(self, op) -> bool:
        return self._supports_op(op) or (op.has_matrix and not op.has_decomposition)

    def _adjoint_op(self, op) -> bool:
        """Operations whose trainable parameters the engine differentiates."""
        if not self._supports_op(op):
            return False
        if op.name in GATES or op.name in NO_OPS or op.name in CHANNELS:
            return True
        return not any(qml.math.requires_grad(d) for d in op.data)

    def _settings(self):
        """What besides a tape's structure its plan depends on: the device's kind and options."""
        return self._mixed, getattr(self, "_readout_prob", None), self._engine_device

    def _plan(self, tape, wire_order, analytic):
        """The tape's plan, found by its structure_key (cheaper than planning the tape) in the
        device's cache, then in the cache devices of the same settings share (a demo that makes
        a new device for every circuit compiles each structure once), or planned and kept in
        both; a tape structure_key cannot key is planned on every call."""
        key = structure_key(tape, wire_order, analytic)
        if key is None:
            return plan_tape(tape, wire_order, mixed=self._mixed, analytic=analytic,
                             readout_prob=getattr(self, "_readout_prob", None))
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        shared_key = (self._settings(), key)
        plan = _SHARED_PLANS.get(shared_key)
        if plan is None:
            plan = plan_tape(tape, wire_order, mixed=self._mixed, analytic=analytic,
                             readout_prob=getattr(self, "_readout_prob", None))
            if self._engine_device != "cpu":
                plan.doc["device"] = self._engine_device  # (compiled when first run: Plan.compile)
        _remember(_SHARED_PLANS, shared_key, plan, self._cache_size)
        _remember(self._plans, key, plan, self._cache_size)
        return plan

    # -- configuration and preprocessing ---------------------------------------------
    def setup_execution_config(self, config: ExecutionConfig | None = None,
                               circuit: QuantumScript | None = None) -> ExecutionConfig:
        config = config or ExecutionConfig()
        for option in config.device_options:
            if option not in self._device_options:
                raise DeviceError(f"qfleet: device option {option} is not an option of {self.name}")
        updated: dict[str, object] = {}
        method = config.gradient_method
        if method == "best":
            method = "adjoint"
            updated["gradient_method"] = method
        if config.use_device_gradient is None:
            updated["use_device_gradient"] = method == "adjoint"
        if config.use_device_jacobian_product is None:
            updated["use_device_jacobian_product"] = method == "adjoint"
        if config.grad_on_execution is None:
            updated["grad_on_execution"] = False
        mcm = config.mcm_config
        if mcm.mcm_method not in (None, "deferred"):
            raise DeviceError(f"qfleet: mid-circuit measurements are run with mcm_method='deferred' only, "
                              f"got '{mcm.mcm_method}'")  # a StrEnum: its repr is <MCM_METHOD.ONE_SHOT: ...>
        updated["mcm_config"] = replace(mcm, mcm_method="deferred")
        if config.interface == Interface.TORCH:
            # The device reads torch parameters itself (one detach and copy each), instead of
            # PennyLane rebuilding every operation of every tape with NumPy data before the
            # forward call (convert_to_numpy_parameters: about 40% of a TorchLayer step).
            updated["convert_to_numpy"] = False
        return replace(config, **updated)

    def preprocess_transforms(self, execution_config: ExecutionConfig | None = None) -> qml.CompilePipeline:
        """The device's transforms, built once per gradient method (PennyLane asks on every
        QNode call, and building them was about a tenth of a small circuit's call); each
        caller gets its own copy, which it may extend."""
        config = execution_config or ExecutionConfig()
        method = config.gradient_method
        if not isinstance(method, (str, type(None))):  # a gradient transform: built for it alone
            return self._build_preprocess(config)
        if method not in self._pipelines:
            self._pipelines[method] = self._build_preprocess(config)
        return qml.CompilePipeline(self._pipelines[method])

    def _build_preprocess(self, config):
        pipeline = qml.CompilePipeline()
        pipeline.add_transform(defer_measurements, allow_postselect=False)
        pipeline.add_transform(_diagonalize_for_shots)
        # Decompose to the catalogue, stopping also at operations with a matrix but no
        # decomposition (BlockEncode inside QSVT, DoubleExcitationPlus, ...); those become
        # QubitUnitary, which a second pass leaves alone (1-2 wires) or decomposes.
        pipeline.add_transform(decompose, stopping_condition=self._supports_or_matrix, device_wires=self.wires,
                               target_gates=self.capabilities.gate_set(), name=self.name,
                               skip_initial_state_prep=False)
        pipeline.add_transform(_matrix_fallback, self._supports_op)
        pipeline.add_transform(decompose, stopping_condition=self._supports_op, device_wires=self.wires,
                               target_gates=self.capabilities.gate_set(), name=self.name,
                               skip_initial_state_prep=False)
        pipeline.add_transform(validate_device_wires, self.wires, name=self.name)
        pipeline.add_transform(validate_measurements,
                               analytic_measurements=lambda m: isinstance(m, StateMeasurement),
                               sample_measurements=lambda m: isinstance(m, SampleMeasurement), name=self.name)
        if config.gradient_method == "adjoint":
            self._add_adjoint_transforms(pipeline)
        return pipeline

    def _add_adjoint_transforms(self, pipeline):
        name = f"adjoint + {self.name}"
        pipeline.add_transform(no_sampling, name=name)
        pipeline.add_transform(decompose, stopping_condition=self._adjoint_op, device_wires=self.wires,
                               target_gates=self.capabilities.gate_set(), name=name, skip_initial_state_prep=False)
        pipeline.add_transform(_adjoint_measurements)
        pipeline.add_transform(_expand_trainable_broadcast)
        pipeline.add_transform(validate_adjoint_trainable_params)

    # -- derivatives -----------------------------------------------------------------------
    def supports_derivatives(self, execution_config: ExecutionConfig | None = None,
                             circuit: QuantumScript | None = None) -> bool:
        if execution_config is not None and execution_config.gradient_method not in ("adjoint", "best"):
            return False
        if circuit is None:
            return True
        # PennyLane asks on every QNode call; the answer depends on the circuit's structure,
        # its trainable parameters and whether it has shots, not on parameter values.
        key = (tuple((op.name, tuple(op.wires), op.num_params) for op in circuit.operations),
               tuple((type(mp).__name__, tuple(mp.wires), observable_key(mp.obs)) for mp in circuit.measurements),
               tuple(circuit.trainable_params), bool(circuit.shots))
        key = (self._mixed, None if self.wires is None else tuple(self.wires), key)
        known = _SHARED_SUPPORT.get(key)
        if known is not None:
            return known
        pipeline = qml.CompilePipeline()
        pipeline.add_transform(validate_device_wires, self.wires, name=self.name)
        self._add_adjoint_transforms(pipeline)
        try:
            pipeline((circuit,))
            ok = True
        except (DeviceError, qml.exceptions.DecompositionUndefinedError, AttributeError):
            ok = False
        if len(_SHARED_SUPPORT) > 16 * self._cache_size:
            _SHARED_SUPPORT.clear()
        _SHARED_SUPPORT[key] = ok
        return ok

    def supports_vjp(self, execution_config: ExecutionConfig | None = None,
                     circuit: QuantumScript | None = None) -> bool:
        return self.supports_derivatives(execution_config, circuit)

    # -- execution -----------------------------------------------------------------------
    def execute(self, circuits: QuantumScriptOrBatch,
                execution_config: ExecutionConfig | None = None) -> ResultBatch:
        """Results of the tapes (PennyLane's Device.execute): each tape one batched engine call."""
        return _execute.execute(self, circuits, self._mixed)

    def compute_derivatives(self, circuits: QuantumScriptOrBatch,
                            execution_config: ExecutionConfig | None = None) -> tuple:
        """Jacobians of the tapes by the engine's adjoint (PennyLane's Device.compute_derivatives)."""
        return _execute.jacobians(self, circuits, self._mixed, with_results=False)

    def execute_and_compute_derivatives(self, circuits: QuantumScriptOrBatch,
                                        execution_config: ExecutionConfig | None = None) -> tuple[ResultBatch, tuple]:
        """Results and Jacobians in one engine pass per tape."""
        return _execute.jacobians(self, circuits, self._mixed, with_results=True)

    def compute_vjp(self, circuits: QuantumScriptOrBatch, cotangents: Sequence,
                    execution_config: ExecutionConfig | None = None) -> tuple:
        """Vector-Jacobian products of the tapes with `cotangents`, one reverse sweep per tape."""
        return _execute.vjps(self, circuits, cotangents)

    def execute_and_compute_vjp(self, circuits: QuantumScriptOrBatch, cotangents: Sequence,
                                execution_config: ExecutionConfig | None = None) -> tuple[ResultBatch, tuple]:
        """Results and vector-Jacobian products of the tapes."""
        return self.execute(circuits, execution_config), self.compute_vjp(circuits, cotangents, execution_config)


@simulator_tracking
@single_tape_support
class QubitDevice(_QfleetDevice):
    """qfleet.qubit: state-vector simulation on qfleet's engine, adjoint derivatives.

    Args:
        wires: number of wires or their labels (None: the circuit's wires).
        shots: deprecated by PennyLane on devices; use qml.set_shots on the QNode.
        seed: int, None (from the OS) or "global" (drawn from numpy's global generator);
            seeds the sampling of finite-shot executions.
        device: where the engine runs: "cpu" (default), "cuda" (its CUDA backend; PennyLane
            hands the device NumPy parameters, so each call copies them to the GPU and its
            results back) or "automatic" (cuda where qfleet sees a GPU, else cpu).
    """

    name = "qfleet.qubit"
    config_filepath = _HERE / "qfleet_qubit.toml"


@simulator_tracking
@single_tape_support
class MixedDevice(_QfleetDevice):
    """qfleet.mixed: density-matrix simulation with noise channels and readout error,
    adjoint derivatives of the mixed-state engine (docs/noisy.md).

    Args:
        wires, shots, seed, device: as qfleet.qubit.
        readout_prob: probability that a measured bit is flipped (applied to
            expectation values, probabilities and samples, as default.mixed's).
    """

    name = "qfleet.mixed"
    config_filepath = _HERE / "qfleet_mixed.toml"
    _mixed = True

    def __init__(self, wires: WiresLike | None = None, shots: int | Sequence[int] | None = None,
                 seed: int | Literal["global"] | None = "global", readout_prob: float | None = None,
                 device: str = "cpu") -> None:
        super().__init__(wires=wires, shots=shots, seed=seed, device=device)
        if readout_prob is not None:
            p = float(readout_prob)
            if not 0.0 <= p <= 1.0 or np.isnan(p):
                raise ValueError(f"qfleet: readout_prob must be in [0, 1], got {readout_prob!r}")
        self._readout_prob = readout_prob
