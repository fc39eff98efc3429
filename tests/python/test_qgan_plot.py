"""qfleet.qgan's Python side without the compiled library: the figures of a qGAN report, of a
tournament and of a device classifier (python -m qfleet.qgan.plot), its one-line errors, and the sample-image exporter
(python -m qfleet.qgan.image), checked against numpy computations written here.

The figure inputs below are SYNTHETIC smoke-test data made up in this file, not results of
qfleet-qgan: they only check that every figure is drawn from a dict of the documented layout.
The modules are loaded from the source tree under a stand-in package, so that neither
qfleet/__init__.py (the operator library) nor qfleet/qgan/__init__.py (the app library) runs."""
import importlib.util
import json
import math
import pathlib
import sys
import types

import numpy as np
import pytest

pytest.importorskip("matplotlib")
sklearn_datasets = pytest.importorskip("sklearn.datasets")

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "python" / "qfleet"
PNG = b"\x89PNG\r\n\x1a\n"


def _load(module):
    """qfleet/qgan/<module>.py as _qfleet_src.qgan.<module>; `from .._plotting import` finds the real file."""
    for name, path in (("_qfleet_src", SOURCE), ("_qfleet_src.qgan", SOURCE / "qgan")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            sys.modules[name] = package
    full = f"_qfleet_src.qgan.{module}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, SOURCE / "qgan" / f"{module}.py")
        sys.modules[full] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[full])
    return sys.modules[full]


@pytest.fixture(scope="module")
def plot():
    return _load("plot")


@pytest.fixture(scope="module")
def image():
    return _load("image")


# ---------------------------------------------------------------- synthetic figure inputs

def synthetic_report(rows, cols, epochs=5, infinite=False):
    """A made-up qGAN report of the documented layout (not app output)."""
    rng = np.random.default_rng(rows * 100 + cols)
    target, generated = rng.dirichlet(np.ones(rows * cols)), rng.dirichlet(np.ones(rows * cols))
    history = [{"epoch": e, "kl": 1.0 / e, "kl_reverse": "inf" if infinite and e == 1 else 2.0 / e,
                "ks": 0.0 if infinite and e == 2 else 0.5 / e, "loss_g": 0.7 + 0.01 * e, "loss_d": 0.69,
                "seconds": 0.1 * e} for e in range(1, epochs + 1)]
    target_doc = {"name": "image" if rows == 64 else "synthetic", "description": "synthetic smoke-test data",
                  "n_qubits": int(math.log2(rows * cols)), "rows": rows, "cols": cols,
                  "probabilities": target.tolist(), "x": list(range(cols)), "x_label": "x", "y_label": "y"}
    if rows > 1:
        target_doc["y"] = [0.5 * i for i in range(rows)]
    return {"app": "qfleet-qgan train", "config": {}, "seed": 1, "target": target_doc,
            "generator": {"n_qubits": target_doc["n_qubits"], "reps": 1, "weights": [0.0],
                          "noise_model": "fake_nairobi" if infinite else None, "simulator": "statevector"},
            "history": history,
            "final": {"probabilities": generated.tolist(), "kl": 0.1, "kl_reverse": "inf" if infinite else 0.2,
                      "ks": 0.05, "epochs": epochs},
            "timing": {"seconds": 0.5, "epoch_ms": 100.0}}


