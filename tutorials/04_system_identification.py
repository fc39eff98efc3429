"""Tutorial 4: system identification — fit a driven qubit's detuning, decay rates and drive
calibration to measured time traces.

The task. A qubit is driven by a known pulse, and you record the expectation values <X>,
<Y>, <Z> at many times along it (tomography at each time point, from repeated runs), starting
once from |0> and once from |+>. Four things about the qubit are unknown:

    delta      its detuning from the drive (H contains delta Z/2);
    gamma_1    its relaxation rate (jump sigma^- = |0><1|);
    gamma_phi  its pure-dephasing rate (jump Z);
    kappa      the drive's calibration: the qubit sees kappa times the programmed amplitudes.

You want all four from the traces. The model is a Lindblad master equation without a closed
form under this drive, so the fit needs a simulator that gives the traces and their gradient
with respect to the parameters: `qfleet.open_outputs` returns the expectation values at every
segment boundary, differentiable with respect to the rates, the drift coefficients (the
detuning) and the amplitudes (through which kappa enters), all from one forward and one
reverse sweep of the engine. Both experiments are two tasks of one call (per-task initial
densities; the rates and the detuning are shared, and their gradients summed).

The "measured" data are qfleet's traces at the true values plus Gaussian noise
(sigma = 0.02, about 2,500 shots per point) from a seeded generator; torch.optim.LBFGS fits
the log-rates, the detuning and kappa from a rough guess by minimising the squared error.

What to look at.
1. The check: qfleet's noiseless traces at the true parameters equal QuTiP's mesolve (an
   independent ODE solver, run segment by segment with the pulse held constant in each) to
   1e-6.
2. The fit table: each fitted value, its standard error from the Gauss-Newton covariance
   (the model's Jacobian, again from qfleet's exact gradients), and how many standard errors
   it lies from the truth; the script asserts |z| < 4 for each, and that the residual is what
   the noise leaves.
3. The full run then repeats the experiment 100 times with fresh noise and checks that the
   error bars are honest: each error, in units of the Cramer-Rao bound (the same covariance at
   the true parameters), has a root mean square of about 1 over the repeats.

Run it:

    python tutorials/04_system_identification.py            # 200 time points a trace, 100 repeats
    python tutorials/04_system_identification.py --short    # 60 time points (the test)

(from a checkout: `PYTHONPATH=python`, see docs/torch.md). QFLEET_TUTORIAL_SHORT=1 is the same
as --short. For a whole fleet of qubits fitted at once, with Ramsey and inversion-recovery
traces, see docs/examples/system_identification.py (docs/open_systems.md).
"""
import argparse
import math
import os
import time

import numpy as np
import qutip
import torch

import qfleet

TRUE = {"delta": 0.15, "gamma_1": 0.03, "gamma_phi": 0.012, "kappa": 0.93}
GUESS = {"delta": 0.0, "gamma_1": 0.06, "gamma_phi": 0.005, "kappa": 1.0}
NAMES = list(TRUE)
T, NOISE = 40.0, 0.02

cplx = lambda m: np.array(m, dtype=complex)  # noqa: E731
X, Y, Z = cplx([[0, 1], [1, 0]]), cplx([[0, -1j], [1j, 0]]), cplx([[1, 0], [0, -1]])
SIGMA_MINUS = cplx([[0, 1], [0, 0]])  # |0><1|: |1> decays to |0>
RHO0 = np.stack([cplx([[1, 0], [0, 0]]), 0.5 * cplx([[1, 1], [1, 1]])])  # |0><0| and |+><+|


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="small settings (what the test runs)")
    p.add_argument("--seed", type=int, default=3, help="the measurement noise's seed")
    p.add_argument("--repeats", type=int, default=None,
                   help="repeat the experiment with fresh noise this many times (default 100, 0 with --short)")
    args = p.parse_args()
    args.short = args.short or os.environ.get("QFLEET_TUTORIAL_SHORT") == "1"
    if args.repeats is None:
        args.repeats = 0 if args.short else 100
    return args


