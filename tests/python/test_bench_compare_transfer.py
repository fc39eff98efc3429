"""bench/compare's state-transfer sweep: its sparse reference (transfer_ref.py) against
independent routes at d = 2 and 4 — a dense scipy.linalg.expm of the superoperator for the
fidelity, central finite differences for the amplitude and rate gradients — and qfleet's tsit5
at tight tolerances against it. Needs numpy and scipy only (not bench/compare's venv); ~2 s."""
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("scipy")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "compare"))

from open_models import SIGMA_MINUS, X, Z, local_qubits_model, sample_params  # noqa: E402
from transfer_ref import SparseTransferReference, dense_fidelity  # noqa: E402


def test_model_is_bench_opens_local_qubits():
    m = local_qubits_model(2)
    I2 = np.eye(2)
    assert m.d == 4 and m.n_ctrl == 4 and m.n_jump == 4 and m.n_seg == 60 and m.T == 2.0
    np.testing.assert_allclose(m.controls[0], np.kron(X, I2) / 2)  # qubit 0: first Kronecker factor
    np.testing.assert_allclose(m.jumps[2], np.kron(I2, SIGMA_MINUS))
    np.testing.assert_allclose(m.jumps[3], np.kron(I2, Z) / np.sqrt(2))
    np.testing.assert_allclose(np.diag(m.drift).real, [0.75, -0.15, 0.05, -0.65])  # 0.3 Z0 + 0.4 Z1 + 0.05 Z0 Z1
    assert m.psi0[0] == 1 and m.psi_target[-1] == 1


@pytest.mark.parametrize("n", [1, 2])
def test_reference_fidelity_and_gradient(n):
    m = local_qubits_model(n)
    u, r = sample_params(m, 1, 11 + n)
    ref = SparseTransferReference(m)
    F, gu, gr = ref.forward_grad(u, r, grad_segments=[0, 31, 59], grad_rates=True)
    assert abs(F[0] - dense_fidelity(m, u[0], r[0])) <= 1e-14
    h = 1e-5  # central differences: truncation ~h^2 |F'''|, rounding ~1e-16 / h

    def loss(uu, rr):
        return 1 - ref.forward(uu, rr)[0]

    for k, c in [(0, 0), (31, m.n_ctrl - 1), (59, 1)]:
        up, um = u.copy(), u.copy()
        up[0, k, c] += h
        um[0, k, c] -= h
        fd = (loss(up, r) - loss(um, r)) / (2 * h)
        assert abs(gu[0, k, c] - fd) <= 1e-9 * max(1.0, abs(fd)), (k, c, gu[0, k, c], fd)
    assert np.isnan(gu[0, 1]).all()  # segments not asked for stay NaN (not compared by the harness)
    for j in range(m.n_jump):
        rp, rm = r.copy(), r.copy()
        rp[0, j] += h
        rm[0, j] -= h
        fd = (loss(u, rp) - loss(u, rm)) / (2 * h)
        assert abs(gr[0, j] - fd) <= 1e-9 * max(1.0, abs(fd)), (j, gr[0, j], fd)


def test_qfleet_tsit5_agrees_with_the_reference():
    torch = pytest.importorskip("torch")
    qfleet = pytest.importorskip("qfleet")
    m = local_qubits_model(2)
    u, r = sample_params(m, 2, 5)
    F_ref, gu_ref, gr_ref = SparseTransferReference(m).forward_grad(u[:1], r[:1], [0, 59], True)
    s = qfleet.OpenSystem(m.d)
    s.drift(m.drift)
    for H in m.controls:
        s.control(H)
    for L in m.jumps:
        s.jump(L)
    s.segments(m.n_seg, m.T)
    s.initial_state(m.psi0)
    s.target_state(m.psi_target)
    layer = qfleet.OpenSystemLayer(s, solver="tsit5", rtol=1e-11, atol=1e-13, form="lindblad")
    ut = torch.tensor(u, requires_grad=True)
    rt = torch.tensor(r, requires_grad=True)
    F = layer(ut, rt)
    gu, gr = torch.autograd.grad((1 - F).sum(), (ut, rt))
    assert abs(F[0].item() - F_ref[0]) <= 1e-9
    mask = ~np.isnan(gu_ref[0])
    np.testing.assert_allclose(gu[0].numpy()[mask], gu_ref[0][mask], atol=1e-9)
    np.testing.assert_allclose(gr[0].numpy(), gr_ref[0], atol=1e-9)
