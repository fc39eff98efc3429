"""qfleet.train: the training runtime's pieces from Python.

The C++ code of ``qfleet/train.hpp`` (through ``torch.classes.qfleet_train``), not a
re-implementation: a step's metrics stay on their device and reach the host once
every ``sync_every`` steps, in one transfer::

    meter = qfleet.train.MetricMeter(sync_every=100, log_path="log.jsonl")
    for step in range(n):
        loss, acc = train_step()          # 0-dim tensors, on the GPU
        meter.add(loss=loss, accuracy=acc)
    meter.flush()
    meter.rows[-1]                         # {"step": .., "steps": .., "seconds": .., "loss": .., ...}
"""
from __future__ import annotations

import torch

from . import _lib

_lib.load()


class MetricMeter:
    """Sums each step's metrics on their device; every ``sync_every`` steps one host
    transfer takes a row of their means (appended to ``log_path`` as a JSON line)."""

    def __init__(self, sync_every: int = 100, log_path: str | None = None) -> None:
        self._m = torch.classes.qfleet_train.MetricMeter(int(sync_every), str(log_path or ""))

    def add(self, **metrics: torch.Tensor) -> bool:
        """One step's metrics (scalar tensors); True when this call synchronised."""
        return self._m.add(list(metrics), [torch.as_tensor(v) for v in metrics.values()])

    def flush(self) -> bool:
        """A row of what is pending (end of training, before a checkpoint)."""
        return self._m.flush()

    @property
    def steps(self) -> int:
        """Steps recorded so far."""
        return self._m.steps()

    @property
    def host_syncs(self) -> int:
        """How many times the meter read a device value back to the host."""
        return self._m.host_syncs()

    @property
    def rows(self) -> list[dict]:
        """The recorded rows, each with step, steps averaged, seconds and each metric's mean."""
        names = self._m.names()
        return [{"step": int(r[0]), "steps": int(r[1]), "seconds": r[2], **dict(zip(names, r[3:]))}
                for r in self._m.rows()]
