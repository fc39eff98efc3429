"""qfleet.rl: vectorized quantum-control environments and PPO (docs/rl.md), from Python.

The app is C++ (apps/rl, LibTorch + qfleet): N environments are stepped together by one
batched engine call (torch.classes.qfleet_rl.VecEnv); this module gives them Gymnasium's
interfaces and runs the same command line as the `qfleet-rl` binary::

    import gymnasium, qfleet.rl
    envs = gymnasium.make_vec("qfleet/QubitX-v0", num_envs=4096)        # QfleetVectorEnv
    obs, info = envs.reset(seed=0)                                       # torch float32 [4096, obs_dim]
    obs, reward, terminated, truncated, info = envs.step(actions)        # actions [4096, 2] in [-1, 1]
    env = gymnasium.make("qfleet/QubitX-v0")                             # QfleetEnv: one env, numpy

    python -m qfleet.rl train --set total_steps=576000                   # PPO (the binary's code)
    python -m qfleet.rl bench-env --env num_envs=16384
    python -m qfleet.rl.plot rl-out                                      # learning_curve.png, phases.png

Registered ids: qfleet/QubitX-v0 (task qubit_x), qfleet/CZ-v0 (cz), qfleet/Ladder-v0 (ladder);
every environment key (docs/rl.md: n_steps, observation, action, reward, noise, seed, device, ...)
is a keyword argument. Bad configurations and actions raise ValueError with the library's message
(which names the key or the environment), and a failed step changes nothing.

Autoreset is Gymnasium's SAME_STEP mode: where an episode ended, the observation returned is
the next episode's first; info["final_obs"] ([N, obs_dim] torch, zero rows elsewhere) holds the
ended episodes' last observations and info["final_info"]["fidelity"] their fidelity, each with
its "_key" mask (numpy bool [N]) as in Gymnasium's SyncVectorEnv. info["fidelity"] is every
environment's figure of merit now (a new episode's initial one where an episode ended).

On a GPU (device="cuda") the environments are stepped as tensors on the device (the "stepping"
key): observations, rewards, flags and the fidelities in info are CUDA tensors, and nothing is
copied to the host per step (info's fidelities are numpy arrays on the CPU, as Gymnasium's own
vector envs return them). Every environment's episode has the same length and they reset
together, so a step's end of episode is known without reading the device.

Fixed tasks: reset(options={"tasks": T}), T [N, n_params] in the order of param_names
(gamma_deph, gamma_relax[, detuning]), runs these tasks instead of draws, for this and every
later episode (autoresets, resets without options) until reset(options={"tasks": None}).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .._json import capped_message
from .._lib import load_app

__all__ = ["QfleetVectorEnv", "QfleetEnv", "ENV_IDS", "main"]

#: The registered Gymnasium ids and the task each runs.
ENV_IDS = {"qfleet/QubitX-v0": "qubit_x", "qfleet/CZ-v0": "cz", "qfleet/Ladder-v0": "ladder"}
_MAX_SEED = 2 ** 63


def _ops():
    return load_app("rl")


def _json_default(value):
    if isinstance(value, (np.generic, torch.Tensor)) and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _finite(value) -> bool:
    """False where a number in value (nested lists included) is NaN or infinite."""
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return all(_finite(v) for v in value.tolist()) if value.ndim else _finite(value.item())
    if isinstance(value, (float, np.floating)):
        return bool(np.isfinite(value))
    return True


def _native(config: dict):
    """The C++ environments; ValueError with the library's message for a bad configuration."""
    _ops()
    try:
        text = json.dumps(config, default=_json_default, allow_nan=False)
    except ValueError:  # NaN or infinity somewhere: name the key
        bad = [k for k, v in config.items() if not _finite(v)]
        raise ValueError(f"{', '.join(map(str, bad)) or 'configuration'}: expected finite numbers") from None
    except TypeError as e:
        raise ValueError(f"qfleet.rl: the environment configuration is not JSON: {e}") from None
    try:
        return torch.classes.qfleet_rl.VecEnv(text)
    except (RuntimeError, ValueError) as e:  # the library's messages, capped
        raise ValueError(capped_message(e)) from None


