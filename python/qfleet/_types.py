"""The types of the public signatures, for readers, IDEs and type checkers (nothing checks them
at run time: the C++ reader validates every value)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

# A matrix as the builders take it: a tensor, a NumPy array or nested lists, real or complex.
Matrix = torch.Tensor | np.ndarray | Sequence[Sequence[complex]]
# A state vector (length d), the same way.
Vector = torch.Tensor | np.ndarray | Sequence[complex]
# Real entries only (a readout matrix).
RealMatrix = torch.Tensor | np.ndarray | Sequence[Sequence[float]]

# A compiled program, torch.classes.qfleet.CircuitProgram or OpenSystemProgram: a
# torch.ScriptObject at run time (what the API reference shows), Any to a type checker, as
# torch's stubs do not know the C++ classes' methods (program.n_outputs()).
if TYPE_CHECKING:
    Program = Any
else:
    Program = torch.ScriptObject
