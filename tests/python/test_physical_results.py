"""Results that are not physical are refused in every Python entry, and the messages stay
one line that names the input (docs/reliability.md, "Results that are not physical" and
"Every failure is one line")."""
import json
import math

import numpy as np
import pytest
import torch


def rabi(qfleet, jump=False):
    """A qubit driven by u X over 4 time units from |0>, against |1>: F = sin^2(4 u) (Rabi)."""
    s = qfleet.OpenSystem(2).control([[0, 1], [1, 0]]).segments(4, 4.0).initial_state([1, 0]).target_state([0, 1])
    return s.jump([[0, 1], [0, 0]]) if jump else s


def test_open_system_layer_refuses_an_unstable_step(qfleet):
    # Before: fidelities down to -3.96e19, returned as if they were results.
    layer = qfleet.OpenSystemLayer(rabi(qfleet, jump=True), solver="rk4", dt=0.25)
    u, g = torch.full((3, 4, 1), 100.0), torch.zeros(3, 1)
    with pytest.raises(RuntimeError, match=r"the rk4 step dt = 0\.25 is too large for task 0: its fidelity is .*"
                                           r"use dt <= 0\.0005 or solver exact"):
        layer(u, g)
    with pytest.raises(RuntimeError, match="rk4 step dt = 0.25"):
        layer(u.clone().requires_grad_(), g)  # the forward that keeps its backward's rows
    with pytest.raises(RuntimeError, match="rk4 step dt = 0.25 .* a final-state entry has modulus"):
        qfleet.open_final_state(layer.program, u, g)
    # At the suggested step: the closed form.
    f = qfleet.OpenSystemLayer(rabi(qfleet, jump=True), solver="rk4", dt=0.0005)(u, g)
    np.testing.assert_allclose(f.numpy(), math.sin(400.0) ** 2, atol=2e-3)


def test_open_final_state_refuses_what_open_fidelity_refuses(qfleet):
    # Before: open_final_state returned all NaN where open_fidelity refused the same input.
    prog = rabi(qfleet, jump=True).compile()
    u, g = torch.full((2, 4, 1), 0.5), torch.zeros(2, 1)
    u[1, 0, 0] = 1e300
    with pytest.raises(ValueError, match=r"fidelity of task 1 is not finite: the inputs overflow the solver"):
        qfleet.open_fidelity(prog, u, g)
    with pytest.raises(ValueError, match=r"qfleet.open_final_state: the final state of task 1 is not finite: the "
                                         r"inputs overflow the solver \(the largest magnitudes: amplitudes 1e\+300"):
        qfleet.open_final_state(prog, u, g)
    rho = qfleet.open_final_state(prog, u[:1], g[:1])[0]  # the first task alone: sin^2(2) in |1><1|
    assert abs(rho[1, 1].real - math.sin(2.0) ** 2) < 1e-10


def test_an_empty_batch_with_rates_is_not_told_rates_are_required(qfleet):
    layer = qfleet.OpenSystemLayer(rabi(qfleet, jump=True))
    f = layer(torch.zeros(0, 4, 1), torch.zeros(0, 1))
    assert f.shape == (0,)
    with pytest.raises(ValueError, match="rates is required"):
        layer(torch.zeros(0, 4, 1))


def test_load_problem_refuses_a_key_given_twice(qfleet, tmp_path):
    # Before: the last one won silently, where `qfleet eval` refuses the file.
    path = tmp_path / "p.json"
    path.write_text('{"kind": "lindblad", "dim": 2, "dim": 3, "controls": [[[0, 1], [1, 0]]], "n_segments": 1, '
                    '"segment_duration": 1, "psi0": [1, 0], "target": {"state": [0, 1]}}')
    with pytest.raises(ValueError, match=r'qfleet.load_problem: ".*p.json": invalid JSON: key "dim" appears twice'):
        qfleet.load_problem(path)


