"""A quick check of an installation: each front end once, against a value known in closed form.

    python -m qfleet.check

Runs in seconds (most of it importing torch and PennyLane) and prints one line per front end,
PASS, FAIL or SKIP (an optional package not installed), then exits 1 if anything failed:

- C++ engine: the engine through its C library (`qfleet._engine`, no torch): <Z> after RY(x)
  is cos(x), its vector-Jacobian product -sin(x);
- PyTorch: a circuit as a layer (its weight's gradient -sin(x + w)) and an open system (a
  qubit decaying from ``|1>`` at rate g: ``<Z>(t) = 1 - 2 exp(-g t)``, ``d<Z>/dg = 2 t exp(-g t)``);
- PennyLane: a QNode on ``qfleet.qubit`` and its ``qml.grad``;
- Gymnasium: 8 of qfleet's vector environments reset and stepped;
- CLI: ``qfleet eval`` on a JSON problem with gradients.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

__all__ = ["main", "cli_path"]

TOL = 1e-10
X = [0.3, 1.1, -0.7]


def _close(got, want, what: str) -> None:
    got, want = [float(v) for v in got], [float(v) for v in want]
    err = max(abs(a - b) for a, b in zip(got, want, strict=True))
    if not err <= TOL:
        raise AssertionError(f"{what}: {got} against {want} (max error {err:.2e})")


def _engine() -> str:
    import numpy as np
    from . import _engine
    p = _engine.Program(json.dumps({"kind": "circuit", "qubits": 1, "observables": ["Z0"],
                                    "ops": [{"gate": "RY", "wires": [0], "params": [{"input": 0}]}]}))
    x = np.array(X)[:, None]
    _close(p.forward(x, np.zeros(0)).ravel(), [math.cos(v) for v in X], "<Z>")
    gx, _ = p.vjp(x, np.zeros(0), np.ones((len(X), 1)))
    _close(gx.ravel(), [-math.sin(v) for v in X], "vjp")
    return f"C library {_engine.library_path()}"


def _torch() -> str:
    import torch
    import qfleet
    c = qfleet.Circuit(1)
    c.add("RY", [0], [qfleet.input(0)]).add("RY", [0], [qfleet.weight(0)]).expval("Z0")
    layer = qfleet.QuantumLayer(c)
    x = torch.tensor(X, dtype=torch.float64)[:, None]
    layer(x).sum().backward()
    w = float(layer.weight.detach()[0])
    _close([layer.weight.grad[0]], [-sum(math.sin(v + w) for v in X)], "layer gradient")

    g, n, t = 0.3, 4, 2.0  # rate, segments, total time
    z = torch.tensor([[1, 0], [0, -1]], dtype=torch.complex128)
    lower = torch.tensor([[0, 1], [0, 0]], dtype=torch.complex128)
    s = qfleet.OpenSystem(2).jump(lower).observable(z).segments(n, t).initial_state(
        torch.tensor([0, 1], dtype=torch.complex128))
    rates = torch.tensor([[g]], dtype=torch.float64, requires_grad=True)
    ex = qfleet.open_outputs(s.compile(), torch.zeros(1, n, 0, dtype=torch.float64), rates=rates).expvals
    times = [k * t / n for k in range(n + 1)]
    _close(ex[0, :, 0].detach(), [1 - 2 * math.exp(-g * tk) for tk in times], "<Z>(t)")
    ex[0, -1, 0].backward()
    _close([rates.grad[0, 0]], [2 * t * math.exp(-g * t)], "d<Z>/dg")
    return f"torch {torch.__version__}, operators {qfleet._lib.library_path()}"


def _pennylane() -> str:
    import pennylane as qml
    from pennylane import numpy as pnp

    @qml.qnode(qml.device("qfleet.qubit", wires=1), diff_method="adjoint")
    def f(x):
        qml.RY(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    for v in X:
        x = pnp.array(v, requires_grad=True)
        _close([f(x), qml.grad(f)(x)], [math.cos(v), -math.sin(v)], "QNode and qml.grad")
    return f"pennylane {qml.__version__}"


def _gymnasium() -> str:
    import gymnasium as gym
    import numpy as np
    import torch
    import qfleet.rl  # noqa: F401  (registers the environments)
    envs = gym.make_vec("qfleet/QubitX-v0", num_envs=8, vectorization_mode="vector_entry_point")
    try:
        obs, _ = envs.reset(seed=1)
        obs2, reward, *_ = envs.step(np.zeros(envs.action_space.shape, dtype=envs.action_space.dtype))
        reward = torch.as_tensor(reward)  # (tensors or arrays, as the environment's array API is set)
        if obs.shape[0] != 8 or obs2.shape != obs.shape or not bool(torch.isfinite(reward).all()):
            raise AssertionError(f"observations {obs.shape} -> {obs2.shape}, rewards {reward}")
    finally:
        envs.close()
    return f"gymnasium {gym.__version__}"


def cli_path() -> str | None:
    """The `qfleet` command this package goes with: $QFLEET_CLI, the one beside the interpreter
    (an installed wheel's), the build tree's (a checkout), else the one on PATH."""
    if os.environ.get("QFLEET_CLI"):
        return os.environ["QFLEET_CLI"]
    beside = pathlib.Path(sys.executable).parent / "qfleet"
    if beside.exists():
        return str(beside)
    from ._paths import build_dir
    build = build_dir()
    if build is not None and (build / "tools" / "qfleet").exists():
        return str(build / "tools" / "qfleet")
    return shutil.which("qfleet")


def _cli() -> str:
    path = cli_path()
    if path is None:
        raise FileNotFoundError("no `qfleet` command: beside the interpreter, in the build tree or on PATH")
    problem = {"kind": "circuit", "qubits": 1, "observables": ["Z0"], "gradients": True,
               "ops": [{"gate": "RY", "wires": [0], "params": [{"input": 0}]}], "inputs": [[v] for v in X]}
    r = subprocess.run([path, "eval", "-"], input=json.dumps(problem), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"qfleet eval exited {r.returncode}: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    _close([row[0] for row in out["expvals"]], [math.cos(v) for v in X], "expvals")
    _close([row[0][0] for row in out["grad_inputs"]], [-math.sin(v) for v in X], "grad_inputs")
    return path


CHECKS: list[tuple[str, Callable[[], str], str | None]] = [
    ("C++ engine", _engine, None), ("PyTorch", _torch, "torch"), ("PennyLane", _pennylane, "pennylane"),
    ("Gymnasium", _gymnasium, "gymnasium"), ("CLI", _cli, None)]


def main(argv: list[str] | None = None) -> int:
    """Runs every check, prints one line each, returns 1 if one failed (0 otherwise)."""
    import importlib.util
    failed = 0
    for name, check, package in CHECKS:
        if package and importlib.util.find_spec(package) is None:
            print(f"SKIP  {name:<10} {package} is not installed")
            continue
        start = time.perf_counter()
        try:
            where = check()
            print(f"PASS  {name:<10} {where} ({time.perf_counter() - start:.1f} s)")
        except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
            failed += 1
            print(f"FAIL  {name:<10} {type(e).__name__}: {e}")
    import qfleet
    print(f"qfleet {qfleet.__version__}: {'all front ends work' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
