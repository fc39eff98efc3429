"""What every demo of the suite shares: its devices, built the same way for each."""
from __future__ import annotations


# Every device is built with this sampling seed (unused by the analytic demos) instead of the default
# seed="global": with "global" a device draws its seed from numpy's global generator when it is built,
# default.qubit as randint(0, 10**7) and lightning.qubit and qfleet as randint(2**31 - 1), which consume
# different lengths of the stream; a demo that builds a device after seeding numpy (the random circuits of
# barren_plateaus, the data of data_reuploading) would then draw different numbers on each device.
DEVICE_SEED = 1234


def device(name: str, wires):
    """qml.device(name, wires=wires, seed=DEVICE_SEED); qfleet's devices constructed directly where the
    entry point is not registered (a source tree on PYTHONPATH without the package's metadata)."""
    import pennylane as qml

    try:
        return qml.device(name, wires=wires, seed=DEVICE_SEED)
    except qml.exceptions.DeviceError:
        if not name.startswith("qfleet."):
            raise
        from qfleet.pennylane import MixedDevice, QubitDevice

        return {"qfleet.qubit": QubitDevice, "qfleet.mixed": MixedDevice}[name](wires=wires, seed=DEVICE_SEED)


def best_method(name: str, interface: str) -> str:
    """The diff_method that "best" resolves to on this device with this interface."""
    import pennylane as qml

    qnode = qml.QNode(lambda: qml.expval(qml.Z(0)), device(name, 1), interface=interface)
    return qml.workflow.get_best_diff_method(qnode)()


# The rows of a state-vector demo and of a noisy one: qfleet's device first (the ratios' denominator).
QUBIT_DEVICES = ("qfleet.qubit", "lightning.qubit", "default.qubit")
MIXED_DEVICES = ("qfleet.mixed", "default.mixed")

# Two devices computing in float64 agree to rounding: 1e-16 to 1e-14 on these demos' outputs after their steps.
EXACT = 1e-10

