"""qfleet.control: the batched optimiser against scipy's L-BFGS-B and torch's Adam, bounds to
the bit, every stopping rule, per-task independence (a task alone and inside a batch of 256),
each pulse shape's gradient against finite differences, time-optimal control against the
analytic minimum time, and the one-line errors of bad input."""
import json
import math

import numpy as np
import pytest
import scipy.optimize
import torch

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.diag([1.0, -1.0]).astype(complex)
LOWER = np.array([[0, 1], [0, 0]], dtype=complex)  # |0><1|: amplitude damping


def x_gate(qfleet, n_seg=20, total=math.pi, damped=False, detuned=False):
    s = qfleet.OpenSystem(2)
    if detuned:
        s.drift_term(Z / 2)
    s.control(X / 2).control(Y / 2)
    if damped:
        s.jump(LOWER)
    return s.segments(n_seg, total).target_unitary(X).propagate_gate()


def rosenbrock(x):
    return (1 - x[..., 0]) ** 2 + 100 * (x[..., 1] - x[..., 0] ** 2) ** 2


def drive(opt, fn, seen=None):
    idx, x = opt.ask()
    while idx.numel():
        x.requires_grad_(True)
        if seen is not None:
            seen.append(x.detach().clone())
        f = fn(x)
        (g,) = torch.autograd.grad(f.sum(), x)
        opt.tell(f.detach(), g)
        idx, x = opt.ask()
    assert opt.done()
    return opt.result()


def test_lbfgsb_matches_scipy_task_by_task_with_bounds_kept_to_the_bit(qfleet):
    qfleet.load_operators()
    x0 = torch.tensor([[-1.2, 0.7], [0.5, 0.5], [1.5, -1.0]])
    lo, hi = torch.tensor([-2.0, -2.0]), torch.tensor([2.0, 0.8])
    opt = torch.classes.qfleet.ControlOptimizer(x0, lo, hi, json.dumps({"gtol": 1e-10, "ftol": 1e-15}))
    seen = []
    x, cost, evals, _, reasons, history, _ = drive(opt, rosenbrock, seen)
    for p in seen:  # every point handed out, and the result, inside the box exactly
        assert bool(((p >= lo) & (p <= hi)).all())
    assert bool(((x >= lo) & (x <= hi)).all())
    for b in range(3):
        def fg(v):
            t = torch.tensor(v, requires_grad=True)
            f = rosenbrock(t)
            f.backward()
            return f.item(), t.grad.numpy()
        ref = scipy.optimize.minimize(fg, x0[b].numpy(), jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                                      options=dict(gtol=1e-10, ftol=1e-15))
        np.testing.assert_allclose(x[b].numpy(), ref.x, atol=1e-9)
        assert int(evals[b]) == ref.nfev and len(history[b]) == ref.nfev
        assert reasons[b] == "gradient" and ref.message.startswith("CONVERGENCE: NORM")


def test_adam_is_torchs_adam_then_projected(qfleet):
    qfleet.load_operators()
    x0 = torch.tensor([[0.3, -0.2, 0.9]])
    opt = torch.classes.qfleet.ControlOptimizer(x0, None, None, json.dumps(
        {"method": "adam", "lr": 0.05, "max_iterations": 40, "max_evaluations": 100, "keep_best": False}))
    target = torch.tensor([1.0, 2.0, -3.0])
    x, _, evals, iters, reasons, _, _ = drive(opt, lambda p: ((p - target) ** 4).sum(-1))
    p = x0.clone().requires_grad_(True)
    ref = torch.optim.Adam([p], lr=0.05)
    for _ in range(40):
        ref.zero_grad()
        ((p - target) ** 4).sum().backward()
        ref.step()
    # (torch.optim.Adam mixes with lerp_; the optimiser follows libtorch's Adam, whose steps
    # qfleet_torch_tests compares bit for bit.)
    torch.testing.assert_close(x, p.detach(), rtol=1e-13, atol=1e-13)
    assert (int(evals[0]), int(iters[0]), reasons[0]) == (41, 40, "iterations")
    # Projected: a bound the unconstrained run would cross holds exactly.
    opt = torch.classes.qfleet.ControlOptimizer(x0, torch.tensor(-0.5), torch.tensor(1.5), json.dumps(
        {"method": "adam", "lr": 0.05, "max_iterations": 200, "max_evaluations": 1000}))
    seen = []
    x, *_ = drive(opt, lambda p: ((p - target) ** 2).sum(-1), seen)
    assert all(bool(((s >= -0.5) & (s <= 1.5)).all()) for s in seen)
    assert x[0, 2].item() == -0.5 and x[0, 1].item() == 1.5


