"""Tutorial 3: one X-gate pulse that works for a whole ensemble of noisy qubits.

The task. You calibrate an X gate for a qubit whose frequency you only know to within
+-0.4 (in units where the pulse's full amplitude is 2; a spread across a chip, or drift
between calibrations), and whose relaxation and dephasing rates vary too. A pulse optimised
for the nominal qubit (zero detuning, mean rates) is perfect there and can be poor a little
off resonance. A robust pulse maximises the mean fidelity over an ensemble of qubits drawn
from the spread instead.

The model (time in units of 1/amplitude):

    H = delta Z/2 + u_x(t) X/2 + u_y(t) Y/2,    jumps sigma^- (rate gamma_1) and Z (rate gamma_phi),

40 piecewise-constant segments over T = 2 pi, |u| <= 2, and F the average gate fidelity of
the propagated channel to X. `qfleet.control.optimize` finds both pulses with L-BFGS-B on the
engine's exact gradients; for the robust one, `control.Ensemble(rates=..., drift_coeffs=...)`
gives the members (the detuning is the drift term's coefficient) and every evaluation runs
all members in one batched engine call.

What to look at.
1. The table at the end: the nominal pulse, the robust pulse and a plain square pi pulse,
   each evaluated on a fresh test ensemble (other draws than the training ensemble). The
   robust pulse's mean and worst fidelity must beat the nominal pulse's (asserted).
2. The check: qfleet's fidelities of a few test members equal those of an independent
   NumPy/SciPy computation (the column-stacked Liouvillian of each segment, scipy's expm,
   the average-gate-fidelity formula) to 1e-10.

Run it:

    python tutorials/03_robust_pulse.py            # 64 training members (a few seconds)
    python tutorials/03_robust_pulse.py --short    # 16 members (what the test runs)

(from a checkout: `PYTHONPATH=python`, see docs/torch.md). QFLEET_TUTORIAL_SHORT=1 is the same
as --short. A spread of the drive's amplitude (a Rabi-rate miscalibration) would be one more
field of the same ensemble, `control.Ensemble(amplitude_scales=...)` (docs/control.md).
"""
import argparse
import math
import os
import time

import numpy as np
import scipy.linalg
import torch

import qfleet
from qfleet import control

N_SEG, T, U_MAX = 40, 2 * math.pi, 2.0
DETUNING = 0.4  # delta uniform in [-DETUNING, DETUNING]
GAMMA_1 = (0.0005, 0.0015)  # relaxation rate, uniform in this range
GAMMA_PHI = (0.0002, 0.0006)  # pure dephasing rate

cplx = lambda m: np.array(m, dtype=complex)  # noqa: E731
X, Y, Z = cplx([[0, 1], [1, 0]]), cplx([[0, -1j], [1j, 0]]), cplx([[1, 0], [0, -1]])
SIGMA_MINUS = cplx([[0, 1], [0, 0]])  # |0><1|: |1> decays to |0>


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="small settings (what the test runs)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    args.short = args.short or os.environ.get("QFLEET_TUTORIAL_SHORT") == "1"
    return args


def draw_members(m, gen):
    """m qubits from the spread: rates [m, 2] (gamma_1, gamma_phi), detunings [m, 1]."""
    u = lambda lo, hi: lo + (hi - lo) * torch.rand(m, generator=gen, dtype=torch.float64)  # noqa: E731
    rates = torch.stack([u(*GAMMA_1), u(*GAMMA_PHI)], dim=1)
    detunings = u(-DETUNING, DETUNING)[:, None]
    return rates, detunings


def reference_fidelity(amplitudes, rates, detuning):
    """Independent of qfleet: the channel of the pulse from scipy's expm of column-stacked
    Liouvillians, vec(A X B) = (B^T kron A) vec(X), and F = (d F_pro + 1) / (d + 1)."""
    d, eye = 2, np.eye(2)
    jumps = [np.sqrt(rates[0]) * SIGMA_MINUS, np.sqrt(rates[1]) * Z]
    channel = np.eye(d * d, dtype=complex)
    for ux, uy in amplitudes:
        h = detuning * Z / 2 + ux * X / 2 + uy * Y / 2
        lv = -1j * (np.kron(eye, h) - np.kron(h.T, eye))
        for c in jumps:
            cdc = c.conj().T @ c
            lv += np.kron(c.conj(), c) - 0.5 * np.kron(eye, cdc) - 0.5 * np.kron(cdc.T, eye)
        channel = scipy.linalg.expm(lv * T / N_SEG) @ channel
    f_pro = np.real(np.trace(np.kron(X.conj(), X).conj().T @ channel)) / d**2
    return (d * f_pro + 1) / (d + 1)