def synthetic_tournament(n_devices=3, n_circuits=2, shots=True):
    """A made-up tournament of the documented layout (not app output): random distributions and numbers;
    without shots, the pairs have no finite_shots and there is no ranking (as with no noiseless device)."""
    rng = np.random.default_rng(7)
    devices = ["noiseless"] + [f"device_{k}" for k in range(1, n_devices)]
    circuits = [(f"circuit_{k}", 2 + k) for k in range(n_circuits)]
    distributions = {c: {d: rng.dirichlet(np.ones(2 ** n)).tolist() for d in devices} for c, n in circuits}
    pairs = []
    for c, _ in circuits:
        for i in range(n_devices):
            for j in range(i + 1, n_devices):
                js, tv = rng.uniform(0.05, 0.3, size=2)
                estimate = {s: {"value": v + 0.01, "low": v - 0.02, "high": v + 0.03}
                            for s, v in (("js_distance", js), ("total_variation", tv))}
                pairs.append({"circuit": c, "a": devices[i], "b": devices[j], "kl_ab": "inf", "kl_ba": 0.3,
                              "js_distance": js, "total_variation": tv, "bhattacharyya": 0.9,
                              "shots_to_distinguish": {"shots": 120, "bound": 300, "distinguishable": True}})
                if shots:
                    pairs[-1]["finite_shots"] = {"shots": 4096, "level": 0.95, **estimate}
    square = rng.uniform(0.05, 0.3, size=(n_devices, n_devices))
    square = (square + square.T) / 2
    np.fill_diagonal(square, 0.0)
    log10_shots = [[0.0 if i == j else float(2 + 10 * square[i, j]) for j in range(n_devices)]
                   for i in range(n_devices)]
    log10_shots[0][-1] = log10_shots[-1][0] = "inf"  # the same distribution on some circuit: never told apart
    return {"app": "qfleet-qgan tournament", "config": {}, "seed": 1, "confidence": 0.95,
            "devices": [{"name": d, "kind": "noise_model", "source": "synthetic"} for d in devices],
            "circuits": [{"name": c, "n_qubits": n, "description": "synthetic"} for c, n in circuits],
            "distributions": distributions, "pairs": pairs,
            "ranking": [{"rank": k + 1, "device": d, "wins": n_devices - 2 - k, "losses": k, "draws": 0,
                         "points": float(n_devices - 2 - k), "mean_js_to_reference": 0.1 * (k + 1)}
                        for k, d in enumerate(devices[1:])] if shots else None,
            "matrix": {"devices": devices, "js_distance": square.tolist(), "total_variation": square.tolist(),
                       "log10_shots": log10_shots}}


def synthetic_classifier(n_devices=6, shot_counts=(16, 64, 256)):
    """A made-up classifier.json of the documented layout (not app output)."""
    rng = np.random.default_rng(11)
    results = []
    for s in shot_counts:
        confusion = rng.integers(0, 50, size=(n_devices, n_devices)) + np.diag(np.full(n_devices, 200))
        results.append({"shots": s, "accuracy": 0.5, "accuracy_error": 0.01, "map_rule_on_test": 0.52,
                        "bayes": {"accuracy": 0.55, "error": 0.0 if s == 16 else 0.004,
                                  "method": "exact" if s == 16 else "monte_carlo", "records": 1000},
                        "fraction_of_bayes": 0.9, "confusion": confusion.tolist()})
    return {"app": "qfleet-qgan classify", "config": {}, "seed": 1, "chance": 1 / n_devices, "outcomes": 16,
            "circuit": {"name": "random_1", "description": "synthetic"},
            "devices": [{"name": f"fake_{k}"} for k in range(n_devices)], "results": results}


CLASSIFIER_FIGURES = ["classifier_accuracy.png", "classifier_confusion.png"]


@pytest.mark.parametrize("n_devices, shot_counts", [(2, (8,)), (6, (16, 64, 256))])
def test_classifier_figures_from_synthetic_results(plot, tmp_path, n_devices, shot_counts):
    paths = plot.plot_classifier(synthetic_classifier(n_devices, shot_counts), tmp_path)
    assert_pngs(paths, CLASSIFIER_FIGURES, tmp_path)
    doc = synthetic_classifier(n_devices, shot_counts)
    doc["results"][0]["confusion"].pop()
    with pytest.raises(plot.ReportError, match=r"results\[0\].confusion does not have a row for each"):
        plot.plot_classifier(doc, tmp_path)
    doc = synthetic_classifier(n_devices, shot_counts)
    del doc["results"][-1]["bayes"]["accuracy"]
    with pytest.raises(plot.ReportError, match="lacks the key 'results.*bayes.accuracy'"):
        plot.plot_classifier(doc, tmp_path)


def assert_pngs(paths, names, folder):
    assert [pathlib.Path(p).name for p in paths] == names
    for p in paths:
        assert pathlib.Path(p).parent == folder
        assert pathlib.Path(p).read_bytes()[:8] == PNG, p