@pytest.mark.parametrize("method", ["lbfgsb", "adam"])
def test_a_task_alone_and_inside_256_converges_to_the_same_pulse(qfleet, method):
    from qfleet import control
    g = torch.Generator().manual_seed(7)
    B = 256
    rates = 0.05 * torch.rand(B, 1, generator=g)
    det = 0.3 * (2 * torch.rand(B, 1, generator=g) - 1)
    x0 = 0.4 * torch.rand(B, 20, 2, generator=g)
    system = x_gate(qfleet, damped=True, detuned=True)
    # (targets some tasks reach and others, more damped, do not)
    opts = dict(bounds=(-2, 2), method=method, max_evals=60, lr=0.05, target=1e-4 if method == "lbfgsb" else 0.03)
    many = control.optimize(system, x0, tasks=control.Tasks(rates=rates, drift_coeffs=det), **opts)
    for b in (0, 77, 255):
        alone = control.optimize(system, x0[b:b + 1], tasks=control.Tasks(rates=rates[b:b + 1],
                                                                          drift_coeffs=det[b:b + 1]), **opts)
        torch.testing.assert_close(alone.amplitudes[0], many.amplitudes[b], rtol=0, atol=1e-9)
        assert alone.reason[0] == many.reason[b] and int(alone.evaluations[0]) == int(many.evaluations[b])
    # The tasks stop on their own: not all after the same number of evaluations.
    assert len(set(many.evaluations.tolist())) > 1


def test_stopping_rules(qfleet):
    from qfleet import control
    system = x_gate(qfleet)
    x0 = 0.3 * torch.rand(20, 2, generator=torch.Generator().manual_seed(1))
    r = control.optimize(system, x0, target=1e-6, bounds=(-3, 3))
    assert r.reason == "target" and r.cost <= 1e-6 and r.history[-1] == float(r.cost)
    assert abs(float(r.fidelity) - (1 - float(r.cost))) < 1e-12
    r = control.optimize(system, x0, max_evals=5)
    assert r.reason == "evaluations" and r.evaluations == 5 and len(r.history) == 5
    r = control.optimize(system, x0, max_iterations=2)
    assert r.reason == "iterations" and r.iterations == 2
    r = control.optimize(system, x0, gtol=1e-3)
    assert r.reason == "gradient"
    r = control.optimize(system, x0, max_time=1e-9)
    assert r.reason == "time" and r.evaluations == 1
    r = control.optimize(system, x0, method="adam", max_iterations=10, max_evals=100)
    assert r.reason == "iterations" and r.evaluations == 11
    r = control.optimize(system, x0, method="torch-lbfgs", target=1e-6)
    assert r.reason == "target" and r.cost <= 1e-6
    # A target per task: each stops at its own.
    two = control.optimize(system, x0, tasks=2, target=torch.tensor([1e-2, 1e-9]), bounds=(-3, 3))
    assert two.reason == ["target", "target"] and float(two.cost[0]) <= 1e-2 and float(two.cost[1]) <= 1e-9
    assert int(two.evaluations[0]) < int(two.evaluations[1])
    nan_cost = control.optimize(system, x0, cost=lambda out: (1 - out.fidelity) * float("nan"))
    assert nan_cost.reason == "not_finite" and nan_cost.evaluations == 1


def shapes(control):
    return [
        (control.PiecewiseConstant(), (6, 2)),
        (control.Fourier(3, crab=True, seed=4), (6, 2)),
        (control.Gaussian(), (2, 3)),
        (control.Drag(), (4,)),
        (control.Shape(lambda p: torch.tanh(p).unsqueeze(-1).expand(*p.shape, 2) * 1.5, (6,)), (6,)),
    ]


