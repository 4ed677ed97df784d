"""How a quantized nn tensor is carried at TOSA level, and the source's encoding of real values.

TOSA 1.0 has no unsigned tensors, so an unsigned quantized tensor (QAsymmU8: ui8) travels as i8 holding
`q - 128`, zero point `zp - 128` (the same real values). Only graph inputs and outputs keep the raw uint8
bits, converted next to the boundary by RESCALE input_unsigned / output_unsigned (lowering/quant.py).
`encode` / `decode` are Arm NN's Quantize / Dequantize of float32 values (CpuRef's integers):
    real = scale * (q - zero_point)           (float32 products)
    q    = clamp(round_half_away(real / scale) + zero_point)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import Quant, TensorType

# integer element type -> (min, max) of its signed values at TOSA level
INTEGER_RANGE = {"i8": (-128, 127), "i16": (-32768, 32767), "i32": (-(1 << 31), (1 << 31) - 1), "i48": (-(1 << 47), (1 << 47) - 1)}
# nn element type of a quantized tensor -> (TOSA element type, offset subtracted from stored values)
CARRIER = {"i8": ("i8", 0), "ui8": ("i8", 128), "i16": ("i16", 0), "ui16": ("i16", 32768), "i32": ("i32", 0)}


# ------------------------------------------------------------------------------ carried quantization
@dataclass(frozen=True)
class QInfo:
    """A quantized nn tensor as TOSA carries it: `dtype` (i8/i16/i32) values v standing for the real
    values scale * (v - zero_point). `offset` is what was subtracted from the stored (unsigned)
    integers to make them signed: 128 for ui8, 0 for signed types."""

    dtype: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None
    offset: int = 0

    @property
    def scale(self) -> float:
        if self.axis is not None and len(set(self.scales)) > 1:
            raise ValueError("a per-axis quantization has no single scale")
        return self.scales[0]

    @property
    def zero_point(self) -> int:
        if self.axis is not None and len(set(self.zero_points)) > 1:
            raise ValueError("a per-axis quantization has no single zero point")
        return self.zero_points[0]

    @property
    def per_axis(self) -> bool:
        return self.axis is not None and (len(set(self.scales)) > 1 or len(set(self.zero_points)) > 1)

    @property
    def qmin(self) -> int:
        return INTEGER_RANGE[self.dtype][0]

    @property
    def qmax(self) -> int:
        return INTEGER_RANGE[self.dtype][1]

    @property
    def span(self) -> int:
        """The largest |v - zero_point| a value of this tensor can have."""
        zps = np.asarray(self.zero_points)
        return int(max(np.max(self.qmax - zps), np.max(zps - self.qmin)))


def qinfo(t: TensorType) -> QInfo:
    """The TOSA-level carrier of quantized nn type `t` (see the module doc)."""
    if t.quant is None:
        raise ValueError(f"{t} is not quantized")
    if t.dtype not in CARRIER:
        raise ValueError(f"quantized {t.dtype} tensors are not supported")
    dtype, offset = CARRIER[t.dtype]
    q = t.quant
    zero_points = tuple(map(int, q.zero_points)) if not offset else tuple(int(z) - offset for z in q.zero_points)
    return QInfo(dtype, tuple(map(float, q.scales)), zero_points, q.axis, offset)


def carried_type(t: TensorType) -> TensorType:
    """The nn type `t` as TOSA carries it: an unsigned quantized type becomes the signed type of
    the same width with its zero points moved by the offset (same real values)."""
    if t.quant is None or not unsigned_offset(t):
        return t
    q = qinfo(t)
    return TensorType(t.shape, q.dtype, Quant(q.scales, q.zero_points, q.axis, t.quant.expressed))


def carried_values(stored: np.ndarray, t: TensorType) -> np.ndarray:
    """Stored integers of quantized type `t` as TOSA carries them (ui8 data minus 128, as int8)."""
    q = qinfo(t)
    carrier = TensorType((), q.dtype).numpy_dtype
    stored = np.asarray(stored)
    if not q.offset and stored.dtype == carrier:  # signed data is carried as stored: no copy of the weights
        return stored
    return (stored.astype(np.int64) - q.offset).astype(carrier)


def unsigned_offset(t: TensorType) -> int:
    """128 (ui8) or 32768 (ui16) for an unsigned quantized type, else 0."""
    return CARRIER.get(t.dtype, ("", 0))[1] if t.quant is not None else 0



# ------------------------------------------------------------------------------ the source's encoding
def round_half_away(x: np.ndarray | float | np.floating) -> np.ndarray:
    """Round to nearest, halves away from zero (C's round, std::round, TfLiteRound; float64 result)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))


def encode(real: np.ndarray, q: QInfo) -> np.ndarray:
    """Arm NN's Quantize of float32 values into `q`'s carried integers: round_half_away(real / scale)
    (the division in float32) + zero point, clamped. NaN (sqrt or log of a negative value) stores 0:
    CpuRef's clamp lets NaN through and its float-to-integer conversion gives 0 on x86-64."""
    real = np.asarray(real, dtype=np.float32)
    with np.errstate(all="ignore"):
        scaled = real / np.float32(q.scale)
        stored = round_half_away(np.nan_to_num(scaled, nan=0.0, posinf=1e30, neginf=-1e30)) + q.zero_point + q.offset
    lo, hi = q.qmin + q.offset, q.qmax + q.offset
    stored = np.where(np.isnan(scaled), 0, np.clip(stored, lo, hi))
    return (stored - q.offset).astype(np.int64)


def decode(v: np.ndarray, q: QInfo) -> np.ndarray:
    """Arm NN's Dequantize of carried integers: (q - zero_point) * scale in float32."""
    return ((np.asarray(v, dtype=np.int64) - q.zero_point).astype(np.float32) * np.float32(q.scale)).astype(np.float32)

