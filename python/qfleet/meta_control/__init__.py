"""Meta-learned robust quantum control on qfleet (docs/meta_control.md), from Python.

The app is written once, in C++ (apps/meta_control): this module calls that
library through the torch extension (the operators torch.ops.qfleet_meta.*), so
`python -m qfleet.meta_control` and the qfleet-meta binary are the same code and
give the same report. Python keeps what is Python's: the plots (plot.py). A run::

    from qfleet import meta_control as mc
    cfg = mc.make_config(mc.resolve_config({"output_dir": "meta-python-out"}, "fast", ["iterations=50"]))
    result = mc.run(cfg, progress=True)  # writes report.json, pulses, eval/, checkpoint.pt there
    result.report["validation"]["mean_gap"]
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from .._json import capped_message
from .._lib import load_app



def _ops():
    """The app's library, loaded on first use: importing the package (for its plots, which
    only read JSON) does not need the compiled app."""
    return load_app("meta")

__all__ = ["ConfigError", "schema", "resolve_config", "load_config_file", "Config", "make_config", "run",
           "RunResult", "MetaStep", "meta_gradient", "meta_objective", "policy_size", "fit_saturation", "fit_line",
           "main"]


class ConfigError(ValueError):
    """A bad configuration, option or checkpoint; the message (the C++ library's) names the key."""


def _config_call(op, *args):
    try:
        return op(*args)
    except ValueError as e:  # the library's ConfigError arrives as ValueError (torch_ops.cpp)
        raise ConfigError(capped_message(e)) from None


def schema() -> dict:
    """The configuration keys (type, range, default, description) and the presets."""
    return json.loads(_ops().schema())


def resolve_config(file: dict | None = None, preset: str = "", overrides: Sequence[str] = ()) -> dict:
    """The key defaults, then the preset (the file's "preset", else `preset`, else the default),
    then the file's keys, then the overrides ("key=value"); every key checked (ConfigError)."""
    return json.loads(_config_call(_ops().resolve_config, json.dumps(file or {}), preset, list(overrides)))


def load_config_file(path: str) -> dict:
    """A configuration file's keys (ConfigError when it is missing or not a JSON object)."""
    return json.loads(_config_call(_ops().load_config_file, str(path)))


class Config:
    """A checked, resolved configuration: its keys read as attributes (cfg.iterations); `json` is the dict."""

    def __init__(self, resolved: dict) -> None:
        self.json = resolved

    def __getattr__(self, key):
        try:
            return self.__dict__["json"][key]
        except KeyError:
            raise AttributeError(f"configuration has no key '{key}' (docs/meta_control.md lists them)") from None

    def __repr__(self):
        return f"Config({self.json!r})"


def make_config(resolved: dict) -> Config:
    """Checks the keys against each other (solver and dt, input states, device) (ConfigError)."""
    return Config(json.loads(_config_call(_ops().check_config, json.dumps(resolved))))


@dataclass
class RunResult:
    """What run() returns: the report (report.json's object) and whether the run completed."""
    report: dict
    complete: bool  # False when stopped by stop_after before the end


def run(cfg: Config, resume: bool = False, stop_after: int = -1, progress: bool = False,
        app: str = "qfleet.meta_control", overwrite: bool = False) -> RunResult:
    """Trains, runs the baselines and writes report.json, pulses.csv/json, ``eval/*.json`` and
    checkpoint.pt into cfg.output_dir; `progress` draws the command line's progress bar on stderr.

    A cfg.output_dir that holds a run already is refused (ConfigError naming how the
    configurations differ) unless `resume` continues it or `overwrite` replaces it (removing the
    files a run writes there, nothing else), as the command line's --resume and --overwrite."""
    text, complete = _config_call(_ops().run, json.dumps(cfg.json), resume, stop_after, progress, app, overwrite)
    return RunResult(json.loads(text), bool(complete))


class MetaStep:
    """One configuration's meta-learning step, compiled once (the engine programs, with their GPU
    copies when device = "cuda"). `gradient` runs where theta and noise are: on CUDA tensors the whole
    step stays on the GPU, on the current stream, without host synchronisation, so a training step
    that calls it can be captured with torch.cuda.graph."""

    def __init__(self, cfg: Config) -> None:
        _ops()  # torch.classes.qfleet_meta comes with the library
        self._step = _config_call(torch.classes.qfleet_meta.MetaStep, json.dumps(cfg.json))

    def gradient(self, theta: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The meta-gradient for policy parameters theta [P] and tasks noise [T, 2]."""
        return _config_call(self._step.gradient, theta, noise)

    def objective(self, theta: torch.Tensor, noise: torch.Tensor) -> float:
        """The mean over tasks of 1 - F after inner_steps SGD steps."""
        return float(_config_call(self._step.objective, theta, noise))


def meta_gradient(cfg: Config, theta: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The meta-gradient a training step feeds to Adam, for policy parameters theta [P] and
    tasks noise [T, 2] = (gamma_deph, gamma_relax)."""
    return MetaStep(cfg).gradient(theta, noise)


def meta_objective(cfg: Config, theta: torch.Tensor, noise: torch.Tensor) -> float:
    """The mean over tasks of 1 - F after inner_steps SGD steps (what meta_gradient approximates)."""
    return MetaStep(cfg).objective(theta, noise)


def policy_size(cfg: Config) -> int:
    """The number of policy parameters P."""
    return int(_config_call(_ops().policy_size, json.dumps(cfg.json)))


def main(argv: Sequence[str] | None = None, prog: str = "python -m qfleet.meta_control") -> int:
    """The command line (the qfleet-meta binary's, the same C++ code); returns the exit status."""
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    return int(_ops().main(prog, list(sys.argv[1:] if argv is None else argv)))


def fit_saturation(K: Iterable[float], G: Iterable[float]) -> tuple[float, float, float]:
    """The reproduction's least-squares fit G = c (1 - exp(-beta K)) (c in [0, 2], beta in
    [0.001, 10], as the original code's curve_fit bounds): returns (c, beta, R^2)."""
    c, beta, r2 = _config_call(_ops().fit_saturation, [float(k) for k in K], [float(g) for g in G])
    return c, beta, r2


def fit_line(x: Iterable[float], y: Iterable[float]) -> tuple[float, float, float]:
    """Least-squares line y = slope x + intercept: returns (slope, intercept, R^2)."""
    slope, intercept, r2 = _config_call(_ops().fit_line, [float(v) for v in x], [float(v) for v in y])
    return slope, intercept, r2
