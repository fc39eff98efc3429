"""Open systems through torch: against QuTiP (its Liouvillian, propagators and
mesolve), gradcheck, bad input."""
import numpy as np
import pytest
import torch

from open_problems import build, random_problem

qt = pytest.importorskip("qutip")


def qutip_superop(p, d, u, c, g):
    """The channel as QuTiP builds it: product of expm(L_k dt) of qutip.liouvillian."""
    dt = p["T"] / p["n_seg"]
    S = qt.qeye([[d], [d]]) if False else None
    total = None
    for k in range(p["n_seg"]):
        H = p["H0"] + sum(ci * h for ci, h in zip(c, p["drift"])) + sum(uk * h for uk, h in zip(u[k], p["controls"]))
        L = qt.liouvillian(qt.Qobj(H), [np.sqrt(gj) * qt.Qobj(l) for gj, l in zip(g, p["jumps"])])
        P = (L * dt).expm()
        total = P if total is None else P * total
    return total


@pytest.mark.parametrize("d", [2, 3, 4])
def test_state_fidelity_matches_qutip_propagators_and_mesolve(qfleet, d):
    rng = np.random.default_rng(d)
    p = random_problem(rng, d)
    psi0 = rng.normal(size=d) + 1j * rng.normal(size=d)
    psi0 /= np.linalg.norm(psi0)
    tgt = rng.normal(size=d) + 1j * rng.normal(size=d)
    tgt /= np.linalg.norm(tgt)
    layer = qfleet.OpenSystemLayer(build(qfleet, p, d).initial_state(psi0).target_state(tgt))
    B = 3
    u = torch.tensor(rng.uniform(-1, 1, size=(B, p["n_seg"], 2)))
    c = torch.tensor(rng.uniform(-1, 1, size=(B, 1)))
    g = torch.tensor(rng.uniform(0.01, 0.2, size=(B, 2)))
    F = layer(u, g, c)
    rho0 = qt.operator_to_vector(qt.Qobj(np.outer(psi0, psi0.conj())))
    proj = qt.Qobj(np.outer(tgt, tgt.conj()))
    for b in range(B):
        S = qutip_superop(p, d, u[b].numpy(), c[b].numpy(), g[b].numpy())
        rho = qt.vector_to_operator(S * rho0)
        ref = qt.expect(proj, rho)
        assert abs(F[b].item() - ref) < 1e-10
    # mesolve (an ODE solver, tolerances 1e-12): the same to ~1e-8, one task
    b = 0
    H = [qt.Qobj(p["H0"] + sum(ci * h for ci, h in zip(c[b].numpy(), p["drift"])))]
    tlist = np.linspace(0, p["T"], p["n_seg"] + 1)
    for k, h in enumerate(p["controls"]):
        vals = u[b, :, k].numpy()
        H.append([qt.Qobj(h), lambda t, vals=vals: vals[min(int(t * p["n_seg"] / p["T"]), p["n_seg"] - 1)]])
    res = None
    rho = qt.Qobj(np.outer(psi0, psi0.conj()))
    for k in range(p["n_seg"]):  # segment by segment, so the solver never steps over a jump in u
        Hk = p["H0"] + sum(ci * h for ci, h in zip(c[b].numpy(), p["drift"])) + \
            sum(u[b, k, j].item() * h for j, h in enumerate(p["controls"]))
        res = qt.mesolve(qt.Qobj(Hk), rho, [tlist[k], tlist[k + 1]],
                         [np.sqrt(gj) * qt.Qobj(l) for gj, l in zip(g[b].numpy(), p["jumps"])],
                         options={"atol": 1e-13, "rtol": 1e-12, "nsteps": 100000})
        rho = res.states[-1]
    assert abs(F[b].item() - qt.expect(proj, rho)) < 1e-8


