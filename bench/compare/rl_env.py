"""Environment throughput of qfleet-rl's qubit_x task (random actions) beside the environments
people write instead: Gymnasium's SyncVectorEnv over a NumPy/SciPy or a QuTiP single
environment, and a JAX + dynamiqs batched environment, on the same machine in one run.

    PYTHONPATH=python python bench/compare/rl_env.py [--envs 4096,16384] [--steps 120] [--peer-envs 16] \\
        [--peer-steps 60] [--jax-envs 4096] [--jax-steps 60] [--repeats 5] [--threads 2] [--seed 0] \\
        [--json out.json] [--md out.md] [--quick]

(or with the pip-installed package). OMP_NUM_THREADS defaults to --threads and OMP_WAIT_POLICY
to passive (harness.threads_env); JAX runs in float64 (JAX_ENABLE_X64) on its own
CPU thread pool. Needs torch, gymnasium, numpy and scipy; QuTiP and JAX + dynamiqs are optional:
a missing one skips its rows, with the reason.

The task (apps/rl/tasks.cpp): one qubit, controls X/2 and Y/2 with amplitude 2 pi x action
(actions in [-1, 1]), relaxation |0><1| at rate gamma_relax in [0.01, 0.08] and dephasing
sqrt(1/2) Z at gamma_deph in [0.02, 0.15] (drawn per episode), 60 segments of 1/60; the state is
the channel's superoperator S (column stacking), the figure of merit the average gate fidelity
to X, (2 F_pro + 1)/3 with F_pro = Re tr(S_X^dag S)/4; the observation is the Pauli transfer
matrix's rows 1..3 (R_ij = tr(P_i E(P_j))/2, 12 numbers) and t/60, float32; the reward is the
fidelity at the episode's last step (0 before); Gymnasium's SAME_STEP autoreset.

Environments:
  qfleet VectorEnv     qfleet.rl.QfleetVectorEnv (gymnasium.make_vec's vector_entry_point): the
                       C++ environments, one batched engine call per step, torch tensors out
  qfleet torch class   the same C++ class without the Gymnasium wrapper (the wrapper's cost)
  numpy SyncVectorEnv  gymnasium.vector.SyncVectorEnv over a gymnasium.Env written here: per
                       step the Liouvillian (kron products) and scipy.linalg.expm(L dt), S <- E S
  qutip SyncVectorEnv  the same with the segment's channel from qutip.propagator(H, dt, c_ops)
                       (QuTiP's master-equation propagator; atol 1e-12, rtol 1e-10 so that 60
                       segments stay within the 1e-6 check)
  jax+dynamiqs vmap    a batched JAX environment: per env dq.mepropagator(H, jumps, [0, dt])
                       (dynamiqs' Expm method: the Liouvillian's exponential), vmapped over the
                       envs and jit-compiled with the observation, reward and autoreset (new
                       tasks from jax.random), one call per step

Before anything is timed, every environment runs the same 60 random actions on the same 4 fixed
tasks (the qfleet VectorEnv's reset options={"tasks": ...}; the others built with those tasks):
each observation (the final observation at the episode's end), each reward and the final
fidelity must equal qfleet's to 1e-6 (qfleet's observations are float32); a disagreement stops
the script with exit status 1.

Timing: per environment, reset(seed=0), 3 warm-up steps (JAX compiles in them), then --repeats
repeats of a fixed number of steps cycling through 16 pre-drawn random action batches; the
median (min, max) seconds per step gives env-steps/s = num_envs / median. The SyncVectorEnv
peers cost the same per environment at any num_envs, so they run at --peer-envs environments
and --peer-steps steps. The ratio column is qfleet VectorEnv's env-steps/s at the first --envs
size over the row's. --quick: tiny sizes, 2 repeats, a smoke test.
"""
import os
import sys
import time

import harness

