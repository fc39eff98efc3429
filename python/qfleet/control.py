"""Optimal control of open and closed systems (docs/control.md).

One call optimises a pulse for a `qfleet.OpenSystem`::

    res = control.optimize(system, x0, bounds=(-1, 1), target=1e-6)

- one system (the default), a **robust** pulse shared by an `Ensemble` of systems (rates,
  drift coefficients such as detunings, weights), or `Tasks`: B independent problems each
  with its own pulse, optimised together: each task has its own optimiser state, line search
  and convergence, and the running tasks are evaluated in one batched engine call;
- methods: "lbfgsb" (L-BFGS-B 3.0, the reference code, with exact box bounds), "adam"
  (projected onto the bounds), "torch-lbfgs" (torch.optim.LBFGS with a strong-Wolfe line
  search; one problem, no bounds). The first two run in C++ (qfleet::control, the same
  optimiser C++ programs call), driven from here by reverse communication;
- pulse shapes: `PiecewiseConstant`, `Fourier` (CRAB's randomised frequencies with
  crab=True), `Gaussian`, `Drag`, or `Shape(fn, param_shape)` around any torch function;
- costs: 1 - fidelity by default, plus leakage, expectation-value targets and penalties
  (smoothness, power, fixed ends), or any torch expression of the outputs (`cost=`), and the
  duration itself as a variable (`Duration`: time-optimal control).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import _lib
from .layers import open_fidelity, open_outputs
from .open_system import OpenSystem

_METHODS = ("lbfgsb", "adam", "torch-lbfgs")


def _err(msg: str) -> ValueError:
    return ValueError(f"qfleet.control: {msg}")


# --------------------------------------------------------------------------- pulse shapes


class PiecewiseConstant:
    """One amplitude per segment and control: parameters [n_seg, n_ctrl]."""

    def param_shape(self, n_seg: int, n_ctrl: int) -> tuple[int, ...]:
        """The shape of the parameters for n_seg segments and n_ctrl controls."""
        return (n_seg, n_ctrl)

    def __call__(self, params: torch.Tensor, n_seg: int) -> torch.Tensor:
        return params


class Fourier:
    """u_c(s) = sum_k a_kc cos(2 pi f_k s) + b_kc sin(2 pi f_k s), s in (0, 1) the time in units
    of the duration: parameters [2 n_terms, n_ctrl] (cosines, then sines). Frequencies
    f_k = k + 1 cycles per duration, or CRAB's randomised k + 1 + r_k, r_k uniform in
    [-1/2, 1/2) from `seed` (Doria, Calarco, Montangero, PRL 106, 190501 (2011))."""

    def __init__(self, n_terms: int, crab: bool = False, seed: int = 0,
                 frequencies: Sequence[float] | None = None) -> None:
        if frequencies is not None:
            f = torch.as_tensor(frequencies, dtype=torch.float64).flatten()
        else:
            if not isinstance(n_terms, int) or n_terms < 1:
                raise _err(f"Fourier needs n_terms >= 1, got {n_terms!r}")
            f = torch.arange(1, n_terms + 1, dtype=torch.float64)
            if crab:
                g = torch.Generator().manual_seed(int(seed))
                f = f + torch.rand(n_terms, generator=g, dtype=torch.float64) - 0.5
        self.frequencies = f

    def param_shape(self, n_seg: int, n_ctrl: int) -> tuple[int, ...]:
        """The shape of the parameters for n_seg segments and n_ctrl controls."""
        return (2 * self.frequencies.numel(), n_ctrl)

    def __call__(self, params: torch.Tensor, n_seg: int) -> torch.Tensor:
        return torch.ops.qfleet.fourier_pulse(params, self.frequencies, n_seg)


class Gaussian:
    """A Gaussian per control: parameters [n_ctrl, 3] = (amplitude, centre, width), centre and
    width in units of the duration."""

    def param_shape(self, n_seg: int, n_ctrl: int) -> tuple[int, ...]:
        """The shape of the parameters for n_seg segments and n_ctrl controls."""
        return (n_ctrl, 3)

    def __call__(self, params: torch.Tensor, n_seg: int) -> torch.Tensor:
        return torch.ops.qfleet.gaussian_pulse(params, n_seg)


class Drag:
    """DRAG on two controls (x, y): the Gaussian on x and beta times its time derivative (in
    units of the duration) on y (Motzoi et al., PRL 103, 110501 (2009)): parameters [4] =
    (amplitude, centre, width, beta)."""

    def param_shape(self, n_seg: int, n_ctrl: int) -> tuple[int, ...]:
        """The shape of the parameters for n_seg segments and n_ctrl controls."""
        if n_ctrl != 2:
            raise _err(f"Drag drives two controls (x, y); the system has {n_ctrl}")
        return (4,)

    def __call__(self, params: torch.Tensor, n_seg: int) -> torch.Tensor:
        return torch.ops.qfleet.drag_pulse(params, n_seg)


class Shape:
    """Any torch function from parameters ``[..., *param_shape]`` to amplitudes
    [..., n_seg, n_ctrl]; autograd carries the engine's exact gradient back through it."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor], param_shape: Sequence[int]) -> None:
        self.fn = fn
        self.shape = tuple(int(k) for k in param_shape)

    def param_shape(self, n_seg: int, n_ctrl: int) -> tuple[int, ...]:
        """The shape of the parameters for n_seg segments and n_ctrl controls."""
        return self.shape

    def __call__(self, params: torch.Tensor, n_seg: int) -> torch.Tensor:
        return self.fn(params)


