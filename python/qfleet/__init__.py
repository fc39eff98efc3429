"""qfleet: batched simulation of fleets of small quantum systems, with exact
gradients, as PyTorch operators and modules.

    import qfleet, torch
    c = qfleet.Circuit(4)
    c.angle_embedding([0, 1, 2, 3]).strongly_entangling_layers([0, 1, 2, 3], layers=3)
    for q in range(4):
        c.expval(f"Z{q}")
    layer = qfleet.QuantumLayer(c)
    y = layer(torch.rand(64, 4, dtype=torch.float64))   # [64, 4], differentiable
"""
import torch  # noqa: F401  (loads LibTorch before the operator library)

from . import _lib

_lib.load()

from . import _fake  # noqa: E402,F401  (registers the fake classes for torch.compile)
from .circuit import Circuit, Param, input, weight  # noqa: E402,A004
from .layers import (OpenOutputs, OpenSystemLayer, QuantumLayer, circuit_forward, open_fidelity,  # noqa: E402
                     open_final_state, open_outputs)
from .open_system import OpenSystem, Operator, local, pauli  # noqa: E402
from .problem import evaluate, load_problem  # noqa: E402
from .tensor_file import TensorFile, TensorFileError, read_tensor_file  # noqa: E402


def cuda_device_count() -> int:
    """CUDA devices visible to qfleet's engine (0 where none is, or in a build without its CUDA backend)."""
    return int(torch.ops.qfleet.cuda_device_count())


def built_with_cuda() -> bool:
    """Whether this build of qfleet has its CUDA backend (the wheel has it when built where nvcc and a GPU were found, or when asked: docs/torch.md)."""
    return bool(torch.ops.qfleet.built_with_cuda())


__version__ = "0.1.0"
__all__ = ["Circuit", "Param", "input", "weight", "OpenSystem", "Operator", "local", "pauli", "QuantumLayer",
           "OpenSystemLayer", "circuit_forward", "open_fidelity", "open_final_state", "open_outputs", "OpenOutputs",
           "evaluate", "load_problem",
           "TensorFile", "TensorFileError", "read_tensor_file", "cuda_device_count", "built_with_cuda", "__version__"]