N_STEPS, GATE_TIME, AMAX = 60, 1.0, 2 * 3.141592653589793
RANGES = ((0.02, 0.15), (0.01, 0.08))  # gamma_deph, gamma_relax: the task's defaults
CHECK_TASKS = ((0.05, 0.03), (0.12, 0.07), (0.0, 0.0), (0.15, 0.01))
CHECK_TOL = 1e-6
N_ACTION_BATCHES = 16
QUTIP_OPTIONS = {"atol": 1e-12, "rtol": 1e-10}


def parse_args():
    ap = harness.parser(__doc__.split("\n\n")[0], threads=2, seed=0, quick_help="tiny sizes, 2 repeats: a smoke test")
    ap.add_argument("--envs", default=None, help="qfleet's num_envs, comma-separated (default 4096,16384; --quick: 64)")
    ap.add_argument("--steps", type=int, default=None, help="qfleet's steps per repeat (default 120; --quick: 10)")
    ap.add_argument("--peer-envs", type=int, default=None,
                    help="the SyncVectorEnv peers' num_envs (default 16; --quick: 2)")
    ap.add_argument("--peer-steps", type=int, default=None, help="their steps per repeat (default 60; --quick: 3)")
    ap.add_argument("--jax-envs", default=None, help="the JAX environment's num_envs, comma-separated (default 4096; "
                                                     "--quick: 64)")
    ap.add_argument("--jax-steps", type=int, default=None, help="its steps per repeat (default 60; --quick: 5)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5; --quick: 2)")
    a = harness.validate(ap, ap.parse_args())
    q = a.quick
    a.envs = [int(v) for v in (a.envs or ("64" if q else "4096,16384")).split(",")]
    a.jax_envs = [int(v) for v in (a.jax_envs or ("64" if q else "4096")).split(",")]
    a.steps = a.steps or (10 if q else 120)
    a.peer_envs = a.peer_envs or (2 if q else 16)
    a.peer_steps = a.peer_steps or (3 if q else 60)
    a.jax_steps = a.jax_steps or (5 if q else 60)
    a.repeats = a.repeats or (2 if q else 5)
    if min(a.envs + a.jax_envs + [a.steps, a.peer_envs, a.peer_steps, a.jax_steps, a.repeats, a.threads]) < 1:
        ap.error("every size, count and --threads must be positive")
    return a


ARGS = parse_args()
# Set before the imports: OpenMP runtimes read them once, when they load (harness.threads_env).
harness.threads_env(ARGS.threads, passive=True)
os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import torch  # noqa: E402

try:
    import gymnasium  # noqa: E402
    import qfleet  # noqa: E402
    import qfleet.rl  # noqa: E402
except ImportError as e:
    sys.exit(f"rl_env: needs gymnasium and qfleet with its rl app ({e}); set PYTHONPATH=python (the "
             "libraries of ./build are found from there), or pip install .")

QFLEET, QFLEET_RAW = "qfleet VectorEnv", "qfleet torch class"
NUMPY, QUTIP, JAX = "numpy SyncVectorEnv", "qutip SyncVectorEnv", "jax+dynamiqs vmap"


def fail(message):
    harness.fail("rl_env", message)


class Skip(Exception):
    """An environment that cannot run here (package missing): its row says why."""


# ---- the physics, written once for the NumPy and QuTiP environments ---------------------------------

PAULI = [np.eye(2, dtype=complex), np.array([[0, 1], [1, 0]], dtype=complex),
         np.array([[0, -1j], [1j, 0]], dtype=complex), np.diag([1.0, -1.0]).astype(complex)]
LOWER = np.array([[0, 1], [0, 0]], dtype=complex)
VEC_P = np.stack([p.reshape(-1, order="F") for p in PAULI], axis=1)  # columns vec(P_j), column stacking
S_X = np.kron(PAULI[1].conj(), PAULI[1])  # vec(X rho X^dag) = (conj(X) kron X) vec(rho)


def features(s, t):
    """PTM rows 1..3 (tr(P_i B) = vec(P_i)^dag vec(B) for Hermitian P_i) and t / N_STEPS."""
    ptm = np.real(VEC_P.conj().T @ s @ VEC_P) / 2
    return np.append(ptm[1:].ravel(), t / N_STEPS).astype(np.float32)


