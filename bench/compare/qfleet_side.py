"""The qfleet side of the comparison, through qfleet's Python/PyTorch API.

qfleet is found as an installed package of the venv that runs the harness
(`bench/compare/.venv/bin/pip install <repo root>`, see README.md). When
`import qfleet` fails, every qfleet row is recorded as "not installed" with the
import error, and the alternatives are still timed and checked.

API used (qfleet's PyTorch layer):

    c = qfleet.Circuit(n); c.angle_embedding(wires=..., rotation="X")
    c.strongly_entangling_layers(wires=..., layers=L); c.expval("Z0") ...
    layer = qfleet.QuantumLayer(c)        # .weight: Parameter [n_weights] float64
    y = layer(x)                          # [B, n_inputs] -> [B, n_outputs]

    s = qfleet.OpenSystem(d); s.drift(H0); s.control(H); s.jump(L)
    s.segments(n_seg, T); s.propagate_gate(); s.target_unitary(U)
    osl = qfleet.OpenSystemLayer(s, solver="exact")   # or solver="rk4", dt=0.01
    F = osl(amplitudes [B, n_seg, n_ctrl], rates [B, n_jump])   # F_avg [B]
"""

from __future__ import annotations

import os

import numpy as np

_IMPORT_ERROR: str | None = None
try:  # noqa: SIM105
    import qfleet  # type: ignore
except Exception as e:  # ImportError, or a torch ABI mismatch (OSError / RuntimeError)
    qfleet = None
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"



def _layer_grad_runner(osl, ut, rt):
    """run/extract for an OpenSystemLayer's F and the gradient of sum_b (1 - F_b)."""
    import torch

    def run():
        F = osl(ut, rt)
        gu, gr = torch.autograd.grad((1 - F).sum(), (ut, rt))
        return F, gu, gr

    def extract(r):
        F, gu, gr = r
        return F.detach().numpy(), gu.numpy(), gr.numpy()

    return run, extract

def available() -> tuple[bool, str | None]:
    return qfleet is not None, _IMPORT_ERROR


def version() -> str | None:
    if qfleet is None:
        return None
    return getattr(qfleet, "__version__", "unknown")


# Set by run.py from --threads: passed as num_threads= to qfleet's layers (0/None: qfleet's default,
# every core through OpenMP).
NUM_THREADS: int | None = None


def _construct(cls, *args, **kwargs):
    if NUM_THREADS:
        try:
            return cls(*args, num_threads=NUM_THREADS, **kwargs)
        except TypeError:  # an API without num_threads: OMP_NUM_THREADS still applies
            pass
    return cls(*args, **kwargs)


def threads() -> str:
    if NUM_THREADS:
        return f"qfleet num_threads={NUM_THREADS}"
    for name in ("get_num_threads", "num_threads"):
        f = getattr(qfleet, name, None) if qfleet is not None else None
        if callable(f):
            try:
                return f"qfleet OpenMP {f()}"
            except Exception:
                pass
    v = os.environ.get("OMP_NUM_THREADS")
    return f"OpenMP {v}" if v else f"OpenMP default ({os.cpu_count()} cores)"


# --------------------------------------------------------------------------- circuits


def circuit_case(x: np.ndarray, w: np.ndarray):
    """Forward + gradient of sum(outputs) w.r.t. inputs and weights, like the alternatives."""
    import torch

    B, n = x.shape
    layers = w.shape[0]
    wires = list(range(n))
    c = qfleet.Circuit(n)
    c.angle_embedding(wires=wires, rotation="X")
    c.strongly_entangling_layers(wires=wires, layers=layers)
    for i in range(n):
        c.expval(f"Z{i}")
    layer = _construct(qfleet.QuantumLayer, c)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(w.reshape(-1), dtype=torch.float64))
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)

    def run():
        y = layer(xt)
        gx, gw = torch.autograd.grad(y.sum(), (xt, layer.weight))
        return y, gx, gw

    def extract(r):
        y, gx, gw = r
        return y.detach().numpy(), gx.numpy(), gw.detach().numpy().reshape(layers, n, 3)

    return run, extract, threads()


# --------------------------------------------------------------------------- open systems


def _system(model):
    s = qfleet.OpenSystem(model.d)
    if np.any(model.drift != 0):
        s.drift(model.drift)
    for H in model.controls:
        s.control(H)
    for L in model.jumps:
        s.jump(L)
    s.segments(model.n_seg, model.T)
    s.propagate_gate()
    s.target_unitary(model.U_target)
    return s


def open_case(model, u: np.ndarray, rates: np.ndarray, solver: str = "exact", dt: float | None = None,
              with_grad: bool = True):
    import torch

    s = _system(model)
    kwargs = {"solver": solver}
    if dt is not None:
        kwargs["dt"] = dt
    osl = _construct(qfleet.OpenSystemLayer, s, **kwargs)
    ut = torch.tensor(u, dtype=torch.float64, requires_grad=with_grad)
    rt = torch.tensor(rates, dtype=torch.float64, requires_grad=with_grad)

    if with_grad:
        run, extract = _layer_grad_runner(osl, ut, rt)
    else:
        def run():
            with torch.no_grad():
                return osl(ut, rt)

        def extract(F):
            return F.numpy(), None, None

    return run, extract, threads()


# Rows of the qfleet side per open-system workload:
# key -> (solver, dt, with_grad, kind, display name).
# The keys are what the alternatives name as their counterpart.
OPEN_ROWS = {
    "exact": ("exact", None, True, "exact", "qfleet exact (Fréchet adjoint)"),
    "exact fwd": ("exact", None, False, "exact", "qfleet exact, forward only"),
    "rk4 dt=0.01": ("rk4", 0.01, True, "fixed-step", "qfleet rk4 dt=0.01 (discrete adjoint)"),
    "rk4 dt=0.001": ("rk4", 0.001, True, "fixed-step", "qfleet rk4 dt=0.001 (discrete adjoint)"),
    "euler dt=0.01": ("euler", 0.01, True, "fixed-step", "qfleet euler dt=0.01 (discrete adjoint)"),
    "euler dt=0.001": ("euler", 0.001, True, "fixed-step", "qfleet euler dt=0.001 (discrete adjoint)"),
}


# --------------------------------------------------------------------------- state transfer sweep


def transfer_case(model, u: np.ndarray, rates: np.ndarray, solver: str, rtol: float | None = None,
                  atol: float | None = None, form: str = "automatic", exact: str | None = None):
    """State transfer model.psi0 -> model.psi_target (F = <target|rho(T)|target>), forward +
    gradient of sum_b (1 - F_b) w.r.t. amplitudes and rates. exact: the exact solver's method
    ("propagator" or "action"; None: not passed, for libraries older than the choice)."""
    import torch

    s = qfleet.OpenSystem(model.d)
    s.drift(model.drift)
    for H in model.controls:
        s.control(H)
    for L in model.jumps:
        s.jump(L)
    s.segments(model.n_seg, model.T)
    s.initial_state(model.psi0)
    s.target_state(model.psi_target)
    kwargs = {"solver": solver, "rtol": rtol, "atol": atol, "form": form}
    if exact is not None:
        kwargs["exact"] = exact
    osl = _construct(qfleet.OpenSystemLayer, s, **kwargs)
    ut = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    rt = torch.tensor(rates, dtype=torch.float64, requires_grad=True)

    run, extract = _layer_grad_runner(osl, ut, rt)
    return run, extract, threads()