@pytest.mark.parametrize("d", [2, 3])
def test_average_gate_fidelity_matches_qutip(qfleet, d):
    rng = np.random.default_rng(10 + d)
    p = random_problem(rng, d, n_drift=0)
    U, _ = np.linalg.qr(rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d)))
    layer = qfleet.OpenSystemLayer(build(qfleet, p, d).propagate_gate().target_unitary(U))
    B = 2
    u = torch.tensor(rng.uniform(-1, 1, size=(B, p["n_seg"], 2)))
    g = torch.tensor(rng.uniform(0.01, 0.2, size=(B, 2)))
    F = layer(u, g)
    SU = qt.to_super(qt.Qobj(U))
    for b in range(B):
        S = qutip_superop(p, d, u[b].numpy(), [], g[b].numpy())
        f_pro = (SU.dag() * S).tr().real / d**2
        assert abs(F[b].item() - (d * f_pro + 1) / (d + 1)) < 1e-10
        # and QuTiP's own average_gate_fidelity (Choi-based), relative to U
        assert abs(F[b].item() - qt.average_gate_fidelity(S, qt.Qobj(U))) < 1e-10


def test_gradcheck_amplitudes_rates_drift(qfleet):
    rng = np.random.default_rng(5)
    p = random_problem(rng, 2, n_seg=3)
    layer = qfleet.OpenSystemLayer(build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]))
    u = torch.rand(2, 3, 2, requires_grad=True)
    g = (torch.rand(2, 2) * 0.2 + 0.01).requires_grad_()
    c = torch.rand(2, 1, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, e: layer(a, b, e), (u, g, c))
    # shared amplitudes and rates (no batch dimension): gradients summed over tasks
    us = torch.rand(3, 2, requires_grad=True)
    gs = (torch.rand(2) * 0.2).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b, e: layer(a, b, e), (us, gs, c))


@pytest.mark.parametrize("solver", ["rk4", "euler", "dopri5", "tsit5"])
def test_every_solver_differentiates(qfleet, solver):
    rng = np.random.default_rng(6)
    p = random_problem(rng, 2, n_seg=2)
    layer = qfleet.OpenSystemLayer(build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]), solver=solver,
                                   dt=0.05 if solver in ("rk4", "euler") else 0.0)
    u = torch.rand(2, 2, 2, requires_grad=True)
    g = (torch.rand(2, 2) * 0.2 + 0.01).requires_grad_()
    c = torch.rand(2, 1, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, e: layer(a, b, e), (u, g, c), atol=1e-5)



@pytest.mark.parametrize("solver", ["exact", "dopri5"])
def test_backward_resumes_from_the_forward(qfleet, solver):
    """The layer's differentiable forward prepares what the backward needs: with every
    parameter that needs a gradient given per task, each task's gradient row (one fused
    vjp with unit cotangents: the Jacobian is block diagonal), so the backward only scales
    the rows; otherwise the states at the segment boundaries (OpenProgram::vjp_saved), so
    the backward runs only the reverse sweep. Either way the backward computes no
    propagator / step sequence again; the gradients are the fused engine vjp's
    (open_backward): to rounding for the rows with other cotangents, exactly otherwise.
    create_graph and no_grad keep their ways."""
    rng = np.random.default_rng(9)
    p = random_problem(rng, 2, n_seg=4)
    layer = qfleet.OpenSystemLayer(build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]), solver=solver)
    prog = layer.program
    u = torch.rand(3, 4, 2, requires_grad=True)
    g = (torch.rand(3, 2) * 0.2 + 0.01).requires_grad_()
    c = torch.rand(3, 1, requires_grad=True)
    computed = lambda: prog.cache_stats()[0]  # noqa: E731
    ones = torch.ones(3, dtype=u.dtype)
    # everything per task: gradient rows
    c0 = computed()
    f = layer(u, g, c)
    c1 = computed()
    assert c1 - c0 == 3 * 4  # 3 tasks x 4 segments, all different
    w = torch.rand(3, dtype=f.dtype)
    f.backward(w)
    assert computed() == c1  # no forward sweep in the backward
    want = torch.ops.qfleet.open_backward(prog, u.detach(), c.detach(), g.detach(), w)
    for got, ref in zip((u.grad, c.grad, g.grad), want):  # rounding: ~1e-15 of the largest entry here
        assert torch.allclose(got, ref, rtol=1e-12, atol=1e-13 * float(ref.abs().max()))
    assert not torch.equal(f.detach(), torch.zeros_like(f)) and torch.equal(f.detach(), layer(u, g, c).detach())
    u.grad = g.grad = c.grad = None
    layer(u, g, c).sum().backward()
    want = torch.ops.qfleet.open_backward(prog, u.detach(), c.detach(), g.detach(), ones)
    assert torch.equal(u.grad, want[0]) and torch.equal(c.grad, want[1]) and torch.equal(g.grad, want[2])
    # a shared parameter that needs a gradient (the drift coefficient): saved states
    cs = c.detach()[0].clone().requires_grad_()
    u.grad = None
    c2 = computed()
    f = layer(u, g.detach(), cs)
    assert computed() - c2 == 3 * 4
    f.backward(w)
    assert computed() - c2 == 3 * 4  # no forward sweep in the backward
    want = torch.ops.qfleet.open_backward(prog, u.detach(), cs.detach(), g.detach(), w)
    assert torch.equal(u.grad, want[0]) and torch.equal(cs.grad, want[1])
    # create_graph records the backward op (the fused vjp: its own forward sweep), as before
    (gu,) = torch.autograd.grad(layer(u, g, c).sum(), u, create_graph=True)
    assert torch.allclose(gu, torch.ops.qfleet.open_backward(prog, u.detach(), c.detach(), g.detach(), ones)[0],
                          atol=0, rtol=0)
    # only the amplitudes need a gradient; shared rates and drift
    ua = u.detach().clone().requires_grad_()
    layer(ua, g.detach()[0], c.detach()[0]).sum().backward()
    assert torch.equal(ua.grad, torch.ops.qfleet.open_backward(prog, ua.detach(), c.detach()[0], g.detach()[0],
                                                               ones)[0])
    # everything shared: one simulation stands for the batch, in both calls
    us, gs, cs = (t.detach()[0].clone().requires_grad_() for t in (u, g, c))
    layer(us, gs, cs).sum().backward()
    want = torch.ops.qfleet.open_backward(prog, us.detach(), cs.detach(), gs.detach(), torch.ones(1, dtype=f.dtype))
    assert torch.equal(us.grad, want[0]) and torch.equal(cs.grad, want[1]) and torch.equal(gs.grad, want[2])


