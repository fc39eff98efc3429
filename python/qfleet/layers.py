"""torch.nn modules and functional calls over the qfleet operators.

The C++ modules of the same names (qfleet::nn::QuantumLayer, OpenSystemLayer in
adapters/torch/include/qfleet/torch.hpp) take the same arguments, name their
parameter the same ("weight") and initialise it identically from the same seed.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _lib
from ._types import Program
from .circuit import Circuit
from .open_system import OpenSystem


# Under torch.compile these calls run eagerly (a graph break): AOTAutograd does not
# yet differentiate operators that take TorchScript objects (torch's call_torchbind
# path gives outputs without grad_fn), so tracing them into a training graph would
# silently drop gradients. The raw operators (torch.ops.qfleet.*) do trace, with
# fake kernels (_fake.py), for inference graphs.
#
# Eagerly they call the programs' `layer` methods: the same kernels as circuit_forward /
# open_forward, differentiated by the C++ autograd functions (adapters/torch/src/ops.cpp)
# rather than the Python autograd that torch.compile needs (~60 us more per forward +
# backward at B = 64), and a method call costs ~12 us less than an operator call taking
# a program (bench/micro/torch_layer.py). On the cpu the circuit's forward also keeps the final states so that the
# backward runs only the reverse sweep (Program::vjp_saved).
#
# The graph break is made when a compiled caller first gets here, not with a
# @torch.compiler.disable at import: that imports torch._dynamo, ~140k objects which
# every later garbage-collector pass walks (a third of an eager B = 64 layer call's
# time, measured with perf). A compiled caller has loaded it already.
_eager_wrappers: dict = {}


def _eager_only(fn):
    wrapped = _eager_wrappers.get(fn)
    if wrapped is None:
        wrapped = _eager_wrappers[fn] = torch.compiler.disable(fn)
    return wrapped


def _circuit_eager(program, inputs, weights):
    return program.layer(inputs, weights)


def _open_eager(program, amplitudes, drift_coeffs, rates):
    return program.layer(amplitudes, drift_coeffs, rates)


def circuit_forward(program: Program, inputs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Outputs [B, n_outputs] of a compiled circuit; differentiable w.r.t. inputs and weights."""
    if torch.compiler.is_compiling():
        return _eager_only(_circuit_eager)(program, inputs, weights)
    return program.layer(inputs, weights)


def open_fidelity(program: Program, amplitudes: torch.Tensor, rates: torch.Tensor | None = None,
                  drift_coeffs: torch.Tensor | None = None) -> torch.Tensor:
    """Fidelity per task [B] of a compiled open system; differentiable w.r.t. all three."""
    if torch.compiler.is_compiling():
        return _eager_only(_open_eager)(program, amplitudes, drift_coeffs, rates)
    return program.layer(amplitudes, drift_coeffs, rates)


class OpenOutputs(NamedTuple):
    """Every output of an open system (None where the system has none): fidelity [B] (a
    target), leakage [B] (a computational subspace), expvals [B, n_seg + 1, n_observables]
    (observables, at every segment boundary) and final_state (complex: [B, d, d] densities,
    [B, d] pure states, [B, d^2, d^2] superoperators or [B, d, d] unitaries)."""
    fidelity: torch.Tensor | None
    leakage: torch.Tensor | None
    expvals: torch.Tensor | None
    final_state: torch.Tensor


def _open_outputs_eager(program, amplitudes, drift_coeffs, rates, durations, initial):
    return program.outputs(amplitudes, drift_coeffs, rates, durations, initial)


def open_outputs(program: Program, amplitudes: torch.Tensor, rates: torch.Tensor | None = None,
                 drift_coeffs: torch.Tensor | None = None, durations: torch.Tensor | None = None,
                 initial: torch.Tensor | None = None) -> OpenOutputs:
    """Every output of a compiled open system, each differentiable w.r.t. every tensor argument:
    amplitudes [B, n_seg, n_ctrl], rates [B, n_jumps], drift_coeffs [B, n_drift_terms],
    durations [B, n_seg] (segment lengths > 0; default the compiled grid) -- each also shared,
    without B -- and initial, per task: [B, d] pure states (closed systems) or [B, d, d]
    densities, in the program's complex dtype. One engine pass forward; one reverse sweep with
    every output's cotangent backward, so any loss of the outputs costs one backward()."""
    if torch.compiler.is_compiling():
        out = _eager_only(_open_outputs_eager)(program, amplitudes, drift_coeffs, rates, durations, initial)
    else:
        out = program.outputs(amplitudes, drift_coeffs, rates, durations, initial)
    return OpenOutputs(*out)


def open_final_state(program: Program, amplitudes: torch.Tensor, rates: torch.Tensor | None = None,
                     drift_coeffs: torch.Tensor | None = None) -> torch.Tensor:
    """Final states per task (complex): [B, d, d] densities, [B, d] pure states, [B, d^2, d^2]
    superoperators (propagate_gate) or [B, d, d] unitaries (closed gate problems). Not differentiable
    (open_outputs differentiates them)."""
    if torch.compiler.is_compiling():
        return _eager_only(_open_final_state_eager)(program, amplitudes, drift_coeffs, rates)
    return torch.ops.qfleet.open_final_state(program, amplitudes, drift_coeffs, rates)