@pytest.mark.parametrize("index", range(5))
def test_each_pulse_shape_gradient_and_the_duration_against_finite_differences(qfleet, index):
    from qfleet import control
    shape, pshape = shapes(control)[index]
    system = x_gate(qfleet, n_seg=6, damped=True, detuned=True)
    system.computational_subspace([0])
    problem = control._Problem(system, shape, None, None, None, 0.5, None, 0.01, 0.02, 0.3,
                               control.Duration(2.5, weight=0.1), {}, torch.tensor([0.2]), torch.tensor([0.3]))
    g = torch.Generator().manual_seed(index)
    x = torch.cat([0.5 + 0.3 * torch.rand(1, math.prod(pshape), generator=g), torch.tensor([[2.5]])], 1)
    if isinstance(shape, (control.Gaussian, control.Drag)):  # centre, width in (0, 1)
        x[0, :-1] = 0.3 + 0.4 * torch.rand(math.prod(pshape), generator=g)
    _, grad = problem.value_and_grad(x, torch.arange(1))
    h = 1e-6
    for i in range(x.shape[1]):
        e = torch.zeros_like(x)
        e[0, i] = h
        with torch.no_grad():
            fd = (problem.costs(x + e, torch.arange(1)) - problem.costs(x - e, torch.arange(1))) / (2 * h)
        assert abs(float(fd) - float(grad[0, i])) < 1e-7 * max(1.0, abs(float(fd))), i


def test_composite_shape_operators_pass_gradcheck(qfleet):
    qfleet.load_operators()
    ops = torch.ops.qfleet
    g = torch.Generator().manual_seed(3)
    c = torch.rand(4, 3, generator=g, requires_grad=True)
    f = torch.tensor([1.0, 2.3])
    assert torch.autograd.gradcheck(lambda c: ops.fourier_pulse(c, f, 7), (c,))
    p = (0.2 + 0.5 * torch.rand(2, 3, generator=g)).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p: ops.gaussian_pulse(p, 7), (p,))
    d = (0.2 + 0.5 * torch.rand(4, generator=g)).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda d: ops.drag_pulse(d, 7), (d,))
    u = torch.rand(5, 2, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda u: ops.smoothness_penalty(u), (u,))
    assert torch.autograd.gradcheck(lambda u: ops.power_penalty(u, torch.full((5,), 0.3)), (u,))
    # The DRAG quadrature is beta times the Gaussian's derivative in s (central differences).
    amp = ops.drag_pulse(torch.tensor([1.0, 0.5, 0.15, 0.7]), 400)
    s = (torch.arange(400) + 0.5) / 400
    np.testing.assert_allclose(amp[1:-1, 1], 0.7 * (amp[2:, 0] - amp[:-2, 0]) / (s[2:] - s[:-2]), atol=2e-3)


def test_time_optimal_x_gate_reaches_the_analytic_minimum_time(qfleet):
    """H = u X/2, |u| <= 1: a pi rotation needs T >= pi. With cost (1 - F) + w T and every
    amplitude at its bound, 1 - F = (2/3) sin^2((pi - T)/2) ~ (pi - T)^2 / 6, so T* = pi - 3w."""
    from qfleet import control
    system = qfleet.OpenSystem(2).control(X / 2).segments(10, 4.0).target_unitary(X).propagate_gate()
    w = 1e-3
    r = control.optimize(system, torch.full((10, 1), 0.5), bounds=(-1, 1), gtol=1e-12, ftol=1e-15,
                         duration=control.Duration(4.0, bounds=(0.5, 6.0), weight=w), max_evals=500)
    assert torch.equal(r.amplitudes, torch.ones(10, 1))
    assert abs(float(r.duration) - (math.pi - 3 * w)) < 1e-5


