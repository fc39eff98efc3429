"""qfleet.qgan: a quantum GAN and a device-distinguishability tournament (docs/qgan.md).

The app is C++ (apps/qgan, LibTorch + qfleet): this module loads its library through the
torch extension (torch.ops.qfleet_qgan) when first used and runs the same command line as
the `qfleet-qgan` binary::

    python -m qfleet.qgan                         # the 3-qubit log-normal qGAN (the embedded default)
    python -m qfleet.qgan train --target gaussian2d --epochs 1000
    python -m qfleet.qgan tournament --generator qgan-out/report.json
    python -m qfleet.qgan suite                   # qGAN + tournament + figures, summary table
    python -m qfleet.qgan.plot OUTDIR             # the PNG figures of a run (JSON in, PNG out)
    python -m qfleet.qgan.image FILE.pgm          # scikit-learn's sample image as the image target

The statistics the reports use are reachable for checking: divergences(p, q),
ks_distance(p, q, rows), shots_to_distinguish(p, q, confidence), lr_test_error_rates(p, q, n).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

from .._lib import load_app

__all__ = ["main", "divergences", "ks_distance", "shots_to_distinguish", "lr_test_error_rates"]


def _ops():
    return load_app("qgan")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the same C++ as qfleet-qgan); returns the exit status. The suite's
    figures are drawn with this interpreter."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "suite" and "--python" not in args:
        args += ["--python", sys.executable]
    return int(_ops().main("python -m qfleet.qgan", args))


def divergences(p: Iterable[float], q: Iterable[float]) -> dict[str, float]:
    """KL both ways, Jensen-Shannon distance (natural log), total variation and the
    Bhattacharyya coefficient of two distributions over the same outcomes (the C++ code
    the reports use; KL is float('inf') where p > 0 = q)."""
    kl_pq, kl_qp, js, tv, bc = _ops().divergences([float(v) for v in p], [float(v) for v in q])
    return {"kl_pq": kl_pq, "kl_qp": kl_qp, "js_distance": js, "total_variation": tv, "bhattacharyya": bc}


def ks_distance(p: Iterable[float], q: Iterable[float], rows: int = 1) -> float:
    """Kolmogorov-Smirnov distance on a rows x cols grid (rows = 1: 1-D)."""
    return float(_ops().ks_distance([float(v) for v in p], [float(v) for v in q], int(rows)))


def shots_to_distinguish(p: Iterable[float], q: Iterable[float], confidence: float = 0.95) -> dict[str, float]:
    """Shots a likelihood-ratio test needs to tell p from q (normal approximation) and the
    Chernoff-Bhattacharyya bound that always suffices (docs/qgan.md)."""
    shots, bound, alpha, beta = _ops().shots_to_distinguish([float(v) for v in p], [float(v) for v in q], float(confidence))
    return {"shots": shots, "bound": bound, "alpha": alpha, "beta": beta}


def lr_test_error_rates(p: Iterable[float], q: Iterable[float], n: int) -> tuple[float, float]:
    """The approximate error rates (alpha_n, beta_n) of that test after n shots."""
    return tuple(_ops().lr_test_error_rates([float(v) for v in p], [float(v) for v in q], int(n)))
