"""PennyLane's own published demos, each rewritten as a function of the device name, for
bench/compare/pennylane_demos.py (the one entry command; README.md beside it).

Every demo module holds one demo of PennyLane's demos repository (PennyLaneAI/qml, cited in its
docstring) and the same few names, which the harness reads:

  NAME        the demo's short name (--only takes these)
  SOURCE      the published demo: its page and its file in PennyLaneAI/qml
  INTERFACE   the interface the demo uses (autograd, torch, jax)
  REFERENCE   the PennyLane device the demo itself runs on: every other device is checked against it
  DEVICES     the devices compared (qfleet's first)
  ATOL        the largest absolute difference allowed between a device's outputs and the reference's (a
              number, or {device: number, "default": number}), with the reason where it is not 1e-10
              (a demo that computes in float32 as published, ...)
  workload(quick) -> str     what one timed run does
  run(device_name, quick=False, seed=...) -> dict of arrays: the demo's outputs (cost values,
              predictions, gradients, trained parameters)

The circuit, cost, optimiser, data generation and diff_method ("best", the demos' default: adjoint
on qfleet and lightning, backprop on default.qubit/default.mixed) are the demo's; a run builds its
devices (common.device) and QNodes afresh, as the demo does, so the timed workload includes that set-up.
"""
from __future__ import annotations

from .common import best_method, device  # noqa: F401 (the harness calls them as pl_demos.*)
from . import barren_plateaus, data_reuploading, noisy_circuits, qnn_torch, qubit_rotation, state_preparation

DEMOS = {m.NAME: m for m in (qubit_rotation, qnn_torch, data_reuploading, noisy_circuits, barren_plateaus,
                             state_preparation)}