def test_robust_pulse_beats_the_nominal_one_on_its_ensemble(qfleet):
    from qfleet import control
    g = torch.Generator().manual_seed(5)
    det = 0.4 * (2 * torch.rand(64, 1, generator=g) - 1)
    system = x_gate(qfleet, detuned=True)
    x0 = 0.3 * torch.rand(20, 2, generator=g)
    nominal = control.optimize(system, x0, bounds=(-3, 3), ensemble=control.Ensemble(drift_coeffs=torch.zeros(1, 1)))
    robust = control.optimize(system, x0, bounds=(-3, 3), ensemble=control.Ensemble(drift_coeffs=det))
    program = system.compile()
    mean = lambda u: float(qfleet.open_fidelity(program, u, drift_coeffs=det).mean())
    assert robust.fidelity.shape == (64,)
    assert abs(mean(robust.amplitudes) - float(robust.fidelity.mean())) < 1e-12
    assert mean(robust.amplitudes) > mean(nominal.amplitudes) + 1e-3
    # Weights: a member with all the weight is optimised alone.
    w = torch.zeros(64)
    w[3] = 1
    one = control.optimize(system, x0, bounds=(-3, 3), ensemble=control.Ensemble(drift_coeffs=det, weights=w),
                           target=1e-8)
    assert one.reason == "target" and float(one.fidelity[3]) >= 1 - 1e-8


def test_a_miscalibrated_drive_ensemble_reaches_the_analytic_robust_amplitude(qfleet):
    # One constant segment of amplitude a on X/2 for unit time: member m (drive scale s_m)
    # rotates by s_m a about X, so its X-gate fidelity (average gate fidelity, d = 2) is
    # (2 sin^2(s_m a / 2) + 1) / 3; the robust amplitude maximises the mean (scipy).
    from qfleet import control
    system = x_gate(qfleet, n_seg=1, total=1.0)
    scales = torch.tensor([0.8, 1.0, 1.3], dtype=torch.float64)
    fid = lambda a, s: (2 * math.sin(s * a / 2) ** 2 + 1) / 3
    best = scipy.optimize.minimize_scalar(lambda a: -np.mean([fid(a, s) for s in scales.tolist()]),
                                          bounds=(2, 4), method="bounded", options={"xatol": 1e-12})
    x0 = torch.tensor([[2.0, 0.0]], dtype=torch.float64)
    for method in ("lbfgsb", "adam"):
        r = control.optimize(system, x0, ensemble=control.Ensemble(amplitude_scales=scales), method=method,
                             gtol=1e-12, max_iterations=3000, lr=0.05)
        a = float(r.amplitudes[0, 0])
        assert abs(a - best.x) < 1e-5, (method, a, best.x)
        assert torch.allclose(r.fidelity, torch.tensor([fid(a, s) for s in scales.tolist()], dtype=torch.float64),
                              atol=1e-12)
    # Per control: a scale [M, n_ctrl] that leaves control 0 alone is no ensemble at all.
    same = control.optimize(system, x0, ensemble=control.Ensemble(
        amplitude_scales=torch.tensor([[1.0, 0.5], [1.0, 2.0]], dtype=torch.float64)), target=1e-10)
    assert same.reason == "target"
    with pytest.raises(ValueError, match=r"amplitude_scales must be \[3\] or \[3, 2\] finite values, got shape \(3, 3\)"):
        control.optimize(system, x0, ensemble=control.Ensemble(amplitude_scales=torch.ones(3, 3)))


