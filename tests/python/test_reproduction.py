"""The paper reproduction (apps/meta_control/experiments.cpp, docs/reproduction.md) from Python: the
fits the experiments report against scipy, `qfleet-meta reproduce` end to end with
plot_reproduction's figures (a corrupt result is refused in one line), and plot.py's gap_vs_k.png."""
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

PNG = b"\x89PNG\r\n\x1a\n"


def python_env(qfleet):
    """The environment of a `python -m qfleet...` child: this process's, with the qfleet it imported first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pathlib.Path(qfleet.__file__).resolve().parents[1]),
                                                    env.get("PYTHONPATH")) if p)
    return env


def is_png(path):
    return path.is_file() and path.read_bytes()[:8] == PNG and path.stat().st_size > 10_000


# ---- the fits ------------------------------------------------------------------------------------


def saturation(K, c, beta):
    import numpy as np
    return c * (1 - np.exp(-beta * np.asarray(K)))


def test_saturation_fit_matches_scipy(mc):
    """c (1 - e^{-beta K}) with the original code's curve_fit bounds: exact data back to 1e-6,
    noisy data to scipy's optimum."""
    np = pytest.importorskip("numpy")
    optimize = pytest.importorskip("scipy.optimize")
    K = np.arange(31.0)
    exact = saturation(K, 0.006, 0.19)
    c, beta, r2 = mc.fit_saturation(K.tolist(), exact.tolist())
    assert c == pytest.approx(0.006, rel=1e-6) and beta == pytest.approx(0.19, rel=1e-6)
    assert r2 == pytest.approx(1.0, abs=1e-10)
    G = exact + np.random.default_rng(7).normal(0, 3e-4, K.size)
    (sc, sb), _ = optimize.curve_fit(saturation, K, G, p0=(0.005, 0.2), bounds=([0, 0.001], [2, 10]),
                                     ftol=1e-14, xtol=1e-14, gtol=1e-14)
    res = G - saturation(K, sc, sb)
    s_r2 = 1 - (res @ res) / ((G - G.mean()) @ (G - G.mean()))
    c, beta, r2 = mc.fit_saturation(K.tolist(), G.tolist())
    assert c == pytest.approx(sc, rel=1e-4) and beta == pytest.approx(sb, rel=1e-4), ((c, beta), (sc, sb))
    assert r2 == pytest.approx(s_r2, abs=1e-6)
    assert 0.9 < r2 < 1


def test_line_fit_matches_linregress(mc):
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 3, 15) ** 2
    y = 0.002 * x - 1e-4 + rng.normal(0, 1e-3, x.size)
    slope, intercept, r2 = mc.fit_line(x.tolist(), y.tolist())
    ref = stats.linregress(x, y)
    assert slope == pytest.approx(ref.slope, rel=1e-10)
    assert intercept == pytest.approx(ref.intercept, rel=1e-9, abs=1e-15)
    assert r2 == pytest.approx(ref.rvalue ** 2, rel=1e-10)
    with pytest.raises(mc.ConfigError, match="every x is the same"):
        mc.fit_line([1, 1, 1], [0, 1, 2])


@pytest.mark.parametrize("x, y, needle", [([0, 1, 2], [0, 1], "differ in length"),
                                          ([0, 1, float("nan")], [0, 1, 2], "not finite"),
                                          ([0, 1, 2], [0, float("inf"), 1], "not finite"),
                                          ([1], [2], "at least 2 points")])
def test_fits_reject_bad_input(mc, x, y, needle):
    for fit in (mc.fit_saturation, mc.fit_line):
        with pytest.raises(mc.ConfigError, match=needle):
            fit(x, y)
    assert issubclass(mc.ConfigError, ValueError)


# ---- qfleet-meta reproduce, end to end -------------------------------------------------------------