def local_qubit_problem(n):
    """n qubits with local terms: Z frequencies and a ZZ chain, X/Y drives, relaxation and dephasing."""
    def on(op, q):
        return qt.tensor([op if i == q else qt.qeye(2) for i in range(n)]).full()
    h0 = sum((0.3 + 0.1 * q) * on(qt.sigmaz(), q) for q in range(n))
    h0 = h0 + sum(0.05 * on(qt.sigmaz(), q) @ on(qt.sigmaz(), q + 1) for q in range(n - 1))
    controls = [on(op, q) for q in range(n) for op in (qt.sigmax(), qt.sigmay())]
    jumps = [on(op, q) for q in range(n) for op in (qt.destroy(2), qt.sigmaz())]
    return {"H0": h0, "drift": [], "controls": controls, "jumps": jumps, "T": 0.8, "n_seg": 4}


def test_lindblad_form_and_tsit5_match_qutip_mesolve(qfleet):
    # 3 qubits (d = 8): the generator applied as sparse d x d products (form "lindblad"),
    # stepped by Tsit5, against QuTiP's mesolve segment by segment, and against the dense
    # superoperator form of the same solver.
    n, d = 3, 8
    p = local_qubit_problem(n)
    rng = np.random.default_rng(12)
    psi0 = rng.normal(size=d) + 1j * rng.normal(size=d)
    psi0 /= np.linalg.norm(psi0)
    tgt = np.zeros(d)
    tgt[-1] = 1

    def system():
        s = qfleet.OpenSystem(d).drift(p["H0"]).segments(p["n_seg"], p["T"]).initial_state(psi0).target_state(tgt)
        for h in p["controls"]:
            s.control(h)
        for l in p["jumps"]:
            s.jump(l)
        return s

    B = 2
    u = torch.tensor(rng.uniform(-1, 1, size=(B, p["n_seg"], len(p["controls"]))), requires_grad=True)
    g = torch.tensor(rng.uniform(0.01, 0.1, size=(B, len(p["jumps"]))), requires_grad=True)
    layers = {form: qfleet.OpenSystemLayer(system(), solver="tsit5", rtol=1e-11, atol=1e-13, form=form)
              for form in ("lindblad", "superoperator")}
    F = layers["lindblad"](u, g)
    F.sum().backward()
    grads = (u.grad.clone(), g.grad.clone())
    u.grad = g.grad = None
    F_dense = layers["superoperator"](u, g)
    F_dense.sum().backward()
    assert torch.allclose(F, F_dense, atol=1e-12, rtol=0)
    assert torch.allclose(grads[0], u.grad, atol=1e-11, rtol=0)
    assert torch.allclose(grads[1], g.grad, atol=1e-11, rtol=0)
    for b in range(B):
        rho = qt.Qobj(np.outer(psi0, psi0.conj()))
        dt = p["T"] / p["n_seg"]
        for k in range(p["n_seg"]):
            Hk = p["H0"] + sum(u[b, k, j].item() * h for j, h in enumerate(p["controls"]))
            res = qt.mesolve(qt.Qobj(Hk), rho, [0, dt], [np.sqrt(gj) * qt.Qobj(l) for gj, l in zip(g[b].tolist(), p["jumps"])],
                             options={"atol": 1e-13, "rtol": 1e-12, "nsteps": 100000})
            rho = res.states[-1]
        assert abs(F[b].item() - (rho.full()[-1, -1]).real) < 1e-8


