"""qfleet-qgan (apps/qgan) from Python: its statistics against scipy and against a simulation
of the likelihood-ratio test written here with numpy, the embedded devices against the
converter, the binary and `python -m qfleet.qgan` running the same C++, the image target from
scikit-learn's sample image, and bad inputs as one-line errors."""
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import app_binary

scipy_stats = pytest.importorskip("scipy.stats")
scipy_distance = pytest.importorskip("scipy.spatial.distance")

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def qgan(qfleet):
    from qfleet import qgan as q
    return q


@pytest.fixture
def qgan_binary():
    return app_binary("QFLEET_QGAN", "qfleet-qgan")


def random_pair(rng, k, zeros=False):
    p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    if zeros:
        p[rng.integers(k)] = 0.0
        q[rng.integers(k)] = 0.0
        p, q = p / p.sum(), q / q.sum()
    return p, q


@pytest.mark.parametrize("k,zeros", [(2, False), (8, False), (64, False), (4096, False), (16, True)])
def test_divergences_match_scipy(qgan, k, zeros):
    rng = np.random.default_rng(k)
    for _ in range(5):
        p, q = random_pair(rng, k, zeros)
        d = qgan.divergences(p, q)
        kl_pq, kl_qp = scipy_stats.entropy(p, q), scipy_stats.entropy(q, p)  # inf where the support is missing
        assert d["kl_pq"] == pytest.approx(kl_pq, rel=1e-12, abs=1e-14) if np.isfinite(kl_pq) else d["kl_pq"] == float("inf")
        assert d["kl_qp"] == pytest.approx(kl_qp, rel=1e-12, abs=1e-14) if np.isfinite(kl_qp) else d["kl_qp"] == float("inf")
        assert d["js_distance"] == pytest.approx(scipy_distance.jensenshannon(p, q), rel=1e-10, abs=1e-12)
        assert d["total_variation"] == pytest.approx(0.5 * np.abs(p - q).sum(), rel=1e-12)
        assert d["bhattacharyya"] == pytest.approx(np.sqrt(p * q).sum(), rel=1e-12)
        assert qgan.ks_distance(p, q) == pytest.approx(np.abs(np.cumsum(p - q)).max(), abs=1e-14)


def test_ks_distance_on_a_grid(qgan):
    rng = np.random.default_rng(1)
    p, q = random_pair(rng, 64)
    f = np.cumsum(np.cumsum((p - q).reshape(8, 8), axis=0), axis=1)  # P(row <= i, col <= j)
    assert qgan.ks_distance(p, q, 8) == pytest.approx(np.abs(f).max(), abs=1e-14)


def simulated_error(p, q, n, trials, rng):
    """The likelihood-ratio test run `trials` times on n shots (multinomial counts) from p and from q."""
    with np.errstate(divide="ignore"):
        llr = np.log(p) - np.log(q)  # +inf where q = 0 < p, -inf where p = 0 < q
    def wrong(truth, truth_is_p):
        counts = rng.multinomial(n, truth, size=trials)
        with np.errstate(invalid="ignore"):
            s = np.where(counts > 0, counts * llr, 0.0).sum(axis=1)
        return np.mean(s <= 0) if truth_is_p else np.mean(s > 0)
    return max(wrong(p, True), wrong(q, False))


