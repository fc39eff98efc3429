"""qfleet's PyTorch operators on device tensors beside the hand-batched PyTorch
implementations the research codes wrote, on one device, in one run, with the
outputs and gradients of both checked to agree before anything is timed.

    python bench/compare/torch_batched.py --device cuda        (a GPU: docs/benchmarks.md's GPU rows)
    python bench/compare/torch_batched.py --device cpu --quick (a smoke run; CI runs it)

(with the pip-installed package, or PYTHONPATH=python)

Workloads:
  target  10 qubits, 30 gates (RY(input) on every wire, a CNOT ring, RZ(weight) on every
          wire), <Z_0>, batch 100: the reference pass (bench_cuda's Target/*)
  layer   AngleEmbedding + 3 StronglyEntanglingLayers, <Z_i> on every wire, n = 4 and 10
  open    a driven, damped d-level ladder (bench_cuda's Open/*): H0 = sum_k 0.1 k |k><k|,
          controls a + a^dag and i(a - a^dag), decay a at a shared rate, 60 segments over
          T = 3, |0> -> |1>, exact solver; the GPU target is d = 2, B = 100,000, fwd+grad, c64
"fwd" is one forward call; "fwd+bwd" is forward + backward of the outputs' sum with
respect to every input (circuits: inputs and weights; open: amplitudes). Times are
medians (ms) over repeats of a few calls each, the device synchronised around them.
"agree" is the largest difference between the two sides' outputs and gradients,
relative to max(1, the largest PyTorch value) of each tensor; above 1e-9 (complex128)
or 2e-3 (complex64, x n for circuits, x 10 for the ladder) the script stops with an error
(harness.check_close: exit status 1, nothing timed). Shared flags (harness.py): --threads N
(torch's and OMP_NUM_THREADS; default the libraries' own), --seed (inputs, default 7),
--json/--md (the table: ratio PyTorch / qfleet per workload).
"""
import sys
import time

import harness


def parse_args(argv=None):
    ap = harness.parser(__doc__, threads=None, seed=7, quick_help="one small case per workload (a smoke run)")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda where torch sees one)")
    ap.add_argument("--precision", default="complex128,complex64")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per measurement, about")
    return harness.validate(ap, ap.parse_args(argv))


if __name__ == "__main__":
    harness.threads_env(parse_args().threads)  # before torch loads its OpenMP runtime

import torch  # noqa: E402

import qfleet  # noqa: E402


# ---- hand-batched PyTorch: circuits (state [B, 2^n], wire 0 most significant) ------------


class TorchCircuit:
    """Gates as batched 2x2 products on reshaped views, CNOTs as one gather each."""

    def __init__(self, n, device, cdtype):
        self.n, self.device, self.cdtype = n, device, cdtype
        idx = torch.arange(2 ** n, device=device)
        self.bit = [(idx >> (n - 1 - q)) & 1 for q in range(n)]
        real = torch.float64 if cdtype == torch.complex128 else torch.float32
        self.zsign = torch.stack([1 - 2 * b for b in self.bit], 1).to(real)

    def zero(self, B):
        s = torch.zeros(B, 2 ** self.n, dtype=self.cdtype, device=self.device)
        s[:, 0] = 1
        return s

    def apply(self, s, u, q):  # u [B, 2, 2] or [2, 2]
        B = s.shape[0]
        v = s.view(B, 2 ** q, 2, 2 ** (self.n - q - 1))
        eq = "bij,bajc->baic" if u.dim() == 3 else "ij,bajc->baic"
        return torch.einsum(eq, u, v).reshape(B, -1)

    def cnot(self, s, c, t):
        idx = torch.arange(2 ** self.n, device=self.device)
        return s[:, idx ^ (self.bit[c] << (self.n - 1 - t))]

    def z(self, s):
        return (s.real ** 2 + s.imag ** 2) @ self.zsign


def _c(re, im):
    return torch.complex(re, im)


def rx(a):
    c, s, z = torch.cos(a / 2), torch.sin(a / 2), torch.zeros_like(a)
    return torch.stack([torch.stack([_c(c, z), _c(z, -s)], -1), torch.stack([_c(z, -s), _c(c, z)], -1)], -2)


def ry(a):
    c, s, z = torch.cos(a / 2), torch.sin(a / 2), torch.zeros_like(a)
    return torch.stack([torch.stack([_c(c, z), _c(-s, z)], -1), torch.stack([_c(s, z), _c(c, z)], -1)], -2)


def rz(a):
    c, s, z = torch.cos(a / 2), torch.sin(a / 2), torch.zeros_like(a)
    return torch.stack([torch.stack([_c(c, -s), _c(z, z)], -1), torch.stack([_c(z, z), _c(c, s)], -1)], -2)