def test_costs_leakage_expvals_and_penalties(qfleet):
    from qfleet import control
    x0 = 0.3 * torch.rand(20, 2, generator=torch.Generator().manual_seed(2))
    # A state problem by cost: drive <Z> at the end to -1 (|0> -> |1>) with a smooth pulse.
    s = qfleet.OpenSystem(2).control(X / 2).control(Y / 2).segments(20, math.pi).initial_state([1, 0]).observable(Z)
    r = control.optimize(s, x0, cost=lambda out: (out.expvals[:, -1, 0] + 1).sum(), smoothness=1e-3, bounds=(-2, 2))
    smooth = float(torch.ops.qfleet.smoothness_penalty(r.amplitudes))
    assert float(r.cost) < 1e-2 and smooth < float(torch.ops.qfleet.smoothness_penalty(x0))
    r2 = control.optimize(s, x0, expval_targets=[-1.0], bounds=(-2, 2), cost=lambda out: 0 * out.expvals[:, -1, 0].sum())
    assert float(r2.cost) < 1e-10
    # Leakage out of a qutrit's {0, 1}: the cost is 1 - F + w * leakage at the result.
    a = np.diag([1.0, np.sqrt(2)], 1).astype(complex)  # the ladder operator
    q = qfleet.OpenSystem(3).drift(np.diag([0, 0, -2.0]).astype(complex)).control((a + a.conj().T) / 2)
    q.control(1j * (a.conj().T - a) / 2).segments(20, 2 * math.pi).computational_subspace([0, 1])
    q.target_unitary(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=complex)).propagate_gate()
    r3 = control.optimize(q, x0, leakage=2.0, bounds=(-2, 2), max_evals=200)
    out = qfleet.open_outputs(q.compile(), r3.amplitudes)
    assert abs(float(r3.cost) - float(1 - out.fidelity[0] + 2.0 * out.leakage[0])) < 1e-12
    assert float(out.leakage[0]) < 1e-2
    # The cost function may take the context: the amplitudes it was given.
    system = x_gate(qfleet)
    r4 = control.optimize(system, x0, cost=lambda out, ctx: (1 - out.fidelity).sum() + 0.1 * ctx.amplitudes.square().sum(),
                          max_evals=50)
    assert r4.evaluations <= 50
    # fixed_ends=True pins the first and last segments to 0 exactly.
    r5 = control.optimize(system, x0, fixed_ends=True, bounds=(-3, 3), max_evals=50)
    assert torch.equal(r5.amplitudes[0], torch.zeros(2)) and torch.equal(r5.amplitudes[-1], torch.zeros(2))


def test_bad_input_gets_one_line_errors(qfleet):
    from qfleet import control
    system = x_gate(qfleet)
    x0 = torch.zeros(20, 2)
    x0[3, 1] = 2.5
    cases = [
        (dict(x0=x0, bounds=(-2, 2)), "outside the bounds"),
        (dict(x0=torch.zeros(20, 2), ensemble=control.Ensemble()), "no members"),
        (dict(x0=torch.zeros(20, 2), ensemble=control.Ensemble(drift_coeffs=torch.zeros(0, 1))), "no members"),
        (dict(x0=torch.zeros(20, 2), cost=lambda out: 1 - out.fidelity.expand(3)), "must be a scalar"),
        (dict(x0=torch.zeros(20, 2), method="bfgs"), "unknown method"),
        (dict(x0=torch.zeros(20, 2), method="torch-lbfgs", bounds=(-1, 1)), "no bounds"),
        (dict(x0=torch.zeros(3, 2)), "x0 has shape"),
        (dict(x0=torch.zeros(20, 2), bounds=(1, -1)), "lower bound"),
        (dict(x0=torch.zeros(20, 2), bounds=(torch.zeros(3), 1)), "do not broadcast"),
        (dict(x0=torch.zeros(20, 2), max_evals=0), "max_evaluations"),
        (dict(x0=torch.zeros(20, 2), tasks=control.Tasks(rates=torch.zeros(4, 1), count=3)), "disagree"),
        (dict(x0=torch.zeros(20, 2), duration=control.Duration(1.0, bounds=(0, 2))), "lower bound must be > 0"),
    ]
    for kwargs, words in cases:
        with pytest.raises((ValueError, TypeError, RuntimeError)) as e:
            control.optimize(system, **kwargs)
        msg = str(e.value).strip()
        assert words in msg and "\n" not in msg, (kwargs, msg)
    no_target = qfleet.OpenSystem(2).control(X / 2).segments(4, 1.0)
    with pytest.raises(ValueError, match="no target"):
        control.optimize(no_target)