@pytest.mark.parametrize("seed", range(6))
def test_shots_to_distinguish_against_a_simulated_test(qgan, seed):
    rng = np.random.default_rng(100 + seed)
    k = [4, 8, 16, 64, 8, 32][seed]
    # Close pairs (many shots needed) and a pair with a support mismatch.
    p = rng.dirichlet(np.ones(k) * 20)
    q = 0.85 * p + 0.15 * rng.dirichlet(np.ones(k) * 20)
    if seed == 5:
        q[0] = 0.0
        q /= q.sum()
    s = qgan.shots_to_distinguish(p, q, 0.95)
    assert 1 <= s["shots"] <= s["bound"]
    at_n = simulated_error(p, q, s["shots"], 20000, rng)
    assert at_n <= 0.05 + 0.012, (s, at_n)  # the normal approximation, checked: 20000 trials, sd 0.0015
    if s["shots"] >= 8:
        assert simulated_error(p, q, s["shots"] // 2, 20000, rng) > 0.05  # and it is not far too generous
    assert simulated_error(p, q, s["bound"], 20000, rng) <= 0.05  # the bound always suffices


def test_embedded_devices_are_the_converters_output(qfleet):
    import qfleet.noise
    files = sorted((ROOT / "apps/qgan/devices").glob("*.json"))
    assert len(files) >= 6
    for f in files:
        name = f.stem.removeprefix("fake_")
        assert json.loads(f.read_text()) == qfleet.noise.from_fake_backend(name), f"{f} differs from python -m qfleet.noise convert {name}"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def test_binary_and_python_entry_run_the_same_code(qgan_binary, tmp_path):
    args = ["train", "--epochs", "40", "--quiet", "--threads", "1"]
    a = run([qgan_binary, *args, "--out", str(tmp_path / "bin")])
    assert a.returncode == 0, a.stderr
    b = run([sys.executable, "-m", "qfleet.qgan", *args, "--out", str(tmp_path / "py")])
    assert b.returncode == 0, b.stderr
    ra = json.loads((tmp_path / "bin/report.json").read_text())
    rb = json.loads((tmp_path / "py/report.json").read_text())
    assert ra["generator"]["weights"] == rb["generator"]["weights"]
    assert [h["kl"] for h in ra["history"]] == [h["kl"] for h in rb["history"]]
    # The report's final distribution is the circuit's, evaluated independently by PennyLane.
    qml = pytest.importorskip("pennylane")
    w = ra["generator"]["weights"]
    dev = qml.device("default.qubit", wires=3)

    @qml.qnode(dev)
    def gen():
        for i in range(3):
            qml.Hadamard(i)
        for r in range(3):
            for i in range(3):
                qml.RY(w[r * 3 + i], wires=i)
            if r < 2:
                for i in range(2):
                    qml.CNOT([i, i + 1])
        return qml.probs(wires=range(3))
    np.testing.assert_allclose(ra["final"]["probabilities"], np.asarray(gen()), atol=1e-12)
    p, t = np.asarray(ra["final"]["probabilities"]), np.asarray(ra["target"]["probabilities"])
    assert ra["final"]["kl"] == pytest.approx(scipy_stats.entropy(p, t), rel=1e-10)


def test_image_target_from_scikit_learns_sample_image(qgan_binary, tmp_path):
    pytest.importorskip("sklearn")
    img = tmp_path / "china.pgm"
    r = run([sys.executable, "-m", "qfleet.qgan.image", str(img)])
    assert r.returncode == 0, r.stderr
    r = run([qgan_binary, "train", "--target", "image", "--image", str(img), "--epochs", "2", "--quiet",
             "--out", str(tmp_path / "out")])
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "out/report.json").read_text())
    assert rep["target"]["n_qubits"] == 12 and rep["target"]["rows"] == 64
    pixels = np.frombuffer(img.read_bytes()[-4096:], dtype=np.uint8).astype(float)
    np.testing.assert_allclose(rep["target"]["probabilities"], pixels / pixels.sum(), rtol=1e-12)


@pytest.mark.parametrize("args,message", [
    (["train", "--target", "lognromal"], "key 'target': expected one of"),
    (["train", "--target", "image", "--image", "/nonexistent.pgm"], "cannot open"),
    (["train", "--epochs", "0"], "epochs"),
    (["train", "--noise-model", "{bad}"], "cannot open"),
    (["tournament", "--devices", "{bad}"], "invalid JSON"),
    (["tournament", "--confidence", "1.5"], "confidence"),
    (["tournament", "--generator", "{bad}"], "invalid JSON"),
])
def test_bad_inputs_are_one_line_errors(qgan_binary, tmp_path, args, message):
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "noise_model", "name": ')
    args = [a.replace("{bad}", str(bad)) for a in args]
    if args[-1] == str(bad) and args[0] == "train":
        args[-1] = str(tmp_path / "missing.json")
    r = run([qgan_binary, *args, "--quiet", "--out", str(tmp_path / "out")])
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
