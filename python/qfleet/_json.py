"""Conversions to the JSON problem format of `qfleet eval` (docs/cli.md)."""
import json
import math
import numbers

import numpy as np
import torch


def cmatrix(m, name: str, dim: int = None):
    """A complex matrix (numpy, torch, nested lists) as nested [re, im] pairs."""
    if isinstance(m, torch.Tensor):
        m = m.detach().cpu().numpy()
    a = np.asarray(m, dtype=np.complex128)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"qfleet: {name} must be a square matrix, got shape {a.shape}")
    if dim is not None and a.shape[0] != dim:
        raise ValueError(f"qfleet: {name} must be {dim} x {dim}, got {a.shape[0]} x {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"qfleet: {name} has a NaN or infinite entry")
    return [[[float(z.real), float(z.imag)] for z in row] for row in a]


def cvector(v, name: str, dim: int = None):
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    a = np.asarray(v, dtype=np.complex128)
    if a.ndim != 1:
        raise ValueError(f"qfleet: {name} must be a vector, got shape {a.shape}")
    if dim is not None and a.shape[0] != dim:
        raise ValueError(f"qfleet: {name} must have {dim} entries, got {a.shape[0]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"qfleet: {name} has a NaN or infinite entry")
    return [[float(z.real), float(z.imag)] for z in a]


def real(x, name: str) -> float:
    if not isinstance(x, numbers.Real) or isinstance(x, bool):
        raise TypeError(f"qfleet: {name} must be a real number, got {type(x).__name__}")
    if not math.isfinite(x):
        raise ValueError(f"qfleet: {name} is not finite ({float(x)})")
    return float(x)


# How much of a user's input a message echoes: a message is one line, and an input of
# megabytes would make it megabytes long.
ECHO_LIMIT = 200


def echo(text) -> str:
    """text for a message: as a JSON string literal (escaped to ASCII, so a NUL or a newline
    in it shows as \\u0000 or \\n and the message stays one line), cut to ECHO_LIMIT
    characters with an ellipsis and the full length."""
    text = str(text)
    if len(text) <= ECHO_LIMIT:
        return json.dumps(text)
    return json.dumps(text[:ECHO_LIMIT])[:-1] + f'..." ({len(text)} characters)'


def cap(text: str) -> str:
    """Text already formatted for a message (a repr), cut to ECHO_LIMIT characters."""
    return text if len(text) <= ECHO_LIMIT else f"{text[:ECHO_LIMIT]}... ({len(text)} characters)"


# A whole message from the C++ libraries, cut in its middle past this many characters (as
# qfleet::capped_message cuts qfleet's own, include/qfleet/message.hpp): the apps' messages
# echo a configuration's keys and values whole.
MESSAGE_LIMIT = 1000


def capped_message(text: str) -> str:
    """text of at most about MESSAGE_LIMIT characters: its start (what and where) and its
    end (what to do) kept, the middle replaced by the full length."""
    text = str(text)
    if len(text) <= MESSAGE_LIMIT:
        return text
    return f"{text[:600]}... ({len(text)} characters in all) ...{text[-300:]}"


def _non_finite(value, path=""):
    """The JSON path of the first NaN or infinity in a document of dicts, lists and numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "the value", value
    if isinstance(value, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for p, v in items:
        found = _non_finite(v, p)
        if found:
            return found
    return None


def dumps(doc, who: str = "qfleet") -> str:
    """doc as the JSON text the C++ readers take. JSON has no NaN or infinity (Python's
    json would write NaN, which the reader then refuses as invalid JSON at a byte offset):
    such a number is refused here, naming where it is in the document."""
    try:
        return json.dumps(doc, allow_nan=False)
    except ValueError:
        found = _non_finite(doc)
        if found is None:
            raise
        raise ValueError(f"{who}: {found[0]} is not finite ({found[1]})") from None
