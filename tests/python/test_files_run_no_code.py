"""No file an app reads back can run code (docs/reliability.md): a TorchScript archive whose
__setstate__ runs as LibTorch loads it, planted where an app reads a checkpoint, a backbone or its
feature cache, is refused unread (or, the cache, recomputed) and its code never runs. The apps
read and write qfleet's tensor files (qfleet/tensor_file.hpp), which Python reads with
qfleet.read_tensor_file."""
import subprocess
import sys
from typing import Tuple

import pytest
import torch

from conftest import app_binary

MARK = "QFLEET-PLANTED-CODE-RAN"
# (TorchScript, deprecated in favour of torch.export, is what makes an archive that runs code.)
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")


class _Planted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.x = torch.zeros(1)

    @torch.jit.export
    def __getstate__(self) -> Tuple[torch.Tensor, bool]:
        return self.x, self.training

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, bool]) -> None:
        print("QFLEET-PLANTED-CODE-RAN")  # what an attacker's code would do instead: anything
        self.x = state[0]
        self.training = state[1]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    path = tmp_path_factory.mktemp("planted") / "planted.pt"
    torch.jit.save(torch.jit.script(_Planted()), str(path))
    # The fixture does what it should: LibTorch's loader runs its code.
    r = subprocess.run([sys.executable, "-c", f"import torch; torch.jit.load({str(path)!r})"],
                       capture_output=True, text=True, timeout=120)
    assert MARK in r.stdout, (r.stdout, r.stderr)
    return path.read_bytes()


def _one_line_error(r, name):
    assert MARK not in r.stdout + r.stderr, "the planted file's code ran"
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert r.stderr.startswith(f"{name}: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "LibTorch archive" in r.stderr and "can run code" in r.stderr, r.stderr


def test_a_planted_checkpoint_never_runs(planted, tmp_path):
    binary = app_binary("QFLEET_QGAN", "qfleet-qgan")
    common = ["train", "--quiet", "--threads", "1", "--out", str(tmp_path / "run")]
    r = subprocess.run([binary, *common, "--epochs", "2"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    # What the app wrote is a tensor file Python reads too; damage is refused there as in C++.
    import qfleet

    ckpt = qfleet.read_tensor_file(tmp_path / "run" / "checkpoint.pt", "qfleet-train-checkpoint/3")
    assert int(ckpt.texts["step"]) > 0 and ckpt.tensors["rng.default.cpu"].dtype == torch.uint8
    assert ckpt.module_state("module.discriminator"), sorted(ckpt.texts)
    data = bytearray((tmp_path / "run" / "checkpoint.pt").read_bytes())
    data[-4] ^= 1
    (tmp_path / "damaged.pt").write_bytes(bytes(data))
    with pytest.raises(qfleet.TensorFileError, match="damaged.pt: is damaged: its SHA-1 is "):
        qfleet.read_tensor_file(tmp_path / "damaged.pt")
    (tmp_path / "run" / "checkpoint.pt").write_bytes(planted)
    r = subprocess.run([binary, *common, "--epochs", "4", "--resume"], capture_output=True, text=True, timeout=600)
    _one_line_error(r, "qfleet-qgan")


CLASSIFY = ["--mode", "features", "--epochs", "1", "--train-subset", "64", "--test-subset", "32", "--quiet",
            "--threads", "1"]


def test_a_planted_backbone_never_runs(planted, tmp_path):
    (tmp_path / "backbone.pt").write_bytes(planted)
    r = subprocess.run([app_binary("QFLEET_CLASSIFY", "qfleet-classify"), *CLASSIFY, "--backbone-from",
                        str(tmp_path / "backbone.pt"), "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=600)
    _one_line_error(r, "qfleet-classify")


def test_a_planted_feature_cache_never_runs_and_is_recomputed(planted, tmp_path):
    import json

    import qfleet

    binary = app_binary("QFLEET_CLASSIFY", "qfleet-classify")
    run = lambda out: subprocess.run([binary, *CLASSIFY, "--out", str(out), "--set", f"cache={tmp_path / 'cache'}"],  # noqa: E731
                                     capture_output=True, text=True, timeout=600)
    r = run(tmp_path / "first")
    assert r.returncode == 0, r.stderr
    [cache] = list((tmp_path / "cache").iterdir())
    first = qfleet.read_tensor_file(cache, "qfleet-classify-features/1")
    assert set(first.tensors) == {"train", "test"} and first.tensors["train"].shape[0] == 64
    cache.write_bytes(planted)
    r = run(tmp_path / "second")
    assert r.returncode == 0 and MARK not in r.stdout + r.stderr, r.stdout + r.stderr
    report = json.loads((tmp_path / "second" / "report.json").read_text())
    note = json.dumps(report)
    assert "LibTorch archive" in note and "recomputed" in note, note
    again = qfleet.read_tensor_file(cache, "qfleet-classify-features/1")  # written anew, the same features
    assert all(torch.equal(again.tensors[k], first.tensors[k]) for k in ("train", "test"))
    # A link planted at the temporary's name an earlier version used (the cache's name + ".tmp")
    # is not written through: the cache is written by qfleet's one writer (a fresh mkstemp name).
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    cache.unlink()
    (tmp_path / "cache" / (cache.name + ".tmp")).symlink_to(victim)
    r = run(tmp_path / "third")
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "keep" and cache.is_file() and not cache.is_symlink()


def test_the_python_reader_refuses_what_is_not_a_tensor_file(planted, tmp_path):
    import qfleet

    cases = {"planted.pt": (planted, "is a LibTorch archive"), "empty.pt": (b"", "is not a qfleet tensor file"),
             "text.pt": (b"{\"__metadata__\": {}}", "is not a qfleet tensor file")}
    for name, (data, why) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(qfleet.TensorFileError, match=why):
            qfleet.read_tensor_file(tmp_path / name)
    for path in ("/dev/zero", str(tmp_path), str(tmp_path / "absent.pt")):
        with pytest.raises(qfleet.TensorFileError, match="not a regular file|: it is a directory|No such file"):
            qfleet.read_tensor_file(path)
