"""Every open-system output differentiable from PyTorch (qfleet.open_outputs): gradients of
fidelity, leakage, expectation values and final states with respect to amplitudes, rates,
drift coefficients, segment durations and per-task initial states, against torch's finite
differences (gradcheck) and, on the same loss in the same run, against dynamiqs' jax.grad
through dq.mesolve; the builder's observable() and computational_subspace(); the default
initial state |0>; eager and torch.compile; the one-line errors of bad arguments."""
import numpy as np
import pytest
import torch

X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.diag([1.0, -1.0]).astype(complex)
LOWER = np.array([[0, 1], [0, 0]], dtype=complex)  # |0><1|: |1> decays to |0>


def qubit(qfleet, n_seg=3, open_system=True, target=True):
    s = qfleet.OpenSystem(2).drift_term(Z / 2).control(X / 2).control(Y / 2)
    if open_system:
        s.jump(LOWER).jump(Z)
    s.durations([0.3, 0.25, 0.4][:n_seg]).observable(X).observable(Z).computational_subspace([0])
    if target:
        s.target_state([0, 1])
    return s


def qutrit(qfleet):
    rng = np.random.default_rng(3)
    h = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    s = qfleet.OpenSystem(3).drift(np.diag([0.0, 1.0, 1.7]).astype(complex)).control(h + h.conj().T)
    s.jump(np.diag([0, 1, 1.4]) @ np.eye(3, k=1)).observable(np.diag([0.0, 1.0, 2.0]).astype(complex))
    return s.durations([0.2, 0.35]).computational_subspace([0, 1]).target_state([0, 1, 0])


def unit_state(raw):
    return raw / torch.linalg.vector_norm(raw, dim=-1, keepdim=True)


def density(raw):
    rho = raw @ raw.conj().transpose(-1, -2)
    return rho / torch.diagonal(rho, dim1=-2, dim2=-1).sum(-1).real[..., None, None]


@pytest.mark.parametrize("solver,kw", [("exact", {}), ("rk4", {"dt": 0.037}), ("dopri5", {"rtol": 1e-11, "atol": 1e-12})])
@pytest.mark.parametrize("system", ["closed_qubit", "open_qubit", "open_qutrit"])
def test_gradcheck_every_output_every_input(qfleet, solver, kw, system):
    torch.manual_seed(0)
    s = {"closed_qubit": lambda: qubit(qfleet, open_system=False), "open_qubit": lambda: qubit(qfleet),
         "open_qutrit": lambda: qutrit(qfleet)}[system]()
    p = s.compile(solver, **kw)
    B, d, n_seg, n_ctrl = 2, p.dim(), p.n_segments(), p.n_controls()
    closed = p.n_jumps() == 0
    f64 = dict(dtype=torch.float64, requires_grad=True)
    amps = torch.randn(B, n_seg, n_ctrl, **f64)
    drift = torch.randn(B, p.n_drift_terms(), **f64)
    rates = (0.1 + torch.rand(p.n_jumps(), dtype=torch.float64)).requires_grad_()
    durs = (0.2 + 0.2 * torch.rand(B, n_seg, dtype=torch.float64)).requires_grad_()
    raw = torch.randn(*((B, d) if closed else (B, d, d)), dtype=torch.complex128, requires_grad=True)

    def outputs(a, c, r, t, x):
        init = unit_state(x) if closed else density(x)
        o = qfleet.open_outputs(p, a, rates=r if r.numel() else None, drift_coeffs=c if c.numel() else None,
                                durations=t, initial=init)
        return tuple(v for v in o if v is not None)

    args = (amps, drift, rates if p.n_jumps() else torch.zeros(0, dtype=torch.float64), durs, raw)
    # rk4's map is piecewise in the durations (ceil(duration / dt) steps): eps keeps every step count.
    assert torch.autograd.gradcheck(outputs, args, eps=1e-6, atol=2e-5 if solver == "dopri5" else 1e-6,
                                    rtol=1e-4, fast_mode=True)