def gate_fidelity(s):
    return (2 * np.real(np.trace(S_X.conj().T @ s)) / 4 + 1) / 3


def liouvillian(h, jumps):
    eye = np.eye(2)
    lv = -1j * (np.kron(eye, h) - np.kron(h.T, eye))
    for c in jumps:
        cdc = c.conj().T @ c
        lv += np.kron(c.conj(), c) - 0.5 * np.kron(eye, cdc) - 0.5 * np.kron(cdc.T, eye)
    return lv


class SingleQubitX(gymnasium.Env):
    """One qubit_x environment; the segment's channel from _channel (SciPy here, QuTiP below)."""

    metadata = {"render_modes": []}

    def __init__(self, task=None):
        self.fixed = task
        self.observation_space = gymnasium.spaces.Box(-1, 1, (13,), np.float32)
        self.action_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        gd, gr = self.fixed if self.fixed is not None else [self.np_random.uniform(lo, hi) for lo, hi in RANGES]
        self.task = (gd, gr)
        self.setup(gd, gr)
        self.s, self.t = np.eye(4, dtype=complex), 0
        return features(self.s, 0), {"fidelity": gate_fidelity(self.s)}

    def setup(self, gd, gr):
        self.jumps = [np.sqrt(gr) * LOWER, np.sqrt(gd * 0.5) * PAULI[3]]

    def channel(self, ax, ay):
        h = ax * PAULI[1] / 2 + ay * PAULI[2] / 2
        return scipy.linalg.expm(liouvillian(h, self.jumps) * (GATE_TIME / N_STEPS))

    def step(self, action):
        ax, ay = AMAX * np.clip(np.asarray(action, dtype=np.float64), -1, 1)
        self.s = self.channel(ax, ay) @ self.s
        self.t += 1
        f = gate_fidelity(self.s)
        done = self.t >= N_STEPS
        return features(self.s, self.t), (f if done else 0.0), done, False, {"fidelity": f}


class QutipQubitX(SingleQubitX):
    def setup(self, gd, gr):
        import qutip
        self.qutip = qutip
        self.c_ops = [np.sqrt(gr) * qutip.Qobj(LOWER), np.sqrt(gd * 0.5) * qutip.sigmaz()]
        self.hx, self.hy = qutip.sigmax() / 2, qutip.sigmay() / 2

    def channel(self, ax, ay):
        e = self.qutip.propagator(ax * self.hx + ay * self.hy, GATE_TIME / N_STEPS, self.c_ops, options=QUTIP_OPTIONS)
        return e.full()  # QuTiP's superoperators stack columns too


def sync_env(cls, n, tasks=None):
    fns = [(lambda i=i: cls(None if tasks is None else tasks[i])) for i in range(n)]
    return gymnasium.vector.SyncVectorEnv(fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)


def import_qutip():
    try:
        import qutip
    except ImportError as e:
        raise Skip(f"qutip is not installed ({e})") from None
    return qutip.__version__


# ---- JAX + dynamiqs ----------------------------------------------------------------------------------

