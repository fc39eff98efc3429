"""No run replaces another run's results (apps/common/output_folder.hpp): a second run into a
folder that holds a run of the same command is refused with one line saying how the
configurations differ, unless it resumes (--resume, resume=True) or overwrites (--overwrite,
overwrite=True: only the command's own files go); a folder without a run is taken. Every app's
binary, its `python -m` entry, and qfleet.meta_control.run."""
import json
import os
import subprocess
import sys

import pytest

from conftest import app_binary

WAYS = "--resume continues it, --overwrite replaces it, or choose another --out"
META_SMALL = ["--set", "meta_batch=4", "--set", "hidden_width=8", "--set", "validation_tasks=2",
              "--set", "robust_iterations=2", "--set", "grape_iterations=2"]
RL_SMALL = ["--set", "total_steps=23040", "--set", "env.num_envs=32", "--set", "num_minibatches=4",
            "--set", "eval_every=4", "--set", "validation_tasks=8"]

# (binary variable, name, module, record key, a short run, a change of configuration, how the
#  refusal words it, the key and new value it records, a resume's arguments in place of the
#  short run's (None: the command cannot resume), a figure of the replaced run that --overwrite removes)
CASES = [
    ("QFLEET_META", "qfleet-meta", "qfleet.meta_control", "qfleet-meta", [*META_SMALL, "--iterations", "3"],
     ["--iterations", "4", "--algorithm", "reptile"], "algorithm fomaml -> reptile, iterations 3 -> 4",
     ("algorithm", "reptile"), [*META_SMALL, "--iterations", "4"], "training_curve.png"),
    ("QFLEET_QGAN", "qfleet-qgan", "qfleet.qgan", "qfleet-qgan train", ["train", "--epochs", "2"], ["--epochs", "3"],
     "epochs 2 -> 3", ("epochs", 3), ["train", "--epochs", "3"], "qgan_metrics.png"),
    ("QFLEET_QGAN", "qfleet-qgan", "qfleet.qgan", "qfleet-qgan tournament",
     ["tournament", "--qubits", "3", "--random-circuits", "1", "--shots", "64", "--resamples", "10"],
     ["--shots", "128"], "shots 64 -> 128", ("shots", 128), None, "tournament_js.png"),
    ("QFLEET_QGAN", "qfleet-qgan", "qfleet.qgan", "qfleet-qgan classify",
     ["classify", "--shots", "8", "--train-records", "50", "--test-records", "20", "--epochs", "1"],
     ["--epochs", "2", "--lr", "0.01"], "epochs 1 -> 2, lr 0.001 -> 0.01", ("lr", 0.01),
     ["classify", "--shots", "8", "--train-records", "50", "--test-records", "20", "--epochs", "2"],
     "classifier_accuracy.png"),
    ("QFLEET_CLASSIFY", "qfleet-classify", "qfleet.classify", "qfleet-classify",
     ["--epochs", "1", "--train-subset", "64", "--test-subset", "32"], ["--epochs", "2"], "epochs 1 -> 2",
     ("epochs", 2), ["--epochs", "2", "--train-subset", "64", "--test-subset", "32"], "curves.png"),
    ("QFLEET_RL", "qfleet-rl", "qfleet.rl", "qfleet-rl train", [*RL_SMALL, "--stop-after", "1"], ["--seed", "2"],
     "seed 1 -> 2", ("seed", 2), [*RL_SMALL, "--stop-after", "2"], "learning_curve.png"),
]
IDS = [c[3] for c in CASES]


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def listing(folder):
    """What a run may have written (the lock file aside: every run that takes it writes its pid)."""
    return sorted((str(p.relative_to(folder)), p.lstat().st_mtime_ns) for p in folder.rglob("*")
                  if p.name != ".qfleet.lock")


def record(folder):
    return json.loads((folder / ".qfleet-runs.json").read_text())


