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


def convert(path):
    state = load_state(path)
    meta = {}
    if isinstance(state, dict) and "policy_state_dict" in state:
        meta = {k: float(v) for k, v in state.items() if isinstance(v, (int, float)) or hasattr(v, "__float__")
                and not hasattr(v, "shape")}
        state = state["policy_state_dict"]
    if not isinstance(state, dict):
        raise SystemExit(f"paper_checkpoint: {path} holds no state dict")
    layers = sorted({int(k.split(".")[1]) for k in state if k.startswith("network.") and k.endswith(".weight")})
    if not layers:
        raise SystemExit(f"paper_checkpoint: {path} has no network.<i>.weight entries")
    theta, dims = [], []
    for i in layers:
        w, b = state[f"network.{i}.weight"].double(), state[f"network.{i}.bias"].double()  # torch: [out, in]
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
    out = convert(sys.argv[1])
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    print(f"{sys.argv[2]}: dims {out['dims']}, {len(out['theta'])} parameters")