class JaxQubitX:
    """num_envs environments as JAX arrays, stepped by one jit-compiled vmapped function."""

    def __init__(self, n, tasks=None):
        try:
            import jax
            import jax.numpy as jnp
            import dynamiqs as dq
        except ImportError as e:
            raise Skip(f"jax or dynamiqs is not installed ({e})") from None
        if not jax.config.jax_enable_x64:
            raise Skip("JAX started without float64 (JAX_ENABLE_X64=1 must be set before jax is imported)")
        dq.set_precision("double")
        self.jax, self.jnp, self.n, self.fixed = jax, jnp, n, tasks is not None
        x, y, z, lower = (jnp.asarray(m) for m in (PAULI[1], PAULI[2], PAULI[3], LOWER))
        vec_p, s_x = jnp.asarray(VEC_P), jnp.asarray(S_X)
        eye4 = jnp.eye(4, dtype=jnp.complex128)
        lo, hi = jnp.array([r[0] for r in RANGES]), jnp.array([r[1] for r in RANGES])
        dt, fixed = GATE_TIME / N_STEPS, self.fixed

        def feats(s, t):
            ptm = jnp.real(vec_p.conj().T @ s @ vec_p) / 2
            return jnp.append(ptm[1:].ravel(), t / N_STEPS).astype(jnp.float32)

        def fid(s):
            return (2 * jnp.real(jnp.trace(s_x.conj().T @ s)) / 4 + 1) / 3

        def one(s, t, task, key, a):
            ax, ay = AMAX * jnp.clip(a.astype(jnp.float64), -1, 1)
            jumps = [jnp.sqrt(task[1]) * lower, jnp.sqrt(task[0] * 0.5) * z]
            e = dq.mepropagator(ax * x / 2 + ay * y / 2, jumps, jnp.array([0.0, dt])).final_propagator.to_jax()
            s = e @ s
            t = t + 1
            f = fid(s)
            done = t >= N_STEPS
            last = feats(s, t)
            key, sub = jax.random.split(key)
            new_task = task if fixed else jax.random.uniform(sub, (2,), minval=lo, maxval=hi)
            s = jnp.where(done, eye4, s)
            task = jnp.where(done, new_task, task)
            t = jnp.where(done, 0, t)
            obs = jnp.where(done, feats(eye4, 0), last)
            return s, t, task, key, obs, jnp.where(done, f, 0.0), done, jnp.where(done, last, 0.0), f

        self._step = jax.jit(jax.vmap(one))
        self._tasks = None if tasks is None else jnp.asarray(np.asarray(tasks, dtype=np.float64))

    def reset(self, seed=0):
        jax, jnp = self.jax, self.jnp
        keys = jax.random.split(jax.random.PRNGKey(seed), self.n + 1)
        self.key = keys[1:]
        lo, hi = jnp.array([r[0] for r in RANGES]), jnp.array([r[1] for r in RANGES])
        self.task = self._tasks if self.fixed else jax.random.uniform(keys[0], (self.n, 2), minval=lo, maxval=hi)
        self.s = jnp.broadcast_to(jnp.eye(4, dtype=jnp.complex128), (self.n, 4, 4))
        self.t = jnp.zeros(self.n, dtype=jnp.int32)
        obs = jnp.broadcast_to(jnp.asarray(features(np.eye(4), 0)), (self.n, 13))
        return obs, {}

    def step(self, actions):
        self.s, self.t, self.task, self.key, obs, rew, done, final_obs, fid = self._step(
            self.s, self.t, self.task, self.key, actions)
        return obs, rew, done, final_obs, fid


# ---- the check: every environment against qfleet on the same tasks and actions ---------------------

def episode_qfleet(actions):
    env = qfleet.rl.QfleetVectorEnv("qubit_x", num_envs=len(CHECK_TASKS), threads=ARGS.threads)
    obs, _ = env.reset(seed=0, options={"tasks": np.array(CHECK_TASKS)})
    out = {"obs": [obs.numpy()], "reward": []}
    for a in actions:
        obs, rew, term, _, info = env.step(a)
        out["obs"].append(info["final_obs"].numpy() if term.all() else obs.numpy())
        out["reward"].append(rew.numpy())
    out["fidelity"] = info["final_info"]["fidelity"]
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def episode_sync(cls, actions):
    env = sync_env(cls, len(CHECK_TASKS), CHECK_TASKS)
    obs, _ = env.reset(seed=0)
    out = {"obs": [obs], "reward": []}
    for a in actions:
        obs, rew, term, _, info = env.step(a)
        out["obs"].append(np.stack(info["final_obs"]) if term.all() else obs)
        out["reward"].append(rew)
    out["fidelity"] = info["final_info"]["fidelity"]
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def episode_jax(actions):
    env = JaxQubitX(len(CHECK_TASKS), CHECK_TASKS)
    obs, _ = env.reset(0)
    out = {"obs": [np.asarray(obs)], "reward": []}
    for a in actions:
        obs, rew, done, final_obs, fid = env.step(env.jnp.asarray(a))
        out["obs"].append(np.asarray(final_obs if bool(done.all()) else obs))
        out["reward"].append(np.asarray(rew))
    out["fidelity"] = np.asarray(fid)
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def check(name, got, ref):
    diffs = harness.max_error(got, ref)[1]
    print(f"agree with qfleet: {name:22s} observations {diffs['obs']:.1e}, rewards {diffs['reward']:.1e}, "
          f"final fidelity {diffs['fidelity']:.1e} (60 steps, {len(CHECK_TASKS)} tasks)", flush=True)
    harness.check_close(f"{name} against qfleet (observations, rewards, final fidelities)", got, ref, atol=CHECK_TOL,
                        prog="rl_env", quiet=True)
    if not 0.3 < ref["fidelity"].min() < ref["fidelity"].max() < 1:
        fail(f"the check's final fidelities {ref['fidelity']} are degenerate")
    return diffs