@pytest.mark.parametrize("variable,name,module,command,first,change,diff,recorded,resume,figure", CASES, ids=IDS)
def test_a_run_into_a_folder_that_holds_one_is_refused_unless_it_resumes_or_overwrites(
        variable, name, module, command, first, change, diff, recorded, resume, figure, tmp_path):
    binary = app_binary(variable, name)
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("the user's")  # an existing folder without a run is taken
    common = ["--quiet", "--threads", "1", "--out", str(out)]
    r = run([binary, *first, *common])
    assert r.returncode == 0, r.stderr
    assert record(out)[command][recorded[0]] != recorded[1]
    (out / figure).write_bytes(b"the first run's figure")

    ways = WAYS if resume is not None else "--overwrite replaces it, or choose another --out"
    before = listing(out)
    r = run([binary, *first, *change, *common])
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"{name}: error: {out}/ holds a run of another configuration ({diff}); {ways}\n"
    # The same command again, from Python (python -m runs the same C++): a fresh result is asked
    # for by --overwrite. (OMP_WAIT_POLICY set: the entry does not start itself again to set it.)
    r = subprocess.run([sys.executable, "-m", module, *first, *common], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OMP_WAIT_POLICY": "passive"})
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"python -m {module}: error: {out}/ holds a run of this configuration; {ways}\n"
    assert listing(out) == before, "a refused run wrote into the folder"

    if resume is not None:
        r = run([binary, *resume, *common, "--resume"])
        assert r.returncode == 0, r.stderr
    if name == "qfleet-meta":  # (the common command line's: every app alike)
        r = run([binary, *first, *common, "--resume", "--overwrite"])
        assert r.returncode == 2 and "--overwrite excludes --resume" in r.stderr, r.stderr
    r = run([binary, *first, *change, *common, "--overwrite"])
    assert r.returncode == 0, r.stderr
    assert record(out)[command][recorded[0]] == recorded[1]
    assert not (out / figure).exists(), "the replaced run's figure stayed"
    assert (out / "notes.txt").read_text() == "the user's", "--overwrite removed a file that is not the app's"


@pytest.mark.parametrize("variable,name,sub,planted,message", [
    ("QFLEET_QGAN", "qfleet-qgan", ["suite"], "qgan/report.json",
     "holds an earlier run's results (qgan/report.json) whose configuration is not recorded; "
     "--overwrite replaces it, or choose another --out"),
    ("QFLEET_RL", "qfleet-rl", ["compare"], "compare.json",
     "holds an earlier run's results (compare.json) whose configuration is not recorded; "
     "--overwrite replaces it, or choose another --out"),
    ("QFLEET_META", "qfleet-meta reproduce", ["reproduce", "all"], "cz/result.json",
     "holds an earlier run's results (cz/result.json) whose configuration is not recorded; "
     "--overwrite replaces it, or choose another --out"),
], ids=["qfleet-qgan suite", "qfleet-rl compare", "qfleet-meta reproduce all"])
def test_the_long_commands_refuse_a_folder_with_results_before_they_run(variable, name, sub, planted, message,
                                                                        tmp_path):
    # (Their whole runs take minutes: the refusal comes before anything runs.)
    out = tmp_path / "run"
    (out / planted).parent.mkdir(parents=True)
    (out / planted).write_text("{}")
    r = run([app_binary(variable, name.split()[0]), *sub, "--quiet", "--out", str(out)])
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"{name}: error: {out}/ {message}\n"


def test_a_folder_holding_another_commands_run_is_refused_naming_it(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "report.json").write_text("{}")
    (out / ".qfleet-runs.json").write_text(json.dumps({"qfleet-rl train": {"seed": 1}}))
    r = run([app_binary("QFLEET_META", "qfleet-meta"), *META_SMALL, "--quiet", "--out", str(out)])
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"qfleet-meta: error: {out}/ holds a run of qfleet-rl train; "
                        "--overwrite replaces it, or choose another --out\n")


def test_the_python_run_refuses_resumes_and_overwrites_alike(mc, tmp_path):
    small = {"meta_batch": 4, "hidden_width": 8, "validation_tasks": 2, "robust_iterations": 2,
             "grape_iterations": 2, "threads": 1, "output_dir": str(tmp_path / "new" / "run")}

    def cfg(**keys):
        return mc.make_config(mc.resolve_config({**small, **keys}))

    assert mc.run(cfg(iterations=3), stop_after=2).complete is False  # a folder that does not exist yet
    with pytest.raises(mc.ConfigError) as e:
        mc.run(cfg(iterations=4, algorithm="reptile"))
    assert str(e.value) == (f"{tmp_path}/new/run/ holds a run of another configuration (algorithm fomaml -> reptile, "
                            "iterations 3 -> 4); resume=True continues it, overwrite=True replaces it, or choose "
                            "another output_dir")
    with pytest.raises(mc.ConfigError, match="resume=True and overwrite=True exclude each other"):
        mc.run(cfg(iterations=3), resume=True, overwrite=True)
    assert mc.run(cfg(iterations=3), resume=True).report["training_run"]["iterations_this_run"] == 1
    report = mc.run(cfg(iterations=4, algorithm="reptile"), overwrite=True).report
    assert report["algorithm"] == "reptile" and report["training_run"]["iterations_this_run"] == 4
