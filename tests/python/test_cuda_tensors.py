"""CUDA tensors through the operators: the program's GPU copy reads and writes them
in place on PyTorch's current stream. References: finite differences (gradcheck on
the GPU) and the cpu backend, which the other files check against PennyLane and QuTiP
(so this file needs neither on a GPU machine). Everything here needs a GPU, except the device-option
checks at the end."""
import os

import numpy as np
import pytest
import torch

from open_problems import build, random_problem

needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA device visible: CUDA tensors need a GPU (the kernels they reach run on the CPU in the C++ "
           "tests BackendMatrix.*, DmMatrix.*, OpenMatrix.*)")


def classifier(qfleet, n, layers):
    c = qfleet.Circuit(n)
    c.angle_embedding(list(range(n))).strongly_entangling_layers(list(range(n)), layers)
    for q in range(n):
        c.expval(f"Z{q}")
    c.probs([0, 1])
    return c


def qubit_system(qfleet, seed, n_seg=3):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, 2, n_seg=n_seg)
    return p, build(qfleet, p, 2).initial_state([1, 0]).target_state([0, 1])


@needs_gpu
@pytest.mark.parametrize("precision", ["complex128", "complex64"])
def test_circuit_on_cuda_tensors_matches_the_cpu_backend(qfleet, precision):
    c = classifier(qfleet, 4, 2)
    dt = torch.float64 if precision == "complex128" else torch.float32
    tol = 1e-12 if precision == "complex128" else 2e-5
    cpu_prog, gpu_prog = c.compile(precision), c.compile(precision, device="cuda")
    for B in (1, 33, 257):
        x = torch.rand(B, 4, dtype=dt)
        for w in (torch.rand(cpu_prog.n_weights(), dtype=dt), torch.rand(B, cpu_prog.n_weights(), dtype=dt)):
            xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
            xg, wg = x.cuda().requires_grad_(), w.cuda().requires_grad_()
            yc = qfleet.circuit_forward(cpu_prog, xc, wc)
            yg = qfleet.circuit_forward(gpu_prog, xg, wg)
            assert yg.device == xg.device and yg.dtype == dt
            assert torch.allclose(yg.cpu(), yc, atol=tol, rtol=0)
            cot = torch.rand_like(yc)
            (yc * cot).sum().backward()
            (yg * cot.cuda()).sum().backward()
            assert xg.grad.device == xg.device and wg.grad.shape == w.shape
            assert torch.allclose(xg.grad.cpu(), xc.grad, atol=10 * tol, rtol=0)
            assert torch.allclose(wg.grad.cpu(), wc.grad, atol=10 * tol * B, rtol=0)


