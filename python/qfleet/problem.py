"""The JSON problem format of `qfleet eval` (docs/cli.md) from Python."""
from __future__ import annotations

import json
import os

import torch

from . import _files, _json, _lib


def evaluate(problem: dict | str | os.PathLike) -> dict:
    """Evaluates a problem (a dict, a JSON string, or a path to a .json file) exactly
    as `qfleet eval` does and returns its result object."""
    _lib.load()
    base_dir = ""  # relative .npy names: relative to a problem file's directory, as `qfleet eval FILE`
    if isinstance(problem, dict):
        text = _json.dumps(problem, "qfleet.evaluate")
    elif isinstance(problem, (str, os.PathLike)) and _is_file(problem):
        text = _files.read_text(problem)  # bounded: a file of gigabytes is refused, not read
        base_dir = os.path.dirname(os.fspath(problem))
    elif isinstance(problem, str) and problem.lstrip().startswith("{"):
        text = problem
    elif isinstance(problem, (str, os.PathLike)):
        # A problem is a JSON object: anything else is a path, and this one is not a file.
        raise FileNotFoundError(f"qfleet.evaluate: no such file: {_json.echo(os.fspath(problem))} "
                                "(a problem is a dict, JSON text of an object, or the path of a .json file)")
    else:
        raise TypeError(f"qfleet.evaluate: expected a dict, JSON text or a file path, got {type(problem).__name__}")
    return json.loads(torch.ops.qfleet.evaluate_json(text, base_dir))


def _is_file(path) -> bool:
    try:
        return os.path.isfile(path)
    except (ValueError, OSError):  # a NUL in the text, or a name too long: not a path
        return False


def _unique_keys(pairs):
    """json.load's object hook: a key given twice is an error, as in `qfleet eval`, not the last one silently."""
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"invalid JSON: key {_json.echo(key)} appears twice in one object")
        seen[key] = value
    return seen


def load_problem(path: str | os.PathLike) -> dict:
    """Reads a problem file and compiles its model: returns {"program": CircuitProgram or
    OpenSystemProgram, "problem": the parsed JSON}. The data keys (inputs, weights,
    amplitudes, rates, drift_coeffs) are left in "problem" for the caller to turn into tensors."""
    _lib.load()
    try:
        doc = json.loads(_files.read_text(path), object_pairs_hook=_unique_keys)
    except ValueError as e:  # json.JSONDecodeError, a device or a file too large included
        raise ValueError(f"qfleet.load_problem: {_json.echo(os.fspath(path))}: {e}") from None
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind == "circuit":
        model = {k: v for k, v in doc.items() if k not in ("inputs", "weights", "gradients", "states", "shots", "seed")}
        program = torch.classes.qfleet.CircuitProgram(_json.dumps(model, "qfleet.load_problem"))
    elif kind == "lindblad":
        model = {k: v for k, v in doc.items() if k not in ("amplitudes", "rates", "drift_coeffs", "gradients", "cotangents")}
        if "n_segments" not in model and "segment_duration" in model and "amplitudes" in doc:
            a = doc["amplitudes"]
            if isinstance(a, dict):  # {"npy": FILE}: [n_seg, n_ctrl] or [B, n_seg, n_ctrl]; only its header is read
                import numpy as np
                shape = np.load(os.path.join(os.path.dirname(os.fspath(path)), a["npy"]), mmap_mode="r").shape
                model["n_segments"] = shape[-2] if len(shape) >= 2 else 0
            else:
                per_task = len(a) > 0 and isinstance(a[0], list) and len(a[0]) > 0 and isinstance(a[0][0], list)
                model["n_segments"] = len(a[0]) if per_task else len(a)
        program = torch.classes.qfleet.OpenSystemProgram(_json.dumps(model, "qfleet.load_problem"))
    else:
        raise ValueError(f"qfleet.load_problem: {_json.echo(os.fspath(path))}: \"kind\" must be \"circuit\" or \"lindblad\", got {_json.cap(repr(kind))}")
    return {"program": program, "problem": doc}