def main():
    args = parse_args()
    n_train, n_test = (16, 200) if args.short else (64, 2000)
    gen = torch.Generator().manual_seed(args.seed)

    # The system, once: the detuning is a drift term whose coefficient each member sets.
    system = (qfleet.OpenSystem(2).drift_term(Z / 2).control(X / 2).control(Y / 2)
              .jump(SIGMA_MINUS).jump(Z).segments(N_SEG, T).target_unitary(X).propagate_gate())
    x0 = 0.3 * torch.rand(N_SEG, 2, generator=gen, dtype=torch.float64)
    mean_rates = torch.tensor([sum(GAMMA_1) / 2, sum(GAMMA_PHI) / 2], dtype=torch.float64)

    # Step 1: the nominal pulse, for the qubit at zero detuning and mean rates.
    t0 = time.perf_counter()
    nominal = control.optimize(system, x0, rates=mean_rates, drift_coeffs=torch.zeros(1, dtype=torch.float64),
                               bounds=(-U_MAX, U_MAX), ftol=1e-12)
    print(f"nominal pulse: {nominal.reason} after {nominal.evaluations} evaluations, "
          f"{time.perf_counter() - t0:.2f} s, F(nominal qubit) = {float(nominal.fidelity):.6f}")

    # Step 2: the robust pulse, for an ensemble drawn from the spread (same start).
    train_rates, train_detunings = draw_members(n_train, gen)
    t0 = time.perf_counter()
    robust = control.optimize(system, x0, ensemble=control.Ensemble(rates=train_rates, drift_coeffs=train_detunings),
                              bounds=(-U_MAX, U_MAX), ftol=1e-12)
    print(f"robust pulse ({n_train} members): {robust.reason} after {robust.evaluations} evaluations, "
          f"{time.perf_counter() - t0:.2f} s, mean F(training members) = {float(robust.fidelity.mean()):.6f}")

    # Step 3: evaluate on a fresh test ensemble: every pulse on every member, one call each.
    test_rates, test_detunings = draw_members(n_test, torch.Generator().manual_seed(args.seed + 1000))
    program = system.compile()
    square = torch.zeros(N_SEG, 2, dtype=torch.float64)
    square[:, 0] = math.pi / T  # a plain pi pulse on x: u T = pi
    pulses = {"square pi pulse": square, "nominal": nominal.amplitudes, "robust": robust.amplitudes}
    fid = {}
    with torch.no_grad():
        for name, amps in pulses.items():
            fid[name] = qfleet.open_fidelity(program, amps, rates=test_rates, drift_coeffs=test_detunings)
    print(f"\non {n_test} test qubits (detuning in [-{DETUNING}, {DETUNING}], gamma_1 in {GAMMA_1}, "
          f"gamma_phi in {GAMMA_PHI}):")
    print(f"{'pulse':16s} {'mean F':>9s} {'worst F':>9s} {'F at delta=0':>13s}")
    zero = torch.zeros(1, 1, dtype=torch.float64)
    for name, f in fid.items():
        f0 = qfleet.open_fidelity(program, pulses[name], rates=mean_rates[None], drift_coeffs=zero)
        print(f"{name:16s} {f.mean().item():9.6f} {f.min().item():9.6f} {f0.item():13.6f}")

    # Step 4: an independent check of qfleet's fidelities on a few test members.
    worst = 0.0
    for i in range(3):
        want = reference_fidelity(robust.amplitudes.numpy(), test_rates[i].numpy(), test_detunings[i, 0].item())
        worst = max(worst, abs(want - fid["robust"][i].item()))
    print(f"\ncheck vs scipy.linalg.expm of the Liouvillian (3 members): max |F diff| = {worst:.1e}")
    assert worst < 1e-10, "qfleet's fidelity disagrees with the SciPy reference"

    # Did it work? The robust pulse must beat the nominal one over the spread.
    gain_mean = fid["robust"].mean().item() - fid["nominal"].mean().item()
    gain_worst = fid["robust"].min().item() - fid["nominal"].min().item()
    print(f"robust - nominal: mean F {gain_mean:+.4f}, worst F {gain_worst:+.4f}")
    assert gain_mean > 0.01 and gain_worst > 0.05, "the robust pulse is not better than the nominal one"
    assert fid["robust"].min().item() > 0.99, "the robust pulse should keep every test qubit above F = 0.99"
    print("OK")


if __name__ == "__main__":
    main()