def _open_final_state_eager(program, amplitudes, drift_coeffs, rates):
    return torch.ops.qfleet.open_final_state(program, amplitudes, drift_coeffs, rates)


def _dtype(precision):
    if precision == "complex128":
        return torch.float64
    if precision == "complex64":
        return torch.float32
    raise ValueError(f"qfleet: precision must be 'complex64' or 'complex128', got {precision!r}")


_FULL = (torch.float32, torch.float64)


def _other_full(t, real):
    """Whether t is float32 or float64 but not the layer's real dtype. Reduced precision
    (bfloat16, float16) is autocast's to bring in (docs/torch.md): outside it, an error."""
    return isinstance(t, torch.Tensor) and t.dtype in _FULL and t.dtype != real


def _in_precision(t, real):
    """t cast to the layer's real dtype where _other_full (gradients flow through the
    cast); anything else as it is (the operator then names what is wrong)."""
    return t.to(real) if _other_full(t, real) else t


def _like(out, t, real):
    """The output in the dtype of the caller's tensor t where _other_full."""
    return out.to(t.dtype) if _other_full(t, real) else out


class QuantumLayer(torch.nn.Module):
    """A circuit as a layer: inputs [B, n_inputs] -> outputs [B, n_outputs].

    The circuit's weights are the parameter `weight` [n_weights], initialised
    uniform in [0, 2 pi) from `seed` (PennyLane TorchLayer's range). For CUDA
    tensors compile with device="cuda" (the program's copy goes to the current
    CUDA device) and move the layer there with .to("cuda").

    The layer computes in its precision (complex128: float64 inputs and outputs,
    complex64: float32). float32 inputs into a complex128 layer (torch's default dtype)
    and float64 into a complex64 one are cast to it, and the outputs come back in the
    inputs' dtype, so the layer sits in a float32 network as it is; bfloat16 and float16
    come in through autocast only. The operators (circuit_forward) take only their
    precision's dtype.
    """

    def __init__(self, circuit: Circuit, precision: str = "complex128", num_threads: int = 0, seed: int = 0,
                 device: str = "cpu") -> None:
        super().__init__()
        dtype = _dtype(precision)
        self._real = dtype
        self.program = circuit.compile(precision, num_threads, device)
        gen = torch.Generator().manual_seed(int(seed))
        self.weight = torch.nn.Parameter(torch.rand(self.program.n_weights(), generator=gen, dtype=dtype)
                                         * (2 * math.pi))

    @property
    def n_outputs(self) -> int:
        """The width of the layer's output (the circuit's expectation values, then probabilities)."""
        return self.program.n_outputs()

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs [B, n_outputs] for inputs [B, n_inputs], differentiable w.r.t. both and the weight."""
        return _like(circuit_forward(self.program, _in_precision(inputs, self._real), self.weight), inputs, self._real)

    def extra_repr(self) -> str:
        """The program's sizes, shown in the module's repr."""
        p = self.program
        return (f"qubits={p.n_qubits()}, inputs={p.n_inputs()}, weights={p.n_weights()}, outputs={p.n_outputs()}, "
                f"precision={p.precision()}")


class OpenSystemLayer(torch.nn.Module):
    """Pulses and task parameters -> fidelities: forward(amplitudes, rates=None, drift_coeffs=None).

    amplitudes [B, n_seg, n_ctrl] (or shared [n_seg, n_ctrl]), rates [B, n_jumps] (or [n_jumps]),
    drift_coeffs [B, n_drift_terms] (or [n_drift_terms]) -> fidelity [B].
    """

    def __init__(self, system: OpenSystem, solver: str = "exact", dt: float = 0.0, rtol: float | None = None,
                 atol: float | None = None, precision: str = "complex128", num_threads: int = 0, device: str = "cpu",
                 form: str = "automatic", exact: str = "automatic") -> None:
        super().__init__()
        if "target" not in system._doc:
            raise ValueError("qfleet.OpenSystemLayer: the system needs a target (target_state, target_density or "
                             "target_unitary): the layer returns fidelities; qfleet.open_outputs returns the others")
        self._real = _dtype(precision)
        self._describe = f"solver={solver}, precision={precision}"
        self.program = system.compile(solver, dt, rtol, atol, precision, num_threads, device, form, exact)

    def forward(self, amplitudes: torch.Tensor, rates: torch.Tensor | None = None,
                drift_coeffs: torch.Tensor | None = None) -> torch.Tensor:
        """As QuantumLayer: floating arguments of another dtype are cast to the layer's,
        and the fidelity comes back in the amplitudes' dtype."""
        r = self._real
        f = open_fidelity(self.program, _in_precision(amplitudes, r), _in_precision(rates, r),
                          _in_precision(drift_coeffs, r))
        return _like(f, amplitudes, r)

    def extra_repr(self) -> str:
        """The program's sizes, shown in the module's repr."""
        p = self.program
        return (f"dim={p.dim()}, segments={p.n_segments()}, controls={p.n_controls()}, jumps={p.n_jumps()}, "
                f"drift_terms={p.n_drift_terms()}, {self._describe}")


_lib.load()
