"""qfleet's tensor files, read from Python: checkpoints, the classifier's backbone and feature
cache, the qGAN classifier's records, the PPO policy.

A tensor file is data only, in the layout of safetensors (an 8-byte little-endian header
length, a JSON header naming each tensor's dtype, shape and byte range, then the raw bytes),
with qfleet's SHA-1 of the whole file as the header's first metadata entry (its own 40 digits
read as zeros). Reading one runs nothing from the file: the digest is checked first, then
every shape and byte range, and tensors are made by copying bytes. For example::

    f = qfleet.read_tensor_file("rl-out/policy.pt", "qfleet-rl-policy/1")
    state = f.module_state("agent")        # {"actor.0.weight": tensor, ...}
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field

import torch

from . import _files

__all__ = ["TensorFile", "TensorFileError", "read_tensor_file"]

_PREFIX = b'{"__metadata__":{"qfleet.sha1":"'
_DIGITS = 40
_MAX_BYTES = 16 << 30
_MAX_HEADER = 100_000_000
_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool}


class TensorFileError(ValueError):
    """A file that is missing, not a qfleet tensor file, damaged or of another format; the message names it."""


@dataclass
class TensorFile:
    """What a tensor file holds: its format's name, tensors (on the CPU) and texts."""
    format: str
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def module_state(self, name: str) -> dict[str, torch.Tensor]:
        """A module's parameters and buffers saved under `name` (as LibTorch's nn::Module::save
        names them), keyed as a PyTorch state_dict is ("layer.0.weight")."""
        tree = self.texts.get("archive." + name)
        if tree is None:
            raise TensorFileError(f"the file holds no module '{name}'")
        out: dict[str, torch.Tensor] = {}

        def walk(entries: dict, prefix: str) -> None:
            for key, node in entries.items():
                if "archive" in node:
                    walk(node["archive"], prefix + key + ".")
                elif "tensor" in node:
                    out[prefix + key] = self.tensors[node["tensor"]]

        walk(json.loads(tree), "")
        return out


def _fail(path: str, why: str) -> TensorFileError:
    return TensorFileError(f"{path}: {why}")


def _decode(data: bytearray, path: str) -> TensorFile:
    if data[:4] == b"PK\x03\x04":
        raise _fail(path, "is a LibTorch archive (a zip), which qfleet does not read: loading one can run code it carries")
    n = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else 0
    at = 8 + len(_PREFIX)
    if (len(data) < 8 or n > _MAX_HEADER or n > len(data) - 8 or n < len(_PREFIX) + _DIGITS + 1
            or data[8:at] != _PREFIX or data[at + _DIGITS:at + _DIGITS + 1] != b'"'):
        raise _fail(path, f"is not a qfleet tensor file, or is cut short ({len(data)} bytes)")
    stored = bytes(data[at:at + _DIGITS]).decode("latin-1")
    data[at:at + _DIGITS] = b"0" * _DIGITS
    actual = hashlib.sha1(data).hexdigest()
    if actual != stored:
        raise _fail(path, f"is damaged: its SHA-1 is {actual}, the file says {stored!r}")
    try:
        header = json.loads(bytes(data[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise _fail(path, f"has a header that is not JSON ({e})") from None
    meta = header.pop("__metadata__", None) if isinstance(header, dict) else None
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _fail(path, "has a header that is not a JSON object with __metadata__ of texts")
    body = memoryview(data)[8 + n:]
    tensors = {name: _tensor(entry, name, body, path) for name, entry in header.items()}
    for name in _complex_names(meta, path):
        t = tensors.get(name)
        if t is None or t.dim() == 0 or t.shape[-1] != 2 or t.dtype not in (torch.float32, torch.float64):
            raise _fail(path, f"complex tensor '{name}' is not stored as [..., 2] real pairs")
        tensors[name] = torch.view_as_complex(t).clone()
    texts = {k: v for k, v in meta.items() if not k.startswith("qfleet.")}
    return TensorFile(meta.get("qfleet.format", ""), tensors, texts)


def _complex_names(meta: dict, path: str) -> list:
    try:
        names = json.loads(meta.get("qfleet.complex", "[]"))
    except (json.JSONDecodeError, RecursionError):
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _fail(path, "metadata entry 'qfleet.complex' is not a list of names")
    return names


def _tensor(entry: object, name: str, body: memoryview, path: str) -> torch.Tensor:
    try:
        dtype = _DTYPES[entry["dtype"]]
        shape = [int(d) for d in entry["shape"]]
        begin, end = (int(o) for o in entry["data_offsets"])
    except (TypeError, KeyError, ValueError):
        raise _fail(path, f"tensor '{name}' lacks a known dtype, a shape or data_offsets") from None
    count = 1
    for d in shape:
        count *= d
    item = torch.empty((), dtype=dtype).element_size()
    if min(shape, default=0) < 0 or not 0 <= begin <= end <= len(body) or end - begin != count * item:
        raise _fail(path, f"tensor '{name}' does not fit the file")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    out = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype).reshape(shape)
    if dtype == torch.bool and not bool(((out.view(torch.uint8) == 0) | (out.view(torch.uint8) == 1)).all()):
        raise _fail(path, f"tensor '{name}' holds a boolean that is neither 0 nor 1")
    return out


def read_tensor_file(path: str | os.PathLike, format: str | None = None) -> TensorFile:  # noqa: A002
    """Reads and checks a qfleet tensor file; `format` (e.g. "qfleet-train-checkpoint/3") must match when given.
    Raises TensorFileError naming the file for one that is missing, not regular, too large, damaged or of
    another format."""
    path = os.fspath(path)
    try:
        data = bytearray(_files.read_bytes(path, _MAX_BYTES))  # no device or folder; a longer file unread
    except ValueError as e:
        raise TensorFileError(str(e)) from None
    except OSError as e:
        raise _fail(path, e.strerror or str(e)) from None
    out = _decode(data, path)
    if format is not None and out.format != format:
        raise _fail(path, f"is a '{out.format}' file, not a '{format}'")
    return out
