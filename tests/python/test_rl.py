"""qfleet-rl's environments (apps/rl) from Python (qfleet.rl): against a NumPy/SciPy simulation
of the same physics written here (superoperators from scipy.linalg.expm of column-stacked
Liouvillians), against Gymnasium's own SyncVectorEnv layout and environment checker, bad
actions as ValueErrors that change nothing, sampled measurements against the exact
expectations, and a tiny PPO run through `python -m qfleet.rl`'s entry whose pulses the
`qfleet eval` command re-evaluates."""
import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

gymnasium = pytest.importorskip("gymnasium")
scipy_linalg = pytest.importorskip("scipy.linalg")

from qfleet._lib import app_library_path  # noqa: E402

try:  # like the other apps' tests: the build's library ($QFLEET_RL_LIBRARY) or the installed package's
    app_library_path("rl")
except ImportError as e:
    pytest.skip(f"qfleet-rl's library is not available ({e})", allow_module_level=True)

import qfleet.rl as rl  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- the independent reference
I2 = np.eye(2, dtype=complex)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]], dtype=complex)
Z = np.diag([1.0, -1.0]).astype(complex)
PAULIS = [I2, X, Y, Z]


def vec(m):  # column stacking: vec(A X B) = (B^T kron A) vec(X)
    return m.reshape(-1, order="F")


def unvec(v, d):
    return v.reshape(d, d, order="F")


def liouvillian(h, jumps):
    d = h.shape[0]
    eye = np.eye(d)
    lv = -1j * (np.kron(eye, h) - np.kron(h.T, eye))
    for c in jumps:
        cdc = c.conj().T @ c
        lv += np.kron(c.conj(), c) - 0.5 * np.kron(eye, cdc) - 0.5 * np.kron(cdc.T, eye)
    return lv


class QubitXReference:
    """One qubit_x environment: controls X/2, Y/2 (amplitude = max_amplitude * clipped action),
    relaxation |0><1| at gamma_relax and sqrt(1/2) Z at gamma_deph, the X gate's average fidelity,
    expectation features = Pauli transfer matrix rows 1..3, then t / n_steps."""

    def __init__(self, gamma_deph, gamma_relax, n_steps=60, gate_time=1.0, max_amplitude=2 * np.pi, reward="final"):
        self.jumps = [np.sqrt(gamma_relax) * np.array([[0, 1], [0, 0]], dtype=complex),
                      np.sqrt(gamma_deph) * np.sqrt(0.5) * Z]
        self.dt, self.n, self.amax, self.reward = gate_time / n_steps, n_steps, max_amplitude, reward
        self.s, self.t = np.eye(4, dtype=complex), 0
        self.f = self.fidelity()

    def fidelity(self):
        f_pro = np.real(np.trace(np.kron(X.conj(), X).conj().T @ self.s)) / 4
        return (2 * f_pro + 1) / 3

    def obs(self):
        ptm = [[np.real(np.trace(pi @ unvec(self.s @ vec(pj), 2))) / 2 for pj in PAULIS] for pi in PAULIS[1:]]
        return np.append(np.ravel(ptm), self.t / self.n)

    def step(self, action):
        ax, ay = self.amax * np.clip(action, -1, 1)
        self.s = scipy_linalg.expm(liouvillian(ax * X / 2 + ay * Y / 2, self.jumps) * self.dt) @ self.s
        self.t += 1
        f = self.fidelity()
        reward = f - self.f if self.reward == "step" else (f if self.t == self.n else 0.0)
        self.f = f
        return self.obs(), reward, self.t == self.n


