"""Converts a policy checkpoint of the paper's code (nimalec/meta-quantum-control: a torch
state dict of nn.Sequential Linear/Tanh layers, alone or under "policy_state_dict") into the
flat parameter vector of qfleet's meta-control policy (apps/meta_control/policy.cpp: per
layer W [in, out] row-major, then b [out]), for `qfleet-meta reproduce ... --paper-checkpoint`:

    python -m qfleet.meta_control.paper_checkpoint maml_gamma_pauli_x_best.pt paper_theta.json

The output is {"source", "dims": [in, width, ..., out], "theta": [...], "meta": {...}}; the
checkpoint file itself is the paper's and is not part of this repository (fetch the paper's
repository to get it).

The file comes from a third party, so it is read with torch.load(weights_only=True): tensors,
containers, numbers, strings and numpy scalars only; a pickle that names anything else (which
could run code while it is read) is refused with the global it names, never loaded."""
import json
import pickle
import sys

import torch

from .. import _files


def _numpy_scalars():
    """The globals a numpy scalar or dtype in a checkpoint pickles to (e.g. a float64 metric): they
    rebuild a number from its dtype and bytes and run nothing else (PyTorch's weights_only docs
    name them for this use)."""
    try:
        import numpy as np
    except ImportError:
        return []
    core = getattr(np, "_core", None) or np.core
    dtypes = [getattr(np.dtypes, n) for n in dir(np.dtypes) if n.endswith("DType")] if hasattr(np, "dtypes") else []
    return [core.multiarray.scalar, np.dtype, *dtypes]


def load_state(path):
    """The checkpoint's contents, read without running code from it (SystemExit with one line otherwise)."""
    try:
        with torch.serialization.safe_globals(_numpy_scalars()):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        lines = [line.strip() for line in str(e).splitlines()]
        named = next((line for line in lines if "GLOBAL" in line or "global" in line), lines[0])
        raise SystemExit(f"paper_checkpoint: {path} asks to load something other than tensors and numbers, "
                         f"refused (it could run code): {named}") from None
    except Exception as e:  # noqa: BLE001 - any other unreadable file is the same error for the user
        raise SystemExit(f"paper_checkpoint: cannot read {path}: {e}") from None


def _parameter(state, key, path, ndim):
    """state[key] as a real float64 tensor of ndim dimensions (SystemExit with one line otherwise:
    a complex parameter is refused, not cast, which would drop its imaginary part)."""
    if key not in state:
        raise SystemExit(f"paper_checkpoint: {path} has no {key} entry")
    t = state[key]
    if not isinstance(t, torch.Tensor):
        raise SystemExit(f"paper_checkpoint: {path}: {key} is a {type(t).__name__}, not a tensor")
    if t.is_complex():
        raise SystemExit(f"paper_checkpoint: {path}: {key} is complex ({t.dtype}); the policy's parameters are real")
    if t.dim() != ndim:
        raise SystemExit(f"paper_checkpoint: {path}: {key} has shape {list(t.shape)}, expected {ndim} dimension(s)")
    t = t.double()
    if not bool(torch.isfinite(t).all()):
        raise SystemExit(f"paper_checkpoint: {path}: {key} has a NaN or infinite entry")
    return t


def _layer_index(key, path):
    try:
        return int(key.split(".")[1])
    except ValueError:
        raise SystemExit(f"paper_checkpoint: {path}: {key[:200]!r} is not network.<i>.weight with an integer i") from None


def convert(path):
    state = load_state(path)
    meta = {}
    if isinstance(state, dict) and "policy_state_dict" in state:
        for k, v in state.items():
            if isinstance(v, (bool, int, float)) or (hasattr(v, "__float__") and not hasattr(v, "shape")):
                try:
                    meta[str(k)] = float(v)
                except (TypeError, ValueError):  # a number-like entry that is not one: not metadata
                    pass
        state = state["policy_state_dict"]
    if not isinstance(state, dict):
        raise SystemExit(f"paper_checkpoint: {path} holds no state dict")
    keys = [k for k in state if isinstance(k, str) and k.startswith("network.") and k.endswith(".weight")]
    layers = sorted({_layer_index(k, path) for k in keys})
    if not layers:
        raise SystemExit(f"paper_checkpoint: {path} has no network.<i>.weight entries")
    theta, dims = [], []
    for i in layers:
        w = _parameter(state, f"network.{i}.weight", path, 2)  # torch: [out, in]
        b = _parameter(state, f"network.{i}.bias", path, 1)
        if b.shape[0] != w.shape[0]:
            raise SystemExit(f"paper_checkpoint: {path}: network.{i}.bias has {b.shape[0]} entries, but "
                             f"network.{i}.weight has {w.shape[0]} outputs")
        if not dims:
            dims.append(w.shape[1])
        elif w.shape[1] != dims[-1]:
            raise SystemExit(f"paper_checkpoint: layer network.{i} takes {w.shape[1]} inputs after {dims[-1]} outputs")
        dims.append(w.shape[0])
        theta += w.t().contiguous().view(-1).tolist() + b.view(-1).tolist()
    return {"source": str(path), "dims": dims, "theta": theta, "meta": meta}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m qfleet.meta_control.paper_checkpoint CHECKPOINT.pt OUT.json")
    try:
        out = convert(sys.argv[1])
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - whatever else a malformed file trips: one line, not a traceback
        raise SystemExit(f"paper_checkpoint: {sys.argv[1]}: {type(e).__name__}: {str(e).splitlines()[0][:300]}") from None
    _files.write_text(sys.argv[2], json.dumps(out))  # a fresh temporary, then a rename: no planted link followed
    print(f"{sys.argv[2]}: dims {out['dims']}, {len(out['theta'])} parameters")
