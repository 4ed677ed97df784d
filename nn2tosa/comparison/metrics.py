"""How far one tensor of the converted model is from its reference, in the source tensor's own terms.

Both sides arrive in the source type's terms: `stored` arrays hold what a tensor of that type
stores (a quantized tensor's integers, a float tensor's floats), `real` arrays the float64 values
they stand for (real = scale * (stored - zero_point)). The measures:

  max_abs    largest |reference - actual|, in real units
  lsb        for integer (quantized or not) tensors: that error in steps of the stored integer (a
             quantized tensor's output scale); fractional when the reference is real (float)
  ulp        for float tensors: the largest error in units in the last place of max(1, max |reference|)
             in the float type the converted graph computes the tensor in
  relative   max_abs / max(1, max |reference|): what `check`'s float tolerances bound
  mean_abs   mean |reference - actual| (real units)
  sqnr_db    10 log10(sum reference^2 / sum error^2) (inf when exact)
  cosine     cosine similarity of the two (1 when exact)
  off        elements beyond the tolerance (per element: |error| in LSB above the integer bound,
             or |error| / max(1, max |reference|) above the float bound)
  clipped    against a real (float) reference, a quantized tensor's reference values outside the range
             its type can hold: counted here and measured at the range's end, so that the other
             measures are the rounding error (a ReLU6 after a convolution sharing its output range
             makes the convolution's negative values unrepresentable by design)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from nn2tosa.check import FLOAT_BOUND, INTEGER_BOUND
from nn2tosa.ir import TensorType

_FLOAT_TYPES: dict[str, type[np.floating]] = {"f64": np.float64, "f32": np.float32, "f16": np.float16,
                                              "bf16": np.float32}


@dataclass
class Metrics:
    max_abs: float
    lsb: float | None
    ulp: float | None
    relative: float
    mean_abs: float
    sqnr_db: float
    cosine: float
    off: int
    size: int
    bound: float  # the tolerance's bound: LSB for integer tensors, relative for float ones
    ok: bool
    note: str = ""
    clipped: int = 0  # real reference values outside a quantized tensor's range (measured at the range's end)

    def as_dict(self) -> dict[str, Any]:
        return {k: _json_number(v) for k, v in asdict(self).items()}

    @property
    def score(self) -> float:
        """One number to sort by: the error as a multiple of the bound."""
        error = self.lsb if self.lsb is not None else self.relative
        if self.note:
            return math.inf
        if self.bound:
            return error / self.bound
        return math.inf if error else 0.0


def _json_number(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def dequantize(stored: np.ndarray, t: TensorType) -> np.ndarray:
    from nn2tosa.comparison.nn_numpy import to_real

    return np.asarray(to_real(stored, t), dtype=np.float64)


def is_integer(t: TensorType) -> bool:
    return t.quant is not None or t.dtype not in _FLOAT_TYPES


def measure(t: TensorType, actual: np.ndarray, reference: np.ndarray, reference_is_real: bool,
            tolerance: str, computed: str | None = None) -> Metrics:
    """The measures of `actual` (stored form of `t`) against `reference` (stored, or real); ULPs are
    those of `computed`, the float type the converted graph holds the tensor in (default: t's)."""
    actual = np.asarray(actual).reshape(t.shape)
    reference = np.asarray(reference).reshape(t.shape)
    a = dequantize(actual, t)
    r = reference.astype(np.float64) if reference_is_real else dequantize(reference, t)
    clipped = 0
    if reference_is_real and t.quant is not None:  # saturation is counted apart from the rounding error
        info = np.iinfo(t.numpy_dtype)
        lo, hi = dequantize(np.full(t.shape, info.min), t), dequantize(np.full(t.shape, info.max), t)
        outside = (r < lo) | (r > hi)
        clipped = int(np.count_nonzero(outside))
        r = np.clip(r, lo, hi)
    integer = is_integer(t)
    bound = float(INTEGER_BOUND[tolerance] if integer else FLOAT_BOUND[tolerance])
    nan = np.isnan(a) != np.isnan(r)
    finite = np.isfinite(a) & np.isfinite(r)
    infinite = ~finite & ~nan & (a != r) & ~(np.isnan(a) & np.isnan(r))
    diff = np.where(finite, np.abs(a - r), 0.0)
    size = int(diff.size)
    max_abs = float(diff.max()) if size else 0.0
    scale = max(1.0, float(np.max(np.abs(r[finite])))) if finite.any() else 1.0
    relative = max_abs / scale
    step = _step(t)
    lsb = ulp = None
    if integer:
        steps = diff / step
        lsb = float(steps.max()) if size else 0.0
        off = int(np.count_nonzero(steps > bound + 1e-9))
    else:
        # in ULPs of the reference's largest magnitude (near zero, an element's own ULP means little)
        kind = computed if computed in _FLOAT_TYPES else t.dtype
        ulp_size = float(np.spacing(_FLOAT_TYPES[kind](scale)))
        ulp = max_abs / (ulp_size * (2.0 ** 16 if kind == "bf16" else 1.0))
        off = int(np.count_nonzero(diff / scale > bound))
    off += int(nan.sum() + infinite.sum())
    signal = float(np.sum(np.square(r[finite])))
    noise = float(np.sum(np.square(diff)))
    sqnr = math.inf if noise == 0 else (10 * math.log10(signal / noise) if signal > 0 else -math.inf)
    norms = math.sqrt(signal) * math.sqrt(float(np.sum(np.square(a[finite]))))
    cosine = float(np.sum(a[finite] * r[finite]) / norms) if norms > 0 else (1.0 if noise == 0 else 0.0)
    note = ", ".join(f"{n} {k} mismatches" for k, n in (("NaN", int(nan.sum())), ("inf", int(infinite.sum()))) if n)
    return Metrics(max_abs, lsb, ulp, relative, float(diff.mean()) if size else 0.0, sqnr, cosine, off, size,
                   bound, off == 0, note, clipped)


def _step(t: TensorType) -> np.ndarray | float:
    """The real value of one stored step of `t` (a quantized tensor's scale, per axis when it has one)."""
    q = t.quant
    if q is None:
        return 1.0
    if q.axis is None or len(q.scales) == 1:
        return float(q.scales[0])
    shape = [1] * len(t.shape)
    shape[q.axis] = -1
    return np.asarray(q.scales, dtype=np.float64).reshape(shape)


__all__ = ["Metrics", "measure", "dequantize", "is_integer"]
