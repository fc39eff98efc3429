"""Basic tutorial: qubit rotation — the jax interface.

Source: https://pennylane.ai/qml/demos/tutorial_qubit_rotation
(PennyLaneAI/qml, demonstrations_v2/tutorial_qubit_rotation/demo.py).

As published: `lightning.qubit` with 1 wire, the QNode's defaults (interface auto -> jax,
diff_method "best"), RX(phi_1) RY(phi_2) and <Z>; `jax.numpy` arrays without `jax_enable_x64`, so
parameters, costs and gradients are float32; the circuit and its `jax.grad` at [0.54, 0.12], the
two-argument QNode's gradient with argnums=[0, 1], then `jaxopt.GradientDescent(cost, stepsize=0.4,
acceleration=False)` from [0.011, 0.012], the cost read every 5 steps.

jaxopt is archived and not part of the project's environment; its non-accelerated update with a fixed
step is x <- x - stepsize * grad f(x) (ProximalGradient._update with the identity prox), written out
here with jax.value_and_grad as that update evaluates it.
"""
from __future__ import annotations

from .common import QUBIT_DEVICES, device

NAME = "qubit_rotation"
SOURCE = ("https://pennylane.ai/qml/demos/tutorial_qubit_rotation "
          "(PennyLaneAI/qml, demonstrations_v2/tutorial_qubit_rotation/demo.py)")
INTERFACE = "jax"
REFERENCE = "lightning.qubit"
DEVICES = QUBIT_DEVICES
# float32 as published: the devices compute in float64 and jax rounds each result to float32, so two
# devices may differ by an ulp (6e-8 at 1) that a few dozen steps keep, never grow past 1e-5.
ATOL = 1e-5
STEPS = {False: 40, True: 3}  # the demo runs 100; its cost has converged after about 40


def workload(quick: bool) -> str:
    return f"jax.grad at one point + {STEPS[quick]} gradient-descent steps (float32)"


def run(device_name: str, quick: bool = False, seed: int = 42) -> dict:
    del seed  # the demo draws no random numbers
    import jax
    import pennylane as qml

    jax.config.update("jax_enable_x64", False)  # the demo's setting (another demo may have enabled it)
    from jax import numpy as np

    dev1 = device(device_name, 1)

    @qml.qnode(dev1)
    def circuit(params):
        qml.RX(params[0], wires=0)
        qml.RY(params[1], wires=0)
        return qml.expval(qml.PauliZ(0))

    @qml.qnode(dev1)
    def circuit2(phi1, phi2):
        qml.RX(phi1, wires=0)
        qml.RY(phi2, wires=0)
        return qml.expval(qml.PauliZ(0))

    params = np.array([0.54, 0.12])
    out = {"circuit": circuit(params), "grad": jax.grad(circuit, argnums=0)(params),
           "grad_two_args": np.stack(jax.grad(circuit2, argnums=[0, 1])(np.array(0.54), np.array(0.12)))}

    def cost(x):
        return circuit(x)

    params = np.array([0.011, 0.012])
    costs = [cost(params)]
    for i in range(STEPS[quick]):
        _, grad = jax.value_and_grad(cost)(params)
        params = params - 0.4 * grad
        if (i + 1) % 5 == 0:
            costs.append(cost(params))
    out.update(costs=np.stack(costs), params=params)
    return out
