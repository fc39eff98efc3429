"""The JSON problem format of `qfleet eval` (docs/cli.md) from Python."""
import json
import os

import torch

from . import _lib


def evaluate(problem) -> dict:
    """Evaluates a problem (a dict, a JSON string, or a path to a .json file) exactly
    as `qfleet eval` does and returns its result object."""
    _lib.load()
    if isinstance(problem, dict):
        text = json.dumps(problem)
    elif isinstance(problem, (str, os.PathLike)) and os.path.exists(problem):
        with open(problem, encoding="utf-8") as f:
            text = f.read()
        text = _resolve_npy_paths(text, os.path.dirname(os.fspath(problem)))
    elif isinstance(problem, str):
        text = problem
    else:
        raise TypeError(f"qfleet.evaluate: expected a dict, JSON text or a file path, got {type(problem).__name__}")
    return json.loads(torch.ops.qfleet.evaluate_json(text))


def _resolve_npy_paths(text: str, base: str) -> str:
    """Relative .npy file names in a problem file are relative to its directory, as for
    `qfleet eval FILE` (docs/cli.md#arrays-in-npy-files); malformed text is left to the reader."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if not isinstance(doc, dict) or not base:
        return text

    def resolve(name):
        return os.path.join(base, name) if isinstance(name, str) and name and not os.path.isabs(name) else name

    for key in ("inputs", "weights", "amplitudes", "drift_coeffs", "rates"):
        v = doc.get(key)
        if isinstance(v, dict) and "npy" in v:
            v["npy"] = resolve(v["npy"])
    if "output_npy" in doc:
        doc["output_npy"] = resolve(doc["output_npy"])
    return json.dumps(doc)


def load_problem(path) -> dict:
    """Reads a problem file and compiles its model: returns {"program": CircuitProgram or
    OpenSystemProgram, "problem": the parsed JSON}. The data keys (inputs, weights,
    amplitudes, rates, drift_coeffs) are left in "problem" for the caller to turn into tensors."""
    _lib.load()
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind == "circuit":
        model = {k: v for k, v in doc.items() if k not in ("inputs", "weights", "gradients", "states", "shots", "seed")}
        program = torch.classes.qfleet.CircuitProgram(json.dumps(model))
    elif kind == "lindblad":
        model = {k: v for k, v in doc.items() if k not in ("amplitudes", "rates", "drift_coeffs", "gradients")}
        if "n_segments" not in model and "segment_duration" in model and "amplitudes" in doc:
            a = doc["amplitudes"]
            if isinstance(a, dict):  # {"npy": FILE}: the segments come from the file's shape
                import numpy as np
                a = np.load(os.path.join(os.path.dirname(os.fspath(path)), a["npy"]), mmap_mode="r").tolist()
            per_task = len(a) > 0 and isinstance(a[0], list) and len(a[0]) > 0 and isinstance(a[0][0], list)
            model["n_segments"] = len(a[0]) if per_task else len(a)
        program = torch.classes.qfleet.OpenSystemProgram(json.dumps(model))
    else:
        raise ValueError(f"qfleet.load_problem: {path}: \"kind\" must be \"circuit\" or \"lindblad\", got {kind!r}")
    return {"program": program, "problem": doc}