@needs_gpu
def test_circuit_gradcheck_on_cuda(qfleet):
    prog = classifier(qfleet, 3, 2).compile(device="cuda")
    x = torch.rand(5, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    w = torch.rand(prog.n_weights(), dtype=torch.float64, device="cuda", requires_grad=True)
    # nondet_tol: the shared weights' gradient is summed over the batch with atomics on the GPU
    assert torch.autograd.gradcheck(lambda a, b: qfleet.circuit_forward(prog, a, b), (x, w), nondet_tol=1e-12)


@needs_gpu
def test_layer_trains_on_cuda_like_on_the_cpu(qfleet):
    c = classifier(qfleet, 3, 2)
    gpu_layer = qfleet.QuantumLayer(c, seed=3, device="cuda").to("cuda")
    cpu_layer = qfleet.QuantumLayer(c, seed=3)
    x = torch.rand(64, 3, dtype=torch.float64)
    target = torch.rand(64, c.compile().n_outputs(), dtype=torch.float64)
    for layer, xs, ts in ((gpu_layer, x.cuda(), target.cuda()), (cpu_layer, x, target)):
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            ((layer(xs) - ts) ** 2).mean().backward()
            opt.step()
    assert gpu_layer.weight.device.type == "cuda"
    assert torch.allclose(gpu_layer.weight.detach().cpu(), cpu_layer.weight.detach(), atol=1e-12, rtol=0)


@needs_gpu
def test_calls_run_on_the_current_stream(qfleet):
    prog = classifier(qfleet, 4, 3).compile(device="cuda")
    x = torch.rand(512, 4, dtype=torch.float64)
    w = torch.rand(prog.n_weights(), dtype=torch.float64)
    ref = qfleet.circuit_forward(classifier(qfleet, 4, 3).compile(), x, w)
    side = torch.cuda.Stream()
    xg, wg = x.cuda(), w.cuda()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = qfleet.circuit_forward(prog, xg, wg)
        z = y * 2  # ordered after the qfleet kernel on the same stream
    torch.cuda.current_stream().wait_stream(side)
    assert torch.allclose(z.cpu(), 2 * ref, atol=1e-12, rtol=0)


@needs_gpu
def test_forward_and_backward_capture_in_a_cuda_graph(qfleet):
    c = classifier(qfleet, 4, 2)
    prog = c.compile(device="cuda")
    w = torch.rand(prog.n_weights(), dtype=torch.float64, device="cuda", requires_grad=True)
    static_x = torch.rand(128, 4, dtype=torch.float64, device="cuda", requires_grad=True)

    def step():
        y = qfleet.circuit_forward(prog, static_x, w)
        loss = (y ** 2).sum()
        return torch.autograd.grad(loss, (static_x, w))

    side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graph asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gx, gw = step()
    for seed in range(3):
        new_x = torch.rand(128, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            static_x.copy_(new_x.cuda())
        graph.replay()
        xe = new_x.cuda().requires_grad_()
        ex, ew = torch.autograd.grad((qfleet.circuit_forward(prog, xe, w) ** 2).sum(), (xe, w))
        torch.cuda.synchronize()
        assert torch.allclose(gx, ex, atol=1e-12, rtol=0)
        assert torch.allclose(gw, ew, atol=1e-10, rtol=0)


@needs_gpu
@pytest.mark.parametrize("algorithm", ["fomaml", "maml"])
def test_meta_control_step_captures_in_a_cuda_graph(qfleet, algorithm):
    """The meta-control app's training step (the C++ library's MetaStep, then Adam) on CUDA tensors,
    captured once and replayed on new task batches: bit-identical to the same step run eagerly, and
    equal to the cpu backend's gradient."""
    from qfleet import meta_control as mc
    keys = {"algorithm": algorithm, "inner_steps": 2, "hidden_width": 16, "n_segments": 20, "meta_batch": 64}
    gpu_cfg = mc.make_config(mc.resolve_config({**keys, "device": "cuda"}))
    cpu_cfg = mc.make_config(mc.resolve_config({**keys, "device": "cpu"}))
    step = mc.MetaStep(gpu_cfg)
    gen = torch.Generator().manual_seed(7)
    theta0 = (torch.rand(mc.policy_size(gpu_cfg), generator=gen, dtype=torch.float64) - 0.5) * 0.4
    batches = [torch.rand(64, 2, generator=gen, dtype=torch.float64) * 0.1 + 0.005 for _ in range(4)]

    def make_state():
        theta = theta0.cuda().requires_grad_()
        opt = torch.optim.Adam([theta], lr=0.01, capturable=True)
        return theta, opt

    def train_step(theta, opt, noise):
        g = step.gradient(theta.detach(), noise)
        theta.grad = g
        opt.step()
        return g

    # eager: the reference trajectory
    theta_e, opt_e = make_state()
    eager = []
    for noise in batches:
        g = train_step(theta_e, opt_e, noise.cuda())
        eager.append((g.clone(), theta_e.detach().clone()))
    # maml's Hessian-vector products are central differences: rounding differences grow by 1/eps there
    tol = 1e-12 if algorithm == "fomaml" else 1e-8
    assert torch.allclose(eager[0][0].cpu(), mc.meta_gradient(cpu_cfg, theta0, batches[0]), atol=tol, rtol=0)

    # captured: a warm-up step on a side stream (torch.cuda.graph's rule; it also creates Adam's
    # state), back to the start, then one capture of the step
    theta_g, opt_g = make_state()
    static_noise = batches[0].cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        train_step(theta_g, opt_g, static_noise)
    torch.cuda.current_stream().wait_stream(side)
    with torch.no_grad():
        theta_g.copy_(theta0.cuda())
        for state in opt_g.state[theta_g].values():
            state.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_g = train_step(theta_g, opt_g, static_noise)
    for (g_ref, theta_ref), noise in zip(eager, batches):
        static_noise.copy_(noise.cuda())
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(static_g, g_ref), (static_g - g_ref).abs().max().item()
        assert torch.equal(theta_g.detach(), theta_ref)


@needs_gpu
def test_open_system_on_cuda_tensors(qfleet):
    _, system = qubit_system(qfleet, 11)
    # dopri5: the two backends' step controllers may accept different steps from last-bit differences
    for solver, dt, tol in (("exact", 0.0, 1e-10), ("rk4", 0.05, 1e-10), ("dopri5", 0.0, 1e-7)):
        gpu = qfleet.OpenSystemLayer(system, solver=solver, dt=dt, device="cuda")
        cpu = qfleet.OpenSystemLayer(system, solver=solver, dt=dt)
        u = torch.rand(40, 3, 2, dtype=torch.float64)
        g = torch.rand(40, 2, dtype=torch.float64) * 0.2 + 0.01
        cf = torch.rand(1, dtype=torch.float64)  # shared drift coefficient: its gradient sums over tasks
        args_c = [t.clone().requires_grad_() for t in (u, g, cf)]
        args_g = [t.cuda().requires_grad_() for t in (u, g, cf)]
        fc, fg = cpu(*args_c), gpu(*args_g)
        assert fg.device.type == "cuda"
        assert torch.allclose(fg.cpu(), fc, atol=tol, rtol=0), solver
        fc.sum().backward()
        fg.sum().backward()
        for a, b in zip(args_g, args_c):
            assert torch.allclose(a.grad.cpu(), b.grad, atol=100 * tol, rtol=0), solver


@needs_gpu
def test_open_gradcheck_and_final_states_on_cuda(qfleet):
    _, system = qubit_system(qfleet, 12)
    layer = qfleet.OpenSystemLayer(system, device="cuda")
    u = torch.rand(2, 3, 2, dtype=torch.float64, device="cuda", requires_grad=True)
    g = (torch.rand(2, 2, dtype=torch.float64, device="cuda") * 0.2 + 0.01).requires_grad_()
    c = torch.rand(2, 1, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, e: layer(a, b, e), (u, g, c), nondet_tol=1e-12)
    with torch.no_grad():
        rho = qfleet.open_final_state(layer.program, u, g, c)
        # the cpu backend's final states (test_open.py's test_final_states_match_qutip_and_refuse_gradients
        # checks those against QuTiP's propagators)
        want = qfleet.open_final_state(qfleet.OpenSystemLayer(system).program, u.cpu(), g.cpu(), c.cpu())
    assert rho.device.type == "cuda" and rho.shape == (2, 2, 2)
    assert torch.max(torch.abs(rho.cpu() - want)) < 1e-10


@needs_gpu
@pytest.mark.parametrize("solver,kw", [("exact", {}), ("exact", {"exact": "action"}), ("rk4", {"dt": 0.05})])
def test_open_outputs_on_cuda_tensors_match_the_cpu(qfleet, solver, kw):
    """Every output of open_outputs (fidelity, leakage, expectation values at every boundary, final
    states) and its gradients w.r.t. every input (amplitudes, drift, rates, per-task durations and
    initial states) from CUDA tensors, against the same call on CPU tensors (test_open_outputs.py
    checks the cpu backend against finite differences and dynamiqs)."""
    _, system = qubit_system(qfleet, 13)
    system.observable(np.diag([1.0, -1.0]).astype(complex)).computational_subspace([0])
    torch.manual_seed(3)
    B = 6
    raw = torch.randn(B, 2, 2, dtype=torch.complex128)
    rho = raw @ raw.conj().transpose(-1, -2)
    rho = rho / torch.diagonal(rho, dim1=-2, dim2=-1).sum(-1).real[:, None, None]
    inputs = (torch.rand(B, 3, 2, dtype=torch.float64), torch.rand(B, 1, dtype=torch.float64),
              torch.rand(B, 2, dtype=torch.float64) * 0.2 + 0.01, 0.1 + 0.2 * torch.rand(B, 3, dtype=torch.float64),
              rho)
    weights = [torch.randn(B, dtype=torch.float64), torch.randn(B, dtype=torch.float64),
               torch.randn(B, 4, 1, dtype=torch.float64), torch.randn(B, 2, 2, dtype=torch.complex128)]
    grads = {}
    for device in ("cpu", "cuda"):
        p = system.compile(solver, device=device, **kw)
        args = [t.to(device).requires_grad_() for t in inputs]
        o = qfleet.open_outputs(p, args[0], drift_coeffs=args[1], rates=args[2], durations=args[3], initial=args[4])
        assert o.fidelity.device.type == device
        loss = sum((v * w.to(device)).real.sum() for v, w in zip(o, weights))
        loss.backward()
        grads[device] = [v.detach().cpu() for v in o] + [a.grad.cpu() for a in args]
    for got, want in zip(grads["cuda"], grads["cpu"]):
        assert torch.allclose(got, want, atol=1e-9, rtol=0), (solver, kw, (got - want).abs().max().item())


@needs_gpu
def test_cuda_tensors_need_a_gpu_copy_on_their_device(qfleet):
    c = classifier(qfleet, 2, 1)
    prog = c.compile()  # cpu: no GPU copy
    x = torch.rand(3, 2, dtype=torch.float64, device="cuda")
    w = torch.rand(prog.n_weights(), dtype=torch.float64, device="cuda")
    with pytest.raises(ValueError, match="no GPU copy.*device='cuda'"):
        qfleet.circuit_forward(prog, x, w)
    with pytest.raises(ValueError, match="one device"):
        qfleet.circuit_forward(c.compile(device="cuda"), x, w.cpu())
    _, system = qubit_system(qfleet, 13)
    with pytest.raises(ValueError, match="no GPU copy"):
        qfleet.OpenSystemLayer(system)(torch.rand(2, 3, 2, dtype=torch.float64, device="cuda"),
                                       torch.rand(2, 2, dtype=torch.float64, device="cuda"),
                                       torch.rand(1, dtype=torch.float64, device="cuda"))
    with pytest.raises(ValueError, match="one device"):  # the CUDA kernel is chosen by rates alone
        qfleet.OpenSystemLayer(system, device="cuda")(torch.rand(2, 3, 2, dtype=torch.float64),
                                                      torch.rand(2, 2, dtype=torch.float64, device="cuda"),
                                                      torch.rand(1, dtype=torch.float64, device="cuda"))
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="copy is on cuda:0"):
            qfleet.circuit_forward(c.compile(device="cuda"), x.to("cuda:1"), w.to("cuda:1"))


def test_layer_device_option(qfleet):
    # Runs everywhere: "automatic" is the cpu where no GPU is visible, "cuda" is then a clear error.
    c = classifier(qfleet, 3, 1)
    x = torch.rand(4, 3, dtype=torch.float64)
    a = qfleet.QuantumLayer(c, seed=2, device="automatic")
    b = qfleet.QuantumLayer(c, seed=2)
    assert torch.allclose(a(x), b(x), atol=1e-12, rtol=0)
    with pytest.raises(RuntimeError, match="device: expected"):
        qfleet.QuantumLayer(c, device="tpu")
    if not qfleet.built_with_cuda():
        assert qfleet.cuda_device_count() == 0
        with pytest.raises(RuntimeError, match="no CUDA backend"):
            qfleet.QuantumLayer(c, device="cuda")
    elif not torch.cuda.is_available():
        assert qfleet.cuda_device_count() == 0
        with pytest.raises(RuntimeError, match="no CUDA device is visible"):
            qfleet.QuantumLayer(c, device="cuda")
    else:  # the engine sees what torch sees where its CUDA backend is built
        assert qfleet.cuda_device_count() == torch.cuda.device_count()


def test_built_with_cuda_as_configured(qfleet):
    # scripts/test.sh says whether the build it tests configured the CUDA backend (nvcc and a GPU):
    # the pip-installed wheel must then have it too.
    want = os.environ.get("QFLEET_EXPECT_CUDA_BACKEND")
    if want is None:
        pytest.skip("QFLEET_EXPECT_CUDA_BACKEND is not set (scripts/test.sh sets it from the CMake build)")
    assert qfleet.built_with_cuda() == (want == "1")