# --------------------------------------------------------------------------- problems


@dataclasses.dataclass
class Ensemble:
    """Members sharing one pulse: rates [M, n_jumps], drift_coeffs [M, n_drift_terms] (e.g.
    detunings), amplitude_scales [M] or [M, n_controls] (a miscalibrated drive: member m sees
    its scale times the programmed amplitudes), weights [M] (default equal); the cost is the
    weighted mean over members."""
    rates: torch.Tensor | None = None
    drift_coeffs: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    amplitude_scales: torch.Tensor | None = None


@dataclasses.dataclass
class Tasks:
    """B independent problems, each with its own pulse: rates [B, n_jumps], drift_coeffs
    [B, n_drift_terms], initial states [B, d] or [B, d, d]; or just `count` copies."""
    rates: torch.Tensor | None = None
    drift_coeffs: torch.Tensor | None = None
    initial: torch.Tensor | None = None
    count: int | None = None


@dataclasses.dataclass
class Duration:
    """The pulse's total time as a variable, starting from `initial`, kept within `bounds`
    (lower > 0); `weight` * duration is added to the cost (time-optimal control). The segments
    keep their relative lengths."""
    initial: float
    bounds: tuple[float | None, float | None] = (None, None)
    weight: float = 0.0


@dataclasses.dataclass
class Context:
    """What a cost function may need besides the outputs: the amplitudes [A, n_seg, n_ctrl]
    (or [n_seg, n_ctrl] for one pulse), the durations, and the task indices [A] evaluated."""
    amplitudes: torch.Tensor
    durations: torch.Tensor | None
    tasks: torch.Tensor


@dataclasses.dataclass
class Result:
    """params/amplitudes: the pulse found ([B, ...] for Tasks); duration (if variable); cost,
    fidelity (per member for an Ensemble, per task for Tasks) at the result; evaluations,
    iterations, reason (why it stopped: target, gradient, converged, evaluations, iterations,
    time, line_search, not_finite), history (the cost at every evaluation), seconds."""
    params: torch.Tensor
    amplitudes: torch.Tensor
    duration: torch.Tensor | None
    cost: torch.Tensor
    fidelity: torch.Tensor | None
    evaluations: int | torch.Tensor
    iterations: int | torch.Tensor
    reason: str | list[str]
    history: list
    seconds: float


# --------------------------------------------------------------------------- the problem


def _tensor(t, dtype, name):
    if t is None:
        return None
    t = torch.as_tensor(t)
    if t.is_complex() != dtype.is_complex:
        raise _err(f"{name} must be {'complex' if dtype.is_complex else 'real'}, got {t.dtype}")
    if not dtype.is_complex and not torch.isfinite(t).all():
        raise _err(f"{name} holds NaN or infinite values")
    return t.to(dtype)


