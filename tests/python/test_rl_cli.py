"""qfleet-rl's command line (apps/rl/cli.cpp): the binary and `python -m qfleet.rl` running
the same C++ (same bits), multi-process rollouts (--nproc 2 learns as one process does),
the environment benchmark's JSON, and bad options as one-line errors with exit status 2."""
import json
import subprocess
import sys

import pytest

from conftest import app_binary

pytest.importorskip("gymnasium")


@pytest.fixture
def rl_binary():
    return app_binary("QFLEET_RL", "qfleet-rl")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


SMALL = ["--quiet", "--set", "total_steps=23040", "--set", "env.num_envs=32", "--set", "num_minibatches=4",
         "--set", "eval_every=4", "--set", "validation_tasks=8", "--set", "threads=1"]


def test_binary_and_python_entry_give_the_same_run(rl_binary, tmp_path):
    a = run([rl_binary, "train", *SMALL, "--out", str(tmp_path / "bin")])
    assert a.returncode == 0, a.stderr
    b = run([sys.executable, "-m", "qfleet.rl", "train", *SMALL, "--out", str(tmp_path / "py")])
    assert b.returncode == 0, b.stderr
    ra = json.loads((tmp_path / "bin/report.json").read_text())
    rb = json.loads((tmp_path / "py/report.json").read_text())
    assert ra["validation"] == rb["validation"]
    assert [r["mean_final_fidelity"] for r in ra["curve"]] == [r["mean_final_fidelity"] for r in rb["curve"]]


def test_two_processes_learn_like_one(rl_binary, tmp_path):
    r = run([rl_binary, "--nproc", "2", *SMALL, "--out", str(tmp_path / "two")], env={**__import__("os").environ,
                                                                                       "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "two/report.json").read_text())
    assert rep["processes"] == 2
    assert rep["env_steps"] == 23040
    # 12 rollouts of 32 episodes (16 per process): from ~0.45 (random pulses) to > 0.85.
    assert rep["curve"][0]["mean_final_fidelity"] < 0.6
    assert rep["validation"]["mean_fidelity"] > 0.85


def test_bench_env_prints_a_json_line(rl_binary):
    r = run([rl_binary, "bench-env", "--env", "num_envs=256", "--steps", "5", "--repeats", "1", "--json"])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["num_envs"] == 256 and out["env_steps_per_s"] > 0


@pytest.mark.parametrize("args,words", [
    (["--set", "env.task=pendulum"], "key 'env.task': expected one of"),
    (["--set", "learning_rate=-1"], "learning_rate"),
    (["--set", "num_minibatches=7"], "num_minibatches"),
    (["--set", "bogus=1"], "unknown key"),
    (["bench-env", "--env", "observation=pixels"], "observation"),
])
def test_bad_options_are_one_line_errors(rl_binary, tmp_path, args, words):
    r = run([rl_binary, *args, "--out", str(tmp_path)] if args[0] != "bench-env" else [rl_binary, *args])
    assert r.returncode == 2, r.stderr
    assert words in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_resume_refuses_a_damaged_checkpoint(rl_binary, tmp_path):
    out = tmp_path / "run"
    r = run([rl_binary, *SMALL, "--stop-after", "2", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    (out / "checkpoint.pt").write_bytes(b"not a checkpoint")
    r = run([rl_binary, *SMALL, "--resume", "--out", str(out)])
    assert r.returncode == 2, r.stderr  # the apps' one error ladder: a checkpoint the user can replace
    assert "checkpoint.pt" in r.stderr and r.stderr.startswith("qfleet-rl: error: "), r.stderr
