"""Alternatives for the open-system workloads (2, 3 and the ladder sweeps).

Every builder takes (model, u [B, n_seg, n_ctrl], rates [B, n_jump]) and returns
(run, extract, threads, extra): `run()` does one call (forward + gradient of
Loss = sum_b (1 - F_avg_b), or forward only), `extract(result)` gives numpy
(F [B], grad_u or None, grad_rates or None).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from open_models import Model, Reference, f_avg_from_super, target_super

# --------------------------------------------------------------------------- PyTorch fixed step



def _jax_grad_runner(fidelities, u, rates):
    """run/extract for jax.value_and_grad of sum_b (1 - F_b) w.r.t. amplitudes and rates."""
    import jax
    import jax.numpy as jnp

    def loss(uu, rr):
        F = fidelities(uu, rr)
        return jnp.sum(1 - F), F

    ju, jr = jnp.asarray(u), jnp.asarray(rates)
    f = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))

    def run():
        out = f(ju, jr)
        jax.block_until_ready(out)
        return out

    def extract(r):
        (_, F), (gu, gr) = r
        return np.asarray(F), np.asarray(gu), np.asarray(gr)

    return run, extract


def _xla_threads() -> str:
    flags = os.environ.get("XLA_FLAGS", "")
    return ("XLA CPU, 1 (multi_thread_eigen off)" if "multi_thread_eigen=false" in flags
            else f"XLA CPU (default: {os.cpu_count()} cores)")

def steps_per_segment(model: Model, dt: float) -> tuple[int, float]:
    """ceil(segment / dt) equal steps per segment (the same rule as qfleet's rk4/euler):
    dt = 0.01 with 60 segments on T = 1 gives 2 steps of 1/120 per segment."""
    seg = model.T / model.n_seg
    n = max(1, math.ceil(seg / dt - 1e-9))
    return n, seg / n


class TorchFixedStep:
    """Research-code style: the d^2 basis operators |i><j| are propagated as density
    matrices [B, d^2, d, d] with the Lindblad right-hand side in matrix form, RK4 or
    Euler at a fixed dt, batched over tasks, autograd for the gradient.
    `fidelity(u [B, n_seg, n_ctrl], g [B, n_jump])` -> F_avg [B] (differentiable)."""

    def __init__(self, model: Model, method: str, dt: float):
        import torch

        d, c128 = model.d, torch.complex128
        self.model, self.method = model, method
        self.Hc = torch.tensor(np.stack(model.controls), dtype=c128)  # [C, d, d]
        self.H0 = torch.tensor(model.drift, dtype=c128)
        self.Ls = torch.tensor(np.stack(model.jumps), dtype=c128)  # [J, d, d]
        self.Lds = self.Ls.conj().transpose(-1, -2)
        self.LdLs = self.Lds @ self.Ls
        self.basis = torch.zeros(d * d, d, d, dtype=c128)
        for i in range(d):
            for j in range(d):
                self.basis[i + d * j, i, j] = 1.0  # column stacking index of |i><j|
        self.SU = torch.tensor(target_super(model.U_target), dtype=c128)
        self.n_sub, self.h = steps_per_segment(model, dt)

    def fidelity(self, ut, gt):
        import torch

        m, d, h = self.model, self.model.d, self.h
        B, K = gt.shape[0], d * d

        def rhs(rho, H):
            out = -1j * (H @ rho - rho @ H)
            for j in range(self.Ls.shape[0]):
                gj = gt[:, j].reshape(B, 1, 1, 1)
                out = out + gj * (self.Ls[j] @ rho @ self.Lds[j] - 0.5 * (self.LdLs[j] @ rho + rho @ self.LdLs[j]))
            return out

        rho = self.basis.expand(B, K, d, d)
        for k in range(m.n_seg):
            H = (self.H0 + torch.einsum("bc,cij->bij", ut[:, k].to(torch.complex128), self.Hc)).unsqueeze(1)
            for _ in range(self.n_sub):
                if self.method == "rk4":
                    k1 = rhs(rho, H)
                    k2 = rhs(rho + (h / 2) * k1, H)
                    k3 = rhs(rho + (h / 2) * k2, H)
                    k4 = rhs(rho + h * k3, H)
                    rho = rho + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
                else:
                    rho = rho + h * rhs(rho, H)
        # S[b, p + d q, m] = E(basis_m)[p, q]
        S = rho.transpose(-1, -2).reshape(B, K, K).transpose(1, 2)
        Fpro = torch.real(torch.einsum("ij,bij->b", self.SU.conj(), S)) / d**2
        return (d * Fpro + 1) / (d + 1)


def torch_fixed_step_case(model: Model, u, rates, method: str, dt: float):
    """Workloads 2 and 3: TorchFixedStep, forward + gradient w.r.t. amplitudes and rates."""
    import torch

    sim = TorchFixedStep(model, method, dt)
    ut = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    gt = torch.tensor(rates, dtype=torch.float64, requires_grad=True)

    def run():
        F = sim.fidelity(ut, gt)
        gu, gr = torch.autograd.grad((1 - F).sum(), (ut, gt))
        return F, gu, gr

    def extract(r):
        F, gu, gr = r
        return F.detach().numpy(), gu.numpy(), gr.numpy()

    extra = {"steps_per_segment": sim.n_sub, "step": sim.h, "total_steps": sim.n_sub * model.n_seg}
    return run, extract, f"torch intra-op {torch.get_num_threads()}", extra


# --------------------------------------------------------------------------- dynamiqs


_JAX_READY = False


def _jax_setup():
    global _JAX_READY
    import jax

    if not _JAX_READY:
        jax.config.update("jax_enable_x64", True)
        import dynamiqs as dq

        dq.set_precision("double")
        dq.set_progress_meter(False)
        _JAX_READY = True


def dynamiqs_case(model: Model, u, rates, method: str = "expm", with_grad: bool = True):
    """dynamiqs.mepropagator batched over tasks (flat batching: task b has its own
    pwc amplitudes and jump rates); gradient by jax.grad through it, jit-compiled."""
    _jax_setup()
    import jax
    import jax.numpy as jnp
    import dynamiqs as dq

    d = model.d
    times = jnp.linspace(0.0, model.T, model.n_seg + 1)
    Hc = [jnp.asarray(H) for H in model.controls]
    Lj = [jnp.asarray(L) for L in model.jumps]
    SU = jnp.asarray(target_super(model.U_target))
    has_drift = bool(np.any(model.drift != 0))
    H0 = jnp.asarray(model.drift)
    if method == "expm":
        meth = dq.method.Expm()
    elif method == "tsit5":
        meth = dq.method.Tsit5(rtol=1e-10, atol=1e-12)
    else:
        raise ValueError(method)

    def fidelities(uu, rr):
        H = None
        for c in range(len(Hc)):
            term = dq.pwc(times, uu[..., c], Hc[c])
            H = term if H is None else H + term
        if has_drift:
            H = H + H0
        Ls = [jnp.sqrt(rr[:, j])[:, None, None] * Lj[j] for j in range(len(Lj))]
        res = dq.mepropagator(H, Ls, jnp.array([0.0, model.T]), method=meth,
                              save_propagators=False, cartesian_batching=False)
        S = res.final_propagator.to_jax()
        S = S.reshape(uu.shape[0], d * d, d * d)
        Fpro = jnp.real(jnp.einsum("ij,bij->b", SU.conj(), S)) / d**2
        return (d * Fpro + 1) / (d + 1)

    ju = jnp.asarray(u)
    jr = jnp.asarray(rates)
    if with_grad:
        run, extract = _jax_grad_runner(fidelities, u, rates)
    else:
        f = jax.jit(fidelities)

        def run():
            out = f(ju, jr)
            jax.block_until_ready(out)
            return out

        def extract(r):
            return np.asarray(r), None, None

    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    extra = {"first_call_incl_jit_s": first}
    if method == "tsit5":
        extra["tolerances"] = "rtol=1e-10, atol=1e-12"
    return run, extract, _xla_threads(), extra


# --------------------------------------------------------------------------- QuTiP


def qutip_case(model: Model, u, rates, atol: float = 1e-10, rtol: float = 1e-10):
    """QuTiP mesolve per task (loop), forward only: the channel is obtained by
    evolving the identity superoperator; amplitudes as step-function (order 0)
    array coefficients."""
    import qutip as qt

    d = model.d
    B = u.shape[0]
    tlist = np.linspace(0.0, model.T, model.n_seg + 1)
    Hc = [qt.Qobj(H) for H in model.controls]
    Lj = [qt.Qobj(L) for L in model.jumps]
    H0 = qt.Qobj(model.drift)
    has_drift = bool(np.any(model.drift != 0))
    S0 = qt.to_super(qt.qeye(d))
    opts = {"atol": atol, "rtol": rtol, "nsteps": 10**6, "store_states": False,
            "store_final_state": True, "progress_bar": False}

    def run():
        out = np.empty((B, d * d, d * d), dtype=complex)
        for b in range(B):
            terms = [H0] if has_drift else []
            for c, H in enumerate(Hc):
                vals = np.append(u[b, :, c], u[b, -1, c])
                terms.append([H, qt.coefficient(vals, tlist=tlist, order=0)])
            c_ops = [np.sqrt(rates[b, j]) * L for j, L in enumerate(Lj)]
            res = qt.mesolve(qt.QobjEvo(terms), S0, [0.0, model.T], c_ops, options=opts)
            out[b] = res.final_state.full()
        return out

    def extract(S):
        return f_avg_from_super(S, model.U_target), None, None

    return run, extract, "1 (serial loop over tasks)", {"tolerances": f"atol={atol}, rtol={rtol}",
                                                        "method": "adams (QuTiP default)"}


# --------------------------------------------------------------------------- scipy


def scipy_case(model: Model, u, rates):
    """Piecewise-constant propagator product with scipy.linalg.expm, per task
    (loop), forward only. This is also the reference computation."""
    ref = Reference(model)
    B = u.shape[0]

    def run():
        return np.stack([ref.superop(u[b], rates[b]) for b in range(B)])

    def extract(S):
        return f_avg_from_super(S, model.U_target), None, None

    return run, extract, "1 (serial loop; BLAS unused at this size)", {}


def alternatives(quick: bool):
    """name -> (builder(model, u, rates) -> case, kind, mode, qfleet counterpart key)."""
    alts = {
        "PyTorch RK4 dt=0.01": (lambda m, u, r: torch_fixed_step_case(m, u, r, "rk4", 0.01),
                                "fixed-step", "fwd+grad", "rk4 dt=0.01"),
        "PyTorch RK4 dt=0.001": (lambda m, u, r: torch_fixed_step_case(m, u, r, "rk4", 0.001),
                                 "fixed-step", "fwd+grad", "rk4 dt=0.001"),
        "PyTorch Euler dt=0.01": (lambda m, u, r: torch_fixed_step_case(m, u, r, "euler", 0.01),
                                  "fixed-step", "fwd+grad", "euler dt=0.01"),
        "PyTorch Euler dt=0.001": (lambda m, u, r: torch_fixed_step_case(m, u, r, "euler", 0.001),
                                   "fixed-step", "fwd+grad", "euler dt=0.001"),
        "dynamiqs Expm (jax.grad)": (lambda m, u, r: dynamiqs_case(m, u, r, "expm", True),
                                     "exact", "fwd+grad", "exact"),
        "dynamiqs Tsit5 rtol=1e-10 (jax.grad)": (lambda m, u, r: dynamiqs_case(m, u, r, "tsit5", True),
                                                 "adaptive", "fwd+grad", "exact"),
        "QuTiP mesolve per task": (qutip_case, "adaptive", "fwd", "exact fwd"),
        "scipy expm product per task": (scipy_case, "reference", "fwd", "exact fwd"),
    }
    if quick:
        for k in ["PyTorch RK4 dt=0.001", "PyTorch Euler dt=0.001", "dynamiqs Tsit5 rtol=1e-10 (jax.grad)"]:
            alts.pop(k)
    return alts


# --------------------------------------------------------------------------- state transfer sweep


def transfer_fidelity_np(model: Model, rho: np.ndarray) -> np.ndarray:
    """rho [..., d, d] -> <target| rho |target> [...]."""
    t = model.psi_target
    return np.real(np.einsum("i,...ij,j->...", t.conj(), rho, t))


def dynamiqs_transfer_case(model: Model, u, rates, rtol: float, atol: float, method: str = "tsit5",
                           layout: str = "dense"):
    """dynamiqs.mesolve, state transfer psi0 -> target, batched over tasks by dynamiqs (flat
    batching: task b has its own pwc amplitudes and jump rates), jump operators multiplied by
    sqrt(rate); gradient of sum_b (1 - F_b) by jax.value_and_grad (dynamiqs' default gradient
    for diffrax solvers, BackwardCheckpointed), jit-compiled. layout: dynamiqs' operator storage
    (dq.dense or dq.dia, its sparse-diagonal format)."""
    _jax_setup()
    import jax
    import jax.numpy as jnp
    import dynamiqs as dq

    lay = dq.dia if layout == "dia" else dq.dense
    times = jnp.linspace(0.0, model.T, model.n_seg + 1)
    Hc = [dq.asqarray(H, layout=lay) for H in model.controls]
    Lj = [dq.asqarray(L, layout=lay) for L in model.jumps]
    H0 = dq.asqarray(model.drift, layout=lay)
    psi0 = jnp.asarray(model.psi0).reshape(-1, 1)
    tgt = jnp.asarray(model.psi_target)
    meth = {"tsit5": dq.method.Tsit5, "dopri5": dq.method.Dopri5}[method](rtol=rtol, atol=atol)

    def fidelities(uu, rr):
        H = H0
        for c in range(len(Hc)):
            H = H + dq.pwc(times, uu[..., c], Hc[c])
        Ls = [jnp.sqrt(rr[:, j])[:, None, None] * Lj[j] for j in range(len(Lj))]
        res = dq.mesolve(H, Ls, psi0, jnp.array([0.0, model.T]), method=meth, save_states=False,
                         cartesian_batching=False)
        rho = res.final_state.to_jax()
        return jnp.real(jnp.einsum("i,bij,j->b", tgt.conj(), rho, tgt))

    run, extract = _jax_grad_runner(fidelities, u, rates)

    t0 = time.perf_counter()
    run()
    extra = {"first_call_incl_jit_s": time.perf_counter() - t0, "tolerances": f"rtol={rtol:g}, atol={atol:g}",
             "method": f"{method} (diffrax), layout {layout}, gradient BackwardCheckpointed (default)"}
    return run, extract, _xla_threads(), extra


def qutip_transfer_case(model: Model, u, rates, rtol: float, atol: float):
    """QuTiP mesolve per task (loop), forward only (QuTiP has no gradient): the state psi0
    evolved to T, step-function (order 0) array coefficients, QuTiP's default method (adams)."""
    import qutip as qt

    B = u.shape[0]
    tlist = np.linspace(0.0, model.T, model.n_seg + 1)
    Hc = [qt.Qobj(H).to("CSR") for H in model.controls]
    Lj = [qt.Qobj(L).to("CSR") for L in model.jumps]
    H0 = qt.Qobj(model.drift).to("CSR")
    rho0 = qt.ket2dm(qt.Qobj(model.psi0.reshape(-1, 1)))
    opts = {"atol": atol, "rtol": rtol, "nsteps": 10**6, "store_states": False,
            "store_final_state": True, "progress_bar": False}

    def run():
        out = np.empty((B, model.d, model.d), dtype=complex)
        for b in range(B):
            terms = [H0]
            for c, H in enumerate(Hc):
                vals = np.append(u[b, :, c], u[b, -1, c])
                terms.append([H, qt.coefficient(vals, tlist=tlist, order=0)])
            c_ops = [np.sqrt(rates[b, j]) * L for j, L in enumerate(Lj)]
            res = qt.mesolve(qt.QobjEvo(terms), rho0, [0.0, model.T], c_ops, options=opts)
            out[b] = res.final_state.full()
        return out

    def extract(rho):
        return transfer_fidelity_np(model, rho), None, None

    return run, extract, "1 (serial loop over tasks)", {"tolerances": f"atol={atol:g}, rtol={rtol:g}",
                                                        "method": "adams (QuTiP default), CSR operators"}


# --------------------------------------------------------------------------- workload 4


class TorchRK4Problem:
    """A differentiable `fidelity(amplitudes, noise)` (plus n_segments / n_controls / dtype) on
    TorchFixedStep's RK4: the research code's simulator. Average gate fidelity, the app's default."""

    def __init__(self, model: Model, dt: float):
        import torch

        self.model, self.sim, self.dtype = model, TorchFixedStep(model, "rk4", dt), torch.float64
        self.n_segments, self.n_controls = model.n_seg, model.n_ctrl

    def fidelity(self, amplitudes, noise):
        import torch

        T = noise.shape[0]
        # the app's noise is (gamma_deph, gamma_relax); the model's jumps name their kind
        per_kind = {"relax": noise[:, 1], "deph": noise[:, 0]}
        g = torch.stack([per_kind[k] for k in self.model.jump_kinds], 1)
        u = amplitudes if amplitudes.dim() == 3 else amplitudes.expand(T, -1, -1)
        return self.sim.fidelity(u, g)


def torch_fomaml_meta_gradient(cfg: dict, problem: TorchRK4Problem, theta, noise):
    """One FOMAML meta-gradient as a PyTorch user writes it around their own simulator: the
    baseline for the meta-control app's iteration (apps/meta_control, docs/meta_control.md, whose
    steps it follows: noise scaled to [-1, 1] over the training ranges, the MLP policy on per-task
    fast weights (flat: per layer W [in, out] row-major, then b; tanh; output times
    amplitude_scale), inner_steps SGD steps on sum_t (1 - F_t), the mean of the last gradients).
    Its result is checked against qfleet's own meta-gradient before it is timed."""
    import torch

    T = noise.shape[0]

    def scaled(g, lo, hi):
        return (g - lo) * (2.0 / (hi - lo)) - 1.0 if hi > lo else torch.zeros_like(g)

    (dlo, dhi), (rlo, rhi) = cfg["gamma_deph"], cfg["gamma_relax"]
    feats = torch.stack([scaled(noise[:, 0], dlo, dhi), scaled(noise[:, 1], rlo, rhi)], 1)
    dims = [2] + [cfg["hidden_width"]] * cfg["hidden_layers"] + [problem.n_segments * problem.n_controls]
    phi = theta.detach().expand(T, -1).clone()

    def loss_grad(phi):
        p = phi.detach().requires_grad_(True)
        h, off = feats, 0
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            W, bias = p[:, off:off + a * b].view(T, a, b), p[:, off + a * b:off + a * b + b]
            h = torch.baddbmm(bias.unsqueeze(1), h.unsqueeze(1), W).squeeze(1)
            h = torch.tanh(h) if i + 2 < len(dims) else h
            off += a * b + b
        u = (h * cfg["amplitude_scale"]).view(T, problem.n_segments, problem.n_controls)
        return torch.autograd.grad((1 - problem.fidelity(u, noise)).sum(), p)[0]

    for _ in range(cfg["inner_steps"]):
        phi = phi - cfg["inner_lr"] * loss_grad(phi)
    return loss_grad(phi).mean(0)
