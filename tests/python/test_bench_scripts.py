"""The comparison scripts of bench/compare/ stay runnable (torch_batched.py, noisy.py, qgan.py,
qgan_classifier.py, rl_env.py, pennylane_device.py, pennylane_demos.py, cli_npy.py, open_gpu_peer.py's
reference, their shared harness.py, bench/micro/contention.py, scripts/apps_figures.py and scripts/idx_subset.py).
bench/compare/torch_batched.py's smoke run checks qfleet's outputs and gradients against its
hand-batched PyTorch implementations (an independent reference: batched 2x2 products and
CNOT gathers for circuits, torch.linalg.matrix_exp of row-major Liouvillians for the open ladder) before it
times anything, and exits non-zero where they disagree."""
import json
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "compare" / "torch_batched.py"


def test_device_compare_smoke_run_agrees_on_the_cpu():
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--budget", "0.02"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for workload in ("target n10 g30 B100 complex128 fwd+bwd", "layer n4 B100 complex64 fwd",
                     "open d2 60seg B100 complex128 fwd+bwd"):
        assert workload in r.stdout, r.stdout


def test_harness_flags_check_and_outputs(tmp_path, capsys):
    # bench/compare/harness.py: every comparison script's shared flags, check_close's exit status 1
    # on a disagreement (before timing), medians with their spread, the ratio alternative / qfleet,
    # and the JSON and markdown outputs.
    import pytest
    sys.path.insert(0, str(SCRIPT.parent))
    import harness

    args = harness.parser("test").parse_args(["--quick", "--threads", "3", "--seed", "5", "--json",
                                              str(tmp_path / "o.json"), "--md", str(tmp_path / "o.md")])
    assert (args.quick, args.threads, args.seed) == (True, 3, 5)
    assert harness.check_close("equal", [1.0, 2.0], [1.0, 2.0 + 1e-12], atol=1e-10) <= 1e-10
    assert harness.check_close("scaled", {"g": [200.0]}, {"g": [100.0]}, rtol=1.5) == pytest.approx(1.0)
    with pytest.raises(SystemExit) as e:
        harness.check_close("apart", [1.0, float("nan")], [1.0, 2.0], atol=1e-3)
    assert e.value.code == 1 and "apart" in capsys.readouterr().err
    q = harness.timed(lambda: None, repeats=3, number=1000)
    assert q.reps == 3 and q.min <= q.median <= q.max
    slow = harness.Timing(2 * q.median, q.min, q.max, 3, 1, 0.0)
    spread = harness.interleaved({"a": lambda: None, "b": lambda: None}, rounds=2)
    assert set(spread) == {"a", "b"} and all(lo <= med <= hi for med, lo, hi in spread.values())
    rows = [harness.row("w", "qfleet", q, q), harness.row("w", "other", slow, q, error=1e-12)]
    assert rows[1]["ratio"] == pytest.approx(2.0)
    harness.finish(args, "x.py", rows, {"own": 1})
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["own"] == 1 and doc["flags"]["seed"] == 5 and [r["tool"] for r in doc["table"]] == ["qfleet", "other"]
    md = (tmp_path / "o.md").read_text()
    assert "| w | other |" in md and "2x" in md and "--quick" in md


