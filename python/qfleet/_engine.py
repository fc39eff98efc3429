"""qfleet's circuit engine on numpy arrays, without PyTorch: libqfleet_c.so
(adapters/c/include/qfleet/qfleet_c.h) through ctypes.

    from qfleet._engine import Program
    p = Program(json_text)                 # the JSON torch.classes.qfleet.CircuitProgram takes
    y = p.forward(inputs, weights)         # [B, n_outputs] float64
    gi, gw = p.vjp(inputs, weights, dy)    # gradients, one adjoint sweep per sample

ctypes rather than a compiled extension (pybind11, nanobind): the library is one plain C
shared object per platform, with nothing built per Python version and nothing linked
against torch, so this module imports only the standard library and numpy. Results are
those of the PyTorch operators on the same program, bit for bit (tests/python/test_engine_binding.py).

Each call costs a few microseconds of Python (a forward of a one-qubit circuit: 9 us, against
70 us through torch.ops.qfleet.circuit_forward; 2-core machine, 2026-12-07): the functions'
argtypes are declared once, arrays already C-contiguous float64 are passed in place (no
copy), and pointers are taken with ctypes' from_buffer (1.2 us) rather than ndarray.ctypes (3 us).
"""
import ctypes

import numpy as np

from ._paths import find_library

# The C ABI this module is written for (QFLEET_C_ABI_VERSION in qfleet_c.h).
_ABI_VERSION = 1
_STATUS_ERRORS = {1: ValueError, 2: ValueError, 3: MemoryError, 4: RuntimeError}
_EMPTY = np.empty((0,), dtype=np.float64)
_f64 = np.float64


def library_path() -> str:
    """Where the C library is: $QFLEET_C_LIBRARY, next to this package, or in build_dir()."""
    return find_library("qfleet_c", "QFLEET_C_LIBRARY", "adapters/c", "the C library libqfleet_c.so")


_LIB = None


def _declare(lib):
    P, S, I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    D, U64 = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_uint64)
    batch = [P, S, D, S, D, S]  # program, batch, inputs, inputs_len, weights, weights_len
    table = {
        "qfleet_version": ([], ctypes.c_char_p), "qfleet_abi_version": ([], I),
        "qfleet_cuda_device_count": ([], I), "qfleet_built_with_cuda": ([], I),
        "qfleet_last_error": ([], ctypes.c_char_p),
        "qfleet_compile": ([ctypes.c_char_p, S, ctypes.POINTER(P)], I), "qfleet_free": ([P], None),
        "qfleet_n_qubits": ([P], I), "qfleet_n_inputs": ([P], I), "qfleet_n_weights": ([P], I),
        "qfleet_n_outputs": ([P], I), "qfleet_is_density_matrix": ([P], I), "qfleet_isa": ([P], ctypes.c_char_p),
        "qfleet_forward": (batch + [D, S], I),
        "qfleet_vjp": (batch + [D, S, D, S, D, S], I),
        "qfleet_jacobian": (batch + [D, S, D, S], I),
        "qfleet_states": (batch + [D, S], I),
        "qfleet_density_matrices": (batch + [D, S], I),
        "qfleet_sample": (batch + [ctypes.POINTER(I), S, S, ctypes.c_uint64, U64, S], I),
    }
    for name, (args, result) in table.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, result


def _library():
    """The C library, loaded and checked once (RTLD_LOCAL: its symbols stay its own)."""
    global _LIB
    if _LIB is None:
        path = library_path()
        lib = ctypes.CDLL(path)
        _declare(lib)
        if lib.qfleet_abi_version() != _ABI_VERSION:
            raise ImportError(f"qfleet: {path} has C ABI version {lib.qfleet_abi_version()}; this package needs "
                              f"{_ABI_VERSION} (a library from another qfleet version?)")
        _LIB = lib
    return _LIB


def version() -> str:
    """The version of the C library loaded."""
    return _library().qfleet_version().decode()