QGAN_FIGURES = ["qgan_distribution.png", "qgan_metrics.png"]
TOURNAMENT_FIGURES = ["tournament_js.png", "tournament_shots.png", "tournament_ranking.png",
                      "tournament_distributions.png", "tournament_validation.png"]


@pytest.mark.parametrize("rows, cols, infinite", [(1, 8, False), (1, 8, True), (8, 8, False), (64, 64, False)],
                         ids=["1d", "1d-inf", "2d-8x8", "image-64x64"])
def test_qgan_figures_from_synthetic_reports(plot, tmp_path, rows, cols, infinite):
    paths = plot.plot_qgan(synthetic_report(rows, cols, infinite=infinite), tmp_path)
    assert_pngs(paths, QGAN_FIGURES, tmp_path)


@pytest.mark.parametrize("n_devices, n_circuits", [(2, 1), (3, 2), (7, 5)])
def test_tournament_figures_from_synthetic_results(plot, tmp_path, n_devices, n_circuits):
    paths = plot.plot_tournament(synthetic_tournament(n_devices, n_circuits), tmp_path)
    assert_pngs(paths, TOURNAMENT_FIGURES, tmp_path)


def test_tournament_without_shots_or_ranking_leaves_those_figures_out(plot, tmp_path):
    paths = plot.plot_tournament(synthetic_tournament(shots=False), tmp_path)
    assert_pngs(paths, ["tournament_js.png", "tournament_shots.png", "tournament_distributions.png"], tmp_path)