def test_exact_action_equals_the_propagator(qfleet):
    # 3 qubits (d = 8): the exact solver by the action of the exponential (Taylor steps in
    # Lindblad form) and by its propagator compute the same map, and the same gradients.
    n, d = 3, 8
    p = local_qubit_problem(n)
    rng = np.random.default_rng(13)
    psi0, tgt = np.zeros(d), np.zeros(d)
    psi0[0] = tgt[-1] = 1
    s = qfleet.OpenSystem(d).drift(p["H0"]).segments(p["n_seg"], p["T"]).initial_state(psi0).target_state(tgt)
    for h in p["controls"]:
        s.control(h)
    for l in p["jumps"]:
        s.jump(l)
    assert "exact" not in s.to_json() and s.to_json(exact="action")["exact"] == "action"
    u = torch.tensor(rng.uniform(-1, 1, size=(2, p["n_seg"], len(p["controls"]))), requires_grad=True)
    g = torch.tensor(rng.uniform(0.01, 0.1, size=(2, len(p["jumps"]))), requires_grad=True)
    out = {}
    for exact in ("action", "propagator"):
        F = qfleet.OpenSystemLayer(s, solver="exact", exact=exact)(u, g)
        out[exact] = (F.detach(),) + torch.autograd.grad(F.sum(), (u, g))
    for a, b in zip(out["action"], out["propagator"]):
        assert torch.allclose(a, b, atol=1e-11, rtol=0)