class LadderReference:
    """The d-level ladder: H = (alpha/2) n(n-1) + delta n + a_x (a + a^dag)/2 + a_y i(a^dag - a)/2,
    alpha = -2 pi, jumps sqrt(gamma_relax) a and sqrt(gamma_deph) n, rho0 = |0><0|, target |d-1>;
    density features: the diagonal, then Re/Im of the upper triangle (row by row), then t / n_steps."""

    def __init__(self, d, gamma_deph, gamma_relax, detuning):
        a = np.diag(np.sqrt(np.arange(1, d)), 1).astype(complex)
        num = np.diag(np.arange(d)).astype(complex)
        self.d, self.n = d, 20 * (d - 1)
        self.dt, self.amax = 0.5 * (d - 1) / self.n, 4 * np.pi
        self.h0 = -np.pi * num @ (num - np.eye(d)) + detuning * num
        self.hx, self.hy = (a + a.conj().T) / 2, 1j * (a.conj().T - a) / 2
        self.jumps = [np.sqrt(gamma_relax) * a, np.sqrt(gamma_deph) * num]
        self.rho, self.t = np.zeros((d, d), dtype=complex), 0
        self.rho[0, 0] = 1

    def density_obs(self):
        iu = np.triu_indices(self.d, 1)
        off = np.stack([self.rho[iu].real, self.rho[iu].imag], axis=1).ravel()
        return np.concatenate([np.diag(self.rho).real, off, [self.t / self.n]])

    def expectation_obs(self):
        r = self.rho
        xy = [[2 * r[k, k + 1].real, -2 * r[k, k + 1].imag] for k in range(self.d - 1)]
        return np.concatenate([np.diag(r).real, np.ravel(xy), [self.t / self.n]])

    def step(self, action):
        ax, ay = self.amax * np.clip(action, -1, 1)
        lv = liouvillian(self.h0 + ax * self.hx + ay * self.hy, self.jumps)
        self.rho = unvec(scipy_linalg.expm(lv * self.dt) @ vec(self.rho), self.d)
        self.t += 1
        return self.rho[-1, -1].real


QUBIT_TASKS = np.array([[0.05, 0.03], [0.12, 0.07], [0.0, 0.0], [0.15, 0.01]])


def actions_for(n_steps, n_envs, n_ctrl=2, seed=0, scale=1.0):
    return np.random.default_rng(seed).uniform(-scale, scale, (n_steps, n_envs, n_ctrl)).astype(np.float32)


# ------------------------------------------------------------------------------ the tests
@pytest.mark.parametrize("reward", ["final", "step"])
def test_qubit_x_matches_the_numpy_reference(reward):
    n = len(QUBIT_TASKS)
    env = rl.QfleetVectorEnv("qubit_x", num_envs=n, reward=reward, threads=2)
    obs, info = env.reset(seed=3, options={"tasks": torch.tensor(QUBIT_TASKS)})
    np.testing.assert_array_equal(env.tasks().numpy(), QUBIT_TASKS)
    refs = [QubitXReference(*task, reward=reward) for task in QUBIT_TASKS]
    np.testing.assert_allclose(obs.numpy(), np.stack([r.obs() for r in refs]), atol=1e-6)
    np.testing.assert_allclose(info["fidelity"], [1 / 3] * n, atol=1e-12)
    acts = actions_for(60, n, seed=1)
    for k in range(60):
        obs, rew, term, trunc, info = env.step(acts[k])
        out = [r.step(acts[k, i].astype(np.float64)) for i, r in enumerate(refs)]
        ref_obs = np.stack([o[0] for o in out])
        np.testing.assert_allclose(rew.numpy(), [o[1] for o in out], atol=1e-6)
        assert not trunc.any()
        if k < 59:
            np.testing.assert_allclose(obs.numpy(), ref_obs, atol=1e-6)
            np.testing.assert_allclose(info["fidelity"], [r.f for r in refs], atol=1e-10)
            assert not term.any() and "final_obs" not in info
    assert term.all()
    np.testing.assert_allclose(info["final_obs"].numpy(), ref_obs, atol=1e-6)
    np.testing.assert_allclose(info["final_info"]["fidelity"], [r.f for r in refs], atol=1e-10)
    assert 0.3 < min(r.f for r in refs) and max(r.f for r in refs) < 1  # a nontrivial random pulse


