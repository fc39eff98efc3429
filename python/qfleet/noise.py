"""Device noise models (docs/noisy.md) from calibration snapshots.

qiskit-ibm-runtime ships the calibration of IBM devices as JSON files with its fake
backends (fake_provider/backends/<name>/conf_<name>.json and props_<name>.json):
basis gates and coupling map in conf, T1, T2, frequency, readout errors and per-gate
errors and lengths in props. This module turns them into qfleet's noise-model JSON,
which qfleet compiles into channels after every gate by Qiskit Aer's basic device
rules (include/qfleet/noise_model.hpp)::

    import qfleet, qfleet.noise
    model = qfleet.noise.from_fake_backend("manila")
    c = qfleet.Circuit(2).add("SX", [0]).add("CNOT", [0, 1]).probs([0, 1]).noise_model(model)

    python -m qfleet.noise list
    python -m qfleet.noise convert manila --out manila.json [--temperature-mk 0]

Only the files are read (no qiskit import); a missing package or backend, or a file
without the expected fields, is a clear error.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import pathlib
import sys
from collections.abc import Sequence

from ._files import write_text

# IBM basis-gate names -> qfleet's catalogue (include/qfleet/gates.hpp).
GATE_NAMES = {"id": "Identity", "x": "PauliX", "sx": "SX", "rz": "RZ", "cx": "CNOT", "cz": "CZ",
              "y": "PauliY", "z": "PauliZ", "h": "Hadamard", "s": "S", "sdg": "Adjoint(S)", "t": "T",
              "tdg": "Adjoint(T)", "swap": "SWAP", "rx": "RX", "ry": "RY", "ccx": "Toffoli"}
# Calibration entries that are not gates of a circuit.
NOT_GATES = {"measure", "reset", "delay", "barrier", "if_else", "for_loop", "switch_case", "while_loop"}
_TIME_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1.0}
_FREQ_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


class CalibrationError(ValueError):
    """A calibration snapshot without the fields a noise model needs."""


def _backends_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("qiskit_ibm_runtime")
    if spec is None or not spec.submodule_search_locations:
        raise CalibrationError("qfleet.noise: the fake backends come with the package qiskit-ibm-runtime, which is "
                               "not installed (pip install qiskit-ibm-runtime; ./scripts/setup.sh installs it)")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "fake_provider" / "backends"


def fake_backends() -> list[str]:
    """Names of the fake backends whose conf and props files are bundled (e.g. "manila")."""
    root = _backends_dir()
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and (d / f"conf_{d.name}.json").is_file() and (d / f"props_{d.name}.json").is_file())


def _normalise(name: str) -> str:
    n = name.lower()
    for prefix in ("fake_", "fake"):
        if n.startswith(prefix):
            n = n[len(prefix):]
    return n[:-2] if n.endswith("v2") else n


def _value(entries, name, path, scale_table=None):
    """The value of calibration entry `name` (in qfleet's units), or None when absent."""
    for e in entries:
        if e.get("name") == name:
            v = e.get("value")
            if v is None:
                return None
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise CalibrationError(f"qfleet.noise: {path}: {name} = {v!r} is not a finite number")
            if scale_table is not None:
                unit = str(e.get("unit", "")).strip()
                key = unit.lower() if scale_table is _FREQ_HZ else unit
                if key not in scale_table:
                    raise CalibrationError(f"qfleet.noise: {path}: {name} has unknown unit {unit!r}")
                v = v * scale_table[key]
            return float(v)
    return None


def from_calibration(conf: dict, props: dict, name: str | None = None, temperature_mk: float = 0.0,
                     readout: str = "asymmetric") -> dict:
    """A qfleet noise model (docs/noisy.md) from a device's conf and props dictionaries.

    readout: "asymmetric" takes prob_meas1_prep0 and prob_meas0_prep1 where the snapshot has
    them (as Aer's properties-based model does); "symmetric" takes readout_error for both
    directions (as Aer's NoiseModel.from_backend does for the BackendV2 fake backends, whose
    Target keeps only that figure)."""
    if readout not in ("asymmetric", "symmetric"):
        raise ValueError(f"qfleet.noise: readout must be 'asymmetric' or 'symmetric', got {readout!r}")
    for what, d in (("conf", conf), ("props", props)):
        if not isinstance(d, dict):
            raise CalibrationError(f"qfleet.noise: {what} must be a JSON object, got {type(d).__name__}")
    try:
        n = int(conf["n_qubits"])
        qubits = props["qubits"]
        gates = props["gates"]
    except (KeyError, TypeError, ValueError) as e:
        raise CalibrationError(f"qfleet.noise: the calibration lacks {e} (conf needs n_qubits; props needs qubits "
                               "and gates)") from None
    if len(qubits) != n:
        raise CalibrationError(f"qfleet.noise: props has {len(qubits)} qubits, conf says {n}")
    qprops = []
    for q, entries in enumerate(qubits):
        path = f"props.qubits[{q}]"
        d = {}
        t1 = _value(entries, "T1", path, _TIME_NS)
        t2 = _value(entries, "T2", path, _TIME_NS)
        f = _value(entries, "frequency", path, _FREQ_HZ)
        if t1 is not None and t1 > 0:
            d["t1"] = t1
        if t2 is not None and t2 > 0:
            d["t2"] = t2
        if f is not None and f > 0:
            d["frequency"] = f
        p10 = _value(entries, "prob_meas1_prep0", path) if readout == "asymmetric" else None
        p01 = _value(entries, "prob_meas0_prep1", path) if readout == "asymmetric" else None
        if p10 is None or p01 is None:  # only the symmetric figure: both directions alike
            r = _value(entries, "readout_error", path)
            p10 = p01 = r if r is not None else 0.0
        d["p1_given_0"], d["p0_given_1"] = p10, p01
        qprops.append(d)
    basis, dropped = [], []
    for g in conf.get("basis_gates", []):
        if g in GATE_NAMES:
            basis.append(GATE_NAMES[g])
        elif g not in NOT_GATES:
            dropped.append(g)
    cal = []
    for i, g in enumerate(gates):
        gname = g.get("gate")
        if gname in NOT_GATES:
            continue
        if gname not in GATE_NAMES:
            if gname not in dropped:
                dropped.append(gname)
            continue
        params = g.get("parameters", [])
        path = f"props.gates[{i}]"
        err = _value(params, "gate_error", path)
        length = _value(params, "gate_length", path, _TIME_NS)
        entry = {"gate": GATE_NAMES[gname], "wires": [int(w) for w in g.get("qubits", [])]}
        if err is not None:
            entry["error"] = min(max(err, 0.0), 1.0)
        if length is not None:
            entry["duration"] = length
        cal.append(entry)
    model = {"kind": "noise_model", "name": name or conf.get("backend_name", "device"), "qubits": n,
             "basis_gates": basis, "temperature_mk": float(temperature_mk), "qubit_properties": qprops,
             "gates": cal,
             "source": {"backend_name": conf.get("backend_name"), "backend_version": conf.get("backend_version"),
                        "last_update_date": props.get("last_update_date"),
                        "gates_not_in_qfleet": dropped}}
    cmap = conf.get("coupling_map")
    if cmap:
        model["coupling_map"] = [[int(a), int(b)] for a, b in cmap]
    return model


def from_fake_backend(name: str, temperature_mk: float = 0.0, readout: str = "asymmetric") -> dict:
    """The noise model of a qiskit-ibm-runtime fake backend by name ("manila", "fake_manila", "FakeManilaV2")."""
    key = _normalise(str(name))
    root = _backends_dir()
    d = root / key
    conf, props = d / f"conf_{key}.json", d / f"props_{key}.json"
    if not conf.is_file() or not props.is_file():
        raise CalibrationError(f"qfleet.noise: no fake backend {name!r} with calibration files; known: "
                               + ", ".join(fake_backends()))
    try:
        c, p = json.loads(conf.read_text()), json.loads(props.read_text())
    except json.JSONDecodeError as e:
        raise CalibrationError(f"qfleet.noise: {conf.name} or {props.name} is not valid JSON: {e}") from None
    return from_calibration(c, p, name=f"fake_{key}", temperature_mk=temperature_mk, readout=readout)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m qfleet.noise`: list the fake backends, or write one's noise model (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m qfleet.noise", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the fake backends with calibration files")
    cv = sub.add_parser("convert", help="write a fake backend's noise model as JSON")
    cv.add_argument("backend")
    cv.add_argument("--out", default="-", help="output file (default: stdout)")
    cv.add_argument("--temperature-mk", type=float, default=0.0)
    cv.add_argument("--readout", choices=["asymmetric", "symmetric"], default="asymmetric")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "list":
            print("\n".join(fake_backends()))
            return 0
        model = from_fake_backend(a.backend, a.temperature_mk, a.readout)
    except CalibrationError as e:
        print(e, file=sys.stderr)
        return 2
    text = json.dumps(model, indent=1)
    if a.out == "-":
        print(text)
    else:
        write_text(a.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