def torch_target(tc, x, w):
    s = tc.zero(x.shape[0])
    for q in range(tc.n):
        s = tc.apply(s, ry(x[:, q]), q)
    for q in range(tc.n):
        s = tc.cnot(s, q, (q + 1) % tc.n)
    for q in range(tc.n):
        s = tc.apply(s, rz(w[q]), q)
    return tc.z(s)[:, :1]


def torch_layer(tc, x, w, layers=3):
    n = tc.n
    s = tc.zero(x.shape[0])
    for q in range(n):
        s = tc.apply(s, rx(x[:, q]), q)
    W = w.view(layers, n, 3)
    for l in range(layers):
        for q in range(n):  # Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi)
            s = tc.apply(s, rz(W[l, q, 2]) @ ry(W[l, q, 1]) @ rz(W[l, q, 0]), q)
        r = (l % (n - 1)) + 1
        for q in range(n):
            s = tc.cnot(s, q, (q + r) % n)
    return tc.z(s)


def q_target(n=10):
    c = qfleet.Circuit(n)
    for q in range(n):
        c.add("RY", [q], [qfleet.input(q)])
    for q in range(n):
        c.add("CNOT", [q, (q + 1) % n])
    for q in range(n):
        c.add("RZ", [q], [qfleet.weight(q)])
    return c.expval("Z0")


def q_layer(n, layers=3):
    c = qfleet.Circuit(n).angle_embedding(list(range(n))).strongly_entangling_layers(list(range(n)), layers)
    for q in range(n):
        c.expval(f"Z{q}")
    return c


# ---- hand-batched PyTorch: the open ladder (row-major vec: vec(A X B) = (A kron B^T) vec X) ----


def ladder_ops(d):
    h0 = torch.diag(torch.arange(d, dtype=torch.float64) * 0.1).to(torch.complex128)
    a = torch.diag(torch.sqrt(torch.arange(1, d, dtype=torch.float64)), 1).to(torch.complex128)
    return h0, a + a.mH, 1j * (a - a.mH), a


def q_ladder(d, n_seg=60, T=3.0):
    h0, x, y, a = ladder_ops(d)
    e = torch.eye(d, dtype=torch.complex128)
    return (qfleet.OpenSystem(d).drift(h0).control(x).control(y).jump(a).segments(n_seg, T)
            .initial_state(e[0]).target_state(e[1]))


class TorchLadder:
    def __init__(self, d, device, cdtype, n_seg=60, T=3.0):
        h0, x, y, a = ladder_ops(d)
        eye = torch.eye(d, dtype=torch.complex128)

        def ham(h):
            return -1j * (torch.kron(h, eye) - torch.kron(eye, h.T.contiguous()))

        ada = a.mH @ a
        diss = torch.kron(a, a.conj()) - 0.5 * (torch.kron(ada, eye) + torch.kron(eye, ada.T.contiguous()))
        self.ops = [m.to(device=device, dtype=cdtype) for m in (ham(h0), ham(x), ham(y), diss)]
        self.d, self.dt, self.n_seg = d, T / n_seg, n_seg
        rho0 = torch.zeros(d * d, dtype=cdtype, device=device)
        rho0[0] = 1
        self.rho0 = rho0

    def fidelity(self, u, rate):  # u [B, n_seg, 2] real, rate shared scalar tensor
        l0, lx, ly, ld = self.ops
        cd = l0.dtype
        gen = (l0 + rate.to(cd) * ld) + u[..., 0, None, None].to(cd) * lx + u[..., 1, None, None].to(cd) * ly
        P = torch.linalg.matrix_exp(gen * self.dt)  # [B, n_seg, d^2, d^2]
        r = self.rho0.expand(u.shape[0], -1)
        for k in range(self.n_seg):
            r = (P[:, k] @ r.unsqueeze(-1)).squeeze(-1)
        return r[:, self.d + 1].real  # <1| rho |1>


# ---- timing --------------------------------------------------------------------------


