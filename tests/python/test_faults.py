"""Faults, app by app (docs/reliability.md): a damaged checkpoint is refused with one line naming it
instead of resuming a different run (8 bytes flipped in the middle of checkpoint.pt; the checksum itself
is tested byte for byte in tests/torch/test_train_state.cpp); a run out of disk space or killed resumes
to the uninterrupted result; a batch too large for the memory is refused before the run starts."""
import json
import os
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
    ("QFLEET_META", "qfleet-meta", ["--set", "iterations=6", "--stop-after", "4", "--set", "meta_batch=4", "--set", "hidden_width=8",
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


def test_a_batch_too_large_for_the_memory_is_refused_before_the_run_starts(tmp_path):
    # meta_batch = 10^6 would ask for ~122 GiB at once: the step's memory is measured on 1 and 2
    # tasks first (apps/common/memory_check.hpp) and the setting refused with one line, status 2,
    # before anything is allocated or written - whatever the kernel's overcommit policy.
    binary = app_binary("QFLEET_META", "qfleet-meta")
    out = tmp_path / "o"
    r = subprocess.run([binary, "--set", "meta_batch=1000000", "--set", "iterations=1", "--quiet", "--threads", "1",
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("qfleet-meta: error: meta_batch: 1000000 tasks (measured on 1 and 2: "), r.stderr
    assert "need about " in r.stderr and "GiB at once on cpu" in r.stderr, r.stderr
    assert "are free: lower meta_batch" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists(), "the refused run wrote its folder"
    # A need known in advance: qfleet-qgan train's parameter shift holds 2 P circuits x shots outcomes.
    r = subprocess.run([app_binary("QFLEET_QGAN", "qfleet-qgan"), "train", "--set", "shots=16777216", "--set",
                        "qubits=12", "--set", "reps=64", "--epochs", "1", "--quiet", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("qfleet-qgan: error: shots: 16777216 shots of the parameter shift's 1560 circuits "
                               "need about 195 GiB at once on cpu"), r.stderr
    assert r.stderr.strip().endswith("are free: lower shots") and not out.exists(), r.stderr


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


def _outcome(out, run_dir):
    """Every file an app wrote that a resume must reproduce, without what differs between two equal
    runs: wall times, dates, the output folder's own path, and whether the run was resumed."""
    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if not _volatile(k)}
        if isinstance(v, list):
            return [clean(x) for x in v]
        if isinstance(v, str):
            return v.replace(str(run_dir), "<out>")
        return v
    files = {}
    for p in sorted(out.rglob("*.json")):
        files[str(p.relative_to(out))] = clean(json.loads(p.read_text()))
    return files


def _flat(v, at=""):
    """{"a.b[0]": leaf}: a difference then names its place."""
    if isinstance(v, dict):
        return {k: x for key, item in v.items() for k, x in _flat(item, f"{at}.{key}" if at else key).items()}
    if isinstance(v, list):
        return {k: x for i, item in enumerate(v) for k, x in _flat(item, f"{at}[{i}]").items()}
    return {at: v}


def _volatile(key):
    return key.endswith(("_s", "_ms")) or any(
        w in key for w in ("seconds", "utc", "time", "timing", "wall", "resume", "this_run", "epochs_run", "per_s",
                           "speed", "threads", "started", "finished", "elapsed", "phases", "host_syncs"))


@pytest.mark.parametrize("variable,name,first,again,ckpt", APPS, ids=[f"{a[1]} {a[2][0]}" for a in APPS])
def test_a_killed_or_starved_run_resumes_to_the_uninterrupted_result(variable, name, first, again, ckpt, tmp_path):
    # Each app: the run that leaves a checkpoint, then its continuation (1) out of disk space
    # (RLIMIT_FSIZE: EFBIG, as ENOSPC on a full disk): one line, status 1, the checkpoint byte for
    # byte and no temporary left; (2) killed (SIGKILL) once it has written a checkpoint of its own;
    # (3) resumed to the end. What it wrote then equals what an uninterrupted run writes.
    binary = app_binary(variable, name)
    whole, cut = tmp_path / "whole" / "run", tmp_path / "cut" / "run"

    def run(out, args, **kw):
        return subprocess.run([binary, *args, "--quiet", "--threads", "1", "--out", str(out)], capture_output=True,
                              text=True, timeout=600, **kw)

    r = run(whole, again)
    assert r.returncode == 0, r.stderr
    r = run(cut, first)
    assert r.returncode == 0, r.stderr
    good = (cut / ckpt).read_bytes()
    limit = len(good) // 2

    def no_room():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = run(cut, [*again, "--resume"], preexec_fn=no_room)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.startswith(f"{name}: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "File too large" in r.stderr, r.stderr
    assert (cut / ckpt).read_bytes() == good, "the failed write changed the last checkpoint"
    assert not [p.name for p in cut.rglob(".*") if p.name not in (".qfleet.lock", ".qfleet-runs.json")], \
        "a temporary file was left"

    before = (cut / ckpt).stat().st_mtime_ns
    p = subprocess.Popen([binary, *again, "--quiet", "--threads", "1", "--out", str(cut), "--resume"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while p.poll() is None and time.monotonic() < deadline and (cut / ckpt).stat().st_mtime_ns == before:
        time.sleep(0.002)
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
    p.wait()
    r = run(cut, [*again, "--resume"])
    assert r.returncode == 0, r.stderr
    got, want = _flat(_outcome(cut, cut)), _flat(_outcome(whole, whole))
    assert {k: (got.get(k), want.get(k)) for k in got.keys() | want.keys() if got.get(k) != want.get(k)} == {}


@pytest.mark.parametrize("variable,name,first,again,ckpt", APPS[:1] + APPS[2:], ids=[a[1] for a in APPS[:1] + APPS[2:]])
def test_an_output_folder_that_cannot_be_made_is_one_line_naming_it(variable, name, first, again, ckpt, tmp_path):
    # --out below a file: the file system's error in the user's terms (the path, the reason), status 2.
    (tmp_path / "a_file").write_text("")
    out = tmp_path / "a_file" / "run"
    r = subprocess.run([app_binary(variable, name), *first, "--quiet", "--threads", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"{name}: error: cannot create directories {out}: Not a directory\n", r.stderr


def test_no_room_for_the_feature_cache_is_one_line_and_leaves_no_part(tmp_path):
    # qfleet-classify --mode features writes its feature cache before training: with no room
    # (RLIMIT_FSIZE, as above) the write fails as one line, status 1, and leaves neither a
    # cache nor a temporary; before, LibTorch's own writer aborted the run (status 134) and
    # left a partial file that the next run found.
    binary = app_binary("QFLEET_CLASSIFY", "qfleet-classify")
    args = [binary, "--mode", "features", "--epochs", "1", "--train-subset", "64", "--test-subset", "32", "--quiet",
            "--threads", "1", "--out", str(tmp_path / "run")]

    def no_room():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = subprocess.run(args, capture_output=True, text=True, timeout=600, preexec_fn=no_room)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.startswith("qfleet-classify: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "File too large" in r.stderr and "features-" in r.stderr, r.stderr
    assert not list((tmp_path / "run" / "cache").iterdir()), "a cache or a temporary was left"
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


# Runs long enough to be stopped while they hold their output folder.
LONG = {"qfleet-qgan": ["train", "--epochs", "100000"],
        "qfleet-classify": ["--epochs", "1000", "--train-subset", "64", "--test-subset", "32"],
        "qfleet-rl": ["--set", "total_steps=23040000", "--set", "env.num_envs=32", "--set", "num_minibatches=4",
                      "--set", "validation_tasks=8"],
        "qfleet-meta": ["--set", "iterations=1000000", "--set", "meta_batch=4", "--set", "hidden_width=8",
                        "--set", "validation_tasks=2", "--set", "robust_iterations=2", "--set", "grape_iterations=2"]}
ONE_PER_APP = [a for i, a in enumerate(APPS) if i != 1]


def _listing(folder):
    return sorted((str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.mark.parametrize("variable,name,first,again,ckpt", ONE_PER_APP, ids=[a[1] for a in ONE_PER_APP])
def test_a_second_run_into_a_held_folder_is_refused_and_stale_temporaries_go(variable, name, first, again, ckpt,
                                                                            tmp_path):
    # A run holds its output folder (flock on <out>/.qfleet.lock) and, once it holds it, removes the
    # temporaries killed writers left there (regular files named .<name>.qfleet-XXXXXX only). A
    # second run into the folder meanwhile is one line naming the holder, status 2, and writes nothing.
    # Before, both ran and interleaved train_log.jsonl, and temporaries stayed forever.
    binary = app_binary(variable, name)
    out = tmp_path / "run"
    (out / "eval").mkdir(parents=True)
    stale = [out / ".checkpoint.pt.qfleet-AbC123", out / "eval" / ".task_0.json.qfleet-x_9abcde"]
    for p in stale:
        p.write_bytes(b"cut short")
    (tmp_path / "victim").write_text("keep me")
    (out / ".report.json.qfleet-Zz9Zz9").symlink_to(tmp_path / "victim")
    (out / ".notes.md.backup").write_text("the user's")
    common = ["--quiet", "--threads", "1", "--out", str(out)]
    holder = subprocess.Popen([binary, *LONG[name], *common], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lock = out / ".qfleet.lock"
        deadline = time.monotonic() + 120
        while holder.poll() is None and time.monotonic() < deadline and \
                not (lock.exists() and lock.read_text() == f"{holder.pid}\n" and not any(p.exists() for p in stale)):
            time.sleep(0.01)
        holder.send_signal(signal.SIGSTOP)  # holding the folder, writing nothing while the second run tries
        assert holder.poll() is None, holder.stderr.read()
        assert not any(p.exists() for p in stale), "the stale temporaries were left"
        assert os.path.islink(out / ".report.json.qfleet-Zz9Zz9") and (out / ".notes.md.backup").exists()
        before = _listing(out)
        r = subprocess.run([binary, *first, *common], capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, r.stderr
        assert r.stderr == f"{name}: error: {out} is in use by another run (pid {holder.pid})\n", r.stderr
        assert _listing(out) == before, "the refused run wrote into the folder"
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / "victim").read_text() == "keep me"
    r = subprocess.run([binary, *first, *common], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr  # the lock went with the killed holder


@pytest.mark.parametrize("variable,name,first,again,ckpt", ONE_PER_APP, ids=[a[1] for a in ONE_PER_APP])
def test_a_file_size_limit_ends_a_run_with_one_line(variable, name, first, again, ckpt, tmp_path):
    # `ulimit -f` as a shell sets it: SIGXFSZ at its default. Each app ignores the signal, so the
    # first write past the limit fails with EFBIG and ends the run with the writer's one line,
    # status 1; before, SIGXFSZ killed the process without a word (status -25).
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    out = tmp_path / "run"
    r = subprocess.run([app_binary(variable, name), *first, "--quiet", "--threads", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, preexec_fn=limited)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.startswith(f"{name}: error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "File too large" in r.stderr and str(out) in r.stderr, r.stderr