def test_the_engines_infidelity_equals_the_autograd_cost(qfleet):
    """The plain problems' loop runs in C++ on torch.ops.qfleet.control_infidelity (one engine
    vjp, no autograd): its cost and gradient are the autograd path's, for tasks, an ensemble and
    one system; and optimize() gives the same pulse either way."""
    from qfleet import control
    g = torch.Generator().manual_seed(11)
    system = x_gate(qfleet, damped=True, detuned=True)
    program = system.compile()
    rates, det = 0.05 * torch.rand(5, 1, generator=g), 0.3 * torch.rand(5, 1, generator=g)
    x = 0.5 * torch.rand(5, 40, generator=g)
    tasks = torch.tensor([0, 2, 4])
    cost, grad = torch.ops.qfleet.control_infidelity(program, x[tasks], tasks, rates, det, None)
    u = x[tasks].reshape(3, 20, 2).requires_grad_(True)
    ref = 1 - qfleet.open_fidelity(program, u, rates[tasks], det[tasks])
    ref.sum().backward()
    torch.testing.assert_close(cost, ref.detach(), rtol=0, atol=1e-14)
    torch.testing.assert_close(grad, u.grad.reshape(3, 40), rtol=0, atol=1e-13)
    w = torch.tensor([0.1, 0.2, 0.3, 0.15, 0.25])
    cost, grad = torch.ops.qfleet.control_infidelity(program, x[:1], torch.zeros(1, dtype=torch.int64), rates, det, w)
    v = x[0].reshape(20, 2).requires_grad_(True)
    ref = (w * (1 - qfleet.open_fidelity(program, v, rates, det))).sum()
    ref.backward()
    torch.testing.assert_close(cost, ref.detach().reshape(1), rtol=0, atol=1e-14)
    torch.testing.assert_close(grad[0], v.grad.reshape(40), rtol=0, atol=1e-13)
    x0 = 0.3 * torch.rand(20, 2, generator=g)
    fast = control.optimize(system, x0, rates=rates[1], drift_coeffs=det[1], bounds=(-2, 2), max_evals=40)
    slow = control.optimize(system, x0, rates=rates[1], drift_coeffs=det[1], bounds=(-2, 2), max_evals=40,
                            cost=lambda out: 1 - out.fidelity)
    assert fast.evaluations == slow.evaluations
    torch.testing.assert_close(fast.amplitudes, slow.amplitudes, rtol=0, atol=1e-10)


def test_tasks_with_their_own_initial_states(qfleet):
    """State transfer to |1> from a different start per task (Tasks(initial=...)): the autograd
    path, each task's fidelity that of its own start (checked against open_outputs)."""
    from qfleet import control
    s = qfleet.OpenSystem(2).control(X / 2).control(Y / 2).segments(10, math.pi).target_state([0, 1])
    starts = torch.tensor([[1, 0], [1 / math.sqrt(2), 1 / math.sqrt(2)], [0, 1]], dtype=torch.complex128)
    x0 = 0.2 * torch.rand(10, 2, generator=torch.Generator().manual_seed(3))
    r = control.optimize(s, x0, tasks=control.Tasks(initial=starts), bounds=(-3, 3), target=1e-10)
    assert r.reason == ["target"] * 3 and float(r.fidelity.min()) >= 1 - 1e-10
    out = qfleet.open_outputs(s.compile(), r.amplitudes, initial=starts)
    torch.testing.assert_close(out.fidelity, r.fidelity, rtol=0, atol=1e-14)
    assert not torch.allclose(r.amplitudes[0], r.amplitudes[1])  # different starts, different pulses


def test_the_engines_infidelity_refuses_what_it_cannot_evaluate(qfleet):
    system = x_gate(qfleet)
    program = system.compile()
    one = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=r"takes amplitudes \[A, 40\]") as e:
        torch.ops.qfleet.control_infidelity(program, torch.zeros(1, 39), one, None, None, None)
    assert "\n" not in str(e.value).strip()
    with pytest.raises(RuntimeError, match="complex128 programs"):
        torch.ops.qfleet.control_infidelity(system.compile(precision="complex64"), torch.zeros(1, 40), one,
                                            None, None, None)
    no_target = qfleet.OpenSystem(2).control(X / 2).segments(4, 1.0).propagate_gate().compile()
    with pytest.raises(RuntimeError, match="no target"):
        torch.ops.qfleet.control_infidelity(no_target, torch.zeros(1, 4), one, None, None, None)