def test_reproduce_tiny_and_its_figures(qfleet, mc, meta_binary, tmp_path):
    binary = meta_binary
    out = tmp_path / "repro"
    for name in ("gap-vs-k", "lemmas"):  # one --out: lemmas reuses the policy gap-vs-k trained
        r = subprocess.run([binary, "reproduce", name, "--tiny", "--quiet", "--threads", "2", "--out", str(out)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert f"plot_reproduction {out}" in r.stdout and "reproduce:" not in r.stderr, (r.stdout, r.stderr)
        assert (out / name / "table.md").read_text().startswith("|")
    results = {n: json.loads((out / n / "result.json").read_text()) for n in ("gap-vs-k", "lemmas")}
    for name, res in results.items():
        assert {"experiment", "paper", "ours", "tiny", "seed", "seconds", "command"} <= set(res)
        assert res["experiment"] == name and res["tiny"] is True and "--tiny" in res["command"]
    gk = results["gap-vs-k"]
    assert gk["paper"]["c"] == 0.006 and len(gk["ours"]["models"]) == 4  # 100, 150, 200 iterations, converged
    for m in gk["ours"]["models"]:
        assert set(m["runs"]) == {"adam", "adam_1e-2", "sgd"}
        for opt, run in m["runs"].items():
            cv = run["curve"]
            assert set(cv) == {"K", "mean_fidelity", "std_fidelity", "mean_gap", "std_gap"}
            assert cv["K"] == list(range(len(cv["K"]))) and len(cv["K"]) > 2
            assert all(len(v) == len(cv["K"]) for v in cv.values())
            assert cv["mean_gap"][0] == 0 and run["G_30"] == cv["mean_gap"][run["fit_K30"]["K_max"]]
            for fit in (run["fit_K30"], run["fit_K50"]):
                assert set(fit) == {"K_max", "c", "beta", "r2"} and 0 <= fit["c"] <= 2 and 1e-3 <= fit["beta"] <= 10
            if opt == "sgd":  # null in the JSON is a NaN or an infinity on the C++ side
                values = cv["mean_gap"] + cv["mean_fidelity"] + cv["std_gap"]
                assert all(isinstance(v, float) and math.isfinite(v) for v in values), cv
                assert all(0 <= f <= 1 for f in cv["mean_fidelity"])
    lem = results["lemmas"]["ours"]
    assert lem["model"]["key"] in {m["model"]["key"] for m in gk["ours"]["models"]} and lem["model"]["cached"] is True
    pl, lip, cs = lem["pl"], lem["lipschitz"], lem["control_separation"]
    assert len(pl["suboptimality"]) == len(pl["half_grad_sq"]) == len(pl["task"]) == pl["points"]
    assert len(lip["task_distance"]) == len(lip["lindbladian_distance"]) > 0
    assert all(d <= lip["C_L_sup"] * t * (1 + 1e-9) for t, d in zip(lip["task_distance"], lip["lindbladian_distance"]))
    assert len(cs["delta_gamma"]) == len(cs["delta_u"]) > 0 and math.isfinite(cs["slope"])

    r = subprocess.run([sys.executable, "-m", "qfleet.meta_control.plot_reproduction", str(out)],
                       env=python_env(qfleet), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in ("gap-vs-k", "lemmas"):
        assert is_png(out / name / "figure.png"), name
        assert str(out / name / "figure.png") in r.stdout


def test_reproduce_copies_through_the_writer(meta_binary, tmp_path):
    # `reproduce` continues a shorter run from a copy of its checkpoint and log. The copies go
    # through qfleet's writer: a link planted at a copy's name is replaced, not written through,
    # and a linked model folder below --out is refused; before, std::filesystem::copy_file
    # overwrote the links' targets.
    out = tmp_path / "repro"
    command = [meta_binary, "reproduce", "lemmas", "--tiny", "--quiet", "--threads", "1", "--out", str(out)]
    r = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    models = out / "models"
    # A second reproduction into the folder is refused, naming how it differs, before it runs
    # (its trained policies are a cache by configuration; the results are not).
    for extra, what in (([], "a run of this configuration"), (["--seed", "2"], "a run of another configuration (seed 1 -> 2)")):
        r = subprocess.run(command + extra, capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and r.stderr == (f"qfleet-meta reproduce: error: {out}/ holds {what}; --overwrite "
                                                  "replaces it, or choose another --out\n"), r.stderr
    command.append("--overwrite")
    (models / "original_200").rename(models / "original_150")  # the shorter run lemmas' model continues
    (models / "original_200").mkdir()
    for name in ("checkpoint.pt", "train_log.jsonl"):
        (tmp_path / f"victim_{name}").write_text("keep me")
        (models / "original_200" / name).symlink_to(tmp_path / f"victim_{name}")
    r = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for name in ("checkpoint.pt", "train_log.jsonl"):
        assert (tmp_path / f"victim_{name}").read_text() == "keep me", name
        assert not (models / "original_200" / name).is_symlink(), name
    assert json.loads((out / "lemmas" / "result.json").read_text())["ours"]["model"]["continued_from"] == "original_150"
    # The model's folder itself a link to elsewhere: refused, nothing written there.
    shutil.rmtree(models / "original_200")
    (tmp_path / "elsewhere").mkdir()
    (models / "original_200").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    r = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{models / 'original_200'} is a symbolic link" in r.stderr, r.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_reproduction_plots_refuse_missing_and_corrupt_results(mc, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from qfleet.meta_control import plot_reproduction

    def refused(*needles):
        assert plot_reproduction.main([str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith("qfleet.meta_control.plot_reproduction: error: ")
        for needle in needles:
            assert needle in err, err

    refused("no experiment results in")
    path = tmp_path / "gap-vs-k" / "result.json"
    path.parent.mkdir()
    path.write_text('{"experiment": "gap-vs-k", "ours": {"models": [')  # cut off mid-write
    refused(str(path), "is not valid JSON")
    path.write_text(json.dumps({"experiment": "gap-vs-k", "paper": {}, "ours": {"models": [{"runs": {"adam": {}}}]},
                                "command": "qfleet-meta reproduce gap-vs-k"}))
    refused(str(path), "lacks the key 'curve'")
    path.write_text(json.dumps({"experiment": "lemmas", "ours": {}}))
    refused(str(path), "not the result of the gap-vs-k experiment")
    assert not (tmp_path / "gap-vs-k" / "figure.png").exists()


# ---- --paper-checkpoint: a policy file of the paper's code, converted and loaded --------------------------


class PaperPolicy:
    """The layout of the paper's policy files (nimalec/meta-quantum-control: a `network`
    nn.Sequential of Linear/Tanh under "policy_state_dict"), built here with torch."""

    def __init__(self, torch, width, segments, zero_output=False):
        nn = torch.nn
        self.module = nn.Module()
        self.module.network = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                                            nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 2 * segments))
        if zero_output:  # no drive at all: |0> never reaches |1>
            with torch.no_grad():
                self.module.network[-1].weight.zero_()
                self.module.network[-1].bias.zero_()

    def save(self, torch, path, epoch):
        torch.save({"policy_state_dict": self.module.state_dict(), "epoch": epoch}, path)


def test_paper_checkpoint_converts_and_loads(qfleet, mc, meta_binary, tmp_path):
    import torch
    from qfleet.meta_control import paper_checkpoint

    torch.manual_seed(3)
    policy = PaperPolicy(torch, width=8, segments=4)
    policy.save(torch, tmp_path / "p.pt", epoch=7)
    out = paper_checkpoint.convert(tmp_path / "p.pt")
    assert out["dims"] == [3, 8, 8, 8, 8] and out["meta"]["epoch"] == 7
    # The flat vector, read back by the layout policy.cpp documents (per layer W [in, out]
    # row-major, then b), is the same network: same outputs as torch's forward.
    theta, at, x = torch.tensor(out["theta"], dtype=torch.float64), 0, torch.rand(5, 3, dtype=torch.float64)
    h = x
    for i, (n_in, n_out) in enumerate(zip(out["dims"][:-1], out["dims"][1:])):
        w = theta[at:at + n_in * n_out].view(n_in, n_out)
        b = theta[at + n_in * n_out:at + n_in * n_out + n_out]
        at += n_in * n_out + n_out
        h = h @ w + b
        if i < len(out["dims"]) - 2:
            h = torch.tanh(h)
    assert at == theta.numel()
    torch.testing.assert_close(h, policy.module.network.double()(x), rtol=1e-12, atol=1e-12)

    # Loaded by `reproduce`: a policy with zero output drives nothing, so the state transfer
    # |0> -> |1> has fidelity 0 (relaxation only pulls towards |0>).
    PaperPolicy(torch, width=8, segments=4, zero_output=True).save(torch, tmp_path / "zero.pt", epoch=3)
    r = subprocess.run([sys.executable, "-m", "qfleet.meta_control.paper_checkpoint", str(tmp_path / "zero.pt"),
                        str(tmp_path / "zero.json")], env=python_env(qfleet), capture_output=True, text=True)
    assert r.returncode == 0 and "dims [3, 8, 8, 8, 8]" in r.stdout, r.stderr
    binary, repro = meta_binary, tmp_path / "repro"
    r = subprocess.run([binary, "reproduce", "gap-vs-k", "--tiny", "--quiet", "--threads", "2", "--out", str(repro),
                        "--paper-checkpoint", str(tmp_path / "zero.json")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    models = json.loads((repro / "gap-vs-k" / "result.json").read_text())["ours"]["models"]
    paper = [m for m in models if m["model"]["key"] == "paper_file"]
    assert len(paper) == 1 and paper[0]["model"]["iterations"] == 3
    assert abs(paper[0]["F_0"]) < 1e-12

    # A file of another shape (4 inputs) or not a converted checkpoint: one clear line, status 2.
    bad = dict(json.loads((tmp_path / "zero.json").read_text()), dims=[4, 8, 8, 8, 8])
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    (tmp_path / "cut.json").write_text('{"dims": [3, 8')
    (tmp_path / "types.json").write_text(json.dumps(dict(bad, dims="3, 8, 8")))
    (tmp_path / "theta.json").write_text(json.dumps(dict(bad, dims=[3, 8, 8, 8, 8], theta=[[1.0], "x"])))
    for name, needle in (("bad.json", "is not the original preset's"), ("cut.json", "is not JSON"),
                         ("types.json", '"dims" must be at least 3 layer widths'),
                         ("theta.json", '"theta" must be an array of numbers'),
                         ("missing.json", "cannot be opened (no such file")):
        r = subprocess.run([binary, "reproduce", "gap-vs-k", "--tiny", "--quiet", "--out", str(repro),
                            "--paper-checkpoint", str(tmp_path / name)], capture_output=True, text=True)
        assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


class _RunsCode:
    """What a hostile checkpoint holds: unpickling it calls a function of the attacker's choosing."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_paper_checkpoint_never_runs_code_from_the_file(tmp_path):
    # The paper's checkpoint comes from a third party: torch.load(weights_only=True) refuses a
    # pickle that names a callable (here: open(), which would create the marker file), with one line
    # naming it; numpy scalars (a metric saved as np.float64) still load.
    import numpy as np
    import torch
    from qfleet.meta_control import paper_checkpoint

    state = {"network.0.weight": torch.zeros(2, 3), "network.0.bias": torch.zeros(2)}
    marker = tmp_path / "ran"
    torch.save({"policy_state_dict": state, "hook": _RunsCode(marker)}, tmp_path / "hostile.pt")
    with pytest.raises(SystemExit, match="refused \\(it could run code\\).*GLOBAL"):
        paper_checkpoint.convert(tmp_path / "hostile.pt")
    assert not marker.exists()
    torch.save({"policy_state_dict": state, "loss": np.float64(0.25)}, tmp_path / "numpy.pt")
    out = paper_checkpoint.convert(tmp_path / "numpy.pt")
    assert out["dims"] == [3, 2] and out["meta"] == {"loss": 0.25}


def test_a_malformed_paper_checkpoint_is_one_line(qfleet, tmp_path):
    # Each malformed state dict: status 1 and one line naming the entry; before, a bias of the
    # wrong length was converted into a vector of the wrong size, a complex weight lost its
    # imaginary part with only a warning, and the others ended in a traceback.
    import torch

    good = {"network.0.weight": torch.zeros(2, 3), "network.0.bias": torch.zeros(2)}
    cases = {
        "bias_length": (dict(good, **{"network.0.bias": torch.zeros(3)}), "network.0.bias has 3 entries"),
        "complex": (dict(good, **{"network.0.weight": torch.zeros(2, 3, dtype=torch.complex64)}),
                    "network.0.weight is complex"),
        "no_bias": ({"network.0.weight": torch.zeros(2, 3)}, "no network.0.bias entry"),
        "vector_weight": (dict(good, **{"network.0.weight": torch.zeros(3)}), "network.0.weight has shape [3]"),
        "not_a_tensor": (dict(good, **{"network.0.bias": [0.0, 0.0]}), "network.0.bias is a list"),
        "index": ({"network.x.weight": torch.zeros(2, 3)}, "is not network.<i>.weight"),
        "nan": (dict(good, **{"network.0.bias": torch.tensor([0.0, float("nan")])}), "NaN or infinite"),
    }
    env = python_env(qfleet)
    for name, (state, needle) in cases.items():
        torch.save({"policy_state_dict": state, "epoch": 1}, tmp_path / f"{name}.pt")
        r = subprocess.run([sys.executable, "-m", "qfleet.meta_control.paper_checkpoint",
                            str(tmp_path / f"{name}.pt"), str(tmp_path / f"{name}.json")],
                           env=env, capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and needle in lines[0], (name, r.stderr)
        assert not (tmp_path / f"{name}.json").exists()


# ---- plot.py's gap_vs_k.png from a report's "adaptation" -----------------------------------------------


def gap_regime(F, robust, grape, tasks=3):
    return {"tasks": tasks, "K": list(range(len(F))), "mean_fidelity": F, "gap": [f - F[0] for f in F],
            "mean_robust": robust, "mean_grape": grape, "adapted_minus_robust": F[-1] - robust,
            "adapted_minus_robust_se": 0.004, "gamma_deph_range": [0.01, 0.14], "gamma_relax_range": [0.002, 0.07]}


def write_run(out, adaptation):
    """A report.json and pulses.json with what plot.py reads (meta_control.cpp writes both)."""
    V, S = 3, 6
    tasks = [{"gamma_deph": 0.02 * (b + 1), "gamma_relax": 0.01 * (b + 1), "fidelity_before": 0.90 + 0.01 * b,
              "fidelity_after": 0.95, "fidelity_robust": 0.93 - 0.01 * b, "fidelity_grape": 0.97} for b in range(V)]
    report = {"algorithm": "maml", "config": {"fidelity": "state_transfer"}, "system": {"name": "single_qubit"},
              "solver": {"name": "expm", "dt": 0, "precision": "complex128"},
              "curve": [{"iteration": i, "train_fidelity": None if i == 0 else 0.9 + 0.005 * i,
                         "val_before": 0.88 + 0.004 * i, "val_after": 0.9 + 0.005 * i} for i in (0, 4, 8)],
              "validation": {"tasks": tasks, "adapt_steps": 3, "mean_robust": 0.92, "mean_grape": 0.97}}
    if adaptation:
        ood = gap_regime([0.6, 0.64, 0.66, 0.67], 0.7, 0.9)
        ood.update(centre=[1.05, 0.56], spread=0.15)
        report["adaptation"] = {"adapt": {"optimizer": "adam", "lr": 1e-4, "grad_clip": 1, "steps": 3},
                                "in_distribution": gap_regime([0.9, 0.93, 0.94, 0.95], 0.92, 0.97),
                                "out_of_distribution": ood}
        report["conclusion"] = ("In distribution (3 tasks) the meta policy gives F = 0.9000 before and 0.9500 after 3 "
                                "adaptation steps, against 0.9200 for the one robust pulse and 0.9700 for per-task "
                                "GRAPE. Out of distribution (3 tasks) the robust pulse beats the adapted policy.")
    row = [[0.1 * k, -0.2 * k] for k in range(S)]
    pulses = {"segment_duration": 0.25, "controls": ["x", "y"], "robust": row,
              "tasks": [{"gamma_deph": t["gamma_deph"], "gamma_relax": t["gamma_relax"], "meta_before": row,
                         "meta_adapted": row, "grape": row} for t in tasks]}
    out.mkdir()
    (out / "report.json").write_text(json.dumps(report))
    (out / "pulses.json").write_text(json.dumps(pulses))


def test_run_plots_draw_gap_vs_k_from_the_adaptation(mc, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from qfleet.meta_control import plot
    for adaptation in (True, False):  # reports written before "adaptation" existed still plot
        out = tmp_path / f"adaptation_{adaptation}"
        write_run(out, adaptation)
        assert plot.main([str(out)]) == 0
        printed = capsys.readouterr().out
        for name in ("training_curve", "pulses", "fidelity_vs_noise", "adaptation_gap"):
            assert is_png(out / f"{name}.png"), name
        assert is_png(out / "gap_vs_k.png") == adaptation and ("gap_vs_k.png" in printed) == adaptation
