"""A damaged checkpoint, app by app: every app's --resume refuses a checkpoint whose bytes were
changed (8 bytes flipped in the middle of checkpoint.pt) with one line naming it, instead of resuming a different run
(docs/reliability.md). The checksum itself is tested byte for byte in tests/torch/test_train_state.cpp
and tests/meta/test_meta_control.cpp; this is the same promise seen from each command line."""
import json
import random
import resource
import signal
import subprocess
import time

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


def _results(out):
    """A qGAN run's outcome without its wall times: the history rows and the final figures."""
    report = json.loads((out / "report.json").read_text())
    rows = [{k: v for k, v in row.items() if k != "seconds"} for row in report["history"]]
    final = {k: v for k, v in report["final"].items() if "seconds" not in k and "_ms" not in k}
    return rows, final


def test_a_run_killed_at_any_moment_resumes_to_the_uninterrupted_result(tmp_path):
    # SIGKILL (a crash, the OOM killer, a preempted job) at moments drawn around checkpoint
    # writes, five times, then --resume to the end: the history and the final figures equal an
    # uninterrupted run's. Each checkpoint is written whole or not at all (write_file_atomic)
    # and the history a resume continues travels inside it (app::history_from_checkpoint).
    binary = app_binary("QFLEET_QGAN", "qfleet-qgan")
    args = ["train", "--epochs", "400", "--checkpoint-every", "1", "--quiet", "--threads", "1", "--seed", "5"]
    r = subprocess.run([binary, *args, "--out", str(tmp_path / "whole")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out, ckpt, rng, kills = tmp_path / "killed", tmp_path / "killed" / "checkpoint.pt", random.Random(7), 0
    for _ in range(5):
        resume = ["--resume"] if ckpt.exists() else []
        before = ckpt.stat().st_mtime_ns if ckpt.exists() else 0
        p = subprocess.Popen([binary, *args, "--out", str(out), *resume], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline and \
                (not ckpt.exists() or ckpt.stat().st_mtime_ns == before):
            time.sleep(0.002)  # until this run has written a checkpoint of its own
        time.sleep(rng.uniform(0, 0.03))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
    assert kills >= 3, f"the run finished before it could be killed ({kills} kills): lengthen it"
    r = subprocess.run([binary, *args, "--out", str(out), "--resume"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert _results(out) == _results(tmp_path / "whole")
    history = json.loads((out / "history.json").read_text())
    assert [row["epoch"] for row in history] == list(range(1, 401)), "history.json is not the run's"


def test_a_kill_between_the_checkpoint_and_history_json_loses_no_history(tmp_path):
    # The moment the random kills above rarely hit, made on purpose: checkpoint.pt is at epoch
    # 20 while history.json still holds epoch 10's rows (the process died between the two
    # writes). The resume takes the history from the checkpoint: no rows are lost.
    binary = app_binary("QFLEET_QGAN", "qfleet-qgan")
    args = ["train", "--checkpoint-every", "10", "--quiet", "--threads", "1", "--seed", "5"]
    r = subprocess.run([binary, *args, "--epochs", "40", "--out", str(tmp_path / "whole")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "cut"
    for epochs, resume in (("10", []), ("20", ["--resume"])):
        r = subprocess.run([binary, *args, "--epochs", epochs, "--out", str(out), *resume], capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        if epochs == "10":
            early = (out / "history.json").read_text()
    (out / "history.json").write_text(early)
    r = subprocess.run([binary, *args, "--epochs", "40", "--out", str(out), "--resume"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert _results(out) == _results(tmp_path / "whole")


def test_a_full_disk_is_one_line_and_leaves_the_checkpoint_whole(tmp_path):
    # A write that cannot complete (here RLIMIT_FSIZE: EFBIG, as ENOSPC on a full disk) is one
    # line naming the file, and the last checkpoint stays whole: the resume, with room again,
    # ends where an uninterrupted run ends.
    binary = app_binary("QFLEET_QGAN", "qfleet-qgan")
    args = ["train", "--epochs", "40", "--checkpoint-every", "10", "--quiet", "--threads", "1", "--seed", "5"]
    r = subprocess.run([binary, *args, "--out", str(tmp_path / "whole")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "full"
    r = subprocess.run([binary, *args[:2], "20", *args[3:], "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    good = (out / "checkpoint.pt").read_bytes()
    limit = len(good) // 2  # room for the small files, not for a checkpoint

    def no_room():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG

    r = subprocess.run([binary, *args, "--out", str(out), "--resume"], capture_output=True, text=True, timeout=600,
                       preexec_fn=no_room)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.startswith("qfleet-qgan: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "checkpoint.pt" in r.stderr, r.stderr
    assert (out / "checkpoint.pt").read_bytes() == good, "the failed write changed the last checkpoint"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "a temporary file was left"
    r = subprocess.run([binary, *args, "--out", str(out), "--resume"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert _results(out) == _results(tmp_path / "whole")