def test_same_loss_as_dynamiqs_jax_grad(qfleet):
    """System identification's loss: squared errors of <X>, <Z> at every segment boundary against
    data, for a driven qubit with a detuning, decay and dephasing; gradients w.r.t. the detuning,
    both rates and the pulse against dynamiqs (jax.grad through dq.mesolve, exact propagators)."""
    jax = pytest.importorskip("jax")
    dq = pytest.importorskip("dynamiqs")
    jnp = jax.numpy
    dq.set_precision("double")
    dq.set_progress_meter(False)
    dur = np.array([0.3, 0.25, 0.4])
    times = np.concatenate([[0.0], np.cumsum(dur)])
    data = np.array([[0.1, 0.3, -0.2, 0.05], [0.9, 0.5, 0.2, -0.1]])
    delta, g1, gphi = 0.7, 0.2, 0.1
    amps = np.array([1.0, -0.5, 0.8])

    def dq_loss(params):
        dl, r1, r2, u = params
        h = 0.5 * dl * dq.sigmaz() + dq.pwc(times, u, 0.5 * dq.sigmax())
        res = dq.mesolve(h, [jnp.sqrt(r1) * dq.sigmam(), jnp.sqrt(r2) * dq.sigmaz()], dq.basis_dm(2, 0), times,
                         exp_ops=[dq.sigmax(), dq.sigmaz()], method=dq.method.Expm())
        return jnp.sum((res.expects.real - data) ** 2)

    want_loss, want = jax.value_and_grad(dq_loss)((delta, g1, gphi, jnp.asarray(amps)))
    # The same operators, taken from dynamiqs so that both share one convention.
    sz, sx, sm = (np.asarray(op.to_jax()) for op in (dq.sigmaz(), dq.sigmax(), dq.sigmam()))
    s = qfleet.OpenSystem(2).drift_term(sz / 2).control(sx / 2).jump(sm).jump(sz).durations(list(dur))
    s.observable(sx).observable(sz).initial_state([1, 0])
    p = s.compile()
    f64 = dict(dtype=torch.float64, requires_grad=True)
    c = torch.tensor([delta], **f64)
    r = torch.tensor([g1, gphi], **f64)
    u = torch.tensor(amps, dtype=torch.float64).reshape(3, 1).requires_grad_()
    ex = qfleet.open_outputs(p, u, rates=r, drift_coeffs=c).expvals  # [1, n_seg + 1, 2]
    loss = ((ex[0].T - torch.tensor(data)) ** 2).sum()
    loss.backward()
    assert loss.item() == pytest.approx(float(want_loss), abs=1e-10)
    assert c.grad.item() == pytest.approx(float(want[0]), abs=1e-8)
    assert r.grad.numpy() == pytest.approx([float(want[1]), float(want[2])], abs=1e-8)
    assert u.grad.flatten().numpy() == pytest.approx(np.asarray(want[3]), abs=1e-8)


def test_rabi_expvals_and_one_backward_for_a_mixed_loss(qfleet):
    """<Z>(t) = cos(u t) for H = u X / 2 from |0> (analytic), and a loss mixing every output
    differentiated in one backward() equals the sum of the outputs' separate gradients."""
    s = qfleet.OpenSystem(2).control(X / 2).segments(4, 2.0).observable(Z).computational_subspace([0])
    s.target_state([0, 1])
    p = s.compile()
    u = torch.full((4, 1), 1.3, dtype=torch.float64)
    o = qfleet.open_outputs(p, u)
    t = torch.linspace(0, 2.0, 5, dtype=torch.float64)
    assert o.expvals[0, :, 0] == pytest.approx(torch.cos(1.3 * t), abs=1e-12)
    assert o.fidelity.item() == pytest.approx(np.sin(1.3)**2, abs=1e-12)  # |<1|psi(2)>|^2 = sin^2(u T / 2)
    assert o.leakage.item() == pytest.approx(np.sin(1.3)**2, abs=1e-12)

    u = torch.rand(3, 4, 1, dtype=torch.float64, requires_grad=True)
    data = torch.rand(3, 5, 1, dtype=torch.float64)

    def parts():
        o = qfleet.open_outputs(p, u)
        return [(1 - o.fidelity).mean(), 0.1 * o.leakage.mean(), ((o.expvals - data) ** 2).sum(),
                (o.final_state.abs() ** 2)[:, 1].sum()]
    separate = sum(torch.autograd.grad(part, u, retain_graph=True)[0] for part in parts())
    together = torch.autograd.grad(sum(parts()), u)[0]
    assert together == pytest.approx(separate, abs=1e-12)


