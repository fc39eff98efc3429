"""Loads the compiled operators (libqfleet_torch.so) into torch.ops.qfleet."""
import os
import pathlib

import torch

_LOADED = None


def library_path() -> str:
    """Where the operator library is: $QFLEET_TORCH_LIBRARY, or next to this package."""
    env = os.environ.get("QFLEET_TORCH_LIBRARY")
    if env:
        return env
    here = pathlib.Path(__file__).resolve().parent
    for name in ("libqfleet_torch.so", "libqfleet_torch.dylib", "qfleet_torch.dll"):
        if (here / name).exists():
            return str(here / name)
    raise ImportError(
        "qfleet: the compiled operator library libqfleet_torch.so was not found next to the package "
        f"({here}); install qfleet with `pip install .` or point QFLEET_TORCH_LIBRARY at a build's "
        "adapters/torch/libqfleet_torch.so")


def load() -> str:
    global _LOADED
    if _LOADED is None:
        path = library_path()
        torch.ops.load_library(path)
        _LOADED = path
    return _LOADED
