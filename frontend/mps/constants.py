"""Constant tensor data: numpy views into the model file.

Data is read little-endian and row major over the declared dims, at whatever alignment the file has
(fp16 data often sits at 2 mod 4): numpy views handle unaligned data, so nothing is copied except where
the stored form is not numpy's:
- int4: two values per byte, element 2i in the low nibble and 2i+1 in the high nibble, sign extended,
  unpacked into a new int8 array;
- bool bytes other than 0 and 1 (numpy's bool is defined only for those): normalised in a new array.
The backend's integer scalars hold 8 bytes whatever their declared type (FORMATS.md): the leading bytes
of the declared type are the value (little-endian), read as a view, the way the MPS runtime reads them.
"""
from __future__ import annotations

import numpy as np

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.ir import TensorType
from nn2tosa.limits import reserve

from .dtypes import size_explains, storage_bytes


def decode(data: memoryview, offset: int, nbytes: int, t: TensorType, *, where: str) -> np.ndarray:
    """The constant of type `t` whose `nbytes` bytes start at `offset` in `data` (range already checked)."""
    if any(d < 0 for d in t.shape):
        raise InvalidInputError(f"constant of type {t} has a dynamic dimension", where=where)
    count = t.num_elements
    if not size_explains(t.dtype, count, nbytes):
        expected = storage_bytes(t.dtype, count)
        raise InvalidInputError(f"constant of type {t} holds {nbytes} bytes, expected {expected}", where=where)
    # An 8-byte integer scalar is read through its leading bytes: the views below take `count` items.
    if t.dtype == "i4":
        reserve(count, "i8", "unpacking int4 constant data", where=where)  # nn2tosa.limits: a copy, charged
        return _unpack_int4(np.frombuffer(data, np.uint8, nbytes, offset), count).reshape(t.shape)
    if t.dtype == "i1":
        raw = np.frombuffer(data, np.uint8, count, offset)
        return (raw.view(np.bool_) if raw.size == 0 or raw.max() <= 1 else raw != 0).reshape(t.shape)
    return np.frombuffer(data, t.numpy_dtype, count, offset).reshape(t.shape)


def _unpack_int4(packed: np.ndarray, count: int) -> np.ndarray:
    out = np.empty(packed.size * 2, np.int8)
    out[0::2] = packed & 0x0F
    out[1::2] = packed >> 4
    out = (out ^ 8) - 8  # sign-extend the nibble: 8..15 -> -8..-1
    return out[:count]