@pytest.mark.parametrize("build, name", [
    (lambda q: rabi(q).segments(4, float("nan")).compile(), "total_time is not finite"),
    (lambda q: rabi(q).durations([1.0, float("inf")]).compile(), "duration is not finite"),
    (lambda q: rabi(q).compile(solver="rk4", dt=float("nan")), "dt is not finite"),
    (lambda q: rabi(q).compile(solver="dopri5", rtol=float("nan")), "rtol is not finite"),
    (lambda q: q.Circuit(1).add("RX", [0], [q.input(0, float("nan"))]), "input scale is not finite"),
    (lambda q: q.Circuit(1).add("RX", [0], [float("inf")]), "RX parameter is not finite"),
    (lambda q: q.evaluate({"kind": "circuit", "qubits": 1, "ops": [], "probs": [0], "x": [1.0, float("nan")]}),
     r"qfleet.evaluate: x\[1\] is not finite"),
])
def test_a_non_finite_builder_argument_is_named(qfleet, build, name):
    # Before: "invalid JSON: parse error at line 1, column N: ... [N", naming no argument.
    with pytest.raises(ValueError, match=name):
        build(qfleet)


def test_evaluate_of_a_missing_path_says_no_such_file(qfleet, tmp_path):
    # Before: the path was parsed as JSON ("invalid JSON: parse error at line 1, column 1").
    for path in ("/nonexistent.json", tmp_path / "missing.json", "results/run1"):
        with pytest.raises(FileNotFoundError, match=r"qfleet.evaluate: no such file: \".*(json|run1)\""):
            qfleet.evaluate(path)
    assert "probs" in qfleet.evaluate('{"kind": "circuit", "qubits": 1, "ops": [], "probs": [0]}')


def test_messages_cap_what_they_echo(qfleet, tmp_path):
    # Before: each echoed its 6 MB on one line.
    big = "x" * 6_000_000
    for call in (lambda: qfleet.evaluate({"kind": "circuit", "qubits": 1, "ops": [], big: 1}),
                 lambda: qfleet.evaluate({"kind": big}),
                 lambda: qfleet.evaluate("/" + big + ".json"),
                 lambda: qfleet.evaluate('{"kind": "' + big),
                 lambda: qfleet.evaluate({"kind": "circuit", "qubits": 1, "ops": [{"gate": big, "wires": [0]}]})):
        with pytest.raises(Exception) as e:
            call()
        text = str(e.value)
        assert len(text) < 1100 and "\n" not in text and "6000" in text, text[:300]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"kind": big}))
    with pytest.raises(ValueError) as e:
        qfleet.load_problem(path)
    assert len(str(e.value)) < 1000 and "6000002 characters" in str(e.value)


def test_pennylane_shots_too_many_for_the_memory_are_refused_before_allocating(qfleet):
    qml = pytest.importorskip("pennylane")
    import qfleet.pennylane  # noqa: F401 - registers the devices

    dev = qml.device("qfleet.qubit", wires=2)

    @qml.set_shots(10 ** 12)
    @qml.qnode(dev)
    def circuit():
        qml.Hadamard(0)
        return qml.sample(wires=[0, 1])

    # Before: LibTorch's allocator text ("DefaultCPUAllocator: can't allocate memory ...").
    with pytest.raises(ValueError, match=r"qfleet.qubit: shots = 1000000000000 needs about .* GiB for the samples "
                                         r".* more than the .* GiB of memory available; lower shots"):
        circuit()


def test_the_apps_configuration_messages_are_capped_in_python(qfleet):
    # The apps' messages echo a key or a value whole (before: 3 MB on the line of a ValueError).
    rl = pytest.importorskip("qfleet.rl")
    from qfleet import meta_control

    big = "z" * 3_000_000
    for call in (lambda: rl.QfleetVectorEnv("qubit_x", num_envs=2, **{big: 1}),
                 lambda: rl.QfleetVectorEnv("qubit_x", num_envs=2, reward=big),
                 lambda: meta_control.resolve_config({big: 1})):
        with pytest.raises(ValueError) as e:
            call()
        text = str(e.value)
        assert len(text) < 1100 and "characters in all) ..." in text, text[:300]


def test_the_apps_command_lines_cap_what_they_echo(tmp_path):
    # A configuration file with a key of a megabyte: one line of under 1,100 bytes from the app's
    # command line (apps/common/cli_errors.hpp), its start and end kept; before, the key whole.
    import subprocess

    from conftest import app_binary

    config = tmp_path / "c.json"
    config.write_text('{"' + "k" * 1_000_000 + '": 1}')
    r = subprocess.run([app_binary("QFLEET_QGAN", "qfleet-qgan"), "train", "--config", str(config), "--print-config"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr[:300]
    assert r.stderr.startswith("qfleet-qgan: error: config: ") and len(r.stderr) < 1100, r.stderr[:300]
    assert "bytes in all) ..." in r.stderr, r.stderr