class _Problem:
    """The system, pulse shape, members or tasks and cost: x [A, n] -> cost [A] (and the
    outputs at a point, for the result)."""

    def __init__(self, system, pulse, tasks, ensemble, cost, leakage, expval_targets, smoothness, power,
                 fixed_ends, duration, compile_options, rates=None, drift_coeffs=None):
        if not isinstance(system, OpenSystem):
            raise _err(f"system must be a qfleet.OpenSystem, got {type(system).__name__}")
        if tasks is not None and ensemble is not None:
            raise _err("give tasks (independent pulses) or an ensemble (one shared pulse), not both")
        doc = system._doc
        if "controls" not in doc:
            raise _err("the system has no control Hamiltonians (OpenSystem.control)")
        if "n_segments" not in doc and "durations" not in doc:
            raise _err("the system has no time grid (OpenSystem.segments or .durations)")
        if cost is None and "target" not in doc:
            raise _err("the system has no target (target_unitary/target_state/target_density): give it one or pass cost=")
        self.program = _compiled(system, compile_options)
        self.real = torch.float32 if compile_options.get("precision") == "complex64" else torch.float64
        cplx = torch.complex64 if self.real == torch.float32 else torch.complex128
        self.n_seg = self.program.n_segments()
        self.n_ctrl = system.n_controls
        self.grid = torch.tensor(doc["durations"] if "durations" in doc else
                                 [doc["segment_duration"]] * doc["n_segments"], dtype=torch.float64)
        self.pulse = pulse if pulse is not None else PiecewiseConstant()
        self.pshape = tuple(self.pulse.param_shape(self.n_seg, self.n_ctrl))
        self.n_pulse = math.prod(self.pshape)
        self.duration = duration
        self.cost, self.cost_takes_context = cost, cost is not None and _takes_two(cost)
        self.leakage, self.smoothness, self.power = float(leakage), float(smoothness), float(power)
        self.fixed_ends = fixed_ends
        if leakage and "subspace" not in doc:
            raise _err("leakage= needs the system's computational_subspace")
        self.expval_targets = _tensor(expval_targets, self.real, "expval_targets")
        if self.expval_targets is not None and len(doc.get("observables", [])) != self.expval_targets.shape[-1]:
            raise _err(f"expval_targets has {self.expval_targets.shape[-1]} values; the system has "
                       f"{len(doc.get('observables', []))} observables")
        self.ensemble, self.per_task = ensemble is not None, tasks is not None
        self.plain = (cost is None and not leakage and expval_targets is None and not smoothness and not power
                      and (fixed_ends is False or fixed_ends is True) and duration is None
                      and (tasks is None or isinstance(tasks, int) or tasks.initial is None))
        # The plain cost of piecewise-constant amplitudes in complex128 needs no autograd: the
        # optimiser's loop runs in C++ on the engine's fidelity gradient (control::infidelity).
        self.engine_cost = self.plain and isinstance(pulse, (PiecewiseConstant, type(None))) \
            and compile_options.get("precision", "complex128") == "complex128" \
            and (ensemble is None or ensemble.amplitude_scales is None)  # (the C++ loop shares one pulse as is)
        self.rates = self.drift = self.initial = self.weights = self.scales = None
        if ensemble is not None:
            self._members(ensemble, system)
        elif tasks is not None:
            self._tasks(tasks, system, cplx)
        else:  # one system: its rates [n_jumps] and drift coefficients [n_terms], shared
            self.B = 1
            self.rates = _tensor(rates, self.real, "rates")
            self.drift = _tensor(drift_coeffs, self.real, "drift_coeffs")

    def _members(self, e, system):
        self.rates = _tensor(e.rates, self.real, "ensemble rates")
        self.drift = _tensor(e.drift_coeffs, self.real, "ensemble drift_coeffs")
        self.scales = _tensor(e.amplitude_scales, self.real, "ensemble amplitude_scales")
        sizes = {t.shape[0] for t in (self.rates, self.drift, self.scales) if t is not None and t.dim() >= 1}
        if not sizes or 0 in sizes:
            raise _err("an ensemble with no members: give rates [M, n_jumps], drift_coeffs [M, n_terms] and/or "
                       "amplitude_scales [M], M >= 1")
        if len(sizes) > 1:
            raise _err(f"the ensemble's rates, drift_coeffs and amplitude_scales disagree on the member count: "
                       f"{sorted(sizes)}")
        (self.M,) = sizes
        if self.scales is not None:
            if self.scales.dim() == 1:
                self.scales = self.scales[:, None].expand(self.M, self.n_ctrl)
            if self.scales.shape != (self.M, self.n_ctrl) or not torch.isfinite(self.scales).all():
                raise _err(f"ensemble amplitude_scales must be [{self.M}] or [{self.M}, {self.n_ctrl}] finite values, "
                           f"got shape {tuple(torch.as_tensor(e.amplitude_scales).shape)}")
            # members that share a pulse but not their amplitudes: each member's rates and drift too
            self.rates = None if self.rates is None else self.rates.expand(self.M, *self.rates.shape[-1:])
            self.drift = None if self.drift is None else self.drift.expand(self.M, *self.drift.shape[-1:])
        w = torch.ones(self.M, dtype=self.real) if e.weights is None else _tensor(e.weights, self.real, "weights")
        if w.shape != (self.M,) or (w < 0).any() or w.sum() <= 0:
            raise _err(f"ensemble weights must be [{self.M}] non-negative values with a positive sum")
        self.weights = w / w.sum()
        self.B = 1

    def _tasks(self, t, system, cplx):
        if isinstance(t, int):
            t = Tasks(count=t)
        self.rates = _tensor(t.rates, self.real, "task rates")
        self.drift = _tensor(t.drift_coeffs, self.real, "task drift_coeffs")
        self.initial = _tensor(t.initial, cplx, "task initial states")
        sizes = {x.shape[0] for x in (self.rates, self.drift, self.initial) if x is not None and x.dim() >= 1}
        if t.count is not None:
            sizes.add(int(t.count))
        if not sizes or 0 in sizes:
            raise _err("tasks with no members: give a count >= 1 or per-task rates/drift_coeffs/initial states")
        if len(sizes) > 1:
            raise _err(f"the tasks' inputs disagree on the task count: {sorted(sizes)}")
        (self.B,) = sizes

    @property
    def n(self):
        return self.n_pulse + (1 if self.duration is not None else 0)

    def split(self, x):
        """x [A, n] -> amplitudes [A, n_seg, n_ctrl], durations [A, n_seg] or None."""
        params = x[:, :self.n_pulse].reshape((x.shape[0],) + self.pshape)
        if params.dtype != self.real:
            params = params.to(self.real)
        amps = self.pulse(params, self.n_seg)
        if amps.shape[-2:] != (self.n_seg, self.n_ctrl) or amps.shape[0] != x.shape[0]:
            raise _err(f"the pulse shape gave amplitudes {tuple(amps.shape)}; the system needs "
                       f"[{x.shape[0]}, {self.n_seg}, {self.n_ctrl}]")
        durations = None
        if self.duration is not None:
            total = x[:, -1:].to(self.real)
            durations = total * (self.grid / self.grid.sum()).to(self.real)
        return amps, durations

    def outputs(self, x, idx):
        amps, durations = self.split(x)
        if not self.per_task:  # one pulse, for one system or shared by the members
            amps = amps[0]
            durations = None if durations is None else durations[0]
            return open_outputs(self.program, self._member_amps(amps), self.rates, self.drift, durations,
                                None), amps, durations
        pick = (lambda t: None if t is None else t.index_select(0, idx))
        out = open_outputs(self.program, amps, pick(self.rates), pick(self.drift), durations, pick(self.initial))
        return out, amps, durations

    def _member_amps(self, amps):
        """The programmed pulse [n_seg, n_ctrl] as the engine gets it: shared, or [M, n_seg,
        n_ctrl] scaled per member (Ensemble.amplitude_scales)."""
        return amps if self.scales is None else amps.unsqueeze(0) * self.scales[:, None, :]

    def costs(self, x, idx):
        """The cost per evaluated task [A] (one pulse: [1])."""
        if self.plain:  # 1 - F alone: the fidelity layer, the engine's cheapest differentiable call
            amps, _ = self.split(x)
            if not self.per_task:
                return self._reduce(1 - open_fidelity(self.program, self._member_amps(amps[0]), self.rates, self.drift))
            pick = (lambda t: None if t is None else t.index_select(0, idx))
            return 1 - open_fidelity(self.program, amps, pick(self.rates), pick(self.drift))
        out, amps, durations = self.outputs(x, idx)
        if self.cost is None:
            c = 1 - out.fidelity
        else:
            ctx = Context(amps, durations, idx)
            c = self.cost(out, ctx) if self.cost_takes_context else self.cost(out)
            if not isinstance(c, torch.Tensor):
                raise _err(f"the cost must return a torch.Tensor, got {type(c).__name__}")
        if self.leakage:
            c = c + self.leakage * out.leakage
        if self.expval_targets is not None:
            c = c + (out.expvals[..., -1, :] - self.expval_targets).square().sum(-1)
        c = self._reduce(c)
        return c + self._penalties(amps, durations, x)

    def _reduce(self, c):
        if self.ensemble:
            if c.dim() == 1 and c.shape[0] == self.M:
                return (c * self.weights).sum().reshape(1)
            if c.dim() != 0:
                raise _err(f"the cost must be a scalar or one value per member [{self.M}], got shape {tuple(c.shape)}")
            return c.reshape(1)
        if not self.per_task:
            if c.numel() != 1:
                raise _err(f"the cost must be a scalar, got shape {tuple(c.shape)}")
            return c.reshape(1)
        return c

    def _penalties(self, amps, durations, x):
        if not (self.smoothness or self.power or (self.fixed_ends and not isinstance(self.fixed_ends, bool))
                or (self.duration is not None and self.duration.weight)):
            return 0.0
        a = amps if amps.dim() == 3 else amps.unsqueeze(0)
        p = torch.zeros(a.shape[0], dtype=a.dtype)
        if self.smoothness:
            p = p + self.smoothness * torch.ops.qfleet.smoothness_penalty(a)
        if self.power:
            dt = (durations if durations is not None else self.grid.to(a.dtype))
            p = p + self.power * torch.ops.qfleet.power_penalty(a, dt)
        if self.fixed_ends and not isinstance(self.fixed_ends, bool):
            p = p + float(self.fixed_ends) * (a[:, 0].square().sum(-1) + a[:, -1].square().sum(-1))
        if self.duration is not None and self.duration.weight:
            p = p + self.duration.weight * x[:, -1].to(a.dtype)
        return p

    def value_and_grad(self, x, idx):
        p = x.requires_grad_(True)  # (a fresh tensor from the optimiser, not the caller's)
        with torch.enable_grad():
            c = self.costs(p, idx)
            if c.shape != (x.shape[0],):
                raise _err(f"the cost must be one value per task [{x.shape[0]}], got shape {tuple(c.shape)}")
            total = c.sum()
            if not math.isfinite(total.item()):  # the optimiser stops the tasks whose cost is not finite
                return c.detach(), torch.zeros_like(p)
            (g,) = torch.autograd.grad(total, p, allow_unused=True)
        return c.detach(), torch.zeros_like(p) if g is None else g