# ---- timing -------------------------------------------------------------------------------------------

def time_steps(step, actions, n_envs, steps, repeats, sync=lambda out: None):
    for k in range(3):  # warm-up (JAX compiles here)
        sync(step(actions[k % len(actions)]))

    def sample():  # `steps` steps, synchronised once at the end (JAX dispatches asynchronously)
        for k in range(steps):
            out = step(actions[k % len(actions)])
        sync(out)

    t = harness.timed(sample, repeats=repeats, warmup=0)
    med, lo, hi = t.median / steps, t.min / steps, t.max / steps
    return {"num_envs": n_envs, "steps": steps, "repeats": repeats, "median_step_s": med, "min_step_s": lo,
            "max_step_s": hi, "env_steps_per_s": n_envs / med, "env_steps_per_s_range": [n_envs / hi, n_envs / lo]}


def random_actions(n, rng):
    return [rng.uniform(-1, 1, (n, 2)).astype(np.float32) for _ in range(N_ACTION_BATCHES)]


def time_qfleet(n, raw):
    env = qfleet.rl.QfleetVectorEnv("qubit_x", num_envs=n, threads=ARGS.threads)
    env.reset(seed=ARGS.seed)
    acts = [torch.from_numpy(a) for a in random_actions(n, np.random.default_rng(ARGS.seed + n))]
    step = env._env.step if raw else env.step
    row = time_steps(step, acts, n, ARGS.steps, ARGS.repeats)
    row["environment"] = env.describe()
    return row


def time_sync(cls, n):
    env = sync_env(cls, n)
    env.reset(seed=ARGS.seed)
    acts = random_actions(n, np.random.default_rng(ARGS.seed + n))
    return time_steps(env.step, acts, n, ARGS.peer_steps, ARGS.repeats)


def time_jax(n):
    env = JaxQubitX(n)
    env.reset(ARGS.seed)
    acts = [env.jnp.asarray(a) for a in random_actions(n, np.random.default_rng(ARGS.seed + n))]
    t0 = time.perf_counter()
    env.step(acts[0])[0].block_until_ready()
    compile_s = time.perf_counter() - t0
    row = time_steps(env.step, acts, n, ARGS.jax_steps, ARGS.repeats, sync=lambda out: out[0].block_until_ready())
    row["first_step_s (compile)"] = compile_s
    return row


# ---- report --------------------------------------------------------------------------------------------

