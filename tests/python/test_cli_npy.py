"""`qfleet eval` with arrays in .npy files (docs/cli.md#arrays-in-npy-files): numpy writes the
inputs and reads the outputs (the independent reference for the file format), and every
result equals the same problem's JSON-array result exactly; bad files are clear errors."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

CLI = os.environ.get("QFLEET_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="QFLEET_CLI not set: run through ctest or scripts/test.sh")

BASE = {"kind": "circuit", "qubits": 2,
        "ops": [{"gate": "RX", "wires": [0], "params": [{"input": 0}]},
                {"gate": "RY", "wires": [1], "params": [{"input": 1}]},
                {"gate": "CRZ", "wires": [0, 1], "params": [{"weight": 0}]},
                {"gate": "Rot", "wires": [1], "params": [{"weight": 1}, {"weight": 2}, 0.3]}],
        "observables": [[[1.0, "Z0"]], [[0.5, "X1 Z0"], [-0.2, "Y1"]]]}


def run(doc, path, cwd=None):
    path.write_text(json.dumps(doc))
    return subprocess.run([CLI, "eval", str(path)], capture_output=True, text=True, cwd=cwd)


def evaluate(doc, path):
    r = run(doc, path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("per_sample", [False, True])
def test_npy_results_equal_json_results(tmp_path, per_sample):
    rng = np.random.default_rng(1)
    x = rng.random((6, 2))
    w = rng.random((6, 3)) if per_sample else rng.random(3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    extra = {"probs": [[0], [0, 1]], "gradients": True, "states": True, "shots": 9, "seed": 4}
    want = evaluate(dict(BASE, **extra, inputs=x.tolist(), weights=w.tolist()), tmp_path / "j.json")
    (tmp_path / "out").mkdir()
    # relative names are relative to the problem file, whatever the working directory
    got = evaluate(dict(BASE, **extra, inputs={"npy": "x.npy"}, weights={"npy": "w.npy"}, output_npy="out/r"),
                   tmp_path / "n.json")
    assert got["batch"] == 6 and got["expvals"]["shape"] == [6, 2] and got["expvals"]["dtype"] == "float64"
    assert got["expvals"]["npy"] == str(tmp_path / "out" / "r.expvals.npy")
    np.testing.assert_array_equal(np.load(got["expvals"]["npy"]), np.array(want["expvals"]))
    for m in range(2):
        for key in ("probs", "grad_probs_inputs", "grad_probs_weights"):
            a = np.load(got[key][m]["npy"])
            assert a.shape == tuple(got[key][m]["shape"])
            np.testing.assert_array_equal(a, np.array(want[key][m]))
    for key in ("grad_inputs", "grad_weights"):
        np.testing.assert_array_equal(np.load(got[key]["npy"]), np.array(want[key]))
    st = np.array(want["states"])
    states = np.load(got["states"]["npy"])
    assert states.dtype == np.complex128
    np.testing.assert_array_equal(states, st[..., 0] + 1j * st[..., 1])
    samples = np.load(got["samples"]["npy"])
    assert samples.dtype == np.uint64
    np.testing.assert_array_equal(samples, np.array(want["samples"]))


def test_float32_and_integer_inputs_and_complex64_outputs(tmp_path):
    x = np.array([[0.25, -1.5], [2.0, 0.5]], dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", np.array([1, 2, 3], dtype=np.int64))
    want = evaluate(dict(BASE, inputs=x.astype(float).tolist(), weights=[1, 2, 3], precision="complex64",
                         states=True), tmp_path / "j.json")
    got = evaluate(dict(BASE, inputs={"npy": "x.npy"}, weights={"npy": "w.npy"}, precision="complex64",
                        states=True, output_npy="r"), tmp_path / "n.json")
    e = np.load(got["expvals"]["npy"])
    assert e.dtype == np.float32 and got["expvals"]["dtype"] == "float32"
    np.testing.assert_array_equal(e.astype(float), np.array(want["expvals"]))
    assert np.load(got["states"]["npy"]).dtype == np.complex64


def _bad(tmp_path, data: bytes, name="x.npy"):
    (tmp_path / name).write_bytes(data)
    return dict(BASE, inputs={"npy": name}, weights=[0.1, 0.2, 0.3])


def _npy_bytes(arr, **kw):
    import io
    buf = io.BytesIO()
    np.save(buf, arr, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("case, message", [
    ("missing", "cannot be opened"),
    ("not_npy", "not a .npy file"),
    ("fortran", "Fortran order"),
    ("complex", "has dtype '<c16'"),
    ("big_endian", "has dtype '>f8'"),
    ("one_d", "must be 2-D [batch, n_inputs]"),
    ("nan", "is not finite"),
    ("inf_float32", "value 3 (flat index) is not finite"),
    ("int64_inexact", "value 1 (9007199254740993) is not exact as a double"),
    ("truncated", "truncated file"),
    ("columns", "has 1 column(s) but the circuit reads 2 input column(s)"),
    ("key", 'unknown key "file"'),
    ("directory", "is not a regular file"),
])
def test_bad_files_are_clear_errors(tmp_path, case, message):
    good = np.ones((3, 2))
    if case == "missing":
        doc = dict(BASE, inputs={"npy": "nope.npy"}, weights=[0, 0, 0])
    elif case == "not_npy":
        doc = _bad(tmp_path, b"1,2\n3,4\n")
    elif case == "fortran":
        doc = _bad(tmp_path, _npy_bytes(np.asfortranarray(np.ones((3, 2)))))
    elif case == "complex":
        doc = _bad(tmp_path, _npy_bytes(good.astype(complex)))
    elif case == "big_endian":
        doc = _bad(tmp_path, _npy_bytes(good.astype(">f8")))
    elif case == "one_d":
        doc = _bad(tmp_path, _npy_bytes(np.ones(4)))
    elif case == "nan":
        doc = _bad(tmp_path, _npy_bytes(np.array([[0.0, np.nan]])))
    elif case == "inf_float32":  # each dtype has its own conversion loop
        doc = _bad(tmp_path, _npy_bytes(np.array([[0, 1], [2, np.inf]], dtype=np.float32)))
    elif case == "int64_inexact":
        doc = _bad(tmp_path, _npy_bytes(np.array([[0, 2**53 + 1]], dtype=np.int64)))
    elif case == "truncated":
        doc = _bad(tmp_path, _npy_bytes(good)[:-5])
    elif case == "columns":
        doc = _bad(tmp_path, _npy_bytes(np.ones((3, 1))))
    elif case == "directory":
        (tmp_path / "d.npy").mkdir()
        doc = dict(BASE, inputs={"npy": "d.npy"}, weights=[0, 0, 0])
    else:
        doc = dict(BASE, inputs={"file": "x.npy"}, weights=[0, 0, 0])
    r = run(doc, tmp_path / "p.json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("qfleet: error: inputs") and message in r.stderr, r.stderr


def test_unwritable_output_is_a_clear_error(tmp_path):
    doc = dict(BASE, inputs=[[0.1, 0.2]], weights=[0, 0, 0], output_npy="no/such/dir/r")
    r = run(doc, tmp_path / "p.json")
    assert r.returncode == 2 and r.stdout == ""
    assert "output_npy" in r.stderr and "cannot be written" in r.stderr, r.stderr


@pytest.mark.parametrize("prefix", ["../r", "out/../../r", "/tmp/qfleet-abs-r"])
def test_output_npy_stays_inside_the_output_folder(tmp_path, prefix):
    # A problem file cannot choose to write outside its folder (or --output-dir): one line, status 2,
    # nothing written.
    (tmp_path / "in").mkdir()
    doc = dict(BASE, inputs=[[0.1, 0.2]], weights=[0, 0, 0], output_npy=prefix)
    r = run(doc, tmp_path / "in" / "p.json")
    assert r.returncode == 2 and r.stdout == ""
    assert "output_npy" in r.stderr and "leaves the output folder" in r.stderr and len(r.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in", "p.json"]


def test_output_dir_takes_the_results(tmp_path):
    doc = dict(BASE, inputs=[[0.1, 0.2]], weights=[0, 0, 0], output_npy="sub/r")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    (tmp_path / "out" / "sub").mkdir(parents=True)
    r = subprocess.run([CLI, "eval", str(tmp_path / "p.json"), "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, env=_cli_env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["expvals"]["npy"] == str(tmp_path / "out" / "sub" / "r.expvals.npy")
    assert np.load(tmp_path / "out" / "sub" / "r.expvals.npy").shape == (1, 2)


def test_lindblad_npy_results_equal_json_results(tmp_path):
    # docs/examples/lindblad.json with per-task amplitudes and shared rates, as arrays and as files
    doc = json.loads((pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "lindblad.json").read_text())
    rng = np.random.default_rng(3)
    amps = rng.normal(size=(3, 4, 2))
    rates = np.array([0.07])
    np.save(tmp_path / "a.npy", amps)
    np.save(tmp_path / "r.npy", rates)
    doc.update(amplitudes=amps.tolist(), rates=rates.tolist())
    want = evaluate(doc, tmp_path / "j.json")
    doc.update(amplitudes={"npy": "a.npy"}, rates={"npy": "r.npy"}, output_npy="lb")
    got = evaluate(doc, tmp_path / "n.json")
    assert got["batch"] == 3
    for key in ("fidelity", "expvals", "grad_amplitudes", "grad_drift_coeffs", "grad_rates", "grad_durations"):
        a = np.load(got[key]["npy"])
        assert list(a.shape) == got[key]["shape"], key
        np.testing.assert_array_equal(a, np.array(want[key]), err_msg=key)
    fs = np.array(want["final_state"])
    np.testing.assert_array_equal(np.load(got["final_state"]["npy"]), fs[..., 0] + 1j * fs[..., 1])
    doc.update(amplitudes={"npy": "r.npy"})
    r = run(doc, tmp_path / "bad.json")
    assert r.returncode == 2 and "amplitudes: the .npy array has 1 dimension(s); expected 2 (shared) or 3" in r.stderr


def test_python_evaluate_reads_npy_relative_to_the_problem_file(tmp_path):
    qfleet = pytest.importorskip("qfleet")
    x = np.array([[0.1, 0.2], [0.3, -0.4]])
    np.save(tmp_path / "x.npy", x)
    doc = dict(BASE, inputs={"npy": "x.npy"}, weights=[0.5, 0.6, 0.7], output_npy="py")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    got = qfleet.evaluate(tmp_path / "p.json")
    cli = evaluate(doc, tmp_path / "p.json")
    cli.pop("openmp")  # the CLI adds how its run was threaded
    assert got == cli  # the CLI on the same file
    want = evaluate(dict(BASE, inputs=x.tolist(), weights=[0.5, 0.6, 0.7]), tmp_path / "j.json")
    np.testing.assert_array_equal(np.load(got["expvals"]["npy"]), np.array(want["expvals"]))


def test_load_problem_takes_the_segments_from_an_npy_header(tmp_path):
    qfleet = pytest.importorskip("qfleet")
    doc = json.loads((pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "lindblad.json").read_text())
    np.save(tmp_path / "a.npy", np.zeros((3, 4, 2)))  # per task: 3 tasks, 4 segments, 2 controls
    doc["amplitudes"] = {"npy": "a.npy"}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert qfleet.load_problem(tmp_path / "p.json")["program"].n_segments() == 4


def _cli_env(**set_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY")}
    env.update(set_vars)
    return env


def test_an_npy_eval_binds_its_threads_when_they_fill_the_cpus(tmp_path):
    # tools/thread_placement.cpp: with no placement of the user's and one OpenMP thread per
    # CPU, an eval of .npy arrays starts again bound (one place per CPU); otherwise, and for
    # JSON arrays, it runs as started. The results are the same either way.
    cpus = len(os.sched_getaffinity(0))
    rng = np.random.default_rng(2)
    np.save(tmp_path / "x.npy", rng.random((300, 2)))
    npy = tmp_path / "n.json"
    npy.write_text(json.dumps(dict(BASE, inputs={"npy": "x.npy"}, weights=[0.1, 0.2, 0.3], output_npy="r")))
    plain = tmp_path / "j.json"
    plain.write_text(json.dumps(dict(BASE, inputs=[[0.1, 0.2]], weights=[0.1, 0.2, 0.3])))

    def openmp(path, **env):
        r = subprocess.run([CLI, "eval", str(path)], capture_output=True, text=True, env=_cli_env(**env))
        assert r.returncode == 0 and r.stderr == "", r.stderr
        out = json.loads(r.stdout)
        return out["openmp"], (np.load(out["expvals"]["npy"]) if isinstance(out["expvals"], dict) else None)

    bound, bound_values = openmp(npy, OMP_NUM_THREADS=str(cpus))
    if cpus >= 2:
        assert bound == {"threads": cpus, "proc_bind": "close", "places": cpus}
    else:
        assert bound["proc_bind"] == "false"
    for env in ({"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": str(cpus), "OMP_PROC_BIND": "false"}):
        got, values = openmp(npy, **env)
        assert got["proc_bind"] == "false" and got["places"] == 0, env
        np.testing.assert_array_equal(values, bound_values)
    assert openmp(plain, OMP_NUM_THREADS=str(cpus))[0]["proc_bind"] == "false"
    # A problem read from a pipe cannot be read again: it runs as started, nothing lost.
    doc = dict(BASE, inputs={"npy": str(tmp_path / "x.npy")}, weights=[0.1, 0.2, 0.3], output_npy="p")
    r = subprocess.run([CLI, "eval", "/dev/stdin", "--output-dir", str(tmp_path)], input=json.dumps(doc),
                       capture_output=True, text=True, env=_cli_env(OMP_NUM_THREADS=str(cpus)))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["openmp"]["proc_bind"] == "false"
    np.testing.assert_array_equal(np.load(out["expvals"]["npy"]), bound_values)


@pytest.mark.parametrize("linked", ["linkdir/r", "real/linkdir/r"])
def test_output_npy_refuses_a_linked_folder_below_the_output_folder(tmp_path, linked):
    # A link planted as a folder of output_npy would take the files out of the output folder:
    # one line naming it, status 2, nothing written there.
    (tmp_path / "in" / "real").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "in" / linked.rsplit("/", 1)[0]
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    doc = dict(BASE, inputs=[[0.1, 0.2]], weights=[0, 0, 0], output_npy=linked)
    r = run(doc, tmp_path / "in" / "p.json")
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == (f'qfleet: error: output_npy: "{linked}" passes through the symbolic link {link}: the files go '
                        "under the output folder through no link\n"), r.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_eval_refuses_devices_and_long_files_at_once(tmp_path):
    # A problem is read from a regular file of at most 64 MiB (qfleet::read_file_bounded); before,
    # /dev/zero was read until the memory ran out.
    def refused(args, **kw):
        r = subprocess.run([CLI, "eval", *args], capture_output=True, text=True, timeout=20, **kw)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
        return r.stderr
    assert refused(["/dev/zero"]) == "qfleet: error: cannot read /dev/zero: it is a character device, not a regular file\n"
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)  # (sparse: nothing is written)
    assert refused([str(big)]) == (f"qfleet: error: cannot read {big}: it holds {(64 << 20) + 1} bytes, more than "
                                   "64 MiB, the most qfleet reads from such a file\n")
    with open("/dev/zero", "rb") as zero:  # a stream is read up to the limit only
        assert refused(["-"], stdin=zero) == ("qfleet: error: cannot read <stdin>: it holds more than 64 MiB, the most "
                                              "qfleet reads from such a file\n")
    with subprocess.Popen(["yes"], stdout=subprocess.PIPE) as endless:  # and so is a pipe named as a file
        assert refused(["/dev/stdin"], stdin=endless.stdout) == (
            "qfleet: error: cannot read /dev/stdin: it holds more than 64 MiB, the most qfleet reads from such a file\n")
        endless.kill()


def test_the_python_readers_refuse_devices_and_long_files_at_once(tmp_path):
    # qfleet.evaluate(path) and qfleet.load_problem(path) read as `qfleet eval` does (qfleet/_files.py's
    # read_text, the same limit and messages); before, both read a file of any size whole.
    import qfleet
    with pytest.raises(ValueError, match="cannot read /dev/zero: it is a character device, not a regular file"):
        qfleet.load_problem("/dev/zero")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)
    for read in (qfleet.evaluate, qfleet.load_problem):
        with pytest.raises(ValueError, match="it holds more than 64 MiB, the most qfleet reads from such a file"):
            read(str(big))


def _file_size_limit(limit):
    """The child as a shell's `ulimit -f` leaves it: SIGXFSZ at its default (end the process), the
    limit set. (Python ignores SIGXFSZ; subprocess restores the default in the child already.)"""
    def child():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return child


def test_a_file_size_limit_is_one_line_not_a_silent_death(tmp_path):
    # Past the limit a write fails with EFBIG (the program ignores SIGXFSZ) and is reported as one
    # line naming the file; before, SIGXFSZ ended `qfleet eval` with no word (status -25).
    doc = dict(BASE, inputs=np.full((64, 2), 0.1).tolist(), weights=[0, 0, 0], states=True, output_npy="r")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    r = subprocess.run([CLI, "eval", str(tmp_path / "p.json")], capture_output=True, text=True, timeout=60,
                       preexec_fn=_file_size_limit(1024))
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    assert r.stderr.startswith("qfleet: error: output_npy: file ") and "File too large" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary was left"
    # The result on stdout, into a file past the limit.
    doc = dict(BASE, inputs=np.full((64, 2), 0.1).tolist(), weights=[0, 0, 0], states=True)
    (tmp_path / "q.json").write_text(json.dumps(doc))
    with open(tmp_path / "out.json", "w") as out:
        r = subprocess.run([CLI, "eval", str(tmp_path / "q.json")], stdout=out, stderr=subprocess.PIPE, text=True,
                           timeout=60, preexec_fn=_file_size_limit(1024))
    assert r.returncode == 2 and r.stderr == "qfleet: error: cannot write the result to stdout: File too large\n", \
        (r.returncode, r.stderr)