def test_noisy_compare_checks_outputs_before_timing():
    # bench/compare/noisy.py checks qfleet's noisy classifier against default.mixed (outputs
    # and gradients to 1e-10) and Aer (outputs to 1e-9) and exits 1 on a disagreement.
    script = SCRIPT.parent / "noisy.py"
    r = subprocess.run([sys.executable, str(script), "--quick", "--part", "classifier"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "default.mixed / qfleet" in r.stdout


def test_qgan_compare_checks_generators_before_timing():
    # bench/compare/qgan.py checks every generator's probabilities and loss_G gradient against
    # qfleet's (PennyLane and Qiskit ML's SamplerQNN to 1e-10 / 1e-8; TorchConnector to float32
    # rounding) and exits 1 on a disagreement; a missing PennyLane or Qiskit only skips its rows.
    script = SCRIPT.parent / "qgan.py"
    r = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "qGAN epoch" in r.stdout and "epoch ms" in r.stdout, r.stdout
    assert any(line.startswith("qfleet ") and " 1.0x" in line for line in r.stdout.splitlines()), r.stdout
    import qfleet
    if qfleet.cuda_device_count() == 0:  # --device cuda: refused with the reason, nothing timed
        r = subprocess.run([sys.executable, str(script), "--quick", "--device", "cuda"], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 1 and "--device cuda: no CUDA device is visible" in r.stdout + r.stderr, r.stdout


def test_qgan_classifier_compare_checks_the_network_before_timing(tmp_path):
    # bench/compare/qgan_classifier.py reads the app's records.pt with torch.load(weights_only=True),
    # rebuilds the network in plain PyTorch with the app's initial weights and checks its logits
    # against the app's on a fixed batch (exit 1 on a disagreement) before timing both loops.
    import pytest
    from qfleet._lib import app_library_path
    try:
        app_library_path("qgan")
    except ImportError as e:
        pytest.skip(f"qfleet-qgan's library is not available ({e})")
    out = tmp_path / "c.json"
    r = subprocess.run([sys.executable, str(SCRIPT.parent / "qgan_classifier.py"), "--shots", "8", "--epochs",
                        "1", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(out.read_text())
    assert rows["check"]["max_abs_logit_difference"] <= 1e-5
    assert 0 < rows["qfleet_accuracy"] <= 1 and 0 < rows["plain_pytorch_accuracy"] <= 1
    assert "plain / qfleet" in r.stdout


def test_rl_env_compare_checks_environments_before_timing(tmp_path):
    # bench/compare/rl_env.py runs the same actions on the same fixed tasks through qfleet's
    # VectorEnv, a NumPy/SciPy and a QuTiP environment under Gymnasium's SyncVectorEnv and a
    # JAX + dynamiqs batched environment, checks observations, rewards and final fidelities to
    # 1e-6 and exits 1 on a disagreement; a missing QuTiP or JAX only skips its rows.
    import json

    import pytest
    from qfleet._lib import app_library_path
    try:
        app_library_path("rl")
    except ImportError as e:
        pytest.skip(f"qfleet-rl's library is not available ({e})")
    script = SCRIPT.parent / "rl_env.py"
    out = tmp_path / "rl.json"
    r = subprocess.run([sys.executable, str(script), "--quick", "--json", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "agree with qfleet: numpy SyncVectorEnv" in r.stdout and "env-steps/s" in r.stdout, r.stdout
    assert any(line.startswith("qfleet VectorEnv ") and " 1.0x" in line for line in r.stdout.splitlines()), r.stdout
    doc = json.loads(out.read_text())
    assert doc["check"]["max_abs_diff"]["numpy SyncVectorEnv"]["obs"] <= 1e-6
    assert {row["tool"] for row in doc["rows"]} >= {"qfleet VectorEnv", "numpy SyncVectorEnv"}


def test_pennylane_device_bench_checks_rows_before_timing(tmp_path):
    # bench/compare/pennylane_device.py runs the classifier TorchLayer on qfleet.qubit, lightning.qubit
    # and default.qubit (and qfleet.QuantumLayer), checks every row's outputs and gradients
    # against default.qubit's to 1e-10 and exits with a message on a disagreement.
    import json

    import pytest
    pytest.importorskip("pennylane")
    script = SCRIPT.parent / "pennylane_device.py"
    out = tmp_path / "pl.json"
    r = subprocess.run([sys.executable, str(script), "--batch", "8", "--repeats", "1", "--number", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "equal to default.qubit's (1e-10)" in r.stdout, r.stdout
    doc = json.loads(out.read_text())
    assert set(doc["median_ms"]) >= {"qfleet.qubit (adjoint)", "lightning.qubit (adjoint)", "default.qubit (backprop)"}
    import qfleet
    if qfleet.cuda_device_count() == 0:  # --device cuda: refused with the reason, nothing timed
        r = subprocess.run([sys.executable, str(script), "--device", "cuda", "--quick"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 1 and "--device cuda: no CUDA device is visible" in r.stdout + r.stderr, r.stdout + r.stderr


def test_pennylane_demos_check_every_device_before_timing(tmp_path):
    # bench/compare/pennylane_demos.py: PennyLane's published demos with only the device name changed;
    # every device's outputs (costs, predictions, gradients, trained parameters) are checked against
    # the demo's own device before anything is timed, and every demo gives a timed row per device.
    import importlib.util

    import pytest
    needs = ("pennylane", "pennylane_lightning", "jax", "sklearn")
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the demos need {', '.join(missing)}")
    out = tmp_path / "demos.json"
    r = subprocess.run([sys.executable, str(SCRIPT.parent / "pennylane_demos.py"), "--quick", "--threads", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all 6 demos: every device's outputs equal the demo's own device's" in r.stdout, r.stdout
    doc = json.loads(out.read_text())
    assert doc["failed"] == [] and set(doc["demos"]) == {"qubit_rotation", "qnn_torch", "data_reuploading",
                                                         "noisy_circuits", "barren_plateaus", "state_preparation"}
    for name, record in doc["demos"].items():
        rows = [row for row in doc["table"] if row["workload"].startswith(f"{name}: ")]
        assert [row["tool"].split()[0] for row in rows] == record["devices"], rows
        assert all(row["median"] > 0 for row in rows), rows
        assert all(record["max_error"][dev] <= tol for dev, tol in record["atol"].items()), record
        assert record["devices"][0].startswith("qfleet.") and record["diff_method"][record["devices"][0]] == "adjoint"


def test_cli_npy_bench_checks_results_before_timing(tmp_path):
    # bench/compare/cli_npy.py runs the same batch through `qfleet eval` with JSON arrays and with .npy
    # files, checks the two results equal, then times them beside the in-process engine.
    import json
    import os

    import pytest
    if not os.environ.get("QFLEET_CLI"):
        pytest.skip("QFLEET_CLI not set: run through ctest or scripts/test.sh")
    out = tmp_path / "cli.json"
    r = subprocess.run([sys.executable, str(SCRIPT.parent / "cli_npy.py"), "--batch", "64", "--repeats", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ".npy results equal the JSON results" in r.stdout, r.stdout
    assert set(json.loads(out.read_text())["median_ms"]) >= {"qfleet eval, .npy arrays", "engine in-process, warm"}


def test_contention_bench_checks_gradients_across_thread_counts(tmp_path):
    # bench/micro/contention.py: four configurations (default threads or one, idle or beside a
    # spinning process per core), each in its own process; their gradients are compared bit for
    # bit before the table.
    out = tmp_path / "contention.json"
    script = SCRIPT.parents[1] / "micro" / "contention.py"
    r = subprocess.run([sys.executable, str(script), "--rounds", "1", "--seconds", "0.01", "--workloads", "circuit",
                        "--batches", "4", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gradients bit for bit the same with every thread count and load" in r.stdout, r.stdout
    (row,) = json.loads(out.read_text())["rows"]
    assert row["workload"] == "circuit" and row["batch"] == 4 and row["busy_default_over_one"] > 0


def test_gpu_open_peer_reference_is_the_ladders_exact_dynamics(tmp_path):
    # bench/compare/open_gpu_peer.py's reference (qfleet eval, exact solver, complex128) is what
    # dynamiqs must match on a GPU machine; here it is checked against scipy's expm of the
    # ladder's Liouvillian, segment by segment (fidelities to 1e-10), and one amplitude's
    # gradient against central finite differences of that independent propagation.
    import os

    import numpy as np
    import pytest
    from scipy.linalg import expm
    if not os.environ.get("QFLEET_CLI"):
        pytest.skip("QFLEET_CLI not set: run through ctest or scripts/test.sh")
    sys.path.insert(0, str(SCRIPT.parent))
    import open_gpu_peer as peer

    out = tmp_path / "ref.npz"
    r = subprocess.run([sys.executable, str(SCRIPT.parent / "open_gpu_peer.py"), "reference", "--qfleet",
                        os.environ["QFLEET_CLI"], "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    ref = np.load(out)

    def fidelity(d, u):  # u [60, 2]: vec(rho) column-stacked, L = -i(I x H - H^T x I) + D
        h0, (x, y), a, psi0, target = peer.ladder(d)
        eye = np.eye(d)
        jump = np.sqrt(peer.RATE) * a
        ad = jump.conj().T @ jump
        diss = np.kron(jump.conj(), jump) - 0.5 * (np.kron(eye, ad) + np.kron(ad.T, eye))
        v = np.outer(psi0, psi0.conj()).reshape(-1, order="F")
        for s in range(peer.N_SEG):
            h = h0 + u[s, 0] * x + u[s, 1] * y
            gen = -1j * (np.kron(eye, h) - np.kron(h.T, eye)) + diss
            v = expm(gen * (peer.T / peer.N_SEG)) @ v
        rho = v.reshape(d, d, order="F")
        return float(np.real(target.conj() @ rho @ target))

    for d in (2, 4):
        u, f = ref[f"d{d}_u"], ref[f"d{d}_fidelity"]
        assert u.shape == (peer.CHECK_BATCH, peer.N_SEG, 2) and f.shape == (peer.CHECK_BATCH,)
        assert ref[f"d{d}_grad_amplitudes"].shape == u.shape and ref[f"d{d}_grad_rates"].shape == (1,)
        for b in range(3):
            assert abs(fidelity(d, u[b]) - f[b]) < 1e-10, (d, b)
        h = 1e-6
        up, um = u[0].copy(), u[0].copy()
        up[7, 1] += h
        um[7, 1] -= h
        fd = (fidelity(d, up) - fidelity(d, um)) / (2 * h)
        assert abs(fd - ref[f"d{d}_grad_amplitudes"][0, 7, 1]) < 1e-7, (d, fd)


def test_apps_figures_takes_a_figure_only_from_a_run_on_its_device(meta_binary, tmp_path):
    # scripts/apps_figures.py (gpu_check.sh figures' apps.json): a real qfleet-meta report
    # from the CPU fills the cpu key; the same report offered as the GPU run is refused with
    # the device it ran on; every key apps_figures.py defines is present, each null with a reason.
    run = tmp_path / "meta-cpu"
    r = subprocess.run([meta_binary, "--preset", "paper", "--set", "device=cpu", "--set", "iterations=2",
                        "--set", "robust_iterations=1", "--set", "grape_iterations=1", "--quiet", "--out", str(run)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "apps.json"
    script = SCRIPT.parents[2] / "scripts" / "apps_figures.py"
    r = subprocess.run([sys.executable, str(script), str(out), "--gpu", "none", "--meta-paper-cpu", str(run),
                        "--meta-paper-gpu", str(run), "--meta4096-cpu", str(run)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(out.read_text())
    report = json.loads((run / "report.json").read_text())
    keys = ["meta_batch4096_speedup_vs_cpu", "meta_paper_iteration_ms_gpu", "meta_paper_iteration_ms_cpu",
            "rl_env_steps_per_s_gpu", "ppo_wall_s_gpu", "ppo_wall_s_cpu", "qgan12_epoch_speedup_vs_pennylane_gpu",
            "qgan12_generator_step_speedup_vs_pennylane_gpu", "classify_quantum_share_gpu",
            "pennylane_cuda_speedup_vs_default_qubit", "qgan_classifier_epoch_speedup_vs_plain_pytorch_gpu"]
    assert all(k in got for k in keys)
    assert got["meta_paper_iteration_ms_cpu"] == round(report["timings_s"]["per_iteration_ms"], 3)
    assert "preset paper" in got["sources"]["meta_paper_iteration_ms_cpu"]
    assert got["meta_paper_iteration_ms_gpu"] is None
    assert "asked for cuda, ran on cpu" in got["reasons"]["meta_paper_iteration_ms_gpu"]
    assert got["meta_batch4096_speedup_vs_cpu"] is None
    assert "no report" in got["reasons"]["meta_batch4096_speedup_vs_cpu"]
    assert all(got[k] is not None or got["reasons"].get(k) for k in keys)
    # a classifier comparison that ran on the CPU is refused as the GPU figure
    cpu_compare = tmp_path / "compare.json"
    cpu_compare.write_text(json.dumps({"device": "cpu", "speedup": 2.0}))

    def figures(*flags):  # apps.json from these results alone
        r = subprocess.run([sys.executable, str(script), str(out), "--gpu", "G", *flags], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(out.read_text())

    got = figures("--qgan-classifier-compare", str(cpu_compare))
    assert got["qgan_classifier_epoch_speedup_vs_plain_pytorch_gpu"] is None
    assert "ran on cpu, not cuda" in got["reasons"]["qgan_classifier_epoch_speedup_vs_plain_pytorch_gpu"]
    # the PennyLane comparison: taken from a --device cuda result only
    key = "pennylane_cuda_speedup_vs_default_qubit"
    for doc, want in (({"batch": 1024, "median_ms": {}}, None),
                      ({"device": "cuda", "gpu": "G", "batch": 1024, "speedup_vs_default_qubit": 2.5,
                        "median_ms": {"default.qubit cuda (backprop)": 5.0,
                                      "qfleet.qubit cuda (adjoint, device_vjp)": 2.0}}, 2.5)):
        pl = tmp_path / "pl.json"
        pl.write_text(json.dumps(doc))
        got = figures("--pennylane-cuda", str(pl))
        assert got[key] == want, got
        assert ("ran on cpu, not cuda" in got["reasons"][key]) if want is None else "5.0 ms" in got["sources"][key]
    # the classifier's quantum share: from a report that ran on cuda only
    for device_name, want in (("cpu", None), ("cuda:0", 0.042)):
        run_dir = tmp_path / f"classify-{device_name[:4]}"
        run_dir.mkdir()
        (run_dir / "report.json").write_text(json.dumps(
            {"device": {"name": device_name}, "timing": {"quantum_layer_share": 0.042, "quantum_layer_ms": 0.1,
                                                         "step_ms": 2.4, "timed_steps": 60}}))
        got = figures("--classify-gpu", str(run_dir))
        assert got["classify_quantum_share_gpu"] == want, got
        if want is None:
            assert "asked for cuda, ran on cpu" in got["reasons"]["classify_quantum_share_gpu"]
    # the environments' rate: from qfleet-rl bench-env stepping as tensors on cuda only
    for doc, want in (({"device": "cpu", "stepping": "tensors", "env_steps_per_s": 1e6}, None),
                      ({"device": "cuda:0", "stepping": "tensors", "env_steps_per_s": 123456789.0,
                        "environment": "qubit_x", "median_step_s": 0.0085, "repeats": 5, "steps": 30}, 1.235e8)):
        rl_json = tmp_path / "rl_env.json"
        rl_json.write_text(json.dumps(doc))
        got = figures("--rl-env-gpu", str(rl_json))
        assert got["rl_env_steps_per_s_gpu"] == want, got
        if want is None:
            assert "not as tensors on cuda" in got["reasons"]["rl_env_steps_per_s_gpu"]
    # PPO's wall time to within 0.002 of GRAPE: from a compare run whose rollout ran on that device
    reached = {"env_steps": 76800, "rollout": 20, "wall_s": 2.8}
    for rollout, compare, want in (("cpu", {"reached_within_0.002": reached}, (None, 2.8)),
                                   ("cuda:0", {"reached_within_0.002": reached}, (2.8, None)),
                                   ("cuda:0", {"reached_within_0.002": None, "ppo_env_steps": 9}, (None, None))):
        run_dir = tmp_path / "ppo"
        run_dir.mkdir(exist_ok=True)
        (run_dir / "report.json").write_text(json.dumps({"devices": {"rollout": rollout, "update": rollout}}))
        (run_dir / "compare.json").write_text(json.dumps({**compare, "gap_grape_minus_ppo": {"mean": 1e-4}}))
        got = figures("--ppo-gpu", str(run_dir), "--ppo-cpu", str(run_dir))
        assert (got["ppo_wall_s_gpu"], got["ppo_wall_s_cpu"]) == want, got
    assert "did not come within 0.002 of GRAPE in 9 env steps" in got["reasons"]["ppo_wall_s_gpu"]
    assert "asked for cpu, the rollout ran on cuda:0" in got["reasons"]["ppo_wall_s_cpu"]
    # the 12-qubit qGAN beside default.qubit: from a --device cuda run at 12 qubits only
    epoch_key, step_key = "qgan12_epoch_speedup_vs_pennylane_gpu", "qgan12_generator_step_speedup_vs_pennylane_gpu"
    tool = "default.qubit backprop"
    for doc, want in (({"device": "cpu", "qubits": 12}, None),
                      ({"device": "cuda", "qubits": 4}, None),
                      ({"device": "cuda", "qubits": 12, "gpu": "G",
                        "rows": [{"tool": tool, "median_ms": 30.0, "ratio_to_qfleet": 3.0}],
                        "generator_step": {tool: {"median_ms": 20.0, "ratio_to_qfleet": 12.5}}}, (3.0, 12.5))):
        q = tmp_path / "qgan.json"
        q.write_text(json.dumps(doc))
        got = figures("--qgan-pennylane-cuda", str(q))
        assert (got[epoch_key], got[step_key]) == (want or (None, None)), got
        if want is None:
            assert "not cuda with 12" in got["reasons"][epoch_key], got["reasons"]


def test_idx_subset_keeps_the_first_records_and_the_classifier_reads_them(classify_binary, tmp_path):
    # scripts/idx_subset.py (gpu_prepare.sh's Fashion-MNIST records for a GPU machine): the first
    # records byte for byte with their headers' counts rewritten, read back by qfleet-classify.
    import gzip
    import struct

    import pytest
    src = pathlib.Path("/usr/share/datasets/fashion-mnist")
    if not (src / "train-images-idx3-ubyte.gz").exists():
        pytest.skip("Debian's fashion-mnist package is not installed")
    script = SCRIPT.parents[2] / "scripts" / "idx_subset.py"
    dst = tmp_path / "fm"
    r = subprocess.run([sys.executable, str(script), str(src), str(dst), "128", "64"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    whole = gzip.open(src / "train-images-idx3-ubyte.gz").read()
    sub = gzip.open(dst / "train-images-idx3-ubyte.gz").read()
    assert struct.unpack(">4i", sub[:16]) == (0x803, 128, 28, 28)
    assert sub[16:] == whole[16:16 + 128 * 784]
    labels = gzip.open(dst / "t10k-labels-idx1-ubyte.gz").read()
    assert struct.unpack(">2i", labels[:8]) == (0x801, 64)
    assert labels[8:] == gzip.open(src / "t10k-labels-idx1-ubyte.gz").read()[8:72]
    r = subprocess.run([sys.executable, str(script), str(src), str(tmp_path / "big"), "60001", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "holds 60000 records, 60001 asked for" in r.stderr, r.stderr
    out = tmp_path / "run"
    r = subprocess.run([classify_binary, "--set", f"data={dst}", "--set", "epochs=1", "--set", "threads=1",
                        "--quiet", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["timing"]["timed_steps"] == 2 and 0 < report["timing"]["quantum_layer_share"] < 1


def test_control_compare_cross_checks_fidelities_before_timing(tmp_path):
    # bench/compare/control.py: the five control problems in qfleet, qutip-qtrl and qutip-qoc. Before
    # anything is timed, every problem's cost, fidelity and gradient at random pulses agree between
    # qfleet, qtrl (each exact propagator) and the scipy reference; after the runs, each tool's
    # pulse has the same cost and fidelity in qfleet, qtrl and scipy (1e-8, exit 1 otherwise).
    import importlib.util

    import pytest
    missing = [m for m in ("qutip", "qutip_qtrl", "qutip_qoc") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"bench/compare/control.py needs {', '.join(missing)} (pip install qutip-qtrl==0.2.0; "
                    "qutip-qoc==0.2.0 --no-deps: bench/compare/requirements.txt)")
    out = tmp_path / "control.json"
    r = subprocess.run([sys.executable, str(SCRIPT.parent / "control.py"), "--quick", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert set(doc["problems"]) == {"p1", "p2", "p3", "p4", "p5"}
    for key, rec in doc["problems"].items():
        assert f"{key}: qfleet, qtrl (" in r.stdout and "and scipy agree" in r.stdout, r.stdout
        assert all(v <= 1e-8 for k, v in rec["check"].items() if k.endswith(("_cost", "scipy"))), rec["check"]
        assert all(run["cross_evaluation_error"] <= 1e-8 for run in rec["runs"].values()), rec["runs"]
        assert any(t.startswith("qfleet") and run["reached"] for t, run in rec["runs"].items()), rec["runs"]
    assert doc["krotov"]["reason"] == "krotov: needs QuTiP 4 (qutip<5)"
    assert {row["tool"].split()[0] for row in doc["table"]} >= {"qfleet", "qutip-qtrl", "qutip-qoc"}
