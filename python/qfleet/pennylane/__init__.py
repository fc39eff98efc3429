"""PennyLane devices on qfleet's engine: qfleet.qubit and qfleet.mixed (docs/pennylane.md).

They are registered through the `pennylane.plugins` entry point of the qfleet package::

    import pennylane as qml
    dev = qml.device("qfleet.qubit", wires=4)
"""
from .device import MixedDevice, QubitDevice

__all__ = ["QubitDevice", "MixedDevice"]
