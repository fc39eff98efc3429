"""Conversions to the JSON problem format of `qfleet eval` (docs/cli.md)."""
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
    return float(x)