def timing(fn, device, budget_s):
    """Two warm-up calls, one timed call to size the samples (a tenth of the budget each, at most
    100 calls), then 5 samples, the device synchronised around each."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(2):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-6)
    number = max(1, min(100, int(budget_s / 10 / one)))
    return harness.timed(fn, repeats=5, number=number, warmup=0, sync=sync)


def grads(f, args):
    out = f(*args)
    return out, torch.autograd.grad(out.sum(), args)


def compare(name, qf, tf, args, device, tol, budget_s, rows):
    """Checks agreement (outputs and gradients), then times both sides."""
    targs = [a.detach().clone().requires_grad_() for a in args]
    qargs = [a.detach().clone().requires_grad_() for a in args]
    qo, qg = grads(qf, qargs)
    to, tg = grads(tf, targs)
    # max |qfleet - PyTorch| over outputs and gradients, relative to max(1, max |PyTorch|) per
    # tensor (summed weight gradients grow with the batch)
    diff = harness.check_close(f"{name}: qfleet against PyTorch (outputs, gradients)", [qo, *qg], [to, *tg],
                               rtol=tol, floor=1.0, prog="torch_batched", quiet=True)
    for kind, fq, ft in (("fwd", lambda: qf(*qargs), lambda: tf(*targs)),
                         ("fwd+bwd", lambda: grads(qf, qargs), lambda: grads(tf, targs))):
        if kind == "fwd":
            with torch.no_grad():
                tq, tt = timing(fq, device, budget_s), timing(ft, device, budget_s)
        else:
            tq, tt = timing(fq, device, budget_s), timing(ft, device, budget_s)
        rows += [harness.row(f"{name} {kind}", "qfleet", tq, tq, error=diff),
                 harness.row(f"{name} {kind}", "PyTorch hand-batched", tt, tq, error=diff)]
        mq, mt = tq.median * 1e3, tt.median * 1e3
        print(f"{name + ' ' + kind:<40} qfleet {mq:10.4f} ms   torch {mt:10.4f} ms   x{mt / mq:7.1f}   "
              f"agree {diff:.1e}", flush=True)


def main(argv=None):
    a = parse_args(argv)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_batched: --device cuda, but torch sees no CUDA device")
    qdev = "cuda" if device.type == "cuda" else "cpu"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"torch_batched on {name}; torch {torch.__version__}", flush=True)
    rows = []
    gen = torch.Generator().manual_seed(a.seed)
    for prec in a.precision.split(","):
        rdt = torch.float64 if prec == "complex128" else torch.float32
        cdt = torch.complex128 if prec == "complex128" else torch.complex64
        tol = 1e-9 if prec == "complex128" else 2e-3

        def rand(*shape, scale=1.0):
            return (torch.rand(*shape, generator=gen, dtype=torch.float64) * scale).to(device=device, dtype=rdt)

        # target pass
        tc = TorchCircuit(10, device, cdt)
        prog = q_target().compile(prec, device=qdev)
        B = 100
        compare(f"target n10 g30 B{B} {prec}", lambda x, w: qfleet.circuit_forward(prog, x, w),
                lambda x, w: torch_target(tc, x, w), [rand(B, 10, scale=3), rand(10, scale=3)], device, tol,
                a.budget, rows)
        # the classifier layer
        for n in ((4,) if a.quick else (4, 10)):
            tc = TorchCircuit(n, device, cdt)
            prog = q_layer(n).compile(prec, device=qdev)
            # (a hand-batched n = 10 state is 16 KiB per sample: 10^4 samples take ~10 s a call on 2 cores)
            top = (100000 if n == 4 else 10000) if device.type == "cuda" else (10000 if n == 4 else 1000)
            sizes = (100,) if a.quick else tuple(b for b in (1, 100, 1000, 10000, 100000) if b <= top)
            for B in sizes:
                compare(f"layer n{n} B{B} {prec}", lambda x, w: qfleet.circuit_forward(prog, x, w),
                        lambda x, w: torch_layer(tc, x, w), [rand(B, n, scale=3), rand(9 * n, scale=6)], device,
                        tol * n, a.budget, rows)
        # the open ladder
        for d in ((2,) if a.quick else (2, 4)):
            tl = TorchLadder(d, device, cdt)
            prog = q_ladder(d).compile(precision=prec, device=qdev)
            rate = torch.tensor([0.05], dtype=rdt, device=device)
            # d = 4 stops at B = 1000 on a GPU: on an 80 GB H100 the hand-batched backward at B = 10^4 asked
            # for 46 GiB in complex128 (out of memory), and in complex64 it hit an illegal memory access
            # while timing the PyTorch side (qfleet's timed calls had synchronised without error)
            if a.quick:
                sizes = (100,)
            elif device.type == "cuda":
                sizes = (100, 10000, 100000) if d == 2 else (100, 1000)
            else:
                sizes = (100, 1000)
            for B in sizes:
                compare(f"open d{d} 60seg B{B} {prec}", lambda u: qfleet.open_fidelity(prog, u, rate),
                        lambda u: tl.fidelity(u, rate[0]), [rand(B, 60, 2, scale=2)], device, tol * 10, a.budget,
                        rows)
            if device.type == "cuda":
                torch.cuda.empty_cache()  # the PyTorch side's cached blocks, before the next size
    harness.finish(a, "torch_batched.py", rows, {"device": name, "torch": torch.__version__},
                   title=f"qfleet's operators beside hand-batched PyTorch on {name}; ratio PyTorch / qfleet "
                         "(the speed-up); max error: relative to max(1, |PyTorch|)")


if __name__ == "__main__":
    main()