def test_structured_operators_equal_their_kronecker_matrices(qfleet):
    # A qubit (subsystem 0) and a qutrit (subsystem 1), d = 6: H0, controls and jumps given as
    # qfleet.pauli / qfleet.local / sums, against the same system with the matrices built by
    # numpy's kron; equal fidelities and gradients (the reader builds the very same matrices).
    X = np.array([[0, 1], [1, 0]]); Z = np.diag([1, -1]); lower = np.array([[0, 1], [0, 0]])
    a = np.diag(np.sqrt([1.0, 2.0]), 1); n3 = np.diag([0.0, 1.0, 2.0]); I2, I3 = np.eye(2), np.eye(3)
    psi0 = np.zeros(6); psi0[0] = 1
    tgt = np.zeros(6); tgt[4] = 1

    def system(structured):
        s = qfleet.OpenSystem(6, subsystems=[2, 3]) if structured else qfleet.OpenSystem(6)
        if structured:
            s.drift(0.3 * qfleet.local(Z, 0) + qfleet.local(n3, on=[1]) * 0.1)
            s.control(qfleet.local(X, 0)).control(qfleet.local(np.kron(X, a + a.T), on=[0, 1]))
            s.jump(qfleet.local(lower, 0)).jump(qfleet.local(a, 1))
        else:
            s.drift(0.3 * np.kron(Z, I3) + 0.1 * np.kron(I2, n3))
            s.control(np.kron(X, I3)).control(np.kron(X, a + a.T))
            s.jump(np.kron(lower, I3)).jump(np.kron(I2, a))
        return s.segments(3, 1.2).initial_state(psi0).target_state(tgt)

    u = torch.tensor([[0.7, -0.4], [1.1, 0.2], [-0.3, 0.9]], requires_grad=True)
    g = torch.tensor([0.05, 0.02], requires_grad=True)
    out = []
    for structured in (True, False):
        F = qfleet.OpenSystemLayer(system(structured), solver="rk4", dt=0.01)(u, g)
        gu, gg = torch.autograd.grad(F.sum(), (u, g))
        out.append((F, gu, gg))
    for x, y in zip(*out):
        assert torch.equal(x, y)
    # Pauli sums on qubits, against kron of the Pauli matrices (sigma^- = (X + iY)/2).
    Y = np.array([[0, -1j], [1j, 0]])
    P = qfleet.pauli([(0.5, "X0 X1"), (-0.2, "Z1")])
    Sm = qfleet.pauli([(0.5, "X0"), (0.5j, "Y0")])
    fid = []
    for structured in (True, False):
        s = qfleet.OpenSystem(4)
        s.drift(P if structured else 0.5 * np.kron(X, X) - 0.2 * np.kron(I2, Z))
        s.jump(Sm if structured else np.kron((X + 1j * Y) / 2, I2))
        s.control(qfleet.pauli("Y0") if structured else np.kron(Y, I2))
        s.segments(2, 1.0).initial_state(np.eye(4)[0]).target_state(np.eye(4)[3])
        fid.append(qfleet.OpenSystemLayer(s)(torch.tensor([[0.4], [-0.8]]), torch.tensor([0.1])))
    assert torch.allclose(fid[0], fid[1], atol=1e-14, rtol=0)
    with pytest.raises(RuntimeError, match="Pauli strings need a system of qubits"):
        qfleet.OpenSystem(6, subsystems=[2, 3]).drift(qfleet.pauli("Z0")).segments(1, 1.0).target_state(tgt).compile()
    with pytest.raises(RuntimeError, match="multiply to 4 but dim is 6"):
        qfleet.OpenSystem(6, subsystems=[2, 2]).segments(1, 1.0).target_state(tgt).compile()


def test_device_option(qfleet):
    rng = np.random.default_rng(9)
    p = random_problem(rng, 2, n_seg=3)
    system = build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1])
    u = torch.rand(4, 3, 2, dtype=torch.float64, requires_grad=True)
    g = (torch.rand(4, 2, dtype=torch.float64) * 0.2 + 0.01)
    c = torch.rand(4, 1, dtype=torch.float64)
    cpu = qfleet.OpenSystemLayer(system)(u, g, c)
    auto = qfleet.OpenSystemLayer(system, device="automatic")(u, g, c)  # the GPU only where one is visible
    assert torch.allclose(auto, cpu, atol=1e-12)
    (gu_a,) = torch.autograd.grad(auto.sum(), u)
    (gu_c,) = torch.autograd.grad(cpu.sum(), u)
    assert torch.allclose(gu_a, gu_c, atol=1e-11)
    with pytest.raises(RuntimeError, match="device: expected"):
        system.compile(device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            system.compile(device="cuda")


def test_bad_input_is_a_clear_error(qfleet):
    rng = np.random.default_rng(7)
    p = random_problem(rng, 2, n_seg=4)
    layer = qfleet.OpenSystemLayer(build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]))
    u, g, c = torch.rand(2, 4, 2), torch.rand(2, 2), torch.rand(2, 1)
    with pytest.raises(ValueError, match="rates is required"):
        layer(u, None, c)
    with pytest.raises(ValueError, match="amplitudes has shape"):
        layer(torch.rand(2, 5, 2), g, c)
    with pytest.raises(ValueError, match="agree on the batch size"):
        layer(u, torch.rand(3, 2), c)
    f = layer(u.float(), g.float(), c)  # float32 arguments: computed in float64, returned float32
    assert f.dtype == torch.float32 and torch.equal(f, layer(u, g, c).float())
    assert "segments=4, controls=2" in repr(layer) and "precision=complex128" in repr(layer), repr(layer)
    with pytest.raises(TypeError, match="torch.float64"):
        layer(u.half(), g, c)
    with pytest.raises(RuntimeError, match="rate"):
        layer(u, -g, c)
    # Finite inputs that overflow the solver: refused with the task and the largest input, not NaN.
    big = u.clone()
    big[1, 0, 0] = 1e300
    with pytest.raises(ValueError, match=r"fidelity of task 1 is not finite: the inputs overflow the solver "
                                         r"\(the largest magnitudes: amplitudes 1e\+300"):
        layer(big, g, c)
    with pytest.raises(ValueError, match="overflow the solver"):
        layer(big.requires_grad_(), g, c)  # (the forward that keeps its backward's rows)
    with pytest.raises(RuntimeError, match="Hermitian"):
        qfleet.OpenSystem(2).control(np.array([[0, 1], [0, 0]])).segments(2, 1.0).target_state([0, 1]).compile()
    with pytest.raises(ValueError, match="needs a target"):
        qfleet.OpenSystemLayer(qfleet.OpenSystem(2).control(np.eye(2)).segments(2, 1.0).initial_state([1, 0]))
    no_target = qfleet.OpenSystem(2).control(np.eye(2)).segments(2, 1.0).initial_state([1, 0]).compile()
    with pytest.raises(RuntimeError, match="fidelity needs a target"):
        qfleet.open_fidelity(no_target, torch.zeros(2, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="unknown solver"):
        qfleet.OpenSystemLayer(build(qfleet, p, 2).target_state([0, 1]), solver="rk45")


def test_opcheck_open_ops(qfleet):
    from test_circuits import OPCHECK_UTILS
    opcheck = pytest.importorskip("torch.library").opcheck
    rng = np.random.default_rng(8)
    p = random_problem(rng, 2, n_seg=3)
    prog = build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]).compile()
    u = torch.rand(2, 3, 2, requires_grad=True)
    g = (torch.rand(2, 2) * 0.1).requires_grad_()
    c = torch.rand(2, 1, requires_grad=True)
    opcheck(torch.ops.qfleet.open_forward.default, (prog, u, c, g), test_utils=OPCHECK_UTILS)
    opcheck(torch.ops.qfleet.open_backward.default, (prog, u.detach(), c.detach(), g.detach(), torch.rand(2)),
            test_utils=OPCHECK_UTILS)