def test_unused_outputs_and_compiled_callers(qfleet):
    p = qubit(qfleet).compile()
    u = torch.rand(2, 3, 2, dtype=torch.float64, requires_grad=True)
    r = torch.tensor([0.2, 0.1], dtype=torch.float64)
    c = torch.tensor([0.3], dtype=torch.float64)

    def loss(u):
        o = qfleet.open_outputs(p, u, rates=r, drift_coeffs=c)
        return o.expvals[:, -1, 1].sum()

    eager = torch.autograd.grad(loss(u), u)[0]
    compiled = torch.compile(loss, backend="eager")
    assert torch.autograd.grad(compiled(u), u)[0] == pytest.approx(eager, abs=1e-12)
    o = qfleet.open_outputs(qfleet.OpenSystem(2).control(X).segments(2, 1.0).compile(), torch.zeros(2, 1,
                                                                                                  dtype=torch.float64))
    assert o.fidelity is None and o.leakage is None and o.expvals is None
    assert o.final_state.shape == (1, 2) and o.final_state.dtype == torch.complex128


def test_initial_state_defaults_to_ground(qfleet):
    """Without initial_state the system starts in |0>, as the builder's docs say."""
    u = torch.rand(3, 2, dtype=torch.float64)
    plain = qfleet.OpenSystem(2).control(X / 2).control(Z).segments(3, 1.0).target_state([0, 1])
    given = qfleet.OpenSystem(2).control(X / 2).control(Z).segments(3, 1.0).target_state([0, 1]).initial_state([1, 0])
    assert qfleet.open_outputs(plain.compile(), u).final_state == pytest.approx(
        qfleet.open_outputs(given.compile(), u).final_state, abs=0)


def test_bad_arguments_are_one_line_errors(qfleet):
    p = qubit(qfleet).compile()
    u = torch.rand(2, 3, 2, dtype=torch.float64)
    r = torch.tensor([0.2, 0.1], dtype=torch.float64)
    c = torch.tensor([0.3], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="durations must be finite and > 0"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c, durations=torch.tensor([0.1, -0.2, 0.3],
                                                                                   dtype=torch.float64))
    with pytest.raises(ValueError, match=r"durations has shape \[2\]; expected \[B, 3\]"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c, durations=torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"initial has shape \[2, 2\]; expected \[B, 2, 2\]"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c, initial=torch.eye(2, dtype=torch.complex128))
    with pytest.raises(TypeError, match=r"initial must be torch.ComplexDouble \(the program's precision\), got torch.float64"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c, initial=torch.eye(2, dtype=torch.float64)[None])
    with pytest.raises(RuntimeError, match="not normalised|trace 1"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c, initial=2 * torch.eye(2, dtype=torch.complex128).expand(2, 2, 2))
    with pytest.raises(ValueError, match="initial has 3 task"):
        qfleet.open_outputs(p, u, rates=r, drift_coeffs=c,
                            initial=torch.eye(2, dtype=torch.complex128).expand(3, 2, 2) / 2)
    with pytest.raises(ValueError, match="fidelity of task 1 is not finite: the inputs overflow"):
        qfleet.open_outputs(p, torch.tensor([[[0.0, 0.0]] * 3, [[1e300, 0.0]] * 3], dtype=torch.float64),
                            rates=r, drift_coeffs=c)
    with pytest.raises(RuntimeError, match="Hermitian"):
        qfleet.OpenSystem(2).control(X).observable(LOWER).segments(2, 1.0).compile()
    with pytest.raises(RuntimeError, match="level 2 out of range"):
        qfleet.OpenSystem(2).control(X).computational_subspace([2]).segments(2, 1.0).compile()


def test_python_builder_names_every_cpp_builder_method(qfleet):
    """The Python OpenSystem has every builder method of the C++ one (include/qfleet/open_system.hpp)."""
    import pathlib
    import re
    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "qfleet" / "open_system.hpp"
    names = set(re.findall(r"^ *OpenSystem& (\w+)\(", header.read_text(), re.M))  # the builder methods
    assert len(names) >= 14, names
    assert sorted(n for n in names if not hasattr(qfleet.OpenSystem, n)) == []