def cuda_device_count() -> int:
    """CUDA devices visible to the engine (0 where none is, or in a build without its CUDA backend)."""
    return int(_library().qfleet_cuda_device_count())


def built_with_cuda() -> bool:
    """Whether this build of the engine has its CUDA backend."""
    return bool(_library().qfleet_built_with_cuda())


def _raise(status):
    message = _LIB.qfleet_last_error().decode(errors="replace")
    raise _STATUS_ERRORS.get(status, RuntimeError)(message)


def _ptr(a, ctype=ctypes.c_double):
    """a's data for a pointer argument (None when empty). a is C-contiguous; ctypes passes the
    object from_buffer returns by reference, and it keeps `a` alive for the call."""
    if not a.size:
        return None
    try:
        return ctype.from_buffer(a)
    except TypeError:  # a read-only array: from_buffer wants a writable buffer
        return a.ctypes.data_as(ctypes.POINTER(ctype))


def _as_f64(a, name):
    a = np.ascontiguousarray(a, dtype=_f64)  # no copy when it already is
    if a.ndim not in (1, 2):
        raise ValueError(f"qfleet: {name} must be 1-D or 2-D, got shape {a.shape}")
    return a


class Program:
    """A compiled circuit (complex128) from the JSON of a "kind": "circuit" problem
    (docs/cli.md), as torch.classes.qfleet.CircuitProgram(json) compiles it.

    inputs are [B, n_inputs] (None: no input columns, B from per-sample weights or 1);
    weights [n_weights] shared by the batch or [B, n_weights] per sample. Arrays of another
    dtype or layout are converted; float64 C-contiguous ones are read in place. Errors are
    ValueError with the engine's message."""

    __slots__ = ("_h", "_json", "_nq", "_ni", "_nw", "_no", "_dm", "_free", "__weakref__")

    def __init__(self, json_text):
        lib = _library()
        text = json_text.encode() if isinstance(json_text, str) else bytes(json_text)
        handle = ctypes.c_void_p()
        status = lib.qfleet_compile(text, len(text), ctypes.byref(handle))
        if status:
            _raise(status)
        self._h, self._free = handle, lib.qfleet_free
        self._json = text.decode()
        self._nq, self._ni = lib.qfleet_n_qubits(handle), lib.qfleet_n_inputs(handle)
        self._nw, self._no = lib.qfleet_n_weights(handle), lib.qfleet_n_outputs(handle)
        self._dm = bool(lib.qfleet_is_density_matrix(handle))

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._free(h)

    def __reduce__(self):
        return (Program, (self._json,))

    def n_qubits(self) -> int:
        return self._nq

    def n_inputs(self) -> int:
        return self._ni

    def n_weights(self) -> int:
        return self._nw

    def n_outputs(self) -> int:
        return self._no

    def precision(self) -> str:
        return "complex128"

    def simulator(self) -> str:
        return "density_matrix" if self._dm else "statevector"

    def isa(self) -> str:
        return _LIB.qfleet_isa(self._h).decode()

    def json(self) -> str:
        return self._json

    def _batch(self, inputs, weights):
        """(B, inputs, weights) as C-contiguous float64; the lengths are checked by the library."""
        w = _EMPTY if weights is None else _as_f64(weights, "weights")
        if inputs is None:
            x = _EMPTY
            b = w.shape[0] if w.ndim == 2 else 1
            if self._ni:
                raise ValueError(f"qfleet: the circuit reads {self._ni} input column(s); pass inputs [B, {self._ni}]")
        else:
            x = _as_f64(inputs, "inputs")
            if x.ndim != 2:
                raise ValueError(f"qfleet: inputs must be [B, n_inputs={self._ni}], got shape {x.shape}")
            b = x.shape[0]
        if w.ndim == 2 and w.shape[0] != b:
            raise ValueError(f"qfleet: per-sample weights have shape {w.shape}; expected [{b}, {self._nw}] "
                             "(B from inputs)")
        return b, x, w

    def forward(self, inputs, weights):
        """Outputs [B, n_outputs]: expectation values, then probabilities."""
        b, x, w = self._batch(inputs, weights)
        out = np.empty((b, self._no))
        status = _LIB.qfleet_forward(self._h, b, _ptr(x), x.size, _ptr(w), w.size, _ptr(out), out.size)
        if status:
            _raise(status)
        return out

    def vjp(self, inputs, weights, cotangents):
        """(grad_inputs [B, n_inputs], grad_weights shaped like weights) for cotangents
        [B, n_outputs]; shared weights' gradient is summed over the batch."""
        b, x, w = self._batch(inputs, weights)
        g = np.ascontiguousarray(cotangents, dtype=_f64)
        if g.shape != (b, self._no):
            raise ValueError(f"qfleet: cotangents have shape {g.shape}; expected [{b}, {self._no}]")
        gi, gw = np.empty((b, self._ni)), np.empty(w.shape)
        status = _LIB.qfleet_vjp(self._h, b, _ptr(x), x.size, _ptr(w), w.size, _ptr(g), g.size, _ptr(gi), gi.size,
                                 _ptr(gw), gw.size)
        if status:
            _raise(status)
        return gi, gw

    backward = vjp

    def jacobian(self, inputs, weights):
        """Per-sample Jacobians ([B, n_outputs, n_inputs], [B, n_outputs, n_weights])."""
        b, x, w = self._batch(inputs, weights)
        ji, jw = np.empty((b, self._no, self._ni)), np.empty((b, self._no, self._nw))
        status = _LIB.qfleet_jacobian(self._h, b, _ptr(x), x.size, _ptr(w), w.size, _ptr(ji), ji.size, _ptr(jw),
                                      jw.size)
        if status:
            _raise(status)
        return ji, jw

    def states(self, inputs, weights):
        """Final state vectors [B, 2^n] complex128 (state-vector programs)."""
        b, x, w = self._batch(inputs, weights)
        out = np.empty((b, 1 << self._nq), dtype=np.complex128)
        status = _LIB.qfleet_states(self._h, b, _ptr(x), x.size, _ptr(w), w.size, _ptr(out), out.size)
        if status:
            _raise(status)
        return out

    def density_matrices(self, inputs, weights):
        """Final density matrices [B, 2^n, 2^n] complex128 (density-matrix programs)."""
        b, x, w = self._batch(inputs, weights)
        d = 1 << self._nq
        out = np.empty((b, d, d), dtype=np.complex128)
        status = _LIB.qfleet_density_matrices(self._h, b, _ptr(x), x.size, _ptr(w), w.size, _ptr(out), out.size)
        if status:
            _raise(status)
        return out

    def sample(self, inputs, weights, wires, shots, seed):
        """Outcome indices [B, shots] int64 on `wires` ([]: all), first wire most significant,
        with the circuit's readout errors; reproducible for a seed (0 <= seed < 2^64)."""
        b, x, w = self._batch(inputs, weights)
        shots, seed = int(shots), int(seed)
        if shots <= 0:
            raise ValueError(f"qfleet: shots must be positive, got {shots}")
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"qfleet: seed must be in [0, 2^64), got {seed}")
        wires = [int(q) for q in wires]
        c_wires = (ctypes.c_int * len(wires))(*wires) if wires else None
        # int64, as the PyTorch operator returns: outcome indices fit (at most 30 wires), and
        # numpy's shifts and bit tests then mix them with signed integers.
        out = np.empty((b, shots), dtype=np.int64)
        status = _LIB.qfleet_sample(self._h, b, _ptr(x), x.size, _ptr(w), w.size, c_wires, len(wires), shots, seed,
                                    _ptr(out, ctypes.c_uint64), out.size)
        if status:
            _raise(status)
        return out