def programmed_pulse(n_seg):
    """The known drive [n_seg, 2] (x, y): a slow chirp, so the traces see many Bloch-sphere axes."""
    t = (torch.arange(n_seg, dtype=torch.float64) + 0.5) * T / n_seg
    return torch.stack([0.5 * torch.cos(0.05 * t + 0.004 * t**2), 0.3 * torch.sin(0.11 * t)], dim=1)


def traces(program, pulse, values):
    """<X>, <Y>, <Z> [2 experiments, n_seg + 1, 3] for a dict of parameter tensors."""
    rates = torch.stack([values["gamma_1"], values["gamma_phi"]])  # [2]: shared by both experiments
    drift = values["delta"].reshape(1)  # [1]: the coefficient of the drift term Z/2
    amplitudes = (values["kappa"] * pulse).expand(2, -1, -1)  # [2, n_seg, 2]: the qubit sees kappa u(t)
    initial = torch.tensor(RHO0)  # [2, 2, 2]: one initial density per experiment
    return qfleet.open_outputs(program, amplitudes, rates=rates, drift_coeffs=drift, initial=initial).expvals


def qutip_traces(pulse, values):
    """Independent reference: QuTiP's mesolve, one constant-Hamiltonian solve per segment."""
    n_seg = len(pulse)
    dt = T / n_seg
    ops = [qutip.Qobj(m) for m in (X, Y, Z)]
    c_ops = [math.sqrt(values["gamma_1"]) * qutip.Qobj(SIGMA_MINUS), math.sqrt(values["gamma_phi"]) * qutip.Qobj(Z)]
    opts = {"atol": 1e-12, "rtol": 1e-10, "nsteps": 100000}
    out = np.zeros((2, n_seg + 1, 3))
    for e, rho0 in enumerate(RHO0):
        rho = qutip.Qobj(rho0)
        out[e, 0] = [qutip.expect(o, rho) for o in ops]
        for k, (ux, uy) in enumerate(pulse.numpy() * values["kappa"]):
            h = qutip.Qobj(values["delta"] * Z / 2 + ux * X / 2 + uy * Y / 2)
            rho = qutip.mesolve(h, rho, [0.0, dt], c_ops, options=opts).states[-1]
            out[e, k + 1] = [qutip.expect(o, rho) for o in ops]
    return out


def to_theta(values):
    """The fitted parameters for a dict of plain numbers: (delta, log gamma_1, log gamma_phi, kappa)."""
    return torch.tensor([values["delta"], math.log(values["gamma_1"]), math.log(values["gamma_phi"]), values["kappa"]],
                        dtype=torch.float64)


def as_values(theta):
    """Fitted parameters theta = (delta, log gamma_1, log gamma_phi, kappa) -> a dict of tensors."""
    return {"delta": theta[0], "gamma_1": theta[1].exp(), "gamma_phi": theta[2].exp(), "kappa": theta[3]}


def chi_square(program, pulse, theta, data):
    return (((traces(program, pulse, as_values(theta)) - data) / NOISE) ** 2).sum()


