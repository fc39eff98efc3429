"""qfleet.classify: the hybrid CNN + quantum-circuit image classifier (docs/classify.md).

The app is C++ (apps/classify, LibTorch + qfleet): this module loads its library through
the torch extension (torch.ops.qfleet_classify) and runs the same command line as the
`qfleet-classify` binary::

    python -m qfleet.classify --epochs 5 --layer classical
    python -m qfleet.classify.plot classify-out          # the PNG figures of a run
    python -m qfleet.classify.digits DIR                 # scikit-learn's 8x8 digits as IDX files
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from .._lib import load_app



def _ops():
    """The app's library, loaded on first use: importing the package (for its plots, which
    only read JSON) does not need the compiled app."""
    return load_app("classify")

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the same C++ as qfleet-classify); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    return int(_ops().main("python -m qfleet.classify", args))
