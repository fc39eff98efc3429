"""qfleet-classify (apps/classify) from Python: training on scikit-learn's real 8x8 digits
(written as IDX files here, independently of the C++ reader), the binary and
`python -m qfleet.classify` giving the same numbers, the real Fashion-MNIST files of
Debian's package read and standardised as numpy reads them, every bad input a one-line
error with status 2, and the figures."""
import gzip
import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def binary(classify_binary):
    return classify_binary


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    pytest.importorskip("sklearn")
    from qfleet.classify import digits as dg
    out = tmp_path_factory.mktemp("digits")
    n_train, n_test = dg.convert(str(out))
    assert (n_train, n_test) == (1348, 449)
    return out


def run(cmd, **kw):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)


def test_learns_the_digits_and_the_python_entry_gives_the_same_numbers(qfleet, binary, digits, tmp_path):
    args = ["--data", str(digits), "--epochs", "4", "--batch", "32", "--lr", "0.003", "--threads", "2", "--quiet"]
    r = run([binary, *args, "--out", str(tmp_path / "bin")])
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "bin" / "report.json").read_text())
    assert report["data"]["train"] == 1348 and report["data"]["image"] == [8, 8]
    assert report["test_accuracy"] > 0.4, report["epochs"]  # chance is 0.1 (0.58 measured)
    assert sum(map(sum, report["confusion"])) == 449
    assert "test accuracy" in r.stdout and "quantum layer (forward + backward)" in r.stdout
    # The Python entry runs the same C++: the same numbers to the last bit.
    env = dict(os.environ, OMP_WAIT_POLICY="passive",
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(qfleet.__file__).resolve().parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "qfleet.classify", *args, "--out", str(tmp_path / "py")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    again = json.loads((tmp_path / "py" / "report.json").read_text())
    assert [e["test_loss"] for e in again["epochs"]] == [e["test_loss"] for e in report["epochs"]]
    assert again["confusion"] == report["confusion"]
    # The ablation: the same model with a classical layer of the same width.
    c = run([binary, *args, "--layer", "classical", "--out", str(tmp_path / "classical")])
    assert c.returncode == 0, c.stderr
    ablation = json.loads((tmp_path / "classical" / "report.json").read_text())
    assert ablation["model"]["middle_layer"] == "classical"
    assert ablation["model"]["parameters"]["middle"] == 4 * 4 + 4
    assert report["model"]["parameters"]["middle"] == 3 * 4 * 3  # 3 StronglyEntanglingLayers on 4 qubits

    pytest.importorskip("matplotlib")
    pl = subprocess.run([sys.executable, "-m", "qfleet.classify.plot", str(tmp_path / "bin"), str(tmp_path / "classical")],
                        capture_output=True, text=True, env=env)
    assert pl.returncode == 0, pl.stderr
    for name in ("curves.png", "confusion.png", "per_class.png", "timing.png"):
        png = tmp_path / "bin" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name


def read_idx_gz(path):
    raw = gzip.open(path).read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4:4 + 4 * dims])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


@pytest.mark.skipif(not FASHION.is_dir(), reason="Debian's dataset-fashion-mnist is not installed")
def test_reads_debians_fashion_mnist(binary, tmp_path):
    r = run([binary, "--train-subset", "256", "--test-subset", "200", "--epochs", "1", "--threads", "2", "--quiet",
             "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    images = read_idx_gz(FASHION / "train-images-idx3-ubyte.gz")
    assert images.shape == (60000, 28, 28)
    first = images[:256] / 255.0
    std = report["data"]["standardisation"]
    assert std["mean"] == pytest.approx(first.mean(), rel=1e-12)
    assert std["std"] == pytest.approx(first.std(ddof=1), rel=1e-12)
    assert report["data"]["classes"][0] == "T-shirt/top" and report["data"]["train"] == 256
    assert sum(map(sum, report["confusion"])) == 200


def idx_bytes(array, type_code=0x08):
    array = np.asarray(array, np.uint8)
    return struct.pack(">BBBB", 0, 0, type_code, array.ndim) + b"".join(struct.pack(">I", n) for n in array.shape) + \
        array.tobytes()


def write_set(d, train_images=None, train_labels=None, test_images=None, test_labels=None):
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    parts = {"train-images-idx3-ubyte": train_images if train_images is not None else rng.integers(0, 255, (20, 10, 10)),
             "train-labels-idx1-ubyte": train_labels if train_labels is not None else rng.integers(0, 10, 20),
             "t10k-images-idx3-ubyte": test_images if test_images is not None else rng.integers(0, 255, (8, 10, 10)),
             "t10k-labels-idx1-ubyte": test_labels if test_labels is not None else rng.integers(0, 10, 8)}
    for name, value in parts.items():
        (d / name).write_bytes(value if isinstance(value, bytes) else idx_bytes(value))
    return d


@pytest.mark.parametrize("case, needle", [
    ("missing", "train-images-idx3-ubyte[.gz]: no such file"),
    ("cut", "cut short: 1500 data bytes, the header declares 2000"),
    ("corrupt gzip", "t10k-images-idx3-ubyte.gz: cannot read"),
    ("label out of range", "label 12 at index 3 is outside [0, 10)"),
    ("image size", "images of 12x10, but"),
    ("counts", "has 20 images but"),
    ("head inputs", "gives 4 outputs, but head_inputs = 10"),
    ("unknown backbone", "key 'backbone': expected one of [\"small\",\"resnet18\"]"),
    ("bad option", "--epocs"),
])
def test_bad_inputs_are_one_line_errors(binary, tmp_path, case, needle):
    d = tmp_path / "data"
    extra = []
    if case == "missing":
        d.mkdir()
    elif case == "cut":
        write_set(d, train_images=idx_bytes(np.zeros((20, 10, 10)))[:-500])
    elif case == "corrupt gzip":
        write_set(d)
        blob = bytearray(gzip.compress(idx_bytes(np.random.default_rng(1).integers(0, 255, (8, 10, 10)))))
        blob[20:40] = b"\xff" * 20
        (d / "t10k-images-idx3-ubyte").unlink()
        (d / "t10k-images-idx3-ubyte.gz").write_bytes(bytes(blob))
    elif case == "label out of range":
        write_set(d, train_labels=[1, 2, 3, 12] + [0] * 16)
    elif case == "image size":
        write_set(d, test_images=np.zeros((8, 12, 10)))
    elif case == "counts":
        write_set(d, train_labels=np.zeros(19))
    else:
        write_set(d)
        extra = {"head inputs": ["--head-inputs", "10"], "unknown backbone": ["--backbone", "vgg"],
                 "bad option": ["--epocs", "3"]}[case]
    r = run([binary, "--data", str(d), "--out", str(tmp_path / "out"), "--quiet", *extra])
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qfleet-classify: error: ") and needle in lines[0], r.stderr
    assert not (tmp_path / "out" / "report.json").exists()


@pytest.mark.parametrize("module", ["qfleet.classify.plot", "qfleet.meta_control.plot",
                                    "qfleet.meta_control.plot_reproduction"])
def test_plots_without_matplotlib_say_so_in_one_line(qfleet, tmp_path, module):
    (tmp_path / "matplotlib.py").write_text('raise ImportError("not installed")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(pathlib.Path(qfleet.__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", module, str(tmp_path)], capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == f"{module}: error: matplotlib is not installed; install it with: pip install matplotlib"
