"""Tutorial 2: fit the noise of a circuit to measured expectation values, on qfleet.mixed.

The task. A two-qubit experiment: rotate qubit 0 by an angle theta (a Rabi sweep), then
entangle it with qubit 1 by a CNOT, and measure <Z0>, <Z1> and <Z0 Z1> at each of K angles.
The hardware is not ideal, and the model has three unknowns:

    eps    the drive's over-rotation: the gate applied is RX(theta (1 + eps));
    gamma  amplitude damping of qubit 0 after the rotation (energy relaxation, T1);
    p      a depolarizing channel on qubit 1 after the CNOT (the two-qubit gate's error).

"Measured" data come from PennyLane's own density-matrix simulator, default.mixed, at the
true values, with the binomial noise of a finite number of shots drawn from a seeded
generator. The fit then runs on qfleet.mixed: one QNode call evaluates all K angles at once
(PennyLane broadcasts the angle; qfleet runs the broadcast tape as one engine call) and the
adjoint method gives the gradient with respect to eps and the two channel strengths, which
torch.optim.LBFGS uses to minimise the weighted squared error.

Why this way. The channel strengths are ordinary differentiable parameters on qfleet.mixed
(the engine differentiates through DepolarizingChannel, AmplitudeDamping, ...), so fitting a
noise model is the same code as training a circuit.

What to look at.
1. The check: qfleet.mixed's expectation values and gradient equal default.mixed's (an
   independent simulator, differentiated by its backprop) to 1e-10.
2. The fit: from a poor starting guess, the fitted eps, gamma and p land within four standard
   errors of the truth, where the standard errors come from the fit's own Fisher information
   (the Jacobian of the model, again from qfleet's adjoint); and the fit to the noiseless data
   recovers the truth to 1e-6, which shows the optimiser reaches the minimum.

Run it:

    python tutorials/02_noisy_circuit_fit.py            # the full run (a few seconds of fitting)
    python tutorials/02_noisy_circuit_fit.py --short    # fewer angles and shots (the test)

(from a checkout: `PYTHONPATH=python`, see docs/torch.md). QFLEET_TUTORIAL_SHORT=1 is the same
as --short.
"""
import argparse
import os
import time

import numpy as np
import pennylane as qml
import torch

TRUE = {"eps": 0.04, "gamma": 0.12, "p": 0.06}
NAMES = list(TRUE)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="small settings (what the test runs)")
    p.add_argument("--seed", type=int, default=7, help="the shot noise's seed")
    args = p.parse_args()
    args.short = args.short or os.environ.get("QFLEET_TUTORIAL_SHORT") == "1"
    return args


def experiment(theta, eps, gamma, p):
    """The circuit: the same function runs on either device."""
    qml.RX(theta * (1 + eps), wires=0)
    qml.AmplitudeDamping(gamma, wires=0)
    qml.CNOT(wires=[0, 1])
    qml.DepolarizingChannel(p, wires=1)
    return (qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1)),
            qml.expval(qml.PauliZ(0) @ qml.PauliZ(1)))


def qnode(device_name):
    # qfleet differentiates by the adjoint method; default.mixed by backpropagation through its
    # torch tensors: two independent ways of computing the same gradient.
    method = "adjoint" if device_name.startswith("qfleet") else "backprop"
    return qml.QNode(experiment, qml.device(device_name, wires=2), interface="torch", diff_method=method)


def model(circuit, theta, params):
    """Expectation values [3, K] for the raw parameters (eps, logit gamma, logit p)."""
    eps, gamma, p = params[0], torch.sigmoid(params[1]), torch.sigmoid(params[2])  # strengths in (0, 1)
    return torch.stack(circuit(theta, eps, gamma, p))


def to_raw(values):
    logit = lambda v: np.log(v / (1 - v))  # noqa: E731
    return torch.tensor([values["eps"], logit(values["gamma"]), logit(values["p"])], dtype=torch.float64)


def from_raw(raw):
    r = raw.detach()
    return {"eps": r[0].item(), "gamma": torch.sigmoid(r[1]).item(), "p": torch.sigmoid(r[2]).item()}


def check_against_default_mixed(theta):
    """Step 1: outputs and the gradient of a loss agree with default.mixed."""
    data = torch.linspace(-0.5, 0.5, 3 * len(theta), dtype=torch.float64).reshape(3, -1)
    got = {}
    for name in ("qfleet.mixed", "default.mixed"):
        raw = to_raw({"eps": 0.02, "gamma": 0.2, "p": 0.1}).requires_grad_()
        out = model(qnode(name), theta, raw)
        ((out - data) ** 2).sum().backward()
        got[name] = (out.detach(), raw.grad)
    out_err = (got["qfleet.mixed"][0] - got["default.mixed"][0]).abs().max().item()
    grad_err = (got["qfleet.mixed"][1] - got["default.mixed"][1]).abs().max().item()
    print(f"check vs default.mixed at {len(theta)} angles: max |expval diff| = {out_err:.1e}, "
          f"max |gradient diff| = {grad_err:.1e}")
    assert out_err < 1e-10 and grad_err < 1e-10, "qfleet.mixed disagrees with default.mixed"


def measure(theta, shots, rng):
    """The 'measured' data: default.mixed at the true values, plus binomial shot noise."""
    exact = model(qnode("default.mixed"), theta, to_raw(TRUE)).detach().numpy()
    # A +-1 observable with mean E reads +1 with probability (1 + E) / 2.
    plus = rng.binomial(shots, (1 + exact) / 2)
    data = 2 * plus / shots - 1
    sigma = np.sqrt(np.maximum(1 - exact**2, 1 / shots) / shots)  # the shot noise's standard deviation
    return torch.tensor(exact), torch.tensor(data), torch.tensor(sigma)


def fit(circuit, theta, data, sigma, start, max_iter):
    """Weighted least squares by L-BFGS; every evaluation is one qfleet.mixed call over all angles."""
    raw = to_raw(start).requires_grad_()
    opt = torch.optim.LBFGS([raw], lr=1, max_iter=max_iter, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")
    calls = [0]

    def closure():
        opt.zero_grad()
        calls[0] += 1
        loss = (((model(circuit, theta, raw) - data) / sigma) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        chi2 = (((model(circuit, theta, raw) - data) / sigma) ** 2).sum().item()
    return raw.detach(), chi2, calls[0]


def standard_errors(circuit, theta, raw, sigma):
    """Gauss-Newton covariance (J^T W J)^-1 in the physical parameters (eps, gamma, p)."""
    def physical(v):  # the model as a function of (eps, gamma, p) themselves
        return torch.stack(circuit(theta, v[0], v[1], v[2])).flatten() / sigma.flatten()
    v = torch.tensor([from_raw(raw)[k] for k in NAMES], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(physical, v)  # [3K, 3], one adjoint pass per row
    return torch.linalg.inv(jac.T @ jac).diagonal().sqrt()


def main():
    args = parse_args()
    k, shots = (12, 2000) if args.short else (48, 4000)
    # Angles over two Rabi periods; theta = 0 is left out (default.mixed's backprop gives NaN
    # gradients there, from the square root in its expectation values).
    theta = torch.linspace(4 * np.pi / k, 4 * np.pi, k, dtype=torch.float64)
    print(f"experiment: {k} angles x 3 observables, {shots} shots each; true {TRUE}")

    check_against_default_mixed(theta[: min(k, 8)])

    rng = np.random.default_rng(args.seed)
    exact, data, sigma = measure(theta, shots, rng)
    circuit = qnode("qfleet.mixed")
    start = {"eps": 0.0, "gamma": 0.3, "p": 0.2}

    # Step 2: the noiseless data must give back the truth (the optimiser reaches the minimum).
    raw, chi2, calls = fit(circuit, theta, exact, sigma, start, max_iter=60)
    err = max(abs(from_raw(raw)[n] - TRUE[n]) for n in NAMES)
    print(f"noiseless data: {calls} evaluations, chi2 {chi2:.1e}, max |fit - truth| = {err:.1e}")
    assert err < 1e-6, f"the fit to noiseless data missed the truth by {err:.1e}"

    # Step 3: the noisy data, with error bars.
    t0 = time.perf_counter()
    raw, chi2, calls = fit(circuit, theta, data, sigma, start, max_iter=60)
    seconds = time.perf_counter() - t0
    fitted = from_raw(raw)
    se = standard_errors(circuit, theta, raw, sigma)
    dof = data.numel() - len(NAMES)
    print(f"noisy data: {calls} evaluations in {seconds:.2f} s, chi2 / dof = {chi2:.1f} / {dof}")
    print(f"{'':6s} {'true':>8s} {'start':>8s} {'fitted':>8s} {'std err':>8s} {'z':>6s}")
    for i, n in enumerate(NAMES):
        z = (fitted[n] - TRUE[n]) / se[i].item()
        print(f"{n:6s} {TRUE[n]:8.4f} {start[n]:8.4f} {fitted[n]:8.4f} {se[i].item():8.4f} {z:6.2f}")
        assert abs(z) < 4, f"{n}: fitted {fitted[n]:.4f}, true {TRUE[n]}, {z:.1f} standard errors away"
    # chi2 of a good fit is about dof (within a few sqrt(2 dof)).
    assert abs(chi2 - dof) < 5 * np.sqrt(2 * dof), f"chi2 {chi2:.1f} is implausible for {dof} degrees of freedom"
    print("OK")


if __name__ == "__main__":
    main()