def _call(fn, *args):
    """A call into the library: its std::invalid_argument (a RuntimeError here) as ValueError."""
    try:
        return fn(*args)
    except (RuntimeError, ValueError) as e:  # the library's messages, capped
        raise ValueError(capped_message(e)) from None


def _seed(seed) -> int:
    """The library's seed argument: -1 (keep the streams) or 0 <= seed < 2^63."""
    if seed is None:
        return -1
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"reset: seed must be an int or None, got {type(seed).__name__}")
    if not 0 <= int(seed) < _MAX_SEED:
        raise ValueError(f"reset: seed must be in [0, 2^63), got {int(seed)}")
    return int(seed)


def _single_spaces(spec: dict):
    """Observation Box with the features' bounds and the action space of one environment.

    Every physical feature lies in [-1, 1]: Pauli-transfer-matrix entries and +-1 measurement
    means, populations, density-matrix and superoperator entries (|S_ij| <= 1 for a channel);
    the time fraction t / n_steps in [0, 1]; the task parameters (observe_noise) are scaled to
    [-1, 1] over the distribution's ranges (fixed tasks outside those ranges fall outside)."""
    obs_dim = int(spec["obs_dim"])
    n_noise = len(spec["param_names"]) if spec["config"].get("observe_noise") else 0
    low = np.full(obs_dim, -1.0, dtype=np.float32)
    high = np.ones(obs_dim, dtype=np.float32)
    low[obs_dim - n_noise - 1] = 0.0  # the time fraction
    observation = spaces.Box(low, high, dtype=np.float32)
    if spec["discrete"]:
        action = spaces.Discrete(int(spec["n_actions"]))
    else:
        action = spaces.Box(-1.0, 1.0, (int(spec["n_controls"]),), dtype=np.float32)
    return observation, action


def _as_actions(actions) -> torch.Tensor:
    """Actions as a tensor (torch tensors pass through; numpy arrays and lists are wrapped)."""
    if isinstance(actions, torch.Tensor):
        return actions
    try:
        array = np.asarray(actions)
        if array.dtype == object or array.dtype.kind in "USV":
            raise TypeError(f"dtype {array.dtype}")
        return torch.from_numpy(np.ascontiguousarray(array))
    except (TypeError, ValueError) as e:
        raise ValueError(f"step: actions must be a numeric tensor or array ({e})") from None


class _Tasks:
    """The fixed tasks (sticky across resets until options={"tasks": None})."""

    def __init__(self, n: int, n_params: int, names):
        self.n, self.n_params, self.names, self.value = n, n_params, names, None

    def parse(self, options):
        """Reset's options: (whether they name "tasks", the tasks then in force); commit() keeps them
        once the library has accepted them."""
        if options is None:
            return False, self.value
        if not isinstance(options, dict):
            raise ValueError(f"reset: options must be a dict, got {type(options).__name__}")
        unknown = sorted(set(options) - {"tasks"})
        if unknown:
            raise ValueError(f"reset: unknown option(s) {unknown}; the only option is 'tasks' "
                             f"([num_envs, n_params] = [{self.n}, {self.n_params}]: {', '.join(self.names)}, or None)")
        if "tasks" not in options:
            return False, self.value
        tasks = options["tasks"]
        if tasks is None:
            return True, None
        try:
            t = torch.as_tensor(np.asarray(tasks) if not isinstance(tasks, torch.Tensor) else tasks)
        except (TypeError, ValueError, RuntimeError) as e:
            raise ValueError(f"reset: tasks must be numbers [num_envs, n_params] ({e})") from None
        if self.n == 1 and t.dim() == 1:
            t = t.reshape(1, -1)
        if t.dtype == torch.bool or t.is_complex():
            raise ValueError(f"reset: tasks must be real numbers, got {t.dtype}")
        return True, t.detach().to("cpu", torch.float64).clone()


class QfleetVectorEnv(VectorEnv):
    """num_envs quantum-control environments stepped together in C++ (Gymnasium VectorEnv).

    Observations, rewards, terminations and truncations are torch tensors on the environment's
    device (the "device" key); actions may be torch tensors (any device) or numpy arrays:
    continuous [N, n_controls] floats in [-1, 1] (clipped unless clip_actions=False, then out of
    range is an error) or discrete [N] integers indexing the pulse library. ``qfleet_spec`` is
    the environments' description as built (a dict: the resolved configuration, dimension,
    controls, pulse library, task parameters and their ranges; docs/rl.md)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, task: str = "qubit_x", num_envs: int = 16, render_mode: str | None = None,
                 **env_keys: Any) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode: qfleet environments do not render, got {render_mode!r}")
        self._env = _native({"task": task, "num_envs": num_envs, **env_keys})
        self.qfleet_spec = json.loads(self._env.spec())
        s = self.qfleet_spec
        self.num_envs = int(s["num_envs"])
        self.device = torch.device(s["device"])
        self.discrete = bool(s["discrete"])
        self.n_steps = int(s["n_steps"])
        self.param_names = list(s["param_names"])
        self.single_observation_space, self.single_action_space = _single_spaces(s)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self._tasks = _Tasks(self.num_envs, len(self.param_names), self.param_names)
        self._all = np.ones(self.num_envs, dtype=np.bool_)
        self._elapsed = 0  # segments applied in the current episodes (the same in every environment)

    def _info_values(self, t: torch.Tensor):
        """numpy on the CPU; on a GPU the tensor itself (no host copy per step)."""
        return t.numpy() if t.device.type == "cpu" else t

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[torch.Tensor, dict]:
        """New episodes everywhere: env i's stream restarts at seed + i (seed given); options
        {"tasks": T [N, n_params]} fixes the tasks (None: draws again). Returns (obs, info)."""
        s = _seed(seed)
        _, tasks = self._tasks.parse(options)
        obs = _call(self._env.reset, s, tasks)
        self._tasks.value = tasks
        self._elapsed = 0
        super().reset(seed=seed)
        return obs, {"fidelity": self._info_values(self._env.fidelity()), "_fidelity": self._all.copy()}

    def step(self, actions: torch.Tensor | np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                torch.Tensor, dict]:
        """One step of every environment (Gymnasium's VectorEnv.step; same-step autoreset)."""
        a = _as_actions(actions)
        obs, reward, terminated, truncated, final_obs, final_fid, _ = _call(self._env.step, a)
        self._elapsed += 1
        info = {"fidelity": self._info_values(self._env.fidelity()), "_fidelity": self._all.copy()}
        if self._elapsed >= self.n_steps:  # every episode ended (terminated) and restarted
            self._elapsed = 0
            info["final_obs"] = final_obs
            info["_final_obs"] = self._all.copy()
            info["final_info"] = {"fidelity": self._info_values(final_fid), "_fidelity": self._all.copy()}
            info["_final_info"] = self._all.copy()
        return obs, reward, terminated, truncated, info

    def amplitudes(self, actions: torch.Tensor | np.ndarray) -> torch.Tensor:
        """The physical amplitudes (float64 [N, n_controls]) the actions would apply (same checks)."""
        return _call(self._env.amplitudes, _as_actions(actions))

    def tasks(self) -> torch.Tensor:
        """The current episodes' tasks, float64 [N, n_params] (columns: param_names)."""
        return self._env.tasks()

    def fidelity(self) -> torch.Tensor:
        """Every environment's figure of merit now, float64 [N]."""
        return self._env.fidelity()

    def elapsed(self) -> torch.Tensor:
        """Segments applied in the current episodes, int64 [N]."""
        return self._env.elapsed()

    def describe(self) -> str:
        """The environments' task family, dynamics and reward in words (from the C++ spec)."""
        return self.qfleet_spec["describe"]

    def __repr__(self):
        return f"QfleetVectorEnv({self.qfleet_spec['describe']})"


class QfleetEnv(gymnasium.Env):
    """One environment (the C++ class with num_envs = 1): numpy float32 observations, a float
    reward; actions a float array (n_controls,) in [-1, 1] or an int index into the pulse library.

    At an episode's end the observation returned is that episode's last (Gymnasium's single-env
    convention); the next reset() without a seed or tasks starts the episode the library has
    already drawn, so that SyncVectorEnv over QfleetEnv draws the same tasks as QfleetVectorEnv."""

    metadata = {"render_modes": []}

    def __init__(self, task: str = "qubit_x", render_mode: str | None = None, **env_keys: Any) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode: qfleet environments do not render, got {render_mode!r}")
        if int(env_keys.pop("num_envs", 1)) != 1:
            raise ValueError("num_envs: QfleetEnv is one environment; use QfleetVectorEnv "
                             "(gymnasium.make_vec) for more")
        env_keys.setdefault("threads", 1)
        self._env = _native({"task": task, "num_envs": 1, **env_keys})
        self.qfleet_spec = json.loads(self._env.spec())
        s = self.qfleet_spec
        self.discrete = bool(s["discrete"])
        self.n_controls = int(s["n_controls"])
        self.n_steps = int(s["n_steps"])
        self.param_names = list(s["param_names"])
        self.observation_space, self.action_space = _single_spaces(s)
        self.render_mode = None
        self._tasks = _Tasks(1, len(self.param_names), self.param_names)
        self._pending = None  # the next episode's first observation, already started by the library

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """A new episode (Gymnasium's Env.reset): a task drawn from the seed's stream."""
        s = _seed(seed)
        named_tasks, tasks = self._tasks.parse(options)
        if seed is None and not named_tasks and self._pending is not None:
            obs = self._pending
        else:
            obs = _call(self._env.reset, s, tasks)[0]
        self._tasks.value = tasks
        self._pending = None
        super().reset(seed=seed)
        return obs.cpu().numpy(), {"fidelity": float(self._env.fidelity()[0])}

    def _action(self, action) -> torch.Tensor:
        a = action if isinstance(action, torch.Tensor) else _as_actions(action)
        if self.discrete:
            if a.numel() != 1 or a.dim() > 1:
                raise ValueError(f"step: a discrete action must be one integer, got shape {tuple(a.shape)}")
            return a.reshape(1)
        if tuple(a.shape) != (self.n_controls,):
            raise ValueError(f"step: a continuous action must have shape ({self.n_controls},) (one value per "
                             f"control: {', '.join(self.qfleet_spec['control_names'])}), got {tuple(a.shape)}")
        return a.reshape(1, self.n_controls)

    def step(self, action: np.ndarray | int | torch.Tensor) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One step (Gymnasium's Env.step): (observation, reward, terminated, truncated, info)."""
        a = self._action(action)
        obs, reward, terminated, _, final_obs, final_fid, fid = _call(self._env.step, a)
        self._pending = None
        done = bool(terminated[0])
        if done:
            self._pending = obs[0]
            obs = final_obs
        return obs[0].cpu().numpy(), float(reward[0]), done, False, {"fidelity": float(fid[0])}

    def tasks(self) -> np.ndarray:
        """The current episode's task, float64 (n_params,) (param_names order)."""
        return self._env.tasks()[0].numpy()

    def __repr__(self):
        return f"QfleetEnv({self.qfleet_spec['describe']})"


def _register():
    for env_id, task in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="qfleet.rl:QfleetEnv",
                               vector_entry_point="qfleet.rl:QfleetVectorEnv", kwargs={"task": task})


_register()


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the same C++ as qfleet-rl: train, bench-env, compare); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    return int(_ops().main("python -m qfleet.rl", args))
