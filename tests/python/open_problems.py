"""Random open-system problems and their qfleet.OpenSystem, shared by the open-system
tests (test_open.py checks them against QuTiP; test_cuda_tensors.py runs them on a
GPU, where QuTiP need not be installed)."""


def rand_herm(rng, d, scale=1.0):
    a = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
    return scale * (a + a.conj().T) / 2


def random_problem(rng, d, n_ctrl=2, n_jump=2, n_drift=1, n_seg=5):
    return {
        "H0": rand_herm(rng, d, 0.5),
        "drift": [rand_herm(rng, d, 0.3) for _ in range(n_drift)],
        "controls": [rand_herm(rng, d) for _ in range(n_ctrl)],
        "jumps": [rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d)) for _ in range(n_jump)],
        "n_seg": n_seg, "T": 1.0,
    }


def build(qfleet, p, d):
    s = qfleet.OpenSystem(d).drift(p["H0"])
    for h in p["drift"]:
        s.drift_term(h)
    for h in p["controls"]:
        s.control(h)
    for l in p["jumps"]:
        s.jump(l)
    return s.segments(p["n_seg"], p["T"])