def test_main_finds_a_suite_folder_and_writes_next_to_the_json(plot, tmp_path, capsys):
    (tmp_path / "qgan").mkdir()
    (tmp_path / "tournament").mkdir()
    (tmp_path / "qgan" / "report.json").write_text(json.dumps(synthetic_report(1, 4)))
    (tmp_path / "tournament" / "tournament.json").write_text(json.dumps(synthetic_tournament()))
    (tmp_path / "classifier").mkdir()
    (tmp_path / "classifier" / "classifier.json").write_text(json.dumps(synthetic_classifier()))
    assert plot.main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tmp_path / "qgan" / n) for n in QGAN_FIGURES] + \
                      [str(tmp_path / "tournament" / n) for n in TOURNAMENT_FIGURES] + \
                      [str(tmp_path / "classifier" / n) for n in CLASSIFIER_FIGURES]
    assert all(pathlib.Path(p).read_bytes()[:8] == PNG for p in printed)
    # --out with two DIRs: one subfolder each
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.json").write_text(json.dumps(synthetic_report(2, 2)))
    assert plot.main([str(tmp_path), str(other), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / tmp_path.name / "tournament_js.png").is_file()
    assert (tmp_path / "figs" / "other" / "qgan_metrics.png").is_file()


def _error(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("qfleet.qgan.plot: error: "), err
    return err


def test_bad_inputs_are_one_line_errors_with_status_2(plot, tmp_path, capsys):
    assert plot.main([str(tmp_path / "missing")]) == 2
    assert "no such directory" in _error(capsys)
    assert plot.main([str(tmp_path)]) == 2  # a folder with neither file names what it looked for
    err = _error(capsys)
    assert "report.json" in err and "tournament.json" in err and "classifier.json" in err and str(tmp_path / "qgan") in err

    (tmp_path / "report.json").write_text('{"app": "qfleet-qgan train", ')
    assert plot.main([str(tmp_path)]) == 2
    assert "is not valid JSON" in _error(capsys)

    report = synthetic_report(1, 4)
    del report["history"][1]["loss_d"]
    (tmp_path / "report.json").write_text(json.dumps(report))
    assert plot.main([str(tmp_path)]) == 2
    assert f"{tmp_path / 'report.json'} lacks the key 'history[1].loss_d'" in _error(capsys)

    (tmp_path / "report.json").unlink()
    tournament = synthetic_tournament()
    del tournament["matrix"]["log10_shots"]
    (tmp_path / "tournament.json").write_text(json.dumps(tournament))
    assert plot.main([str(tmp_path)]) == 2
    assert "lacks the key 'matrix.log10_shots'" in _error(capsys)

    tournament = synthetic_tournament()
    tournament["pairs"][0]["finite_shots"]["js_distance"]["low"] = "low"
    (tmp_path / "tournament.json").write_text(json.dumps(tournament))
    assert plot.main([str(tmp_path)]) == 2
    assert "pairs[0].finite_shots.js_distance.low is 'low', not a number" in _error(capsys)

    with pytest.raises(plot.ReportError, match="lacks the key 'final.probabilities'"):
        plot.plot_qgan({k: v for k, v in synthetic_report(1, 4).items() if k != "final"}, tmp_path)


# ---------------------------------------------------------------- the sample image

def test_write_pgm_bytes_read_back_independently(image, tmp_path):
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    path = tmp_path / "a.pgm"
    image.write_pgm(str(path), pixels)
    raw = path.read_bytes()
    assert raw.startswith(b"P5\n4 3\n255\n")  # width first
    assert list(raw[len(b"P5\n4 3\n255\n"):]) == [20 * k for k in range(12)]
    with pytest.raises(ValueError):
        image.write_pgm(str(path), np.full((2, 2), 256))
    with pytest.raises(ValueError):
        image.write_pgm(str(path), np.zeros(4, dtype=np.uint8))


@pytest.mark.parametrize("name, size", [("china.jpg", 64), ("flower.jpg", 8), ("china.jpg", 2)])
def test_sample_image_keeps_the_mean_luma_of_the_centre_square(image, name, size):
    small = image.sample_image(name, size)
    assert small.shape == (size, size) and small.dtype == np.uint8
    rgb = sklearn_datasets.load_sample_image(name).astype(np.float64)
    h, w, _ = rgb.shape
    side = min(h, w)
    crop = rgb[(h - side) // 2:(h - side) // 2 + side, (w - side) // 2:(w - side) // 2 + side]
    luma = 0.299 * crop[..., 0] + 0.587 * crop[..., 1] + 0.114 * crop[..., 2]
    assert abs(small.astype(np.float64).mean() - luma.mean()) <= 1.0  # area averaging keeps the mean


def test_sample_image_cli_and_bad_sizes(image, tmp_path, capsys):
    for size in (0, 1, 3, 48, 128, 2.0, True):
        with pytest.raises(ValueError, match="power of two"):
            image.sample_image("china.jpg", size)
    with pytest.raises(ValueError, match="unknown sample image"):
        image.sample_image("nope.jpg", 8)
    out = tmp_path / "china.pgm"
    assert image.main([str(out), "--size", "16"]) == 0
    assert out.read_bytes()[:len(b"P5\n16 16\n255\n")] == b"P5\n16 16\n255\n"
    assert len(out.read_bytes()) == len(b"P5\n16 16\n255\n") + 256
    capsys.readouterr()
    assert image.main([str(out), "--size", "48"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "power of two" in err
    with pytest.raises(SystemExit) as exit_:
        image.main([str(out), "--name", "nope.jpg"])
    assert exit_.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_a_link_planted_at_a_figure_is_replaced_not_written_through(plot, tmp_path, capsys):
    # Every figure goes through qfleet/_files.py: a fresh temporary in the folder, then os.replace,
    # which replaces a link at the name; before, savefig wrote through it into the link's target.
    (tmp_path / "report.json").write_text(json.dumps(synthetic_report(1, 4)))
    (tmp_path / "victim").write_bytes(b"keep me")
    (tmp_path / "qgan_metrics.png").symlink_to(tmp_path / "victim")
    assert plot.main([str(tmp_path)]) == 0
    capsys.readouterr()
    assert (tmp_path / "victim").read_bytes() == b"keep me"
    figure = tmp_path / "qgan_metrics.png"
    assert not figure.is_symlink() and figure.read_bytes()[:8] == PNG
    assert figure.stat().st_mode & 0o777 == 0o644
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary was left"


def test_every_python_writer_goes_through_the_one_helper():
    # savefig, open(..., "w"/"wb") and Path.write_* only in qfleet/_files.py.
    import re
    pattern = re.compile(r"\.savefig\(|open\([^)]*['\"][wax]b?['\"]|(?<!_files)\.write_(text|bytes)\(")
    offenders = [f"{path.relative_to(SOURCE)}:{n}" for path in sorted(SOURCE.rglob("*.py"))
                 if path.name != "_files.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []
