"""Meta-learned robust quantum control on qfleet: the Python twin of the C++ app
qfleet-meta (apps/meta_control; docs/meta_control.md).

A policy network maps a task's noise rates to piecewise-constant control pulses;
it is meta-trained (FOMAML, second-order MAML or Reptile) over a distribution of
noisy qubits so that a few SGD steps adapt it to a new task. Every meta-batch is
simulated as one batched engine call on per-task fast weights [T, P].

This module follows the C++ code step by step (the same torch kernels in the same
order, the same random streams, the same engine), so the same configuration and
seed give the same numbers, and a checkpoint written by one resumes in the other.

    from qfleet import meta_control as mc
    cfg = mc.make_config(mc.resolve_config({}, "fast", ["iterations=50"]))
    result = mc.run(cfg)            # writes report.json, pulses, eval/, checkpoint.json

`Trainer` and `run` take an optional `problem`: any object with
`fidelity(amplitudes, noise) -> [T]` (differentiable; amplitudes [T, n_seg, n_ctrl]
or shared [n_seg, n_ctrl], noise [T, 2] = (gamma_deph, gamma_relax)) and the
attributes `n_segments`, `n_controls` and `dtype` replaces the engine as simulator.
"""
import ctypes
import json
import math
import os
import pathlib
import time
from dataclasses import dataclass, field

import torch  # (importing qfleet, this package's parent, loads the engine's operators)

from .. import __version__, cuda_device_count

# The report's device.why for device = auto (the C++ app says the same).
_AUTO_DEVICE_WHY = ("auto: the cpu (the cuda open-system path has not been measured against it on a GPU yet; "
                    "device = cuda asks for it)")

__all__ = ["ConfigError", "schema", "resolve_config", "load_config_file", "Config", "make_config", "Problem",
           "Policy", "Adam", "Trainer", "meta_gradient", "meta_objective", "policy_size", "grape", "Progress",
           "RunResult", "run", "write_file_atomic", "tune_malloc", "dumps", "loads"]

_CHECKPOINT_FORMAT = "qfleet-meta-checkpoint/1"


class ConfigError(ValueError):
    """A bad configuration, option or checkpoint; the message names the key."""


# ---- JSON as nlohmann::json writes it (sorted keys; NaN and infinities as null) -----------

def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def dumps(x, indent=None) -> str:
    """JSON text like nlohmann::json::dump(indent): sorted keys, compact unless indented."""
    return json.dumps(_jsonable(x), indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      separators=None if indent else (",", ":"))


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _big_int(text):  # nlohmann keeps integers within int64/uint64, else parses a double
    v = int(text)
    return v if -2**63 <= v < 2**64 else float(text)


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number overflow parsing '{text}'")
    return v


def loads(text: str):
    """Strict JSON like nlohmann::json::parse: no NaN/Infinity, no overflowing numbers,
    integers beyond 64 bits as doubles."""
    return json.loads(text, parse_constant=_no_constant, parse_int=_big_int, parse_float=_finite_float)


# ---- configuration ---------------------------------------------------------------------------

_SCHEMA = None


def schema() -> dict:
    """The schema, presets and default preset (config.json, shared with the C++ app)."""
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = json.loads(pathlib.Path(__file__).with_name("config.json").read_text())
    return _SCHEMA


def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        prev = cur
    return prev[len(b)]


def _unknown_key(key: str, where: str):
    best, best_d = "", 4
    for k in sorted(schema()["keys"]):
        d = _edit_distance(key, k)
        if d < best_d:
            best, best_d = k, d
    msg = f"config: unknown key '{key}'{where}"
    if best:
        msg += f" (did you mean '{best}'?)"
    raise ConfigError(msg + "; docs/meta_control.md lists the keys")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_value(key: str, spec: dict, v):
    """Raises ConfigError unless v fits the key's spec (the C++ check_value, same messages)."""
    def fail(expected):
        raise ConfigError(f"config: key '{key}': expected {expected}, got {dumps(v)}")

    kind = spec["type"]
    lo, hi = float(spec.get("min", -math.inf)), float(spec.get("max", math.inf))
    rng = f"in [{lo:g}, {hi:g}]" + (" or 0" if spec.get("allow_zero", False) else "")
    if kind == "string":
        if not isinstance(v, str):
            fail("a string")
        if "choices" in spec and v not in spec["choices"]:
            fail("one of " + dumps(spec["choices"]))
    elif kind == "integer":
        if not (isinstance(v, int) and not isinstance(v, bool)) or not lo <= float(v) <= hi:
            fail("an integer " + rng)
    elif kind == "number":
        if not _is_number(v):
            fail("a number " + rng)
        if not math.isfinite(float(v)):
            fail("a finite number")
        if not (v == 0 and spec.get("allow_zero", False)) and not lo <= float(v) <= hi:
            fail("a number " + rng)
    elif kind == "range":
        if not isinstance(v, list) or len(v) != 2 or not all(_is_number(x) for x in v):
            fail("[lo, hi], two numbers " + rng)
        if not (v[0] >= lo and v[1] <= hi and v[0] <= v[1]):
            fail("[lo, hi] with lo <= hi, both " + rng)
    elif kind == "states":
        if not isinstance(v, list):
            fail('a list of state labels such as ["0", "+"]')
        for s in v:
            if not isinstance(s, str) or not s or s.strip("01+-rl"):
                fail("a list of state labels, one character per qubit from 0 1 + - r l")


def _parse_override_value(text: str):
    try:
        return loads(text)
    except ValueError:
        return text  # a bare word is a string


def load_config_file(path: str) -> dict:
    """The keys of a JSON configuration file (ConfigError when missing or invalid)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"config: cannot open {path}: {e.strerror}") from None
    try:
        j = loads(text)
    except ValueError as e:
        raise ConfigError(f"config: {path} is not valid JSON: {e}") from None
    if not isinstance(j, dict):
        raise ConfigError(f"config: {path}: expected a JSON object of keys")
    return j


def resolve_config(file: dict = None, preset: str = "", overrides=()) -> dict:
    """The key defaults, then the preset (the file's "preset" key, else `preset`, else the
    default preset), then the file's keys, then the overrides ("key=value", value parsed as
    JSON, else taken as a string). Unknown keys, wrong types and bad values raise ConfigError."""
    keys = schema()["keys"]
    out = {k: spec["default"] for k, spec in keys.items()}
    if file is None:
        file = {}
    if not isinstance(file, dict):
        raise ConfigError("config: expected a JSON object of keys")
    name = preset or ""
    if "preset" in file:
        if not isinstance(file["preset"], str):
            raise ConfigError("config: key 'preset': expected a string")
        name = file["preset"]
    name = name or schema()["default_preset"]
    presets = schema()["presets"]
    if name not in presets:
        raise ConfigError(f"config: unknown preset '{name}' (presets: {', '.join(sorted(presets))})")
    out.update(presets[name])
    for k, v in file.items():
        if k == "preset":
            continue
        if k not in keys:
            _unknown_key(k, " in the configuration file")
        _check_value(k, keys[k], v)
        out[k] = v
    for o in overrides:
        eq = o.find("=")
        if eq <= 0:
            raise ConfigError(f"config: --set expects key=value, got '{o}'")
        k = o[:eq]
        if k not in keys:
            _unknown_key(k, " in --set")
        v = _parse_override_value(o[eq + 1:])
        _check_value(k, keys[k], v)
        out[k] = v
    for k in sorted(out):
        _check_value(k, keys[k], out[k])
    out["preset"] = name
    return out


@dataclass
class Config:
    """A resolved configuration with the derived values (make_config); `json` is the resolved dict."""
    system: str
    algorithm: str
    fidelity: str
    solver: str
    precision: str
    device: str
    output_dir: str
    preset: str
    iterations: int
    meta_batch: int
    inner_steps: int
    hidden_width: int
    hidden_layers: int
    n_segments: int
    validation_tasks: int
    validate_every: int
    adapt_steps: int
    robust_iterations: int
    grape_iterations: int
    checkpoint_every: int
    threads: int
    seed: int
    inner_lr: float
    meta_lr: float
    amplitude_scale: float
    gate_time: float
    dt: float
    robust_lr: float
    grape_lr: float
    deph_lo: float
    deph_hi: float
    relax_lo: float
    relax_hi: float
    input_states: list = field(default_factory=list)
    json: dict = field(default_factory=dict)


_STR_KEYS = ("system", "algorithm", "fidelity", "solver", "precision", "device", "output_dir")
_INT_KEYS = ("iterations", "meta_batch", "inner_steps", "hidden_width", "hidden_layers", "n_segments",
             "validation_tasks", "validate_every", "adapt_steps", "robust_iterations", "grape_iterations",
             "checkpoint_every", "threads", "seed")
_FLOAT_KEYS = ("inner_lr", "meta_lr", "amplitude_scale", "gate_time", "dt", "robust_lr", "grape_lr")


def make_config(r: dict) -> Config:
    """The Config of a resolved configuration, with the cross-key checks (ConfigError)."""
    c = Config(preset=r.get("preset", ""), **{k: r[k] for k in _STR_KEYS}, **{k: int(r[k]) for k in _INT_KEYS},
               **{k: float(r[k]) for k in _FLOAT_KEYS},
               deph_lo=float(r["gamma_deph"][0]), deph_hi=float(r["gamma_deph"][1]),
               relax_lo=float(r["gamma_relax"][0]), relax_hi=float(r["gamma_relax"][1]),
               input_states=list(r["input_states"]), json=r)
    qubits = 1 if c.system == "qubit_x" else 2
    if c.n_segments == 0:
        c.n_segments = 60 if qubits == 1 else 30
    if c.solver in ("rk4", "euler") and c.dt == 0:
        raise ConfigError(f"config: solver '{c.solver}' needs a step: set dt (e.g. dt = 0.01)")
    if c.solver in ("exact", "dopri5") and c.dt != 0:
        raise ConfigError(f"config: dt is the step of rk4/euler; solver '{c.solver}' takes none (set dt = 0)")
    if c.fidelity != "state_transfer" and c.input_states:
        raise ConfigError("config: input_states is used only with fidelity = state_transfer")
    for s in c.input_states:
        if len(s) != qubits:
            raise ConfigError(f"config: input state '{s}' needs one label per qubit ({qubits} for {c.system})")
    if c.fidelity == "state_transfer" and not c.input_states:
        c.input_states = (["0", "1", "+", "-", "r", "l"] if qubits == 1
                          else [a + b for a in "01+r" for b in "01+r"])
    if c.device == "cuda" and cuda_device_count() == 0:
        raise ConfigError("config: device = cuda: no CUDA device is visible to qfleet (no GPU or driver, "
                          "CUDA_VISIBLE_DEVICES, or a build without the CUDA backend); use device = cpu or auto")
    return c


# ---- physics (complex arithmetic in the C++ order, so the JSON models are identical) ------

def _kron(a, b):
    da, db = round(math.sqrt(len(a))), round(math.sqrt(len(b)))
    d = da * db
    m = [complex(0, 0)] * (d * d)
    for i in range(da):
        for j in range(da):
            for k in range(db):
                for l in range(db):  # noqa: E741
                    m[(i * db + k) * d + (j * db + l)] = a[i * da + j] * b[k * db + l]
    return m


def _scale(m, s):
    return [z * complex(s, 0) for z in m]


def _cx(*zs):
    return [complex(z) for z in zs]


_I2, _X, _Z, _LOWER = _cx(1, 0, 0, 1), _cx(0, 1, 1, 0), _cx(1, 0, 0, -1), _cx(0, 1, 0, 0)
_Y = [complex(0, 0), complex(0, -1), complex(0, 1), complex(0, 0)]


def _entry(z: complex):
    return z.real if z.imag == 0 else [z.real, z.imag]


def _matrix_json(m):
    d = round(math.sqrt(len(m)))
    return [[_entry(m[i * d + j]) for j in range(d)] for i in range(d)]


def _one_qubit_state(c: str):
    s = 1 / math.sqrt(2.0)
    return {"0": _cx(1, 0), "1": _cx(0, 1), "+": _cx(s, s), "-": _cx(s, -s), "r": [complex(s, 0), complex(0, s)]
            }.get(c, [complex(s, 0), complex(0, -s)])


def _product_state(label: str):
    psi = [complex(1, 0)]
    for c in label:
        q = _one_qubit_state(c)
        psi = [a * b for a in psi for b in q]
    return psi


def _apply(u, psi):
    d = len(psi)
    out = []
    for i in range(d):
        acc = complex(0, 0)
        for j in range(d):
            acc += u[i * d + j] * psi[j]
        out.append(acc)
    return out


def _tensor_json(t: torch.Tensor):
    """A tensor as nested lists of doubles (row-major)."""
    return t.detach().to(torch.float64).contiguous().tolist()


class Problem:
    """The physics: the engine programs whose mean fidelity is a task's figure of merit."""

    def __init__(self, cfg: Config):
        self.qubits = 1 if cfg.system == "qubit_x" else 2
        self.dim = 1 << self.qubits
        self.n_segments = cfg.n_segments
        self.segment_duration = cfg.gate_time / float(cfg.n_segments)
        self.dtype = torch.float32 if cfg.precision == "complex64" else torch.float64
        self.n_jumps = 2 * self.qubits

        def on(op, q):
            return op if self.qubits == 1 else (_kron(op, _I2) if q == 0 else _kron(_I2, op))

        controls, jumps, self.control_names = [], [], []
        for q in range(self.qubits):
            for k, name in enumerate("xy"):
                controls.append(_matrix_json(_scale(on(_X if k == 0 else _Y, q), 0.5)))
                self.control_names.append(name + ("" if self.qubits == 1 else str(q)))
        if self.qubits == 2:
            controls += [_matrix_json(_scale(_kron(_X, _X), 0.5)), _matrix_json(_scale(_kron(_Z, _Z), 0.5))]
            self.control_names += ["xx", "zz"]
        self.n_controls = len(controls)
        for q in range(self.qubits):
            jumps.append(_matrix_json(on(_LOWER, q)))                        # relaxation: rate gamma_relax
            jumps.append(_matrix_json(_scale(on(_Z, q), math.sqrt(0.5))))  # dephasing: sqrt(gamma_deph / 2) Z
        target = _X if self.qubits == 1 else _cx(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, -1)
        base = {"kind": "lindblad", "dim": self.dim, "controls": controls, "jumps": jumps,
                "segment_duration": self.segment_duration, "n_segments": self.n_segments, "solver": cfg.solver,
                "precision": cfg.precision, "threads": cfg.threads}
        if cfg.dt > 0:
            base["dt"] = cfg.dt
        if cfg.fidelity == "average_gate":
            self.models = [dict(base, gate=True, target={"unitary": _matrix_json(target)})]
        else:
            self.models = []
            for label in cfg.input_states:
                psi = _product_state(label)
                self.models.append(dict(base, psi0=[_entry(z) for z in psi],
                                        target={"state": [_entry(z) for z in _apply(target, psi)]}))
        # device = cuda: the programs get a GPU copy and every call runs there (the tensors stay on
        # the CPU and are staged); self.models stay device-free (eval_problems reproduce them anywhere).
        extra = {"device": "cuda"} if cfg.device == "cuda" else {}
        self.programs = [torch.classes.qfleet.OpenSystemProgram(dumps(dict(m, **extra))) for m in self.models]

    def fidelity_definition(self) -> str:
        if len(self.programs) == 1 and "gate" in self.models[0]:
            return ("average gate fidelity of the simulated channel E against the target unitary V: "
                    "F = (d F_pro + 1) / (d + 1), F_pro = Re tr(S_V^dag S_E) / d^2, S the superoperators "
                    f"(d = {self.dim})")
        return (f"state-transfer fidelity: the mean over {len(self.programs)} input states psi of "
                "<V psi| rho_psi(T) |V psi>, rho_psi(T) the simulated final density matrix")

    def jump_rates(self, noise: torch.Tensor) -> torch.Tensor:
        """noise [T, 2] = (gamma_deph, gamma_relax) -> the engine's rates [T, n_jumps] (relax, deph per qubit)."""
        pair = torch.stack([noise.select(1, 1), noise.select(1, 0)], 1)
        return pair if self.qubits == 1 else torch.cat([pair, pair], 1)

    def fidelity(self, amplitudes: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Differentiable fidelity [T] of amplitudes [T, n_seg, n_ctrl] (or shared [n_seg, n_ctrl])."""
        rates = self.jump_rates(noise)
        f = None
        for p in self.programs:
            fp = torch.ops.qfleet.open_forward(p, amplitudes, None, rates)
            f = fp if f is None else f + fp
        return f if len(self.programs) == 1 else f / float(len(self.programs))

    def eval_problems(self, amplitudes: torch.Tensor, noise: torch.Tensor) -> list:
        """`qfleet eval` problems (docs/cli.md) that reproduce fidelity(): one per program."""
        out = []
        for m in self.models:
            m = {k: v for k, v in m.items() if k != "n_segments"}
            m["amplitudes"] = _tensor_json(amplitudes)
            m["rates"] = _tensor_json(self.jump_rates(noise))
            out.append(m)
        return out


# ---- policy and optimiser ---------------------------------------------------------------------

class Policy:
    """features [T, 2] -> amplitudes [T, n_seg * n_ctrl]: an MLP whose parameters are one flat
    vector (per layer W [in, out] row-major, then b [out]); tanh hidden layers; output times scale."""

    def __init__(self, n_in: int, width: int, layers: int, n_out: int, scale: float):
        self.dims = [n_in] + [width] * layers + [n_out]
        self.size = sum(a * b + b for a, b in zip(self.dims[:-1], self.dims[1:]))
        self.scale = float(scale)

    def init(self, gen: torch.Generator, dtype) -> torch.Tensor:
        """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias (torch.nn.Linear's range)."""
        p = torch.rand(self.size, generator=gen, dtype=dtype) * 2 - 1
        off = 0
        for a, b in zip(self.dims[:-1], self.dims[1:]):
            p.narrow(0, off, a * b + b).mul_(1.0 / math.sqrt(float(a)))
            off += a * b + b
        return p

    def split(self, params: torch.Tensor) -> list:
        """params [P] or [T, P] -> views W0, b0, W1, b1, ... (one autograd leaf per layer when detached)."""
        dim, out, off = params.dim() - 1, [], 0
        for a, b in zip(self.dims[:-1], self.dims[1:]):
            out += [params.narrow(dim, off, a * b), params.narrow(dim, off + a * b, b)]
            off += a * b + b
        return out

    def forward(self, layers, features: torch.Tensor) -> torch.Tensor:
        """layers (from split, or a flat params tensor): shared [n] or per task [T, n] each."""
        if isinstance(layers, torch.Tensor):
            layers = self.split(layers)
        T, h, n = features.size(0), features, len(self.dims) - 1
        for i in range(n):
            a, b = self.dims[i], self.dims[i + 1]
            W, bias = layers[2 * i], layers[2 * i + 1]
            if W.dim() == 2:  # per task: [T, a * b]
                h = torch.baddbmm(bias.unsqueeze(1), h.unsqueeze(1), W.view(T, a, b)).squeeze(1)
            else:
                h = torch.addmm(bias, h, W.view(a, b))
            if i + 1 < n:
                h = torch.tanh(h)
        return h * self.scale


class Adam:
    """Adam with torch.optim.Adam's update formulas on one flat tensor, updated in place."""

    def __init__(self, lr: float = 0.0):
        self.lr, self.beta1, self.beta2, self.eps = lr, 0.9, 0.999, 1e-8
        self.step, self.m, self.v = 0, None, None

    @torch.no_grad()
    def update(self, param: torch.Tensor, grad: torch.Tensor):
        if self.m is None:
            self.m, self.v = torch.zeros_like(param), torch.zeros_like(param)
        self.step += 1
        self.m.mul_(self.beta1).add_(grad, alpha=1 - self.beta1)
        self.v.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        bc1 = 1 - math.pow(self.beta1, float(self.step))
        bc2 = 1 - math.pow(self.beta2, float(self.step))
        denom = (self.v.sqrt() / math.sqrt(bc2)).add_(self.eps)
        param.addcdiv_(self.m, denom, value=-self.lr / bc1)


# ---- training ----------------------------------------------------------------------------------

def _generator(seed: int) -> torch.Generator:
    """A CPU generator seeded like C++ at::make_generator<at::CPUGeneratorImpl>(seed)."""
    return torch.Generator().manual_seed(int(seed))


def _flat(t: torch.Tensor) -> list:
    return t.detach().to(torch.float64).contiguous().view(-1).tolist()


def _unflat(a, dtype) -> torch.Tensor:
    return torch.tensor(a, dtype=torch.float64).to(dtype)


# The keys that may differ between a checkpoint and the run that resumes it.
_RESUMABLE = {"iterations", "output_dir", "checkpoint_every", "threads", "device", "robust_iterations", "robust_lr",
              "grape_iterations", "grape_lr"}


@dataclass
class Validation:
    before: torch.Tensor
    after: torch.Tensor
    adapted: list


class Trainer:
    """Meta-training state: theta, its Adam, the task generator (seed + 1) and the held-out
    tasks (seed + 2); the policy's initial weights come from seed."""

    def __init__(self, cfg: Config, problem=None):
        self.cfg = cfg
        self.problem = problem if problem is not None else Problem(cfg)
        self.dtype = self.problem.dtype
        self.policy = Policy(2, cfg.hidden_width, cfg.hidden_layers,
                             self.problem.n_segments * self.problem.n_controls, cfg.amplitude_scale)
        self.task_gen = _generator(cfg.seed + 1)
        self.theta = self.policy.init(_generator(cfg.seed), self.dtype)
        self.adam = Adam(cfg.meta_lr)
        self.val_noise = self.sample(_generator(cfg.seed + 2), cfg.validation_tasks)

    def sample(self, gen: torch.Generator, n: int) -> torch.Tensor:
        """n tasks' noise [n, 2] = (gamma_deph, gamma_relax), uniform over the configured ranges."""
        c = self.cfg
        u = torch.rand((n, 2), generator=gen, dtype=self.dtype)
        return torch.stack([c.deph_lo + (c.deph_hi - c.deph_lo) * u.select(1, 0),
                            c.relax_lo + (c.relax_hi - c.relax_lo) * u.select(1, 1)], 1)

    def features(self, noise: torch.Tensor) -> torch.Tensor:
        """Noise rates scaled to [-1, 1] over the training ranges (0 where a range is a point)."""
        def z(g, lo, hi):
            return (g - lo) * (2.0 / (hi - lo)) - 1.0 if hi > lo else torch.zeros_like(g)
        c = self.cfg
        return torch.stack([z(noise.select(1, 0), c.deph_lo, c.deph_hi),
                            z(noise.select(1, 1), c.relax_lo, c.relax_hi)], 1)

    def pulses(self, layers, feats: torch.Tensor) -> torch.Tensor:
        return self.policy.forward(layers, feats).view(feats.size(0), self.problem.n_segments,
                                                       self.problem.n_controls)

    def per_task(self, T: int) -> list:
        """theta copied to T tasks, split into layers [T, n_l]."""
        return [x.expand(T, x.size(0)).clone() for x in self.policy.split(self.theta.detach())]

    @staticmethod
    def flat_mean(layers) -> torch.Tensor:
        return torch.cat([x.mean(0) for x in layers])

    @staticmethod
    def task_norm(layers) -> torch.Tensor:  # [T, 1]
        s = None
        for x in layers:
            s = x.square().sum(1, True) if s is None else s + x.square().sum(1, True)
        return s.sqrt()

    def loss_grad(self, phi, feats, noise):
        """Per-task fidelity [T] and the gradient of sum_t (1 - F_t) w.r.t. the per-task layers."""
        leaves = [x.detach().requires_grad_(True) for x in phi]
        f = self.problem.fidelity(self.pulses(leaves, feats), noise)
        return f.detach(), list(torch.autograd.grad((1 - f).sum(), leaves))

    @torch.no_grad()
    def fidelity_nograd(self, phi, feats, noise) -> torch.Tensor:
        return self.problem.fidelity(self.pulses(phi, feats), noise)

    def hvp(self, phi, v, feats, noise) -> list:
        """Hessian-vector products of each task's loss, by central differences of the exact gradients."""
        rel = 5e-3 if self.dtype == torch.float32 else 6e-6  # ~ cbrt(machine epsilon)
        nv, nphi = self.task_norm(v), self.task_norm(phi)
        nonzero = nv > 0
        eps = torch.where(nonzero, rel * (1 + nphi) / torch.where(nonzero, nv, torch.ones_like(nv)),
                          torch.ones_like(nv))
        plus = [p + eps * x for p, x in zip(phi, v)]
        minus = [p - eps * x for p, x in zip(phi, v)]
        gp, gm = self.loss_grad(plus, feats, noise)[1], self.loss_grad(minus, feats, noise)[1]
        return [torch.where(nonzero, (a - b) / (2 * eps), torch.zeros_like(x)) for a, b, x in zip(gp, gm, v)]

    def adapt(self, noise, steps: int, trail: list = None):
        """SGD adaptation of theta to each task: (adapted layers, fidelities before adaptation);
        `trail` receives the layers each step started from."""
        feats = self.features(noise)
        phi, f0 = self.per_task(noise.size(0)), None
        for k in range(steps):
            f, g = self.loss_grad(phi, feats, noise)
            if k == 0:
                f0 = f
            if trail is not None:
                trail.append(list(phi))
            phi = [torch.sub(p, gi, alpha=self.cfg.inner_lr) for p, gi in zip(phi, g)]
        if f0 is None:
            f0 = self.fidelity_nograd(phi, feats, noise)
        return phi, f0

    def meta_grad(self, noise):
        """The meta-batch's fidelities [T] after the inner steps, and the meta-gradient [P]."""
        cfg = self.cfg
        feats = self.features(noise)
        trail = []
        phi = self.adapt(noise, cfg.inner_steps, trail if cfg.algorithm == "maml" else None)[0]
        if cfg.algorithm == "reptile":
            return self.fidelity_nograd(phi, feats, noise), self.theta - self.flat_mean(phi)
        fq, v = self.loss_grad(phi, feats, noise)
        if cfg.algorithm == "maml":  # d phi_K / d theta = prod_k (I - lr H(phi_k)), applied right to left
            for k in range(len(trail) - 1, -1, -1):
                hv = self.hvp(trail[k], v, feats, noise)
                v = [torch.sub(a, b, alpha=cfg.inner_lr) for a, b in zip(v, hv)]
        return fq, self.flat_mean(v)

    def iteration(self) -> float:
        """One meta-update on a fresh meta-batch; returns its mean fidelity after the inner steps."""
        fq, g = self.meta_grad(self.sample(self.task_gen, self.cfg.meta_batch))
        self.adam.update(self.theta, g)
        return fq.mean().item()

    def set_theta(self, theta: torch.Tensor):
        self.theta = theta.detach().clone()

    def validate(self) -> Validation:
        phi, f0 = self.adapt(self.val_noise, self.cfg.adapt_steps)
        return Validation(f0, self.fidelity_nograd(phi, self.features(self.val_noise), self.val_noise), phi)

    def checkpoint(self, iteration: int, curve, train_s: float) -> dict:
        a = self.adam
        return {"format": _CHECKPOINT_FORMAT, "config": self.cfg.json, "iteration": iteration,
                "theta": _flat(self.theta),
                "adam": {"step": a.step, "m": _flat(a.m) if a.m is not None else [],
                         "v": _flat(a.v) if a.v is not None else []},
                "generator_state": self.task_gen.get_state().tolist(),
                "curve": [dict(p) for p in curve], "train_seconds": train_s}

    def restore(self, ck: dict, curve: list) -> tuple:
        """Restores a checkpoint into self and `curve`: returns (its iteration, its training seconds)."""
        if not isinstance(ck, dict) or ck.get("format", "") != _CHECKPOINT_FORMAT:
            raise ConfigError("resume: the checkpoint is not a qfleet-meta checkpoint (format key)")
        old = ck.get("config", {})
        differ = [f"{k} (checkpoint {dumps(old[k]) if k in old else 'absent'}, now {dumps(v)})"
                  for k, v in sorted(self.cfg.json.items()) if k not in _RESUMABLE and (k not in old or old[k] != v)]
        if differ:
            raise ConfigError("resume: the configuration differs from the checkpoint's in " + ", ".join(differ) +
                              "; only iterations, output_dir, checkpoint_every, threads, device and the baselines' "
                              "settings may change")
        it = int(ck["iteration"])
        if it > self.cfg.iterations:
            raise ConfigError(f"resume: the checkpoint is at iteration {it}, beyond iterations = "
                              f"{self.cfg.iterations}")
        self.theta = _unflat(ck["theta"], self.dtype)
        if self.theta.numel() != self.policy.size:
            raise ConfigError("resume: the checkpoint's policy has the wrong size")
        self.adam.step = int(ck["adam"]["step"])
        if self.adam.step > 0:
            self.adam.m, self.adam.v = _unflat(ck["adam"]["m"], self.dtype), _unflat(ck["adam"]["v"], self.dtype)
        self.task_gen.set_state(torch.tensor(ck["generator_state"], dtype=torch.uint8))
        nan = float("nan")
        curve[:] = [{"iteration": int(p["iteration"]),
                     **{k: nan if p[k] is None else float(p[k]) for k in ("train_fidelity", "val_before",
                                                                          "val_after")}}
                    for p in ck["curve"]]
        return it, float(ck["train_seconds"])


def meta_gradient(cfg: Config, theta: torch.Tensor, noise: torch.Tensor, problem=None) -> torch.Tensor:
    """For tests: the meta-gradient a training step feeds to Adam, for policy parameters theta [P]
    and tasks noise [T, 2] = (gamma_deph, gamma_relax)."""
    tr = Trainer(cfg, problem)
    tr.set_theta(theta)
    return tr.meta_grad(noise)[1]


def meta_objective(cfg: Config, theta: torch.Tensor, noise: torch.Tensor, problem=None) -> float:
    """For tests: what the meta-gradient approximates, the mean over tasks of 1 - F after
    inner_steps SGD steps (maml: its gradient; fomaml: the gradient at the adapted parameters;
    reptile: theta - mean phi)."""
    tr = Trainer(cfg, problem)
    tr.set_theta(theta)
    phi = tr.adapt(noise, cfg.inner_steps)[0]
    return (1 - tr.fidelity_nograd(phi, tr.features(noise), noise)).to(torch.float64).mean().item()


def policy_size(cfg: Config) -> int:
    """The number of policy parameters P of a configuration."""
    pr = Problem(cfg)
    return Policy(2, cfg.hidden_width, cfg.hidden_layers, pr.n_segments * pr.n_controls, 1.0).size


def grape(problem, u: torch.Tensor, noise: torch.Tensor, iterations: int, lr: float):
    """Adam on per-task pulses u [T, n_seg, n_ctrl] (in place; the tasks are independent), with a
    cosine learning-rate decay to 1% and the best pulse per task kept: (best F [T], best pulses)."""
    opt = Adam()
    best_u = u.clone()
    with torch.no_grad():
        best_f = problem.fidelity(u, noise)
    for i in range(iterations):
        opt.lr = lr * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * float(i) / float(iterations))))
        p = u.detach().requires_grad_(True)
        f = problem.fidelity(p, noise)
        g = torch.autograd.grad((1 - f).sum(), p)[0]
        with torch.no_grad():
            better = f.detach() > best_f
            best_f = torch.where(better, f.detach(), best_f)
            best_u = torch.where(better.view(-1, 1, 1), u, best_u)
        opt.update(u, g)
    with torch.no_grad():
        f = problem.fidelity(u, noise)
        better = f > best_f
        return torch.where(better, f, best_f), torch.where(better.view(-1, 1, 1), u, best_u)


# ---- files and outputs ----------------------------------------------------------------------

def write_file_atomic(path, text: str):
    """Writes a temporary next to the file, fsyncs it and renames it over the file."""
    path = str(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise RuntimeError(f"cannot write {tmp}: {e.strerror}") from None
    os.replace(tmp, path)


def _csv_pulses(pr, sets, noise) -> str:
    rows = ["task,kind,gamma_deph,gamma_relax,segment,t_start" + "".join("," + n for n in pr.control_names)]
    nz = noise.to(torch.float64).tolist()
    for kind, t in sets:
        a = t.detach().to(torch.float64).contiguous()
        shared = a.dim() == 2
        for b in range(1 if shared else a.size(0)):
            ab = (a if shared else a[b]).tolist()
            for s in range(pr.n_segments):
                head = f"all,{kind},,,{s}" if shared else f"{b},{kind},{nz[b][0]:.17g},{nz[b][1]:.17g},{s}"
                rows.append(head + f",{float(s) * pr.segment_duration:.17g}" +
                            "".join(f",{x:.17g}" for x in ab[s]))
    return "\n".join(rows) + "\n"


def _mean_of(t: torch.Tensor) -> float:
    return t.to(torch.float64).mean().item()


class Progress:
    """Receives update(done, total, val_after) after each iteration and finish() at the end."""

    def update(self, done: int, total: int, val_after: float):
        pass

    def finish(self):
        pass


@dataclass
class RunResult:
    report: dict
    complete: bool  # False when stopped by stop_after before the end


def tune_malloc():
    """Keeps freed blocks in glibc's heap (as the C++ main does): the per-task policy weights are
    megabytes, and returning them to the kernel makes each step pay fresh page faults."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def run(cfg: Config, resume: bool = False, stop_after: int = -1, progress: Progress = None,
        problem=None) -> RunResult:
    """Trains, runs the baselines and writes report.json, pulses.csv/json, eval/*.json and
    checkpoint.json into cfg.output_dir. `problem` replaces the engine as simulator (module doc)."""
    t_start = time.perf_counter()
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    tr = Trainer(cfg, problem)
    out = pathlib.Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    ck_path = str(out / "checkpoint.json")

    curve, train_s, it = [], 0.0, 0
    if resume:
        if not os.path.exists(ck_path):
            raise ConfigError(f"resume: no checkpoint at {ck_path}")
        try:
            ck = loads(pathlib.Path(ck_path).read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"resume: cannot read {ck_path}: {e}") from None
        it, train_s = tr.restore(ck, curve)

    def record(i, train_f):
        v = tr.validate()
        curve.append({"iteration": i, "train_fidelity": train_f, "val_before": _mean_of(v.before),
                      "val_after": _mean_of(v.after)})

    if it == 0 and not curve:
        record(0, float("nan"))
    stop = min(stop_after, cfg.iterations) if stop_after >= 0 else cfg.iterations
    t_train, train_s0, ran = time.perf_counter(), train_s, False
    while it < stop:
        ran = True
        train_f = tr.iteration()
        it += 1
        if it % cfg.validate_every == 0 or it == cfg.iterations:
            record(it, train_f)
        train_s = train_s0 + time.perf_counter() - t_train
        if (cfg.checkpoint_every > 0 and it % cfg.checkpoint_every == 0) or it == stop:
            write_file_atomic(ck_path, dumps(tr.checkpoint(it, curve, train_s)))
        if progress:
            progress.update(it, cfg.iterations, curve[-1]["val_after"])
    if progress:
        progress.finish()
    if not ran:
        write_file_atomic(ck_path, dumps(tr.checkpoint(it, curve, train_s)))
    if it != cfg.iterations:
        return RunResult({"stopped_at_iteration": it, "checkpoint": ck_path}, False)

    # ---- validation and baselines
    pr = tr.problem
    info = pr if isinstance(pr, Problem) else Problem(cfg)  # names, eval files (the engine's model)
    vn = tr.val_noise
    V = vn.size(0)
    t0 = time.perf_counter()
    val = tr.validate()
    feats = tr.features(vn)
    meta_before = tr.pulses(tr.theta.expand(V, tr.theta.size(0)), feats).detach()
    meta_adapted = tr.pulses(val.adapted, feats).detach()
    val_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    rgen = _generator(cfg.seed + 3)
    robust = (torch.rand((pr.n_segments, pr.n_controls), generator=rgen, dtype=pr.dtype) * 2 - 1) * 2.0
    opt = Adam(cfg.robust_lr)
    for _ in range(cfg.robust_iterations):
        noise = tr.sample(rgen, cfg.meta_batch)
        p = robust.detach().requires_grad_(True)
        f = pr.fidelity(p, noise)
        opt.update(robust, torch.autograd.grad((1 - f).mean(), p)[0])
    with torch.no_grad():
        f_robust = pr.fidelity(robust, vn)
    robust_s = time.perf_counter() - t0

    # GRAPE from two starts per task (the robust pulse and the meta-adapted pulse), one batch.
    t0 = time.perf_counter()
    starts = torch.cat([robust.unsqueeze(0).expand(V, -1, -1), meta_adapted], 0).contiguous()
    gf, gu = grape(pr, starts, torch.cat([vn, vn], 0), cfg.grape_iterations, cfg.grape_lr)
    from_meta = gf[V:2 * V] > gf[0:V]
    f_grape = torch.where(from_meta, gf[V:2 * V], gf[0:V])
    u_grape = torch.where(from_meta.view(-1, 1, 1), gu[V:2 * V], gu[0:V])
    grape_s = time.perf_counter() - t0

    # ---- outputs
    vn64 = vn.to(torch.float64).tolist()
    tasks = []
    for b in range(V):
        fa, fg = val.after[b].item(), f_grape[b].item()
        tasks.append({"gamma_deph": vn64[b][0], "gamma_relax": vn64[b][1],
                      "fidelity_before": val.before[b].item(), "fidelity_after": fa,
                      "fidelity_robust": f_robust[b].item(), "fidelity_grape": fg,
                      "grape_best_start": "meta_adapted" if from_meta[b].item() else "robust", "gap": fg - fa})
    gap = f_grape.to(torch.float64) - val.after.to(torch.float64)
    report = {
        "app": "qfleet.meta_control (Python)",
        "qfleet_version": __version__,
        "config": cfg.json,
        "seed": cfg.seed,
        "system": {"name": cfg.system, "dim": info.dim, "n_segments": pr.n_segments,
                   "segment_duration": info.segment_duration, "controls": info.control_names},
        "solver": {"name": cfg.solver, "dt": cfg.dt, "precision": cfg.precision},
        "fidelity_definition": info.fidelity_definition(),
        "algorithm": cfg.algorithm,
        "device": {"requested": cfg.device, "used": "cuda" if cfg.device == "cuda" else "cpu",
                   "why": _AUTO_DEVICE_WHY if cfg.device == "auto" else "requested"},
        "threads": {"torch": torch.get_num_threads(), "engine": cfg.threads},
        "policy_parameters": tr.policy.size,
        "timings_s": {"training": train_s,
                      "per_iteration_ms": 1e3 * train_s / float(cfg.iterations) if cfg.iterations > 0 else 0.0,
                      "validation": val_s, "robust_baseline": robust_s, "grape": grape_s,
                      "total_this_run": time.perf_counter() - t_start},
        "curve": [dict(p) for p in curve],
        "validation": {"tasks": tasks, "mean_before": _mean_of(val.before), "mean_after": _mean_of(val.after),
                       "mean_robust": _mean_of(f_robust), "mean_grape": _mean_of(f_grape),
                       "mean_gap": gap.mean().item(), "max_gap": gap.max().item(), "adapt_steps": cfg.adapt_steps},
    }
    write_file_atomic(out / "report.json", dumps(report, 2) + "\n")

    sets = [("robust", robust), ("meta_before", meta_before), ("meta_adapted", meta_adapted), ("grape", u_grape)]
    write_file_atomic(out / "pulses.csv", _csv_pulses(info, sets, vn))
    pj = {"segment_duration": info.segment_duration, "controls": info.control_names, "robust": _tensor_json(robust),
          "tasks": [{"gamma_deph": vn64[b][0], "gamma_relax": vn64[b][1],
                     "meta_before": _tensor_json(meta_before[b]), "meta_adapted": _tensor_json(meta_adapted[b]),
                     "grape": _tensor_json(u_grape[b])} for b in range(V)]}
    write_file_atomic(out / "pulses.json", dumps(pj) + "\n")
    probs = info.eval_problems(meta_adapted, vn)
    for i, prob in enumerate(probs):
        name = "meta_adapted.json" if len(probs) == 1 else f"meta_adapted_{cfg.input_states[i]}.json"
        write_file_atomic(out / "eval" / name, dumps(prob) + "\n")
    return RunResult(report, True)
