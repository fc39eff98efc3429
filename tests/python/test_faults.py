"""A damaged checkpoint, app by app: every app's --resume refuses a checkpoint whose bytes were
changed (8 bytes flipped in the middle of checkpoint.pt) with one line naming it, instead of resuming a different run
(docs/reliability.md). The checksum itself is tested byte for byte in tests/torch/test_train_state.cpp
and tests/meta/test_meta_control.cpp; this is the same promise seen from each command line."""
import subprocess

import pytest

from conftest import app_binary

# (binary variable, name, a short run that leaves a checkpoint, the arguments of its resume, the file)
APPS = [
    ("QFLEET_QGAN", "qfleet-qgan", ["train", "--epochs", "4", "--checkpoint-every", "2"], ["train", "--epochs", "8"],
     "checkpoint.pt"),
    ("QFLEET_QGAN", "qfleet-qgan", ["classify", "--shots", "8", "--train-records", "50", "--test-records", "20",
                                    "--epochs", "1"], ["classify", "--shots", "8", "--train-records", "50",
                                                       "--test-records", "20", "--epochs", "2"],
     "shots_8/checkpoint.pt"),
    ("QFLEET_CLASSIFY", "qfleet-classify", ["--epochs", "1", "--train-subset", "64", "--test-subset", "32"],
     ["--epochs", "2", "--train-subset", "64", "--test-subset", "32"], "checkpoint.pt"),
    ("QFLEET_RL", "qfleet-rl", ["--set", "total_steps=23040", "--set", "env.num_envs=32", "--set", "num_minibatches=4",
                                "--set", "eval_every=4", "--set", "validation_tasks=8", "--stop-after", "2"],
     ["--set", "total_steps=23040", "--set", "env.num_envs=32", "--set", "num_minibatches=4", "--set", "eval_every=4",
      "--set", "validation_tasks=8"], "checkpoint.pt"),
    ("QFLEET_META", "qfleet-meta", ["--set", "iterations=4", "--set", "meta_batch=4", "--set", "hidden_width=8",
                                    "--set", "validation_tasks=2", "--set", "robust_iterations=2",
                                    "--set", "grape_iterations=2", "--set", "checkpoint_every=2"],
     ["--set", "iterations=6", "--set", "meta_batch=4", "--set", "hidden_width=8", "--set", "validation_tasks=2",
      "--set", "robust_iterations=2", "--set", "grape_iterations=2", "--set", "checkpoint_every=2"],
     "checkpoint.pt"),
]


def damage(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, middle + 8):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("variable,name,first,again,ckpt", APPS, ids=[f"{a[1]} {a[2][0]}" for a in APPS])
def test_resume_refuses_a_damaged_checkpoint(variable, name, first, again, ckpt, tmp_path):
    binary = app_binary(variable, name)
    out = tmp_path / "run"
    common = ["--quiet", "--threads", "1", "--out", str(out)]
    r = subprocess.run([binary, *first, *common], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    damage(out / ckpt)
    r = subprocess.run([binary, *again, *common, "--resume"], capture_output=True, text=True, timeout=600)
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert r.stderr.startswith(f"{name}: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "damaged" in r.stderr or "cannot be read" in r.stderr, r.stderr


def test_an_allocation_too_large_is_one_line_saying_what_to_lower(tmp_path):
    # meta_batch = 10^6 asks for ~122 GiB at once: one line with the size and what to lower,
    # not the allocator's text. (Under vm.overcommit_memory = 1 the kernel would grant it
    # lazily and kill the process later instead: nothing for the app to report.)
    binary = app_binary("QFLEET_META", "qfleet-meta")
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            if f.read().strip() == "1":
                pytest.skip("vm.overcommit_memory = 1: large allocations are granted lazily")
    except OSError:
        pass
    r = subprocess.run([binary, "--set", "meta_batch=1000000", "--set", "iterations=1", "--quiet", "--threads", "1",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("qfleet-meta: error: out of memory (") and "GiB at once" in r.stderr, r.stderr
    assert "lower the batch" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