def test_ladder_density_matches_scipy():
    d, n = 3, 2
    tasks = np.array([[0.03, 0.02, 0.3], [0.01, 0.05, -0.4]])
    env = rl.QfleetVectorEnv("ladder", num_envs=n, levels=d, observation="density", threads=2)
    obs, _ = env.reset(options={"tasks": tasks})
    refs = [LadderReference(d, *t) for t in tasks]
    np.testing.assert_allclose(obs.numpy(), np.stack([r.density_obs() for r in refs]), atol=1e-6)
    acts = actions_for(refs[0].n, n, seed=2)
    for k in range(refs[0].n):
        obs, rew, term, _, info = env.step(acts[k])
        fids = [r.step(acts[k, i].astype(np.float64)) for i, r in enumerate(refs)]
        got = (info["final_obs"] if term.all() else obs).numpy()
        np.testing.assert_allclose(got, np.stack([r.density_obs() for r in refs]), atol=1e-6)
    assert term.all()
    np.testing.assert_allclose(info["final_info"]["fidelity"], fids, atol=1e-10)
    np.testing.assert_allclose(rew.numpy(), fids, atol=1e-6)


def checked_without_warnings(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    messages = [str(w.message) for w in caught]
    assert not messages, messages


@pytest.mark.parametrize("env_id,keys", [("qfleet/QubitX-v0", {}), ("qfleet/QubitX-v0", {"action": "discrete"}),
                                         ("qfleet/Ladder-v0", {"observation": "measurements", "observe_noise": True}),
                                         ("qfleet/CZ-v0", {"observation": "density", "n_steps": 4})])
def test_gymnasium_env_checker_passes_the_single_env(env_id, keys):
    env = gymnasium.make(env_id, **keys)
    assert isinstance(env.unwrapped, rl.QfleetEnv)
    checked_without_warnings(env.unwrapped)
    if keys.get("action") == "discrete":
        assert env.action_space == gymnasium.spaces.Discrete(9)
    obs, _ = env.reset(seed=0)  # through the passive checker's wrappers too
    for _ in range(3):
        obs, reward, *_ = env.step(env.action_space.sample())
        assert obs.dtype == np.float32 and obs in env.observation_space and isinstance(reward, float)


def test_make_vec_with_the_registered_ids():
    envs = gymnasium.make_vec("qfleet/QubitX-v0", num_envs=64, vectorization_mode="vector_entry_point")
    assert isinstance(envs, rl.QfleetVectorEnv) and envs.num_envs == 64
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert envs.single_action_space == gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    assert envs.action_space.shape == (64, 2) and envs.observation_space.shape == (64, 13)
    obs, info = envs.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32 and obs.device == envs.device
    obs, rew, term, trunc, info = envs.step(envs.action_space.sample())  # numpy actions
    assert obs.numpy() in envs.observation_space and rew.dtype == torch.float32 and term.dtype == torch.bool
    cz = gymnasium.make_vec("qfleet/CZ-v0", num_envs=3, action="discrete")
    assert cz.single_observation_space.shape == (15 * 16 + 1,) and cz.single_action_space.n == 1 + 4 * 6
    assert cz.action_space == gymnasium.spaces.MultiDiscrete([25] * 3)
    with pytest.raises(ValueError, match="key 'env.task': expected one of"):
        rl.QfleetVectorEnv("nope")
    with pytest.raises(ValueError, match="bogus"):
        gymnasium.make_vec("qfleet/Ladder-v0", num_envs=2, bogus=1)
    with pytest.raises(ValueError, match="max_amplitude: expected finite numbers"):
        rl.QfleetVectorEnv(max_amplitude=float("nan"))


def rollout(env, acts, seed=None, options=None):
    obs, _ = env.reset(seed=seed, options=options)
    out = [obs.numpy().copy()]
    for a in acts:
        obs, rew, *_ = env.step(a)
        out += [obs.numpy().copy(), rew.numpy().copy()]
    return out, env.tasks().numpy()


def test_seeding_reproduces_trajectories():
    keys = dict(num_envs=8, n_steps=6, observation="measurements", observe_noise=True)
    acts = actions_for(15, 8, seed=4)  # crosses two autoresets: new tasks drawn from the streams
    a, b = rl.QfleetVectorEnv(**keys), rl.QfleetVectorEnv(**keys)
    ra, ta = rollout(a, acts, seed=11)
    rb, tb = rollout(b, acts, seed=11)
    for x, y in zip(ra, rb):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(ta, tb)
    rc, _ = rollout(a, acts, seed=11)  # reset(seed) on a used env starts over
    for x, y in zip(ra, rc):
        np.testing.assert_array_equal(x, y)
    rd, _ = rollout(a, acts, seed=12)
    assert not np.array_equal(ra[0], rd[0])  # other tasks (observe_noise) and other shots
    # Env i's stream is seed + i: env 1 under seed 11 is env 0 under seed 12.
    a.reset(seed=11)
    t11 = a.tasks().numpy()
    a.reset(seed=12)
    np.testing.assert_array_equal(t11[1:], a.tasks().numpy()[:-1])


def test_same_step_autoreset_matches_gymnasiums_sync_vector_env():
    """The vector env's results and info layout equal SyncVectorEnv's over the single env (same
    seeds: env i's stream is seed + i in both), episode ends and autoresets included."""
    n, keys = 3, dict(n_steps=4, observation="measurements", shots=50)
    vec_env = rl.QfleetVectorEnv(num_envs=n, **keys)
    sync = gymnasium.vector.SyncVectorEnv([lambda: rl.QfleetEnv(**keys) for _ in range(n)],
                                          autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    ov, iv = vec_env.reset(seed=5)
    os_, is_ = sync.reset(seed=5)
    np.testing.assert_array_equal(ov.numpy(), os_)
    np.testing.assert_array_equal(iv["fidelity"], is_["fidelity"])
    acts = actions_for(10, n, seed=6)
    ended_steps = 0
    for a in acts:
        ov, rv, tv, trv, iv = vec_env.step(a)
        os_, rs, ts, trs, is_ = sync.step(a)
        np.testing.assert_array_equal(ov.numpy(), os_)
        np.testing.assert_allclose(rv.numpy(), rs, rtol=1e-7)  # float32 vs float64 rewards
        np.testing.assert_array_equal(tv.numpy(), ts)
        np.testing.assert_array_equal(trv.numpy(), trs)
        assert sorted(iv) == sorted(is_)
        np.testing.assert_array_equal(iv["fidelity"], is_["fidelity"])
        np.testing.assert_array_equal(iv["_fidelity"], is_["_fidelity"])
        if "final_obs" in is_:
            ended_steps += 1
            mask = is_["_final_obs"]
            np.testing.assert_array_equal(iv["_final_obs"], mask)
            np.testing.assert_array_equal(iv["_final_info"], is_["_final_info"])
            np.testing.assert_array_equal(iv["final_info"]["_fidelity"], is_["final_info"]["_fidelity"])
            np.testing.assert_array_equal(iv["final_info"]["fidelity"], is_["final_info"]["fidelity"])
            np.testing.assert_array_equal(iv["final_obs"].numpy()[mask], np.stack(is_["final_obs"][mask]))
            assert np.all(iv["final_obs"].numpy()[mask][:, -1] == 1.0) and np.all(ov.numpy()[mask][:, -1] == 0.0)
            np.testing.assert_allclose(iv["fidelity"][mask], 1 / 3, atol=1e-12)  # the new episodes'
    assert ended_steps == 2
    np.testing.assert_array_equal(vec_env.tasks().numpy(), np.stack([e.tasks() for e in sync.envs]))


def test_fixed_tasks_stick_until_cleared():
    env = rl.QfleetVectorEnv(num_envs=4, n_steps=2)
    env.reset(seed=0, options={"tasks": QUBIT_TASKS})
    for _ in range(5):  # two autoresets
        env.step(np.zeros((4, 2), np.float32))
    np.testing.assert_array_equal(env.tasks().numpy(), QUBIT_TASKS)
    env.reset()
    np.testing.assert_array_equal(env.tasks().numpy(), QUBIT_TASKS)
    env.reset(options={"tasks": None})
    assert not np.array_equal(env.tasks().numpy(), QUBIT_TASKS)
    with pytest.raises(ValueError, match=r"tasks must be a float tensor \[num_envs, n_params\] = \[4, 2\]"):
        env.reset(options={"tasks": QUBIT_TASKS[:2]})
    with pytest.raises(ValueError, match="unknown option"):
        env.reset(options={"task": QUBIT_TASKS})


def test_bad_actions_are_value_errors_that_change_nothing():
    env = rl.QfleetVectorEnv(num_envs=3, clip_actions=False)
    env.reset(seed=1)
    for a in actions_for(4, 3, seed=7):
        env.step(a)
    before = env.elapsed().clone(), env.fidelity().clone(), env.tasks().clone()
    nan = np.zeros((3, 2), np.float32)
    nan[1, 0] = np.nan
    bad = [(nan, r"action of environment 1 is not finite \(nan\)"),
           (np.zeros((3, 3), np.float32), r"must have shape \[num_envs, n_controls\] = \[3, 2\], got \[3, 3\]"),
           (np.zeros(3, np.float32), r"must have shape \[num_envs, n_controls\] = \[3, 2\], got \[3\]"),
           (np.zeros((3, 2), np.int64), "continuous actions must be floating point"),
           (np.array([[0, 0], [0, 1.5], [0, 0]]),
            r"action 1\.5.* of environment 1 is outside \[-1, 1\] \(clip_actions = false\)"),
           (np.array([["a", "b"]] * 3), "actions must be a numeric tensor or array")]
    for actions, message in bad:
        with pytest.raises(ValueError, match=message):
            env.step(actions)
        after = env.elapsed(), env.fidelity(), env.tasks()
        for x, y in zip(before, after):
            assert torch.equal(x, y), message
    disc = rl.QfleetVectorEnv(num_envs=2, action="discrete")
    disc.step(np.array([1, 2]))
    before = disc.elapsed().clone(), disc.fidelity().clone()
    for actions, message in [(np.array([0.0, 1.0]), "discrete actions must be integers"),
                             (torch.tensor([True, False]), "discrete actions must be integers"),
                             (np.array([0, 9]), r"discrete action 9 of environment 1 is outside \[0, 9\)"),
                             (np.array([[0, 1]]), r"shape \[num_envs\] = \[2\]")]:
        with pytest.raises(ValueError, match=message):
            disc.step(actions)
        assert torch.equal(disc.elapsed(), before[0]) and torch.equal(disc.fidelity(), before[1])
    single = rl.QfleetEnv()
    single.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2,\) \(one value per control: x, y\), got \(3,\)"):
        single.step(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="not finite"):
        single.step(np.array([np.inf, 0.0], np.float32))
    with pytest.raises(ValueError, match="seed must be in"):
        single.reset(seed=-1)


def test_out_of_range_actions_are_clipped_by_default():
    n = 4
    clipped, plain = rl.QfleetVectorEnv(num_envs=n), rl.QfleetVectorEnv(num_envs=n)
    clipped.reset(seed=2)
    plain.reset(seed=2)
    acts = actions_for(60, n, seed=8, scale=3.0)
    amax = clipped.qfleet_spec["max_amplitude"]
    np.testing.assert_array_equal(clipped.amplitudes(acts[0]).numpy(),
                                  amax * np.clip(acts[0], -1, 1).astype(np.float64))
    for a in acts:
        o1, r1, _, _, i1 = clipped.step(a)
        o2, r2, _, _, i2 = plain.step(np.clip(a, -1, 1))
        assert torch.equal(o1, o2) and torch.equal(r1, r2)
    np.testing.assert_array_equal(i1["final_info"]["fidelity"], i2["final_info"]["fidelity"])


def lockstep(a, b, tasks, acts, atol=1e-6):
    """Two vector envs on the same tasks and actions give the same results (to atol)."""
    for env in (a, b):
        env.reset(seed=0, options={"tasks": tasks})
    host = lambda x: x.cpu().numpy() if isinstance(x, torch.Tensor) else x  # noqa: E731
    for act in acts:
        ra, rb = a.step(act), b.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            np.testing.assert_allclose(host(x), host(y), atol=atol)
        assert sorted(ra[4]) == sorted(rb[4])
        np.testing.assert_allclose(host(ra[4]["fidelity"]), host(rb[4]["fidelity"]), atol=1e-12)
        if "final_obs" in rb[4]:
            np.testing.assert_allclose(host(ra[4]["final_obs"]), host(rb[4]["final_obs"]), atol=atol)
            np.testing.assert_allclose(host(ra[4]["final_info"]["fidelity"]), host(rb[4]["final_info"]["fidelity"]),
                                       atol=1e-12)
    return ra


def test_tensor_stepping_matches_the_loop_through_gymnasium():
    keys = dict(num_envs=4, n_steps=3, observe_noise=True, reward="step", threads=2)
    loop, tens = rl.QfleetVectorEnv(stepping="loop", **keys), rl.QfleetVectorEnv(stepping="tensors", **keys)
    assert (loop.qfleet_spec["stepping"], tens.qfleet_spec["stepping"]) == ("loop", "tensors")
    *_, info = lockstep(tens, loop, QUBIT_TASKS, actions_for(7, 4, seed=2, scale=1.3))
    assert isinstance(info["fidelity"], np.ndarray)  # info's values are numpy on the CPU, as the loop's


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_results_come_back_on_the_cuda_device():
    """On a GPU the environments are stepped as tensors there (nothing copied per step); on the same
    tasks and actions they agree with the host loop on the CPU."""
    gpu = rl.QfleetVectorEnv(num_envs=4, n_steps=2, device="cuda")
    cpu = rl.QfleetVectorEnv(num_envs=4, n_steps=2, stepping="loop")
    assert gpu.qfleet_spec["stepping"] == "tensors"
    assert gpu.reset(seed=0)[0].device.type == "cuda"
    acts = [torch.rand(4, 2, device="cuda") * 2 - 1 for _ in range(5)]
    o, r, t, tr, info = lockstep(gpu, cpu, QUBIT_TASKS, acts)
    assert {o.device.type, r.device.type, t.device.type, tr.device.type, info["fidelity"].device.type} == {"cuda"}
    assert gpu.tasks().device.type == "cuda" and gpu.fidelity().device.type == "cuda"
    # Draws come from the device's generator: reproducible, in the task ranges.
    gpu.reset(seed=7)
    t7 = gpu.tasks().clone()
    gpu.reset(seed=7)
    assert torch.equal(t7, gpu.tasks())
    assert (t7[:, 0] >= 0.02).all() and (t7[:, 0] <= 0.15).all()
    with pytest.raises(ValueError, match="not finite"):
        gpu.step(torch.full((4, 2), float("nan"), device="cuda"))
    with pytest.raises(ValueError, match="host loop runs on the CPU"):
        rl.QfleetVectorEnv(num_envs=4, device="cuda", stepping="loop")


@pytest.mark.parametrize("task", ["qubit_x", "ladder"])
def test_measurements_average_to_the_expectations(task):
    """shots = 200000 per observable: each sampled mean is within 5 standard errors of the exact
    expectation (the NumPy reference's), averaged over 16 environments in the same state."""
    n, shots, k_steps = 16, 200000, 7
    if task == "qubit_x":
        tasks = np.tile([[0.08, 0.04]], (n, 1))
        ref = QubitXReference(0.08, 0.04)
    else:
        tasks = np.tile([[0.03, 0.02, 0.2]], (n, 1))
        ref = LadderReference(3, 0.03, 0.02, 0.2)
    env = rl.QfleetVectorEnv(task, num_envs=n, observation="measurements", shots=shots, threads=2)
    env.reset(seed=9, options={"tasks": tasks})
    for a in actions_for(k_steps, 1, seed=10):
        obs, *_ = env.step(np.repeat(a, n, axis=0))
        ref.step(a[0].astype(np.float64))
    exact = ref.obs() if task == "qubit_x" else ref.expectation_obs()
    mean = obs.numpy().astype(np.float64).mean(axis=0)
    if task == "qubit_x":  # +-1 outcomes: variance 1 - x^2
        var = 1 - exact[:-1] ** 2
    else:  # populations (binomial), then <X_k>, <Y_k> with outcomes +-1 (prob. P_k), 0 otherwise
        p = exact[:3]
        pk = np.repeat(p[:-1] + p[1:], 2)
        var = np.concatenate([p * (1 - p), pk - exact[3:-1] ** 2])
    sigma = np.sqrt(np.maximum(var, 0) / (shots * n))
    z = (mean[:-1] - exact[:-1]) / np.maximum(sigma, 1e-12)
    assert np.all(np.abs(mean[:-1] - exact[:-1]) <= 5 * sigma + 1e-7), z
    assert mean[-1] == pytest.approx(k_steps / ref.n)
    assert obs.numpy().std(axis=0)[:-1].max() > 0  # the envs drew their own shots


def test_ppo_learns_through_the_python_entry(tmp_path, capsys):
    # 10 rollouts of 64 envs x 60 steps: the first rollout's mean final fidelity is the random
    # policy's (0.386 measured), the final validation mean 0.958; the margin asked is 0.3.
    out = tmp_path / "ppo"
    assert torch.get_default_dtype() == torch.float64  # conftest's: main() runs the C++ under float32
    assert rl.main(["train", "--quiet", "--out", str(out), "--set", "total_steps=38400", "--set", "eval_every=5"]) == 0
    assert torch.get_default_dtype() == torch.float64
    report = json.loads((out / "report.json").read_text())
    first = report["curve"][0]["mean_final_fidelity"]
    assert [row["env_steps"] for row in report["curve"]] == [3840 * k for k in range(1, 11)]
    assert "validation_fidelity" in report["curve"][4] and "validation_fidelity" not in report["curve"][3]
    assert first < 0.6
    assert report["validation"]["mean_fidelity"] >= first + 0.3, (first, report["validation"]["mean_fidelity"])
    cli = os.environ.get("QFLEET_CLI")
    if cli:  # qfleet eval recomputes the policy's fidelity on validation task 0 from its pulses
        result = json.loads(subprocess.run([cli, "eval", str(out / "eval" / "task_0.json")], check=True,
                                           capture_output=True, text=True, timeout=120).stdout)
        assert result["fidelity"][0] == pytest.approx(report["validation"]["tasks"][0]["fidelity"], abs=1e-9)
    # The figures of the run, and a damaged report as one line.
    pytest.importorskip("matplotlib")
    from qfleet.rl import plot
    assert plot.main([str(out)]) == 0
    assert (out / "learning_curve.png").stat().st_size > 0 and (out / "phases.png").stat().st_size > 0
    (out / "compare.json").write_text(json.dumps({"mean": {"grape": 0.963, "ppo": 0.95, "meta_adapted": 0.9}}))
    assert plot.main([str(out), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "learning_curve.png").exists()
    with pytest.raises(SystemExit, match=r"report\.json does not exist"):
        plot.main([str(tmp_path / "missing")])
    (out / "report.json").write_text(json.dumps({"curve": [{"env_steps": 1}]}))
    with pytest.raises(SystemExit, match=r"lacks the key 'curve\[0\]\.mean_final_fidelity'"):
        plot.main([str(out)])
    (out / "report.json").write_text("{not json")
    with pytest.raises(SystemExit, match="is not valid JSON"):
        plot.main([str(out)])


def test_compare_runs_qfleet_meta_on_the_same_tasks(tmp_path):
    # `python -m qfleet.rl compare` starts `python -m qfleet.meta_control` (no QFLEET_META):
    # PPO's validation tasks must be the ones qfleet-meta drew (compare refuses others), and
    # PPO's pulses through `qfleet eval`'s library must give the environment's fidelity.
    env = {k: v for k, v in os.environ.items() if k != "QFLEET_META"}
    out = tmp_path / "cmp"
    args = [sys.executable, "-m", "qfleet.rl", "compare", "--quiet", "--out", str(out), "--set", "total_steps=3840",
            "--set", "validation_tasks=4", "--meta-iterations", "10"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "compare.json").read_text())
    ppo = json.loads((out / "report.json").read_text())
    meta = json.loads((out / "meta" / "report.json").read_text())
    assert meta["config"]["iterations"] == 10 and meta["config"]["system"] == "qubit_x"
    pairs = [(t["gamma_deph"], t["gamma_relax"]) for t in ppo["validation"]["tasks"]]
    assert pairs == [(t["gamma_deph"], t["gamma_relax"]) for t in meta["validation"]["tasks"]]
    assert summary["qfleet_eval_max_abs_diff"] < 1e-9
    assert [row["grape"] for row in summary["tasks"]] == [t["fidelity_grape"] for t in meta["validation"]["tasks"]]
    # Without the qfleet-meta program: one line naming what to set, status 1. (Again into the
    # folder that holds this comparison: --overwrite, else the run is refused before it starts.)
    env["QFLEET_META"] = str(tmp_path / "no-such-program")
    r = subprocess.run(args[:-2] + ["--ppo", str(out), "--meta-iterations", "10", "--overwrite"], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 1 and "set QFLEET_META" in r.stderr, r.stderr


def test_python_module_entry_reports_bad_options():
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "qfleet.rl", "bench-env", "--env", "num_envs=0"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 2 and "num_envs" in r.stderr, r.stderr


def test_task_rates_beyond_the_configurations_bounds_are_refused():
    # A rate of 1e200 is finite, and was accepted; 60 steps later the rewards and
    # observations were NaN. The bounds are those of the env.gamma_* keys (config.json:
    # +-1e6), which the app's --env settings have: refused at reset, naming the entry.
    env = rl.QfleetVectorEnv("qubit_x", num_envs=2, threads=2)
    for tasks, name in (([[1e200, 0.01], [0.01, 0.01]], r"tasks\[0\]\[0\] \(gamma_deph\) is 1e\+200"),
                        ([[0.01, 0.01], [0.01, 2e6]], r"tasks\[1\]\[1\] \(gamma_relax\) is 2e\+06")):
        with pytest.raises(ValueError, match=name + r", outside \[-1000000, 1000000\], the range env\.gamma_"):
            env.reset(options={"tasks": np.array(tasks)})
    with pytest.raises(ValueError, match="gamma_deph"):
        rl.QfleetVectorEnv("qubit_x", num_envs=2, gamma_deph=[1e200, 1e200])
    # At the bound itself: 60 steps of finite rewards and observations.
    env.reset(seed=0, options={"tasks": np.array([[1e6, 1e6], [0.0, 0.0]])})
    for a in actions_for(60, 2, seed=2):
        obs, reward, *_ = env.step(torch.from_numpy(a))
        assert torch.isfinite(obs).all() and torch.isfinite(torch.as_tensor(reward)).all()
