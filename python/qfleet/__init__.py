"""qfleet: batched simulation of fleets of small quantum systems, with exact
gradients, as PyTorch operators and modules::

    import qfleet, torch
    c = qfleet.Circuit(4)
    c.angle_embedding([0, 1, 2, 3]).strongly_entangling_layers([0, 1, 2, 3], layers=3)
    for q in range(4):
        c.expval(f"Z{q}")
    layer = qfleet.QuantumLayer(c)
    y = layer(torch.rand(64, 4, dtype=torch.float64))   # [64, 4], differentiable

Optimal control (GRAPE-style pulses for one system, an ensemble or many tasks): qfleet.control.
"""
import importlib
import sys

# Where each public name lives. They are imported on first use (PEP 562), so that what needs
# no PyTorch - the PennyLane devices, `qfleet._engine` - starts without importing torch
# (seconds); everything here is PyTorch operators and modules and loads torch and the
# operator library when first touched, or at once when torch is already imported.
_NAMES = {
    "Circuit": "circuit", "Param": "circuit", "input": "circuit", "weight": "circuit",
    "QuantumLayer": "layers", "OpenSystemLayer": "layers", "OpenOutputs": "layers", "circuit_forward": "layers",
    "open_fidelity": "layers", "open_final_state": "layers", "open_outputs": "layers",
    "OpenSystem": "open_system", "Operator": "open_system", "local": "open_system", "pauli": "open_system",
    "evaluate": "problem", "load_problem": "problem",
    "TensorFile": "tensor_file", "TensorFileError": "tensor_file", "read_tensor_file": "tensor_file",
}


def load_operators() -> None:
    """Loads LibTorch and qfleet's operator library (torch.ops.qfleet, torch.classes.qfleet) and
    registers the fake classes torch.compile traces with. Any of the names above does it on first
    use; call it before using the raw operators of a process that imported qfleet before torch."""
    import torch  # noqa: F401  (LibTorch before the operator library)

    from . import _lib
    _lib.load()
    from . import _fake  # noqa: F401  (registers the fake classes: after the library's real ones)


def __getattr__(name):
    if name == "control":  # a module of its own (optimal control: docs/control.md)
        load_operators()
        return importlib.import_module(".control", __name__)
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'qfleet' has no attribute {name!r}")
    load_operators()
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | {"control"})


def cuda_device_count() -> int:
    """CUDA devices visible to qfleet's engine (0 where none is, or in a build without its CUDA backend)."""
    from . import _engine
    return _engine.cuda_device_count()


def built_with_cuda() -> bool:
    """Whether this build of qfleet has its CUDA backend (the wheel has it when built where nvcc and a GPU were found, or when asked: docs/torch.md)."""
    from . import _engine
    return _engine.built_with_cuda()


if "torch" in sys.modules:  # a PyTorch program: its operators ready at once, as they always were
    load_operators()


def _version() -> str:
    """CMakeLists.txt's project version, the one place it is written: the wheel carries it in
    _version.py (written at build time); a checkout reads it from CMakeLists.txt itself."""
    try:
        from ._version import version
        return version
    except ImportError:
        import re
        from pathlib import Path
        text = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
        return re.search(r"project\(qfleet VERSION ([0-9.]+)", text).group(1)


__version__ = _version()
__all__ = ["Circuit", "Param", "input", "weight", "OpenSystem", "Operator", "local", "pauli", "QuantumLayer",
           "OpenSystemLayer", "circuit_forward", "open_fidelity", "open_final_state", "open_outputs", "OpenOutputs",
           "evaluate", "load_problem",
           "TensorFile", "TensorFileError", "read_tensor_file", "cuda_device_count", "built_with_cuda", "load_operators",
           "control", "__version__"]
