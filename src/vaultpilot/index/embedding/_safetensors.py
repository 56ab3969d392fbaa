"""A minimal reader for the ``.safetensors`` weight format (no dependency beyond numpy).

The format is an 8-byte little-endian header length, a JSON header mapping each tensor name to
its dtype, shape and byte range, then the raw little-endian tensor bytes. Only the dtypes that
BERT checkpoints use are supported.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["read_safetensors"]

_DTYPES: dict[str, str] = {
    "F32": "<f4",
    "F16": "<f2",
    "F64": "<f8",
    "I64": "<i8",
    "I32": "<i4",
}
_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors(path: Path) -> dict[str, npt.NDArray[np.generic]]:
    """Every tensor in ``path`` as a numpy array (copied, so the file may be closed)."""
    data = path.read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path} is too short to be a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > min(_MAX_HEADER, len(data) - 8):
        raise ValueError(f"{path} has an invalid safetensors header length")
    header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    body = memoryview(data)[8 + header_len :]
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=dtype).reshape(spec["shape"])
        tensors[name] = array.astype(array.dtype.newbyteorder("="), copy=True)
    return tensors
