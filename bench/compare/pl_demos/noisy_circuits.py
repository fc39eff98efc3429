"""Noisy circuits — density matrices, noise channels and channel gradients, jax interface under jax.jit.

Source: https://pennylane.ai/qml/demos/tutorial_noisy_circuits
(PennyLaneAI/qml, demonstrations_v2/tutorial_noisy_circuits/demo.py).

As published: `default.mixed` with 2 wires, the QNode's defaults (diff_method "best"), jax with
`jax_enable_x64`; a Bell state's <Z0 Z1> and density matrix; BitFlip(p) on both wires (<Z0 Z1> and
the state) and DepolarizingChannel(p) on both wires (<Z0 Z1>) for p in 0.001, 0.01, 0.1, 0.2; then
AmplitudeDamping(sigmoid(x)) on both wires fitted to the observed 0.7781 by
`jaxopt.GradientDescent(cost, maxiter=35, tol=1e-5).run(0.01, ev)`.

The demo also calls `qml.capture.enable()`, which PennyLane 0.45 refuses with this environment's jax
(ImportError: it wants jax 0.7.1) on every device, so the demo runs in PennyLane's default mode. jaxopt is
archived and not installed: its GradientDescent with those arguments (and its defaults: stepsize 0 =
backtracking line search from 1.0, maxls 15, decrease factor 0.5, acceleration = FISTA) is written out
in `_jaxopt_gradient_descent` as jaxopt's ProximalGradient/IterativeSolver run it: the first update
eagerly, the others in a jitted lax.while_loop while the error exceeds tol — so the QNodes run under
jax.jit, as in the demo.
"""
from __future__ import annotations

from .common import EXACT, MIXED_DEVICES, device

NAME = "noisy_circuits"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_noisy_circuits "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_noisy_circuits/demo.py)")
INTERFACE = "jax"
REFERENCE = "default.mixed"
DEVICES = MIXED_DEVICES
ATOL = EXACT
MAXITER = {False: 35, True: 3}  # the demo's maxiter: 35


def workload(quick: bool) -> str:
    return (f"Bell state, 4 bit-flip and 4 depolarizing strengths, jaxopt-style gradient descent "
            f"(maxiter {MAXITER[quick]}) under jax.jit")


def _jaxopt_gradient_descent(fun, init_params, *args, maxiter, tol, maxls=15, decrease_factor=0.5):
    """jaxopt.GradientDescent(fun, maxiter=maxiter, tol=tol).run(init_params, *args): FISTA with a
    backtracking line search (Beck and Teboulle 2009). Returns (params, iterations, error)."""
    import jax
    from jax import numpy as jnp

    value_and_grad = jax.value_and_grad(fun)

    def line_search(x, fx, gx, stepsize):
        eps = jnp.finfo(fx.dtype).eps

        def cond(c):  # jaxopt's sufficient-decrease test, its terms in its order
            k, nx, s = c
            diff = nx - x
            decrease = s * (fun(nx, *args) - fx)
            return (k < maxls) & (decrease > s * jnp.vdot(diff, gx) + 0.5 * jnp.vdot(diff, diff) + eps)

        def body(c):
            k, _, s = c
            s = s * decrease_factor
            return k + 1, x - s * gx, s

        _, nx, s = jax.lax.while_loop(cond, body, (0, x - stepsize * gx, stepsize))
        # restart a collapsed step at 1, else try a longer one next time
        return nx, jnp.where(s <= 1e-6, 1.0, s / decrease_factor)

    def update(state):
        k, x, y, t, stepsize, _ = state
        fy, gy = value_and_grad(y, *args)
        nx, nstep = jax.jit(line_search)(y, fy, gy, stepsize)
        nt = 0.5 * (1 + jnp.sqrt(1 + 4 * t ** 2))
        diff = nx - x
        return k + 1, nx, nx + (t - 1) / nt * diff, nt, nstep, jnp.sqrt(jnp.vdot(diff, diff)) / nstep

    one = jnp.asarray(1.0, dtype=init_params.dtype)
    state = update((0, init_params, init_params, one, one, jnp.inf))
    loop = jax.jit(lambda s: jax.lax.while_loop(lambda c: (c[0] < maxiter) & (c[5] > tol), update, s))
    k, x, *_, error = loop(state)
    return x, k, error


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    del seed  # the demo draws no random numbers
    import jax
    import pennylane as qml

    jax.config.update("jax_platform_name", "cpu")
    jax.config.update("jax_enable_x64", True)
    from jax import numpy as np

    dev = device(device_name, 2)

    @qml.qnode(dev)
    def circuit():
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    @qml.qnode(dev)
    def density_matrix_circuit():
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.state()

    @qml.qnode(dev)
    def bitflip_circuit(p):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.BitFlip(p, wires=0)
        qml.BitFlip(p, wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1)), qml.state()

    @qml.qnode(dev)
    def depolarizing_circuit(p):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.DepolarizingChannel(p, wires=0)
        qml.DepolarizingChannel(p, wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    ps = [0.001, 0.01, 0.1, 0.2]
    out = {"circuit": circuit(), "density_matrix": density_matrix_circuit()}
    bitflip = [bitflip_circuit(p) for p in ps]
    out["bitflip_expval"] = np.stack([r[0] for r in bitflip])
    out["bitflip_state"] = np.stack([r[1] for r in bitflip])
    out["depolarizing"] = np.stack([depolarizing_circuit(p) for p in ps])

    ev = 0.7781

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    @qml.qnode(dev)
    def damping_circuit(x):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.AmplitudeDamping(sigmoid(x), wires=0)
        qml.AmplitudeDamping(sigmoid(x), wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    def cost(x, target):
        return (damping_circuit(x) - target) ** 2

    params, iterations, error = _jaxopt_gradient_descent(cost, np.array(0.01), ev, maxiter=MAXITER[quick], tol=1e-5)
    out.update(params=params, iterations=iterations, error=error, fitted=damping_circuit(params),
               p=sigmoid(params))
    return out