def test_final_states_match_qutip_and_refuse_gradients(qfleet):
    rng = np.random.default_rng(9)
    d = 3
    p = random_problem(rng, d, n_seg=4)
    psi0 = np.eye(d)[0]
    prog = build(qfleet, p, d).initial_state(psi0).target_state(np.eye(d)[1]).compile()
    u = torch.tensor(rng.uniform(-1, 1, size=(2, 4, 2)))
    c = torch.tensor(rng.uniform(-1, 1, size=(2, 1)))
    g = torch.tensor(rng.uniform(0.01, 0.2, size=(2, 2)))
    rho = qfleet.open_final_state(prog, u, g, c)
    assert rho.shape == (2, d, d) and rho.dtype == torch.complex128
    for b in range(2):
        S = qutip_superop(p, d, u[b].numpy(), c[b].numpy(), g[b].numpy())
        ref = qt.vector_to_operator(S * qt.operator_to_vector(qt.Qobj(np.outer(psi0, psi0)))).full()
        assert np.max(np.abs(rho[b].numpy() - ref)) < 1e-10
    # gate problems give the superoperator
    gate = build(qfleet, p, d).propagate_gate().target_unitary(np.eye(d)).compile()
    S = qfleet.open_final_state(gate, u, g, c)
    assert S.shape == (2, d * d, d * d)
    with pytest.raises(ValueError, match="not differentiable"):
        qfleet.open_final_state(prog, u.clone().requires_grad_(), g, c)
    with torch.no_grad():
        qfleet.open_final_state(prog, u.clone().requires_grad_(), g, c)


def test_opcheck_final_state(qfleet):
    from test_circuits import OPCHECK_UTILS
    opcheck = pytest.importorskip("torch.library").opcheck
    rng = np.random.default_rng(11)
    p = random_problem(rng, 2, n_seg=3)
    prog = build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1]).compile()
    opcheck(torch.ops.qfleet.open_final_state.default, (prog, torch.rand(2, 3, 2), torch.rand(2, 1),
                                                         torch.rand(2, 2) * 0.1),
            test_utils=["test_faketensor", "test_aot_dispatch_dynamic"])