def fit(program, pulse, data):
    """L-BFGS from GUESS; returns theta, chi2 at the start and at the end, evaluations, seconds."""
    theta = to_theta(GUESS).requires_grad_()
    opt = torch.optim.LBFGS([theta], lr=1, max_iter=100, tolerance_grad=1e-10, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")
    calls = [0]

    def closure():
        opt.zero_grad()
        calls[0] += 1
        chi2 = chi_square(program, pulse, theta, data)
        chi2.backward()  # one reverse sweep of the engine gives all four derivatives
        return chi2

    with torch.no_grad():
        chi2_start = chi_square(program, pulse, theta, data).item()
    t0 = time.perf_counter()  # (the first optimizer a process makes imports torch._dynamo: ~3 s before this)
    opt.step(closure)
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        chi2 = chi_square(program, pulse, theta, data).item()
    return theta.detach(), chi2_start, chi2, calls[0], seconds


def error_bars(program, pulse, theta):
    """Fitted values and standard errors from the Gauss-Newton covariance (J^T J)^-1 sigma^2, J the
    Jacobian of the traces with respect to the physical parameters (one reverse sweep per row)."""
    fitted = as_values(theta)
    p_hat = torch.stack([fitted[k] for k in NAMES])
    jac = torch.autograd.functional.jacobian(lambda p: traces(program, pulse, dict(zip(NAMES, p))).flatten(), p_hat)
    se = (torch.linalg.inv(jac.T @ jac).diagonal() * NOISE**2).sqrt()
    return {k: fitted[k].item() for k in NAMES}, se.tolist()


def main():
    args = parse_args()
    n_seg = 60 if args.short else 200

    # The model: compiled once. Observables are recorded at every segment boundary.
    system = (qfleet.OpenSystem(2).drift_term(Z / 2).control(X / 2).control(Y / 2)
              .jump(SIGMA_MINUS).jump(Z).observable(X).observable(Y).observable(Z).segments(n_seg, T))
    program = system.compile()
    pulse = programmed_pulse(n_seg)
    truth = {k: torch.tensor(v, dtype=torch.float64) for k, v in TRUE.items()}

    # Step 1: qfleet's traces at the true values against QuTiP.
    with torch.no_grad():
        clean = traces(program, pulse, truth)
    t0 = time.perf_counter()
    ref = qutip_traces(pulse, TRUE)
    err = np.abs(clean.numpy() - ref).max()
    print(f"check vs qutip.mesolve ({2 * (n_seg + 1)} time points, {time.perf_counter() - t0:.1f} s): "
          f"max |<O> diff| = {err:.1e}")
    assert err < 1e-6, "qfleet's traces disagree with QuTiP's"

    # Step 2: the measured data.
    rng = np.random.default_rng(args.seed)
    data = clean + NOISE * torch.from_numpy(rng.standard_normal(clean.shape))
    print(f"data: 2 experiments x {n_seg + 1} times x 3 observables, noise sigma = {NOISE}")

    # Step 3: the fit, by L-BFGS on the exact gradient of the squared error.
    theta, chi2_start, chi2, calls, seconds = fit(program, pulse, data)
    dof = data.numel() - len(NAMES)
    print(f"fit: {calls} evaluations (forward + gradient) in {seconds:.2f} s; "
          f"chi2 {chi2_start:.0f} -> {chi2:.1f} for {dof} degrees of freedom")

    # Step 4: error bars, and how far each fitted value lies from the truth in their units.
    fitted, se = error_bars(program, pulse, theta)
    print(f"\n{'':10s} {'true':>8s} {'guess':>8s} {'fitted':>8s} {'std err':>8s} {'z':>6s}")
    for i, k in enumerate(NAMES):
        z = (fitted[k] - TRUE[k]) / se[i]
        print(f"{k:10s} {TRUE[k]:8.4f} {GUESS[k]:8.4f} {fitted[k]:8.4f} {se[i]:8.4f} {z:6.2f}")
        assert abs(z) < 4, f"{k}: fitted {fitted[k]:.4f}, true {TRUE[k]}, {z:.1f} standard errors away"
    assert abs(chi2 - dof) < 5 * math.sqrt(2 * dof), f"chi2 {chi2:.1f} is implausible for {dof} degrees of freedom"

    # Step 5 (full run): are the error bars honest? Repeat the experiment with fresh noise and
    # measure each error in units of the Cramer-Rao bound (the same covariance, at the truth);
    # the root mean square of these z-scores is about 1 for an estimator as good as the noise allows.
    if args.repeats:
        t0 = time.perf_counter()
        _, bound = error_bars(program, pulse, to_theta(TRUE))
        zs = []
        for r in range(args.repeats):
            noisy = clean + NOISE * torch.from_numpy(np.random.default_rng(1000 + r).standard_normal(clean.shape))
            fitted = as_values(fit(program, pulse, noisy)[0])
            zs.append([(fitted[k].item() - TRUE[k]) / bound[i] for i, k in enumerate(NAMES)])
        rms = np.sqrt(np.mean(np.square(zs), axis=0))
        print(f"\n{args.repeats} repeated experiments ({time.perf_counter() - t0:.1f} s): rms z = "
              + ", ".join(f"{k} {v:.2f}" for k, v in zip(NAMES, rms)))
        assert np.all((rms > 0.7) & (rms < 1.3)), f"the error bars are not calibrated: rms z {rms}"
    print("OK")


if __name__ == "__main__":
    main()