_PROGRAMS: dict = {}  # the last few systems' programs, by their JSON: repeated optimize() calls compile once


def _compiled(system, options):
    key = json.dumps([system.to_json(**options)], sort_keys=True)
    program = _PROGRAMS.pop(key, None)
    if program is None:
        program = system.compile(**options)
    _PROGRAMS[key] = program
    while len(_PROGRAMS) > 16:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    return program


def _takes_two(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


# --------------------------------------------------------------------------- optimize


def _bounds(problem, bounds, B):
    """Lower and upper bounds [B, n] float64 (inf where free)."""
    n, shape = problem.n, problem.pshape
    lo = torch.full((B, n), -math.inf, dtype=torch.float64)
    hi = torch.full((B, n), math.inf, dtype=torch.float64)
    if bounds is not None:
        if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
            raise _err(f"bounds must be a pair (lower, upper), got {bounds!r}")
        for side, v in zip((lo, hi), bounds):
            if v is None:
                continue
            t = torch.as_tensor(v, dtype=torch.float64)
            if t.isnan().any():
                raise _err("bounds hold NaN")
            try:
                side[:, :problem.n_pulse] = torch.broadcast_to(t, (B,) + shape).reshape(B, -1)
            except RuntimeError:
                raise _err(f"bounds of shape {tuple(t.shape)} do not broadcast to the parameters {shape}") from None
    if problem.fixed_ends is True:
        if not isinstance(problem.pulse, PiecewiseConstant):
            raise _err("fixed_ends=True pins a piecewise-constant pulse's first and last segments; "
                       "for other shapes give a penalty weight (fixed_ends=1.0)")
        ends = torch.zeros(shape, dtype=torch.bool)
        ends[0], ends[-1] = True, True
        ends = ends.reshape(-1)
        lo[:, :problem.n_pulse][:, ends] = 0.0
        hi[:, :problem.n_pulse][:, ends] = 0.0
    if problem.duration is not None:
        dlo, dhi = problem.duration.bounds
        dlo = 1e-12 if dlo is None else float(dlo)
        if dlo <= 0:
            raise _err(f"the duration's lower bound must be > 0, got {dlo}")
        lo[:, -1] = dlo
        hi[:, -1] = math.inf if dhi is None else float(dhi)
    return lo, hi


def _x0(problem, x0, B, seed, lo, hi):
    shape = problem.pshape
    if x0 is None:  # small random amplitudes (a zero pulse is often a saddle of the fidelity)
        g = torch.Generator().manual_seed(int(seed))
        x = 0.1 * (2 * torch.rand((B, problem.n_pulse), generator=g, dtype=torch.float64) - 1)
    else:
        x = torch.as_tensor(x0).detach().to(torch.float64)
        if x.shape == shape:
            x = x.reshape(1, -1).expand(B, -1)
        elif problem.per_task and x.shape == (B,) + shape:
            x = x.reshape(B, -1)
        else:
            want = f"{shape}" + (f" or [{B}, *{shape}]" if problem.per_task else "")
            raise _err(f"x0 has shape {tuple(x.shape)}; the pulse's parameters are {want}")
    if problem.fixed_ends is True:
        x = x.clone()
        x[:, :problem.n_pulse] = torch.clamp(x[:, :problem.n_pulse], lo[:, :problem.n_pulse], hi[:, :problem.n_pulse])
    if problem.duration is not None:
        x = torch.cat([x, torch.full((B, 1), float(problem.duration.initial), dtype=torch.float64)], 1)
    if x0 is None:
        x = torch.clamp(x, lo, hi)
    return x.contiguous()


def optimize(system: OpenSystem, x0: torch.Tensor | None = None, *,
             pulse: PiecewiseConstant | Fourier | Gaussian | Drag | Shape | None = None,
             tasks: Tasks | int | None = None, ensemble: Ensemble | None = None,
             rates: torch.Tensor | None = None, drift_coeffs: torch.Tensor | None = None,
             cost: Callable[..., torch.Tensor] | None = None, leakage: float = 0.0,
             expval_targets: torch.Tensor | None = None, smoothness: float = 0.0, power: float = 0.0,
             fixed_ends: bool | float = False, duration: Duration | None = None,
             bounds: tuple[float | torch.Tensor | None, float | torch.Tensor | None] | None = None,
             method: str = "lbfgsb", target: float | Sequence[float] | torch.Tensor | None = None,
             gtol: float = 1e-10, ftol: float = 0.0, max_evals: int = 1000, max_iterations: int | None = None,
             max_time: float | None = None, lr: float | None = None, schedule: str = "constant", memory: int = 10,
             keep_best: bool = True, seed: int = 0, **compile_options: Any) -> Result:
    """Optimises a pulse for `system` (module docstring; docs/control.md). x0: the initial
    parameters (piecewise constant: amplitudes [n_seg, n_ctrl]; [B, ...] per task), default small
    random ones from `seed`; rates [n_jumps], drift_coeffs [n_terms]: one system's (Ensemble and
    Tasks hold their own); bounds: (lower, upper) on the parameters, scalars or broadcastable
    tensors (None: free). Stops a task when its cost <= target (a number, or one per task), its projected gradient's
    infinity norm <= gtol, (L-BFGS-B) its relative reduction <= ftol, after max_evals
    evaluations or max_iterations iterations, or when max_time seconds have passed. lr: Adam's
    learning rate (default 0.01; "cosine" schedule: decayed to 1% over max_iterations) or
    torch-lbfgs's step (default 1); memory: L-BFGS's stored corrections.
    compile_options go to OpenSystem.compile (solver, precision, num_threads, ...)."""
    if method not in _METHODS:
        raise _err(f"unknown method {method!r} (use one of {', '.join(_METHODS)})")
    if lr is None:
        lr = 1.0 if method == "torch-lbfgs" else 0.01
    _lib.load()
    if (rates is not None or drift_coeffs is not None) and (tasks is not None or ensemble is not None):
        raise _err("rates= and drift_coeffs= are one system's: give Tasks or the Ensemble theirs")
    problem = _Problem(system, pulse, tasks, ensemble, cost, leakage, expval_targets, smoothness, power,
                       fixed_ends, duration, compile_options, rates, drift_coeffs)
    B = problem.B
    lo, hi = _bounds(problem, bounds, B)
    x = _x0(problem, x0, B, seed, lo, hi)
    if method == "torch-lbfgs":
        from ._torch_lbfgs import run as run_torch_lbfgs
        if bounds is not None or fixed_ends is True or duration is not None:
            raise _err("torch-lbfgs has no bounds: use method='lbfgsb' for bounded amplitudes or durations")
        if B > 1:
            raise _err("torch-lbfgs optimises one problem: use 'lbfgsb' or 'adam' for independent tasks")
        if target is not None:
            target = float(torch.as_tensor(target, dtype=torch.float64).reshape(-1)[0])
        summary = run_torch_lbfgs(problem, x, target, gtol, ftol, max_evals, max_iterations, max_time, lr, memory)
    else:
        if isinstance(target, torch.Tensor) or isinstance(target, (list, tuple)):
            target = torch.as_tensor(target, dtype=torch.float64).reshape(-1).tolist()
        options = {"method": method, "target": target, "gtol": float(gtol), "ftol": float(ftol),
                   "max_evaluations": int(max_evals), "max_iterations": max_iterations, "max_seconds": max_time,
                   "memory": int(memory), "lr": float(lr), "schedule": schedule, "keep_best": bool(keep_best)}
        opt = torch.classes.qfleet.ControlOptimizer(x, lo, hi, json.dumps(options))
        if problem.engine_cost:  # 1 - F of piecewise-constant amplitudes: the loop in C++ on the engine
            summary = opt.run_infidelity(problem.program, problem.rates, problem.drift,
                                         problem.weights if problem.ensemble else None)
        else:
            idx, points = opt.ask()
            while idx.numel():
                opt.tell(*problem.value_and_grad(points, idx))
                idx, points = opt.ask()
            summary = opt.result()
    return _result(problem, summary)


def _result(problem, summary):
    x, cost, evals, iters, reasons, history, seconds = summary
    B = problem.B
    with torch.no_grad():
        out, amps, _ = problem.outputs(x, torch.arange(B))
    params = x[:, :problem.n_pulse].reshape((B,) + problem.pshape)
    duration = x[:, -1] if problem.duration is not None else None
    if problem.per_task:
        return Result(params=params, amplitudes=amps, duration=duration, cost=cost, fidelity=out.fidelity,
                      evaluations=evals, iterations=iters, reason=reasons, history=history, seconds=seconds)
    fidelity = out.fidelity
    if fidelity is not None and not problem.ensemble:
        fidelity = fidelity.reshape(())
    return Result(params=params[0], amplitudes=amps, duration=None if duration is None else duration[0],
                  cost=cost[0], fidelity=fidelity, evaluations=int(evals[0]), iterations=int(iters[0]),
                  reason=reasons[0], history=history[0], seconds=seconds)