def main():
    torch.set_num_threads(ARGS.threads)
    v = harness.versions("scipy", "gymnasium", "qutip", "jax", "dynamiqs")
    print(f"torch {v['torch']}, gymnasium {v['gymnasium']}, scipy {v['scipy']}, qutip {v['qutip']}, jax {v['jax']}, "
          f"dynamiqs {v['dynamiqs']}, qfleet {v['qfleet']}; threads {ARGS.threads} "
          f"(OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}); {harness.cpu_model()}, {os.cpu_count()} CPUs")
    print(f"qubit_x: 60 segments, random actions in [-1, 1]; {ARGS.repeats} repeats, median", flush=True)

    check_actions = np.random.default_rng(ARGS.seed + 1).uniform(-1, 1, (N_STEPS, len(CHECK_TASKS), 2))
    check_actions = check_actions.astype(np.float32)
    ref = episode_qfleet(check_actions)
    checks, skipped = {}, {}
    checks[NUMPY] = check(NUMPY, episode_sync(SingleQubitX, check_actions), ref)
    try:
        import_qutip()
        checks[QUTIP] = check(QUTIP, episode_sync(QutipQubitX, check_actions), ref)
    except Skip as e:
        skipped[QUTIP] = str(e)
    try:
        checks[JAX] = check(JAX, episode_jax(check_actions), ref)
    except Skip as e:
        skipped[JAX] = str(e)

    rows = []
    for n in ARGS.envs:
        for name, raw in ((QFLEET, False), (QFLEET_RAW, True)):
            print(f"timing {name} at {n} envs ...", flush=True)
            rows.append({"tool": name, **time_qfleet(n, raw)})
    for name, cls in ((NUMPY, SingleQubitX), (QUTIP, QutipQubitX)):
        if name in skipped:
            continue
        print(f"timing {name} at {ARGS.peer_envs} envs ...", flush=True)
        rows.append({"tool": name, **time_sync(cls, ARGS.peer_envs)})
    if JAX not in skipped:
        for n in ARGS.jax_envs:
            print(f"timing {JAX} at {n} envs ...", flush=True)
            rows.append({"tool": JAX, **time_jax(n)})

    base = next(r for r in rows if r["tool"] == QFLEET)["env_steps_per_s"]
    for r in rows:
        r["qfleet_over_this"] = base / r["env_steps_per_s"]
    print(f"\nqubit_x environment throughput, {ARGS.threads} threads (median over {ARGS.repeats} repeats; "
          f"min-max in brackets; ratio = qfleet VectorEnv at {ARGS.envs[0]} envs / the row):")
    print(f"{'environment':22s} {'envs':>6s} {'steps':>5s} {'ms/step':>9s} {'env-steps/s':>12s} "
          f"{'(min-max)':>21s} {'qfleet/row':>10s}")
    for r in rows:
        lo, hi = r["env_steps_per_s_range"]
        spread = f"({lo:.3g}-{hi:.3g})"
        print(f"{r['tool']:22s} {r['num_envs']:6d} {r['steps']:5d} {r['median_step_s'] * 1e3:9.3f} "
              f"{r['env_steps_per_s']:12.4g} {spread:>21s} {r['qfleet_over_this']:9.1f}x")
    for name, reason in skipped.items():
        print(f"{name:22s} skipped: {reason}")
        rows.append({"tool": name, "skipped": reason})

    doc = {"benchmark": "bench/compare/rl_env.py", "machine": harness.run_machine(ARGS.threads), "versions": v, "quick": ARGS.quick,
           "task": {"name": "qubit_x", "n_steps": N_STEPS, "gate_time": GATE_TIME, "max_amplitude": AMAX,
                    "ranges": {"gamma_deph": RANGES[0], "gamma_relax": RANGES[1]}},
           "check": {"tasks": CHECK_TASKS, "tolerance": CHECK_TOL, "max_abs_diff": checks},
           "qutip_options": QUTIP_OPTIONS, "rows": rows}
    harness.finish(ARGS, "rl_env.py", table_rows(rows, checks), doc,
                   title="env-steps/s; ratio qfleet VectorEnv (first --envs) / the row (> 1: qfleet faster)")


def table_rows(rows, checks):
    """Rates, not times: the harness's ratio is then qfleet's rate / the row's."""
    def t(r):
        lo, hi = r["env_steps_per_s_range"]
        return harness.Timing(r["env_steps_per_s"], lo, hi, r["repeats"], r["steps"], float("nan"))

    base = t(next(r for r in rows if r["tool"] == QFLEET))
    return [harness.row(f"qubit_x, {r.get('num_envs', '-')} envs", r["tool"], t(r) if "skipped" not in r else None,
                        base, unit="env-steps/s", note=r.get("skipped", ""),
                        error=max(checks[r["tool"]].values()) if r["tool"] in checks else None) for r in rows]


if __name__ == "__main__":
    main()
